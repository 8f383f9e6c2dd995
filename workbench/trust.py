"""Which saved memories this machine wrote: a per-machine key signs every ``state.pkl``.

A saved method's built state is a pickle (trees, graphs, FAISS-backed stores), and unpickling a
file can run any code its author put in it. So ``MemoryMethod.save`` writes ``state.sig``, an
HMAC-SHA256 of the pickle under a random key kept in the user's cache directory
(``$XDG_CACHE_HOME/memory-workbench/trust.key``, mode 0600, created on first use), and
``MemoryMethod.load`` unpickles only a state whose signature this key verifies — a memory saved
on this machine, unmodified — unless the caller says ``trust=True``. A missing, empty or short
key verifies nothing (an empty key would let anyone forge a signature); see ``machine_key`` for
how concurrent first users end with one whole key.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import tempfile
from pathlib import Path

SIGNATURE_FILE = "state.sig"


class UntrustedStateError(PermissionError):
    """A saved state that this machine did not sign (made elsewhere, or modified since)."""


#: the key's exact length: anything else (an empty file left by a crash, a truncated copy) is damaged
KEY_BYTES = 32


class TrustKeyError(UntrustedStateError):
    """This machine's key is missing or damaged, so no saved state verifies."""


def key_path() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "memory-workbench" / "trust.key"


def _read_key(path: Path) -> bytes | None:
    """The key at ``path`` when it is whole, None when there is no file; ``TrustKeyError`` when damaged."""
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        return None
    if len(key) != KEY_BYTES:
        raise TrustKeyError(f"{path}: this machine's trust key is damaged ({len(key)} bytes, {KEY_BYTES} expected; "
                            "an interrupted first use leaves an empty one), so no saved state can be verified. "
                            "Saving a memory replaces it with a fresh key; states signed before cannot be verified "
                            "then: re-save them, or load with trust=True only if you trust their author")
    return key


def machine_key(*, create: bool = True) -> bytes:
    """This machine's signing key: exactly ``KEY_BYTES`` random bytes, mode 0600.

    With ``create`` (signing), a missing key is made and a damaged one replaced; without it
    (verifying), a missing or damaged key raises ``TrustKeyError``: nothing verifies under a key
    an attacker could have chosen (an empty key is trivially forgeable). A new key is written to
    a temporary file, fsynced, and linked into place with ``os.link``, which fails when another
    process got there first: then that process's (already whole) key is used, so concurrent
    first users all end with one full key. A damaged key is replaced under a lock
    (``filelock``), so concurrent repairers also agree."""
    path = key_path()
    try:
        key = _read_key(path)
    except TrustKeyError:
        if not create:
            raise
        return _replace_damaged_key(path)
    if key is not None:
        return key
    if not create:
        raise TrustKeyError(f"{path}: this machine has no trust key yet, so it signed no saved state and none can be "
                            "verified; load with trust=True only if you trust the state's author")
    return _publish_new_key(path)


def _write_temp_key(path: Path) -> Path:
    """A fresh key in a temporary file beside ``path`` (mode 0600, fsynced): whole before anyone sees it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".trust.key.", suffix=".tmp", dir=path.parent)  # mkstemp: mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(KEY_BYTES))
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _publish_new_key(path: Path) -> bytes:
    tmp = _write_temp_key(path)
    try:
        os.link(tmp, path)  # atomic, and refuses to overwrite: the first whole key wins
    except FileExistsError:  # another process linked its whole key first (or an old version left a damaged one)
        pass
    except OSError:  # a file system without hard links: the locked write below serialises creators instead
        return _replace_damaged_key(path)
    finally:
        tmp.unlink(missing_ok=True)
    try:
        key = _read_key(path)
    except TrustKeyError:  # damaged by an older version's interrupted first use: replaced under the lock
        key = None
    return key if key is not None else _replace_damaged_key(path)


def _replace_damaged_key(path: Path) -> bytes:
    """Under a lock beside the key: keep a whole key someone else wrote meanwhile, else write a new one."""
    from filelock import FileLock

    with FileLock(f"{path}.lock", timeout=60):
        try:
            key = _read_key(path)  # another process may have repaired it while we waited
        except TrustKeyError:
            key = None
        if key is not None:
            return key
        tmp = _write_temp_key(path)
        os.replace(tmp, path)
        return _read_key(path)


def sign(data: bytes, *, create: bool = True) -> str:
    """HMAC-SHA256 of ``data`` under this machine's key (``create=False``: only an existing, whole key)."""
    return hmac.new(machine_key(create=create), data, hashlib.sha256).hexdigest()


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
    if not hmac.compare_digest(sig_file.read_text().strip(), sign(data, create=False)):
        raise UntrustedStateError(f"{folder}: state.pkl was not saved on this machine or was changed since; "
                                  "unpickling can run code: pass trust=True only if you trust its author")
