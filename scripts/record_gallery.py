"""Record the mechanism gallery (issue #40): each paper's method on its own short gallery conversation
(``sample_data/gallery_conversations.json``), with the demo model (Qwen2.5-Coder-1.5B), into
``sample_data/cassettes/gallery/<method>.jsonl``, and the run into ``runs/gallery``.

Each method runs with the configuration the 1.5B demo records it with (``sample_data/demo_profiles.json``,
profile ``1.5b``: its overrides, bounded roles and shipped MiniLM calibration), so the gallery shows what the
offline setting does with a conversation where the mechanism has one clear right outcome; MemR3 runs with
one chunk per retrieval (the demo's ``memr3[one-chunk]`` variant), so that its router has something to miss.
Nothing is scripted: if the model gets it wrong, the recording says so. Resumable like every ``workbench
eval`` run (finished questions are skipped, recorded calls replay). ``--replay`` checks that each cassette
replays with 0 misses, with no model.

Usage: python scripts/record_gallery.py [--methods hymem memr3 ...] [--replay] [--out runs/gallery]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASSETTES = ROOT / "sample_data" / "cassettes" / "gallery"
#: method -> its gallery conversation, and the demo variant whose parameters it runs with (None: the method's)
GALLERY = {"hymem": ("gallery-hymem", None), "ama": ("gallery-ama", None), "hmem": ("gallery-hmem", None),
           "recmem": ("gallery-recmem", None), "memr3": ("gallery-memr3", "memr3[one-chunk]")}
MODEL = "local:qwen2.5-coder-1.5b"


def params_for(method: str, variant: str | None) -> dict:
    """The 1.5B demo profile's parameters for ``method`` (and its variant's over them)."""
    from workbench.demo import DEMO_15B

    return {**DEMO_15B.overrides.get(method, {}), **(DEMO_15B.variants.get(variant, {}) if variant else {})}


def command(method: str, out: Path, *, replay: bool) -> list[str]:
    conv, variant = GALLERY[method]
    cassette = CASSETTES / f"{method}.jsonl"
    cmd = [sys.executable, "-m", "workbench.cli", "eval", "--method", method, "--data", "gallery",
           "--conversations", conv, "--llm", f"replay:{cassette}" if replay else MODEL,
           "--judge", "same", "--save-memories", "--no-progress", "--bounded-outputs",
           "--calibration", "shipped:all-MiniLM-L6-v2-int8", "--out", str(out)]
    if not replay:
        cmd += ["--cassette", str(cassette)]
    for key, value in params_for(method, variant).items():
        cmd += ["--param", f"{key}={json.dumps(list(value) if isinstance(value, tuple) else value)}"]
    return cmd


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", nargs="*", default=list(GALLERY))
    ap.add_argument("--replay", action="store_true", help="replay the committed cassettes (no model)")
    ap.add_argument("--out", default=str(ROOT / "runs" / "gallery"))
    args = ap.parse_args(argv)
    CASSETTES.mkdir(parents=True, exist_ok=True)
    failed = []
    for method in args.methods:
        cmd = command(method, Path(args.out), replay=args.replay)
        print("$", " ".join(cmd[2:]), flush=True)
        if subprocess.call(cmd, cwd=ROOT) != 0:
            failed.append(method)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
