"""Record whole-conversation LoCoMo runs, one method at a time, resumably (issue: real scale, CPU plan).

For each method, in the staged order (cheap to build first), this runs the ordinary command
``workbench eval --method M --data locomo:<dev copy> --conversations conv-30 --categories 1,2,3,4
--llm local --judge same --save-memories --bounded-outputs`` in a subprocess, live behind the cassette
``runs/real_scale/cassettes/M-conv-30.jsonl``, in two passes so that consecutive calls share their prefix
in llama.cpp's KV cache: pass 1 answers every question with no judge (``runs/real_scale/M-answers``), so
Full-Context's 13k-token conversation prefix is evaluated once, not once per question; pass 2 is the
same command with ``--judge same`` into ``runs/real_scale/M``: every method call replays from the
cassette and only the judge runs live. (llama-cpp-python's RAM prefix-state cache, ``WORKBENCH_STATE_CACHE_MB``,
would do the same in one pass, but each saved state also copies the ~311 MB logits buffer its capacity does
not count: the first naive_rag recording with a 1 GB cap grew to 24 GB and was killed by the OOM killer.)

Resumable at every level: a rerun skips methods already published, the harness skips finished questions,
and finished calls (construction included) replay from the cassette. A recording that spans sessions is
committed as it goes with ``--snapshot M`` (``M-conv-30.partial.jsonl`` beside the licence notice); on a
machine with no cassette for M, recording starts from that file (or from the published one). Only a method
whose every planned question has a stored row is published: its cassette is copied (atomically) to
``sample_data/cassettes/locomo/M-conv-30.jsonl``, next to the CC BY-NC 4.0 notice, and its recording
figures (wall time summed over sessions, calls, live calls) go to
``benchmarks/results/real_scale_recordings.json``. Committing is left to the person running it.

Wall and CPU time survive a killed session (to within the last minute): a heartbeat adds the elapsed seconds to
``runs/real_scale/wall.json`` and, on Linux (``/proc``), the running subprocess's CPU seconds to
``runs/real_scale/cpu.json`` every minute. Only a recording sampled this way from its first call publishes
``cpu_partial: false``; one seeded from a committed cassette, begun before the sampling, or run where ``/proc`` is
absent publishes ``cpu_partial: true`` (its CPU figure is a lower bound). One seeded from a committed cassette also
publishes ``wall_partial: true``: the sessions before the seed were timed on another machine.

Usage: python -m benchmarks.record_real_scale [--methods naive_rag full_context ...] [--model NAME]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10_dev.json"
WORK = ROOT / "runs" / "real_scale"
PUBLISHED = ROOT / "sample_data" / "cassettes" / "locomo"
RECORDINGS = ROOT / "benchmarks" / "results" / "real_scale_recordings.json"
CONVERSATION = "conv-30"  # the first conversation recorded; ``--conversation`` records another (main sets this)
CATEGORIES = "1,2,3,4"
FROM_START = "_measured_from_start"  # cpu.json: the run tags whose CPU seconds were sampled from their first call
SEEDED = "_seeded"  # wall.json: the run tags whose cassette here began from a committed one (earlier wall elsewhere)
#: the issue's staged order: cheap to build first, then RecMem with the Mem0-style reference, then AMA
ORDER = ("naive_rag", "full_context", "hmem", "hymem", "memr3", "recmem", "mem0_style", "ama")


def cassette_name(method: str) -> str:
    return f"{method}-{CONVERSATION}.jsonl"


def run_tag(method: str) -> str:
    """The run directory's name for ``method`` on the conversation being recorded: the bare method name for
    conv-30 (where the first recordings live), ``method-conv-NN`` for any other conversation."""
    return method if CONVERSATION == "conv-30" else f"{method}-{CONVERSATION}"


def planned_ids() -> list[str]:
    from workbench.data import load_dataset
    from workbench.eval import select

    data = load_dataset(f"locomo:{LOCOMO}")
    return [q.id for _, qs in select(data, conversations=CONVERSATION, categories=[1, 2, 3, 4]) for q in qs]


def stored_ids(method: str) -> set[str]:
    """Question ids with a stored row for ``method`` (failed rows count: they are recorded outcomes)."""
    from workbench.eval.store import load_rows

    path = WORK / run_tag(method) / "results.jsonl"
    if not path.exists():
        return set()
    return {r.get("qa_id") or r.get("question_id") for r in load_rows([path]) if r.get("method") == method}


def _load_json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


class Heartbeat:
    """Adds elapsed wall seconds for ``method`` to ``wall.json`` every ``every`` s and at stop, and (on Linux) the CPU
    seconds of the subprocess it watches (``watch``) to ``cpu.json``: both survive a session killed mid-recording,
    but for the seconds since the last beat."""

    def __init__(self, method: str, every: float = 60.0):
        self.method, self.every = method, every
        self._last = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._seen = 0.0  # CPU seconds of the watched process already added
        self._thread = threading.Thread(target=self._run, daemon=True)

    def watch(self, pid: int) -> None:
        with self._lock:
            self._pid, self._seen = pid, 0.0

    def unwatch(self) -> float:
        """Stop sampling; the CPU seconds already added for the process (the rest is the caller's to add)."""
        with self._lock:
            self._pid, seen, self._seen = None, self._seen, 0.0
        return seen

    def _flush(self) -> None:
        now = time.monotonic()
        path = WORK / "wall.json"
        data = _load_json(path)
        key = run_tag(self.method)
        data[key] = round(data.get(key, 0.0) + now - self._last, 1)
        self._last = now
        _write_json(path, data)
        with self._lock:
            cpu = _process_cpu(self._pid) if self._pid is not None else None
            if cpu is not None and cpu > self._seen:
                _add_cpu(self.method, cpu - self._seen)
                self._seen = cpu

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._flush()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._flush()


def _process_cpu(pid: int) -> float | None:
    """CPU seconds (user + system, with its waited-for children) a running process has used so far, read from
    ``/proc`` (Linux); None where there is no ``/proc`` or the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        ticks = sum(int(x) for x in fields[11:15])  # fields 14-17 of proc(5): utime stime cutime cstime
    except (OSError, IndexError, ValueError):
        return None
    return ticks / os.sysconf("SC_CLK_TCK")


def cassette_counts(path: Path) -> int:
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip())


def cassette_models(path: Path) -> list[str]:
    """The model names the cassette's replies came from (what the tables must name)."""
    from workbench.jsonl import read_jsonl

    return sorted({str(e["model"]) for e in read_jsonl(path).rows if e.get("model")})


def partial_name(method: str) -> str:
    return f"{method}-{CONVERSATION}.partial.jsonl"


def seed_cassette(method: str) -> Path | None:
    """Start a recording from what the repository holds when this machine has no cassette for ``method``:
    the published cassette, else the partial one committed while it was being recorded (``--snapshot``), so
    that calls made in an earlier session replay instead of running again (and the recording's wall time, counted
    partly elsewhere, is then marked partial: ``_mark_seeded``). Returns the file used."""
    dst = WORK / "cassettes" / cassette_name(method)
    if dst.exists():
        return None
    for src in (PUBLISHED / cassette_name(method), PUBLISHED / partial_name(method)):
        if src.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            _mark_seeded(method)
            return src
    return None


def snapshot_partial(method: str) -> int:
    """Copy the complete lines of ``method``'s cassette being recorded next to the licence notice as
    ``M-<conversation>.partial.jsonl`` (to commit while a recording spans sessions); the number of lines copied."""
    data = (WORK / "cassettes" / cassette_name(method)).read_bytes()
    cut = data.rfind(b"\n") + 1
    dst = PUBLISHED / partial_name(method)
    tmp = dst.with_suffix(".tmp")
    tmp.write_bytes(data[:cut])
    os.replace(tmp, dst)
    return data[:cut].count(b"\n")


def record(method: str, model: str | None) -> int:
    """Two ``workbench eval`` subprocesses for ``method`` (answers, then the judge); the first non-zero exit
    status, else 0."""
    cassette = WORK / "cassettes" / cassette_name(method)
    cassette.parent.mkdir(parents=True, exist_ok=True)
    fresh = not cassette.exists()
    seeded = seed_cassette(method)
    if fresh and seeded is None and _process_cpu(os.getpid()) is not None:
        _mark_cpu_from_start(method)  # a fresh recording where /proc is read: its CPU counts from its first call
    if seeded:
        print(f"{method}: cassette seeded from {seeded.name}", flush=True)
    data = os.path.relpath(LOCOMO, ROOT)  # relative: the run manifests name no machine's paths
    base = [sys.executable, "-m", "workbench", "eval", "--method", method, "--data", f"locomo:{data}",
            "--conversations", CONVERSATION, "--categories", CATEGORIES,
            "--llm", f"local:{model}" if model else "local", "--cassette", str(cassette.relative_to(ROOT)),
            "--save-memories", "--no-progress", "--bounded-outputs"]  # loop-prone roles close as JSON
    from workbench.methods import REGISTRY

    if "profile" in REGISTRY[method]._param_names():  # the offline models' profile, named (methods.profile)
        base += ["--param", 'profile="small"']
    from workbench.llm.default import STATE_CACHE_ENV

    env = {k: v for k, v in os.environ.items() if k != STATE_CACHE_ENV}  # see the docstring: not for long runs
    with Heartbeat(method) as beat:
        for extra in (["--out", str((WORK / f"{run_tag(method)}-answers").relative_to(ROOT))],
                      ["--out", str((WORK / run_tag(method)).relative_to(ROOT)), "--judge", "same"]):
            cmd = base + extra
            print(f"[{datetime.now(timezone.utc):%H:%M:%S}] recording {method}: {' '.join(cmd[2:])}", flush=True)
            before = _children_cpu()
            with subprocess.Popen(cmd, env=env, cwd=ROOT) as proc:
                beat.watch(proc.pid)
                try:
                    rc = proc.wait()
                except BaseException:  # the recorder interrupted: no orphan left writing the cassette
                    proc.kill()
                    proc.wait()
                    raise
                finally:
                    seen = beat.unwatch()  # what the heartbeat already added while it ran
            _add_cpu(method, max(0.0, _children_cpu() - before - seen))
            if rc != 0:
                return rc
    return 0


def _children_cpu() -> float:
    """CPU seconds (user + system) used so far by this process's finished subprocesses."""
    import resource

    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _tag(file: str, key: str, method: str) -> None:
    """Add ``method``'s run tag to the list ``key`` of ``WORK/file`` (a note kept beside the timings it qualifies)."""
    path = WORK / file
    data = _load_json(path)
    data[key] = sorted({*data.get(key, []), run_tag(method)})
    _write_json(path, data)


def _mark_cpu_from_start(method: str) -> None:
    """Note in ``cpu.json`` that ``method``'s recording is measured from its start (``FROM_START``); one begun
    before the recorder measured CPU, or before it sampled a running subprocess, publishes ``cpu_partial``."""
    _tag("cpu.json", FROM_START, method)


def _mark_seeded(method: str) -> None:
    """Note in ``wall.json`` that ``method``'s cassette on this machine was seeded from a committed one: earlier
    sessions' wall time was counted on another machine, so the recording publishes ``wall_partial`` (a lower bound)."""
    _tag("wall.json", SEEDED, method)


def _add_cpu(method: str, seconds: float) -> None:
    """Add a subprocess's CPU seconds to ``cpu.json`` (summed over sessions, like the wall time): on a machine
    shared with tests the wall time overstates what a recording costs."""
    path = WORK / "cpu.json"
    data = _load_json(path)
    key = run_tag(method)
    data[key] = round(data.get(key, 0.0) + seconds, 1)
    _write_json(path, data)


def prefix_reuse(*paths: Path) -> dict | None:
    """Prompt tokens llama.cpp evaluated / sent, summed over the recording's live sessions, by call group
    (the method's own roles vs. the judge). None when no session left figures (e.g. recorded before
    the eval command wrote them)."""
    from benchmarks.bench_prefix_reuse import group_by_method
    from workbench.jsonl import read_jsonl

    sessions = [row for p in paths if p.exists() for row in read_jsonl(p).rows]
    if not sessions:
        return None
    groups, total = group_by_method(line.get("by_role") or {} for line in sessions)
    return {"sessions": len(sessions), "all_calls": total, "by_group": groups,
            "note": "prompt tokens llama.cpp evaluated / prompt tokens sent (1.0 = no reuse)"}


def already_published(method: str, plan: set[str]) -> bool:
    """The published cassette is there and either this machine's run answered every planned question or the
    recordings file holds its entry. The entry is enough on a fresh machine: its run folders are gone, and
    recording again would only replay the cassette and overwrite the recording's wall and CPU time with the
    replay's."""
    if not (PUBLISHED / cassette_name(method)).exists():
        return False
    entry = (_load_json(RECORDINGS).get("recordings") or {}).get(run_tag(method))
    return plan <= stored_ids(method) or (isinstance(entry, dict) and entry.get("questions") == len(plan))


def publish(method: str, model: str | None) -> dict:
    """Copy the finished cassette next to the licence notice and note the recording's figures."""
    from benchmarks.replay import repo_relative

    src = WORK / "cassettes" / cassette_name(method)
    dst = PUBLISHED / cassette_name(method)
    tmp = dst.with_suffix(".jsonl.tmp")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)
    (PUBLISHED / partial_name(method)).unlink(missing_ok=True)  # the finished cassette replaces it
    entry = {"method": method, "conversation": CONVERSATION, "categories": CATEGORIES,
             "questions": len(stored_ids(method)), "model": ", ".join(cassette_models(dst)) or model or "unknown",
             "judge": "the same model (LLMJudge)", "wall_s": _load_json(WORK / "wall.json").get(run_tag(method)),
             "cpu_s": _load_json(WORK / "cpu.json").get(run_tag(method)),
             "cpu_partial": run_tag(method) not in _load_json(WORK / "cpu.json").get(FROM_START, []),
             "wall_partial": run_tag(method) in _load_json(WORK / "wall.json").get(SEEDED, []),
             "cassette_entries": cassette_counts(dst), "cassette": repo_relative(dst),
             "published": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "machine": {"cpu_count": os.cpu_count()},
             "prefix_reuse": prefix_reuse(WORK / f"{run_tag(method)}-answers" / "prefix_stats.jsonl",
                                          WORK / run_tag(method) / "prefix_stats.jsonl")}
    data = _load_json(RECORDINGS) or {"benchmark": "real_scale_recordings", "recordings": {}}
    data["recordings"][run_tag(method)] = entry
    _write_json(RECORDINGS, data)
    return entry


