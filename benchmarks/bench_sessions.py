"""A classroom opening the app at once: first-page latency and server memory per session.

Serves the demo run (every method, replayed from the committed cassette; no model) with
``python -m widgets.app`` in a child process, then opens N sessions at the same moment (N threads,
each one ``GET /``: Bokeh creates the session and builds its document before it answers, so this is
the time a student waits for the first page) and reads the server's resident memory before and
after. Reported per N: p50, p90 and max seconds, failures, and memory per session (the growth
divided by N). The sessions stay open (Bokeh keeps a session until it expires unused), as a class's
would. Figures, not assertions: written to benchmarks/results/sessions.json (or ``--out``).

Usage: python -m benchmarks.bench_sessions [--sessions 20,50] [--run DIR] [--out FILE]
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"


def _children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids += [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            continue
    return kids


def _rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants (the forked server processes), in MB."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            todo += _children(p)
        except OSError:
            continue
    return round(total / 1024, 1)


def _get(port: int, path: str = "/", timeout: float = 300) -> tuple[int, float]:
    t = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
    resp = conn.getresponse()
    resp.read()
    return resp.status, time.perf_counter() - t


def _wait(port: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited: {proc.stdout.read()}")
        try:
            _get(port, "/static/js/bokeh.min.js", timeout=10)
            return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError("the app did not start")


def burst(port: int, n: int) -> dict:
    """``n`` sessions opened at once; seconds until each first page arrived."""
    times, failures, lock, start = [], [], threading.Lock(), threading.Barrier(n)

    def one():
        start.wait()
        try:
            status, took = _get(port)
            with lock:
                (times if status == 200 else failures).append(took if status == 200 else status)
        except Exception as exc:  # a dropped connection is a failure of the server under load: counted
            with lock:
                failures.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    times.sort()
    q = statistics.quantiles(times, n=10) if len(times) >= 2 else times * 9
    return {"sessions": n, "served": len(times), "failures": failures[:5], "n_failures": len(failures),
            "p50_s": round(statistics.median(times), 2) if times else None,
            "p90_s": round(q[8], 2) if times else None, "max_s": round(times[-1], 2) if times else None}


def measure(run: Path, counts: list[int], procs: int = 1) -> list[dict]:
    from widgets.app import free_port

    rows, extra_args = [], ["--num-procs", str(procs)]
    for n in counts:  # a fresh server per count: each burst meets an app with no session open
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "widgets.app", "--run", str(run), "--port", str(port),
                                 *extra_args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)  # its forked servers in its process group
        try:
            _wait(port, proc)
            warm = max(_get(port)[1] for _ in range(max(1, procs)))  # each process's first session pays imports
            before = _rss_mb(proc.pid)
            row = burst(port, n)
            after = _rss_mb(proc.pid)
            row.update({"server_processes": procs, "first_session_ever_s": round(warm, 2), "rss_before_mb": before,
                        "rss_after_mb": after, "mb_per_session": round((after - before) / n, 1)})
            rows.append(row)
            print(json.dumps(row))
        finally:
            os.killpg(proc.pid, signal.SIGTERM)  # the forked server processes too, not only their parent
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", default="20,50")
    ap.add_argument("--procs", default="1,2", help="server process counts to measure (--num-procs)")
    ap.add_argument("--run", default=None, help="a run directory (default: the demo run, replayed)")
    ap.add_argument("--out", default=str(RESULTS / "sessions.json"))
    args = ap.parse_args(argv)
    counts = [int(x) for x in args.sessions.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        if args.run:
            run = Path(args.run)
        else:
            from benchmarks.bench_ui import demo_run

            run = demo_run(Path(tmp))
        rows = [row for procs in (int(x) for x in args.procs.split(",")) for row in measure(run, counts, procs)]
    out = {"what": "first page (GET /, which creates and builds the session) with N sessions opened at once",
           "run": "demo (every method, replayed)" if not args.run else os.path.basename(args.run),
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}, "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
