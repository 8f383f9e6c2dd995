"""Record the mechanism gallery (issue #40): each method that declares a gallery example
(``how_it_works.gallery``) on its own short conversation (``sample_data/gallery_conversations.json``), with
the demo model (Qwen2.5-Coder-1.5B), into ``sample_data/cassettes/gallery/<method>.jsonl``, and the run into
``runs/gallery``. What is run, and with which configuration, is ``workbench.gallery`` (the 1.5B demo profile's
overrides, bounded roles and shipped MiniLM calibration, then the example's own ``gallery_params``).

Nothing is scripted: if the model gets it wrong, the recording says so. Resumable like every ``workbench
eval`` run (finished questions are skipped, recorded calls replay). ``--replay`` checks that each cassette
replays with 0 misses, with no model.

``--profile paper`` records the methods' paper profile (``workbench.methods.profile``) on the same examples,
with the same model and none of the small model's configuration, into ``<method>.paper.jsonl``.

Usage: python scripts/record_gallery.py [--methods hymem memr3 ...] [--profile small|paper] [--replay]
       [--out runs/gallery]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from workbench.gallery import CASSETTES, METHOD_PROFILES, MODEL, eval_argv, gallery_methods, subdir  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]


def command(method: str, out: Path, *, replay: bool, profile: str = "small") -> list[str]:
    """The command line that records (or replays) ``method``'s example under a method ``profile``."""
    return [sys.executable, "-m", "workbench.cli", "eval", *eval_argv(method, out, replay=replay, profile=profile)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", nargs="*", default=list(gallery_methods()))
    ap.add_argument("--replay", action="store_true", help="replay the committed cassettes (no model)")
    ap.add_argument("--profile", choices=METHOD_PROFILES, default="small", help="the methods' profile (default small)")
    ap.add_argument("--out", default=None, help="run directory (default runs/gallery, runs/gallery-paper)")
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else ROOT / "runs" / subdir(args.profile)
    CASSETTES.mkdir(parents=True, exist_ok=True)
    failed = []
    for method in args.methods:
        cmd = command(method, out, replay=args.replay, profile=args.profile)
        print("$", " ".join(cmd[2:]), flush=True)
        if subprocess.call(cmd, cwd=ROOT) != 0:
            failed.append(method)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
