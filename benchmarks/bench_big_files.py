"""A results file far beyond any real run: how long ``workbench report`` and the app take on it, and their peak memory.

Issue 68 measured a 1 GB ``results.jsonl`` taking ``workbench report`` 171 s and 8.3 GB, and the app 45 s to first
paint with 8.0 GB. The readers now stop at a stated limit (``workbench.jsonl.MAX_READ_BYTES`` / ``MAX_READ_ROWS``),
say what they left out, and share object keys between rows; this benchmark measures both sides on one generated
file.

The file is made of the real results rows in ``benchmarks/results/real_scale.jsonl`` (eight methods on LoCoMo, with
their traces), repeated with distinct question ids until it reaches ``--size-mb`` (every row a distinct key, so the
store keeps them all). Two measurements, each in a fresh process whose wall time and peak resident memory are read
by a launcher process (``resource.getrusage(RUSAGE_CHILDREN)``: the peak of that one child):

- ``report``: ``workbench report RUN --output FILE`` (the Markdown report, census included);
- ``app``: ``build_app(RUN)`` and its Bokeh model (``get_root``: what the server sends as the first page; timed as
  ``first_page_s``), then ``store.warm()`` (the read-ahead every tab shares; ``warm_s``). The peak covers both.

``--code DIR`` runs the measurements with another checkout of the project (``PYTHONPATH=DIR``; e.g. a worktree of
the commit before the limit: ``git worktree add --detach /tmp/old <commit>``) and records its commit: that is how
the "before" figures were taken. Results go to ``benchmarks/results/big_files.json`` under ``--label`` (other labels
in the file are kept). Never run by the test suite: it needs gigabytes of memory for the "before" side.

    python -m benchmarks.bench_big_files --label after
    python -m benchmarks.bench_big_files --label before --code /tmp/old
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "benchmarks" / "results" / "real_scale.jsonl"
OUT = ROOT / "benchmarks" / "results" / "big_files.json"

#: runs one command and prints its wall time and peak RSS as JSON: the launcher has no other child, so
#: RUSAGE_CHILDREN's peak is that command's own
LAUNCHER = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # kB on Linux
print(json.dumps({"rc": done.returncode, "wall_s": round(wall, 2), "peak_rss_mb": round(peak / 1024, 1),
                  "stdout_tail": done.stdout[-2000:], "stderr_tail": done.stderr[-2000:]}))
"""

#: the app's side, run in the child: times the first page and the read-ahead, prints them as JSON
APP = """
import json, sys, time
start = time.perf_counter()
import panel as pn
from widgets.app import build_app
imported = time.perf_counter()
app = build_app(sys.argv[1])
pn.panel(app).get_root()
first = time.perf_counter()
read_by_first_page = "results" in app.store._cache
app.store.warm()
warm = time.perf_counter()
print(json.dumps({"import_s": round(imported - start, 2), "first_page_s": round(first - imported, 2),
                  "warm_s": round(warm - first, 2), "rows_read": len(app.store.results()),
                  "results_read_by_first_page": read_by_first_page,
                  "problems": [e[:300] for e in app.store.errors][:5]}))
"""


def make_run(folder: Path, size_mb: float) -> dict:
    """A run directory whose ``results.jsonl`` holds real rows, repeated with distinct ids, to ``size_mb``, and one
    saved conversation (the tiny sample), so the app has a conversation to open and its read-ahead runs."""
    from workbench.data import load_sample
    from workbench.rundir import save_conversation

    source = [json.loads(line) for line in SOURCE.read_text(encoding="utf-8").splitlines() if line.strip()]
    folder.mkdir(parents=True, exist_ok=True)
    save_conversation(folder, load_sample("tiny_conversation")[0])
    target, size, rows = int(size_mb * 1024 * 1024), 0, 0
    with open(folder / "results.jsonl", "w", encoding="utf-8") as f:
        while size < target:
            for row in source:
                line = json.dumps({**row, "qa_id": f"{row['qa_id']}#{rows}"}, ensure_ascii=False) + "\n"
                f.write(line)
                size += len(line.encode("utf-8"))
                rows += 1
                if size >= target:
                    break
    return {"bytes": size, "mb": round(size / 2 ** 20, 1), "rows": rows, "made_from": str(SOURCE.relative_to(ROOT))}


def measure(argv: list[str], env: dict, timeout: float, code: Path) -> dict:
    """``argv`` run from ``code`` (``python -m``/``-c`` put the working folder first on ``sys.path``, before
    ``PYTHONPATH``: run from elsewhere, they would import that folder's ``workbench``)."""
    got = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], capture_output=True, text=True, env=env,
                         timeout=timeout, cwd=code)
    if got.returncode != 0:
        raise RuntimeError(f"the launcher failed: {got.stderr[-2000:]}")
    return json.loads(got.stdout)


def commit_of(code: Path) -> str | None:
    out = subprocess.run(["git", "-C", str(code), "rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(code), "status", "--porcelain", "--", "workbench", "widgets"],
                           capture_output=True, text=True).stdout.strip()
    return (out.stdout.strip() + ("+uncommitted" if dirty else "")) if out.returncode == 0 else None


def run(size_mb: float, label: str, code: Path, work: Path | None, timeout: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code)}
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        run_dir = Path(tmp) / "run"
        made = make_run(run_dir, size_mb)
        report = measure([sys.executable, "-m", "workbench", "report", str(run_dir), "--output",
                          str(Path(tmp) / "report.md")], env, timeout, code)
        warnings = [line for line in report.pop("stderr_tail").splitlines() if "read limit" in line]
        report.pop("stdout_tail")
        report["warning"] = warnings[0][:400] if warnings else None
        app = measure([sys.executable, "-c", APP, str(run_dir)], env, timeout, code)
        app.pop("stderr_tail")
        app.update(json.loads(app.pop("stdout_tail").strip().splitlines()[-1]) if app["rc"] == 0 else {})
    limits = {}
    try:
        probe = subprocess.run([sys.executable, "-c", "import workbench.jsonl as j; print(j.MAX_READ_BYTES, "
                                "j.MAX_READ_ROWS)"], capture_output=True, text=True, env=env, check=True,
                               cwd=code)
        limit_bytes, limit_rows = map(int, probe.stdout.split())
        limits = {"max_read_bytes": limit_bytes, "max_read_rows": limit_rows}
    except (subprocess.CalledProcessError, ValueError):
        limits = {"max_read_bytes": None, "max_read_rows": None}  # the code measured has no limit
    return {"label": label, "code_commit": commit_of(code), "date": datetime.now(timezone.utc).isoformat(
        timespec="seconds"), "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)", "file": made,
        **limits, "report": report, "app": app}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=1024, help="size of the generated results file (MB)")
    parser.add_argument("--label", default="after", help="the key these figures are kept under in big_files.json")
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--work", type=Path, default=None, help="where the generated run directory goes")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds each measurement may take")
    parser.add_argument("--out", type=Path, default=OUT, help="results file (JSON)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    figures = run(args.size_mb, args.label, args.code.resolve(), args.work, args.timeout)
    kept = json.loads(args.out.read_text()) if args.out.exists() else {}
    kept.setdefault("about", "workbench report and the app on one generated results file (bench_big_files.py)")
    kept.setdefault("runs", {})[args.label] = figures
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(kept, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    print(f"-> {args.out} ({time.perf_counter() - started:.0f} s)")
    return 0 if figures["report"]["rc"] == 0 and figures["app"]["rc"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
