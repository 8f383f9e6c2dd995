"""Issue 68's leftovers from the last round, each against what used to happen:

- ``workbench mechanisms`` on a run whose folder names are not UTF-8 (it failed writing ``mechanisms.json``) and on
  a read-only run (it said "internal error"): now counted and printed, names escaped, nothing written into a run
  that cannot take it;
- a full disk or a read-only folder under a file a command writes: one line naming the file and what to do, not
  "internal error";
- ``--retry-errors`` re-judges rows whose judge call failed (it skipped them);
- a cassette that cannot be written stops the run (``EnvironmentFailure``) instead of becoming the method's failure
  row that a plain resume keeps.

Full disks and read-only folders are simulated two ways: a monkeypatched ``OSError`` (works anywhere), and for real
in a private mount namespace (``unshare -m``: a read-only bind mount, a tiny full ``tmpfs``), skipped where this
machine does not allow it. Tests run as root here, where ``chmod`` stops no write, hence the mounts.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.data import Dataset
from workbench.embed import HashEmbedder
from workbench.eval import LLMJudge, ResultsStore, evaluate
from workbench.failures import EnvironmentFailure
from workbench.llm import CachedLLM, ScriptedLLM
from workbench.llm.errors import CassetteWriteFailed, LLMError
from workbench.methods import NaiveRAG

ROOT = Path(__file__).resolve().parents[1]


def rag(llm):
    return NaiveRAG(llm=llm, embedder=HashEmbedder(64), top_k=3)


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory, tiny_conv) -> Path:
    """A small run directory as ``workbench eval --save-memories`` writes it."""
    out = tmp_path_factory.mktemp("leftovers") / "run"
    evaluate(rag(ScriptedLLM({}, default="auto")), Dataset("tiny", (tiny_conv,)), store=out / "results.jsonl",
             save_memories_dir=out, progress=False)
    return out


def _copy(run: Path, to: Path) -> Path:
    shutil.copytree(run, to, ignore=shutil.ignore_patterns("*.lock", "mechanisms.json"))
    return to


def _private_mount(script: str) -> subprocess.CompletedProcess:
    """``script`` (sh) in a private mount namespace: its mounts vanish with it and nobody else sees them.
    Skips where this machine does not allow one (not root, no ``unshare``)."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare for a private read-only or full mount")
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here: {probe.stderr.decode(errors='replace').strip()}")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=env,
                          timeout=300)


