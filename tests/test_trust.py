"""The per-machine key that signs saved memories: never empty or short, one whole key under concurrent first use."""
from __future__ import annotations

import hashlib
import hmac
import multiprocessing
import pickle
import threading
from pathlib import Path

import pytest

from workbench import trust
from workbench.trust import KEY_BYTES, SIGNATURE_FILE, TrustKeyError, UntrustedStateError


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "memory-workbench" / "trust.key"


class Detonator:
    """Unpickling this writes a file: the proof that a payload ran."""

    def __init__(self, flag: Path):
        self.flag = flag

    def __reduce__(self):
        return (Path.write_text, (self.flag, "ran"))


def forged_state(folder: Path, flag: Path, key: bytes) -> bytes:
    """A state folder whose signature is made with ``key`` (what an attacker who guesses the key writes)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = pickle.dumps({"x": Detonator(flag)})
    (folder / "state.pkl").write_bytes(data)
    (folder / SIGNATURE_FILE).write_text(hmac.new(key, data, hashlib.sha256).hexdigest() + "\n")
    return data


@pytest.mark.parametrize("content", [b"", b"\x00", b"k" * (KEY_BYTES - 1), b"\n", b"k" * (KEY_BYTES + 7)])
def test_a_damaged_key_verifies_nothing(tmp_path, home, content):
    home.parent.mkdir(parents=True)
    home.write_bytes(content)
    data = forged_state(tmp_path / "mem", tmp_path / "ran", content)
    with pytest.raises(TrustKeyError, match=r"damaged \(\d+ bytes, 32 expected"):
        trust.check_signature(tmp_path / "mem", data)
    assert home.read_bytes() == content  # verifying does not rewrite it: only a save does


def test_method_load_never_unpickles_a_state_forged_with_an_empty_key(tmp_path, home, tiny_conv, hash_embedder):
    from workbench.methods import NaiveRAG
    from workbench.llm import ScriptedLLM

    m = NaiveRAG(llm=ScriptedLLM([], default="ok"), embedder=hash_embedder).ingest(tiny_conv)
    m.save(tmp_path / "mem")
    home.write_bytes(b"")  # a crash during first use left it empty
    forged_state(tmp_path / "mem", tmp_path / "ran", b"")
    with pytest.raises(UntrustedStateError, match="trust=True"):
        NaiveRAG.load(tmp_path / "mem", llm=m.llm, embedder=hash_embedder)
    assert not (tmp_path / "ran").exists()


def test_a_missing_key_verifies_nothing_and_is_not_created_by_verifying(tmp_path, home):
    data = forged_state(tmp_path / "mem", tmp_path / "ran", b"")
    with pytest.raises(TrustKeyError, match="no trust key"):
        trust.check_signature(tmp_path / "mem", data)
    assert not home.exists()


def test_saving_replaces_a_damaged_key_with_a_whole_one(tmp_path, home):
    home.parent.mkdir(parents=True)
    home.write_bytes(b"short")
    trust.write_signature(tmp_path / "mem", b"payload")
    key = home.read_bytes()
    assert len(key) == KEY_BYTES and home.stat().st_mode & 0o777 == 0o600
    trust.check_signature(tmp_path / "mem", b"payload")
    assert not list(home.parent.glob(".trust.key.*"))  # no temporary file left behind


def test_concurrent_first_use_in_threads_ends_with_one_key(tmp_path, home):
    start, keys = threading.Barrier(24), []

    def first_use():
        start.wait()
        keys.append(trust.machine_key())

    threads = [threading.Thread(target=first_use) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(keys)) == 1 and keys[0] == home.read_bytes() and len(keys[0]) == KEY_BYTES


def _sign_in_process(cache: str, data: bytes, out) -> None:
    import os

    os.environ["XDG_CACHE_HOME"] = cache
    from workbench import trust as t

    out.put(t.sign(data))


def test_concurrent_first_use_in_processes_signs_under_one_key(tmp_path, home):
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_sign_in_process, args=(str(tmp_path / "cache"), b"same data", out)) for _ in range(8)]
    for p in procs:
        p.start()
    sigs = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert len(set(sigs)) == 1
    (tmp_path / "mem").mkdir()
    (tmp_path / "mem" / SIGNATURE_FILE).write_text(sigs[0])
    trust.check_signature(tmp_path / "mem", b"same data")  # the key left on disk is the one they all used


def test_a_damaged_key_met_while_creating_is_replaced_not_used(tmp_path, home, monkeypatch):
    # another (older) process left an empty key between our "missing" check and our link
    real_link = trust.os.link

    def link_after_a_crash(src, dst):
        Path(dst).write_bytes(b"")
        return real_link(src, dst)

    monkeypatch.setattr(trust.os, "link", link_after_a_crash)
    key = trust.machine_key()
    assert len(key) == KEY_BYTES and home.read_bytes() == key
