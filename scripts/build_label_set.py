"""Merge items (scripts/export_label_items.py) with their labels into sample_data/labels/answers.jsonl.

    python scripts/build_label_set.py --pair ITEMS LABELS [--pair ITEMS LABELS ...] [--relabel LABELS ...]

Every item needs its label (same id); a relabel file holds second, blind readings of some ids. The result is
checked with ``workbench.eval.labels.load_labels`` before it replaces the set.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from workbench.data import load_dataset
from workbench.eval.checker import conversation_entities
from workbench.eval.label_audit import ENTITIES_FILE
from workbench.eval.labels import DEFAULT_LABELS, load_labels

KEEP = ("id", "source", "dataset", "conv_id", "qa_id", "category", "question", "gold", "prediction", "method",
        "evidence", "judge_label", "judge_model")


def _read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", nargs=2, action="append", metavar=("ITEMS", "LABELS"), required=True)
    ap.add_argument("--relabel", nargs="*", default=[], help="files of second readings")
    ap.add_argument("--out", default=str(DEFAULT_LABELS))
    ap.add_argument("--data", nargs="*", default=["sample"],
                    help="datasets the answers come from: their conversations' names go to entities.json, so the "
                         "checker can be audited without the datasets")
    args = ap.parse_args(argv)
    second = {r["id"]: {k: r[k] for k in ("lenient", "strict", "kind")} for p in args.relabel for r in _read(p)}
    rows = []
    for items_path, labels_path in args.pair:
        labels = {r["id"]: r for r in _read(labels_path)}
        for item in _read(items_path):
            label = labels.get(item["id"])
            if label is None:
                print(f"{items_path}: {item['id']} has no label in {labels_path}", file=sys.stderr)
                return 2
            row = {k: item.get(k) for k in KEEP}
            row.update({k: label[k] for k in ("lenient", "strict", "kind")}, note=label.get("note", ""))
            if item["id"] in second:
                row["relabel"] = second[item["id"]]
            rows.append(row)
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    load_labels(tmp)  # refuses a malformed set before it replaces the old one
    os.replace(tmp, args.out)
    convs = {r["conv_id"] for r in rows}
    names = {}
    for spec in args.data:
        for conv in load_dataset(spec):
            if conv.id in convs:
                names[conv.id] = conversation_entities(conv)
    missing = sorted(convs - set(names))
    if missing:
        print(f"no dataset given for {', '.join(missing)}: their names are not saved", file=sys.stderr)
        return 2
    with open(ENTITIES_FILE, "w", encoding="utf-8") as f:
        json.dump(names, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    print(f"{len(rows)} labelled answers ({len(second)} read twice) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