def _listing(folder: Path, *, locks: bool = True) -> list[str]:
    """The files under ``folder``; ``locks=False`` leaves out the ``.lock`` files readers take in a folder they
    can write (a simulated read-only run is writable in truth)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if locks or p.suffix != ".lock")


# -- workbench mechanisms -----------------------------------------------------------------------------------
def test_mechanisms_counts_a_run_whose_folder_names_are_not_utf8(saved_run, tmp_path, capsys):
    """The run folder and a method folder named with bytes that are not UTF-8 (``run\\xff``, ``naive\\xfe``): the
    census is printed and written with those bytes escaped; it used to stop writing ``mechanisms.json`` ("surrogates
    not allowed")."""
    run = _copy(saved_run, tmp_path / os.fsdecode(b"run\xff"))
    shutil.copytree(run / "memories" / "naive_rag", run / "memories" / os.fsdecode(b"naive\xfe"))
    assert main(["mechanisms", str(run)]) == 0
    out, err = capsys.readouterr()
    assert "naive\\xfe" in out and "run\\xff" in out  # shown as escapes, not raw bytes a terminal would mangle
    written = json.loads((run / "mechanisms.json").read_bytes().decode("utf-8"))
    assert {"naive_rag", "naive\\xfe"} <= set(written["methods"])
    assert main(["mechanisms", str(run), "--format", "json", "--no-write"]) == 0
    assert "naive\\xfe" in json.loads(capsys.readouterr().out)["methods"]


def test_mechanisms_on_a_read_only_run_prints_and_writes_nothing(saved_run, tmp_path, monkeypatch, capsys):
    """A run on a read-only disk (simulated: the temporary file refused with EROFS): counted and printed, a note
    on stderr says the file was not written and how to write it elsewhere; it used to be an "internal error"."""
    import workbench.jsonl as jsonl

    run = _copy(saved_run, tmp_path / "run")
    before = _listing(run)
    real_mkstemp = jsonl.tempfile.mkstemp

    def read_only(*args, dir=None, **kw):
        if Path(dir) == run:
            raise OSError(errno.EROFS, "Read-only file system", str(Path(dir) / ".mechanisms.json.x.tmp"))
        return real_mkstemp(*args, dir=dir, **kw)

    monkeypatch.setattr(jsonl.tempfile, "mkstemp", read_only)
    assert main(["mechanisms", str(run)]) == 0
    out, err = capsys.readouterr()
    assert "naive_rag" in out and "internal error" not in err
    assert f"{run / 'mechanisms.json'} was not written (Read-only file system)" in err and "--out FILE" in err
    assert _listing(run, locks=False) == before
    elsewhere = tmp_path / "census.json"
    assert main(["mechanisms", str(run), "--out", str(elsewhere)]) == 0
    assert json.loads(elsewhere.read_text())["schema"] == "mechanisms/1" and _listing(run, locks=False) == before


def test_mechanisms_on_a_read_only_bind_mount(saved_run, tmp_path):
    """The same on a real read-only mount: exit 0, the census printed, the note, and not one file added (no lock
    file either: a reader takes no lock in a folder it cannot write)."""
    run = _copy(saved_run, tmp_path / "run")
    before = _listing(run)
    got = _private_mount(f"mount --bind -o ro '{run}' '{run}' && '{sys.executable}' -m workbench mechanisms '{run}'")
    assert got.returncode == 0, got.stderr
    assert "naive_rag" in got.stdout and "was not written (Read-only file system)" in got.stderr
    assert "internal error" not in got.stderr and _listing(run) == before


# -- a full disk, a read-only folder ------------------------------------------------------------------------
def test_disk_full_names_the_file_and_what_to_do(saved_run, tmp_path, monkeypatch, capsys):
    """``write`` on a full disk raises ``OSError(ENOSPC)`` with no file name; the writer now names the file, and
    the CLI says what to do instead of "internal error: OSError"."""
    import workbench.jsonl as jsonl

    target = tmp_path / "report.md"

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(jsonl.os, "fsync", full)
    assert main(["report", str(saved_run), "--output", str(target)]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err
    assert f"workbench: error: cannot write {target}: the disk is full" in err and "free some space" in err
    assert not target.exists() and not list(tmp_path.glob(".report.md.*"))  # no half file, no temporary left


def test_a_full_append_names_the_file(tmp_path, monkeypatch):
    """An append that meets a full disk (results rows, cassettes) names its file."""
    import workbench.jsonl as jsonl

    class Full:
        def __init__(self, *a, **kw):
            self.f = open(*a, **kw)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def __getattr__(self, name):
            return getattr(self.f, name)

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(jsonl, "open", Full, raising=False)
    with pytest.raises(OSError) as got:
        jsonl.append_line(tmp_path / "results.jsonl", "{}")
    assert got.value.errno == errno.ENOSPC and got.value.filename == str(tmp_path / "results.jsonl")


def test_real_full_and_read_only_mounts_get_a_line_in_words(saved_run, tmp_path):
    """For real: a report written onto a full ``tmpfs`` and into a read-only bind mount."""
    full, ro = tmp_path / "full", tmp_path / "ro"
    full.mkdir()
    ro.mkdir()
    cmd = f"'{sys.executable}' -m workbench report '{saved_run}' --output"
    got = _private_mount(
        f"mount -t tmpfs -o size=64k tmpfs '{full}' && (dd if=/dev/zero of='{full}/filler' bs=4k 2>/dev/null; true) "
        f"&& {cmd} '{full}/report.md'; echo rc=$?; mount --bind -o ro '{ro}' '{ro}' && {cmd} '{ro}/report.md'; "
        "echo rc=$?")
    lines = got.stderr.splitlines()
    assert got.stdout.split() == ["rc=2", "rc=2"], got.stderr
    assert f"workbench: error: cannot write {full}/report.md: the disk is full (No space left on device); free some " \
           "space" in lines[0]
    assert f"workbench: error: cannot write {ro}/report.md: it is on a read-only file system" in lines[1]
    assert "internal error" not in got.stderr


# -- --retry-errors and judge failures ----------------------------------------------------------------------
def test_retry_errors_re_judges_rows_whose_judge_call_failed(tiny_conv):
    """A judge that failed leaves ``judge_error`` on an answered row; ``--retry-errors`` used to skip such rows
    (their ``error`` is empty). Now they are judged again from the stored answer, which is not answered again."""
    data = Dataset("tiny", (tiny_conv,))
    store = ResultsStore()
    method_llm = ScriptedLLM({}, default="auto")
    down = ScriptedLLM({"judge.locomo": LLMError("the judge server did not answer")})
    first = evaluate(rag(method_llm), data, judge=LLMJudge(down), store=store, progress=False)
    failed = [r for r in first if r.judge_error]
    assert failed and not any(r.error for r in first)
    answered = len(method_llm.requests)

    up = ScriptedLLM({"judge.locomo": {"reasoning": "same", "label": "CORRECT"}})
    kept = evaluate(rag(method_llm), data, judge=LLMJudge(up), store=store, progress=False)
    assert [r.judge_error for r in kept] == [r.judge_error for r in first]  # a plain resume keeps them (as before)
    again = evaluate(rag(method_llm), data, judge=LLMJudge(up), store=store, progress=False, retry_errors=True)
    assert not any(r.judge_error for r in again)
    assert {r.qa_id: r.judge_label for r in again if r.qa_id in {f.qa_id for f in failed}} == \
        {f.qa_id: "CORRECT" for f in failed}
    assert len(method_llm.requests) == answered  # re-judged from the stored prediction, not re-answered
    assert again.manifest["rejudged_rows"] == len(failed)


# -- a cassette that cannot be written ----------------------------------------------------------------------
@pytest.mark.parametrize("workers", [1, 2])
def test_a_cassette_write_failure_stops_the_run_and_a_plain_resume_retries(tiny_conv, tmp_path, monkeypatch,
                                                                           workers):
    """The second recording meets a full disk: the run stops with ``CassetteWriteFailed`` (an
    ``EnvironmentFailure``), no row blames the method, the rows finished before stay; a plain resume (no
    ``--retry-errors``) then answers the rest. It used to record the method's failure, kept by a plain resume."""
    import workbench.llm.cache as cache

    data = Dataset("tiny", (tiny_conv,))
    store_path, cassette = tmp_path / "results.jsonl", tmp_path / "cassette.jsonl"
    real_append, written = cache.append_line, []

    def full_after_one(path, line, **kw):
        if written:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        written.append(line)
        return real_append(path, line, **kw)

    monkeypatch.setattr(cache, "append_line", full_after_one)
    inner = ScriptedLLM({}, default="auto")
    with pytest.raises(EnvironmentFailure) as got:
        evaluate(rag(CachedLLM(inner, cassette)), data, store=store_path, progress=False, workers=workers)
    assert isinstance(got.value, CassetteWriteFailed) and str(cassette) in str(got.value)
    rows = list(ResultsStore(store_path))
    assert len(rows) < len(tiny_conv.qa) and not any(r.get("error") for r in rows)

    monkeypatch.setattr(cache, "append_line", real_append)  # space freed
    resumed = evaluate(rag(CachedLLM(inner, cassette)), data, store=store_path, progress=False, workers=workers)
    assert len(resumed) == len(tiny_conv.qa) and not any(r.error for r in resumed)
    assert resumed.manifest["resumed_rows"] == len(rows)


def test_the_cli_says_an_environment_failure_in_one_line(monkeypatch, capsys, tmp_path):
    """What ``workbench eval`` prints when its cassette cannot be written: the cassette, why, what to do."""
    import workbench.eval.cli as eval_cli

    cassette = tmp_path / "cassette.jsonl"

    def stopped(args):
        raise CassetteWriteFailed(cassette, OSError(errno.ENOSPC, "No space left on device", str(cassette)))

    monkeypatch.setattr(eval_cli, "eval_command", stopped)
    assert main(["eval", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"workbench: error: cannot write the cassette {cassette}: No space left on device")
    assert "finished rows are kept" in err and "run the same command again" in err and "internal" not in err


def test_an_eval_over_a_run_removes_the_temporary_files_killed_writes_left(tmp_path, capsys):
    """kill -9 between a temporary file and its rename leaves ``.<name>.XXXXXXXX.tmp`` that no later write
    replaces (5 in 100 kills, ``benchmarks.kill_resume``); the next eval over the run removes old ones."""
    import os
    import time

    from workbench.eval.cli import sweep_stale_temps

    (tmp_path / "memories" / "m" / "c").mkdir(parents=True)
    old = [tmp_path / ".mechanisms.json.reb13ueu.tmp", tmp_path / "memories" / "m" / "c" / ".params.json.2k6o4i6r.tmp",
           tmp_path / "memories" / "m" / "c" / "state.pkl.tmp"]
    young = tmp_path / ".results.costs.jsonl.abcd1234.tmp"
    mine = tmp_path / "notes.tmp"  # not a name the workbench's writers use: left alone
    for p in [*old, young, mine]:
        p.write_text("x")
    past = time.time() - 120
    for p in [*old, mine]:
        os.utime(p, (past, past))
    assert sweep_stale_temps(tmp_path) == 3
    assert not any(p.exists() for p in old) and young.exists() and mine.exists()
    assert "removed 3 temporary file(s)" in capsys.readouterr().err
