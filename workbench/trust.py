"""Which saved memories this machine wrote: a per-machine key signs every ``state.pkl``.

A saved method's built state is a pickle (trees, graphs, FAISS-backed stores), and unpickling a
file can run any code its author put in it. So ``MemoryMethod.save`` writes ``state.sig``, an
HMAC-SHA256 of the pickle under a random key kept in the user's cache directory
(``$XDG_CACHE_HOME/memory-workbench/trust.key``, mode 0600, created on first use), and
``MemoryMethod.load`` unpickles only a state whose signature this key verifies — a memory saved
on this machine, unmodified — unless the caller says ``trust=True``.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

SIGNATURE_FILE = "state.sig"


class UntrustedStateError(PermissionError):
    """A saved state that this machine did not sign (made elsewhere, or modified since)."""


def key_path() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "memory-workbench" / "trust.key"


def machine_key() -> bytes:
    """This machine's signing key (created with mode 0600 on first use)."""
    path = key_path()
    if path.exists():
        return path.read_bytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it first
        return path.read_bytes()
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return key


def sign(data: bytes) -> str:
    return hmac.new(machine_key(), data, hashlib.sha256).hexdigest()


def write_signature(folder: Path, data: bytes) -> None:
    from .jsonl import write_text_atomic

    write_text_atomic(Path(folder) / SIGNATURE_FILE, sign(data) + "\n")


def check_signature(folder: Path, data: bytes) -> None:
    """Raise ``UntrustedStateError`` unless ``folder``'s signature matches ``data`` under this machine's key."""
    sig_file = Path(folder) / SIGNATURE_FILE
    if not sig_file.is_file():
        raise UntrustedStateError(f"{folder}: state.pkl has no signature from this machine (saved elsewhere or by "
                                  "an older version); unpickling can run code: pass trust=True only if you trust its "
                                  "author")
    if not hmac.compare_digest(sig_file.read_text().strip(), sign(data)):
        raise UntrustedStateError(f"{folder}: state.pkl was not saved on this machine or was changed since; "
                                  "unpickling can run code: pass trust=True only if you trust its author")