def main(argv=None) -> int:
    global CONVERSATION
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=list(ORDER), help="methods, in recording order")
    parser.add_argument("--model", default=None, help="offline model name (default: the installed default)")
    parser.add_argument("--conversation", default=CONVERSATION,
                        help="LoCoMo conversation to record (default: %(default)s; others publish as M-<conv>.jsonl)")
    parser.add_argument("--snapshot", metavar="METHOD", help="copy METHOD's cassette being recorded (complete "
                        "lines) next to the licence notice as a .partial.jsonl to commit, and exit")
    args = parser.parse_args(argv)
    CONVERSATION = args.conversation
    if args.snapshot:
        print(f"{args.snapshot}: {snapshot_partial(args.snapshot)} calls in "
              f"{PUBLISHED / partial_name(args.snapshot)}", flush=True)
        return 0
    if not LOCOMO.exists():
        print(f"LoCoMo dev copy not found at {LOCOMO}; nothing to record", file=sys.stderr)
        return 2
    plan = set(planned_ids())
    for method in args.methods:
        if already_published(method, plan):
            entry = (_load_json(RECORDINGS).get("recordings") or {}).get(run_tag(method)) or {}
            print(f"{method}: already published, skipped ({PUBLISHED / cassette_name(method)}, recorded with "
                  f"{entry.get('model', 'a model not noted')}; delete its entry in {RECORDINGS.name} to record "
                  "it again)", flush=True)
            continue
        rc = record(method, args.model)
        missing = plan - stored_ids(method)
        if rc != 0 or missing:
            print(f"{method}: not finished (exit {rc}, {len(missing)} of {len(plan)} questions without a row); "
                  "rerun to resume", flush=True)
            return rc or 1
        print(f"{method}: published {publish(method, args.model)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
