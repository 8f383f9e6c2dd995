"""Write the unlabelled items of one run for reading (labelling protocol: sample_data/labels/PROTOCOL.md).

    python scripts/export_label_items.py RUN_DIR --data sample|locomo:<path> --source demo --out items.jsonl

Items are answerable questions (LoCoMo categories 1-4) with the gold, the prediction and each gold evidence
turn with its session date. LoCoMo conv-30 is refused: its answers are kept apart as an independent check.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from workbench.data import load_dataset
from workbench.eval.labels import items_from_rows
from workbench.eval.store import load_rows

HELD_OUT = {"conv-30"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="run directory (its results.jsonl)")
    ap.add_argument("--data", required=True, help="the dataset the run answered")
    ap.add_argument("--source", required=True, help="name of the run in the labelled set (demo, real_scale)")
    ap.add_argument("--out", required=True, help="items file to write")
    args = ap.parse_args(argv)
    rows = load_rows([Path(args.run) / "results.jsonl"])
    held = sorted({r.get("conv_id") for r in rows} & HELD_OUT)
    if held:
        print(f"refused: {', '.join(held)} is held out of the labelled set", file=sys.stderr)
        return 2
    items = items_from_rows(rows, load_dataset(args.data), source=args.source)
    with open(args.out, "w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(item, ensure_ascii=False) + "\n")
    print(f"{len(items)} items -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
