"""Regenerate ``docs/example_run/report.md``: the demo slice replayed from its committed cassette (no
model, no live call), reported by ``workbench report`` with the judge's cached audit
(``benchmarks/results/judge_audits.json``, written by ``workbench judge-audit``).

    .venv/bin/python scripts/make_example_report.py [--out runs/example] [--output docs/example_run/report.md]
"""
from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def title() -> str:
    from workbench.demo import DEMO

    return (f"Example run: the demo slice (sample-1, sessions 1-{DEMO.sessions}, {len(DEMO.questions)} questions), "
            "replayed from its cassette")


def main(argv=None) -> int:
    from workbench.cli import main as cli
    from workbench.demo import run_demo

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "runs" / "example"), help="scratch run directory")
    ap.add_argument("--output", default=str(ROOT / "docs" / "example_run" / "report.md"))
    a = ap.parse_args(argv)
    run_demo(out=Path(a.out), serve=False, llm_mode="replay")
    return cli(["report", a.out, "--title", title(), "--output", a.output])


if __name__ == "__main__":
    raise SystemExit(main())
