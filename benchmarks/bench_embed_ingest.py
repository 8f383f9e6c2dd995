"""MiniLM ingest speed at 1x LoCoMo: length-grouped batches (shipped) against input-order batches.

Input: every turn of one LoCoMo conversation as NaiveRAG stores it (``[date] speaker: text``), the
texts an ingest embeds (``../shared/data/locomo``; the sample conversation when it is absent).
``length_sorted`` is ``MiniLMEmbedder`` as shipped (texts grouped by token count, each batch of 32
padded to its own longest text); ``input_order`` feeds the same embedder 32 texts at a time in
input order, which is how it batched before #21. The largest component difference between the two
vectors of any text is reported: it must be 0 (a vector does not depend on its batch), else
recorded threshold decisions would move. Best of ``--repeats``.

Writes benchmarks/results/embed_ingest.json. Usage: python -m benchmarks.bench_embed_ingest
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10_dev.json"


def conversation_texts(conv_id: str, locomo: Path = LOCOMO) -> tuple[list[str], str]:
    from workbench.data import load_dataset, load_sample
    from workbench.methods.baselines import NaiveRAG

    if locomo.exists():
        conv, label = load_dataset(f"locomo:{locomo}")[conv_id], f"locomo {conv_id}"
    else:
        conv, label = load_sample()[0], "sample-1 (../shared/data absent)"
    return [u.text for u in NaiveRAG(chunking="turn")._chunks(conv)], label


def input_order(embedder, texts, batch_size: int = 32) -> np.ndarray:
    """Embed texts 32 at a time in input order (the batching before #21)."""
    return np.concatenate([embedder(texts[i:i + batch_size]) for i in range(0, len(texts), batch_size)])


def padded_lengths(texts, batch_size: int = 32) -> dict:
    """Tokens the model sees: real, padded in input-order batches, padded in length-sorted batches."""
    from tokenizers import Tokenizer

    import workbench.embed as E

    tok = Tokenizer.from_file(str(Path(E.__file__).parent / "minilm_tokenizer.json"))
    tok.enable_truncation(256)
    tok.enable_padding()
    before = sum(len(e.ids) for i in range(0, len(texts), batch_size)
                 for e in tok.encode_batch(texts[i:i + batch_size]))
    tok.no_padding()
    lens = sorted(len(e.ids) for e in tok.encode_batch(texts))
    now = sum(max(lens[i:i + batch_size]) * len(lens[i:i + batch_size]) for i in range(0, len(lens), batch_size))
    return {"real_tokens": sum(lens), "padded_tokens_input_order": before, "padded_tokens_length_sorted": now,
            "mean_tokens_per_text": round(sum(lens) / len(lens), 1), "max_tokens_per_text": lens[-1]}


def best_of(fn, repeats: int) -> tuple[float, np.ndarray]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversation", default="conv-30")
    ap.add_argument("--locomo", type=Path, default=LOCOMO, help="the LoCoMo dev file (default ../shared/data/...)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(RESULTS / "embed_ingest.json"))
    ap.add_argument("--note", default="best of the repeats; say here what else the machine was running")
    args = ap.parse_args(argv)
    from workbench.embed import MiniLMEmbedder

    texts, label = conversation_texts(args.conversation, args.locomo)
    emb = MiniLMEmbedder()
    emb(["warm up"])
    t_cur, v_cur = best_of(lambda: input_order(emb, texts), args.repeats)
    t_sort, v_sort = best_of(lambda: emb(texts), args.repeats)
    diff = float(np.abs(v_sort - v_cur).max())
    result = {
        "benchmark": "embed_ingest", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count()},
        "input": f"{label}: {len(texts)} turn chunks as NaiveRAG stores them",
        "embedder": "all-MiniLM-L6-v2 int8 ONNX, batch 32, 2 threads", "repeats": args.repeats,
        "texts": len(texts), **padded_lengths(texts),
        "input_order": {"seconds": round(t_cur, 3), "texts_per_s": round(len(texts) / t_cur, 1),
                        "shipped": False},
        "length_sorted": {"seconds": round(t_sort, 3), "texts_per_s": round(len(texts) / t_sort, 1),
                          "shipped": True},
        "speedup": round(t_cur / t_sort, 2), "max_abs_diff": diff,
        "note": args.note,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    shown = ("texts", "input_order", "length_sorted", "speedup", "max_abs_diff")
    print(json.dumps({k: result[k] for k in shown}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
