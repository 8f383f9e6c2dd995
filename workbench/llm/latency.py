"""``LatencyModel``: the seconds one LLM call takes, from its token counts.

``per_call + prompt_tokens / prompt_rate + completion_tokens / gen_rate``. The benchmarks price
replayed runs with it, and ``workbench.eval.estimate`` prices a run before it starts. Three sources:

- ``nominal()``: OFFLINE.md's measured throughput of the offline model (Qwen2.5-Coder-0.5B Q4_K_M,
  llama-cpp-python AVX2 build, 2 threads: 116 prompt tok/s at a ~2.5k-token prompt, 24 generated tok/s);
- ``api_nominal()``: a rough figure for a hosted OpenAI-compatible API (labelled as rough: tokens and
  cost are the reliable part of an API estimate, its wall time depends on the provider's load);
- ``fit(samples)``: least squares on live ``(prompt_tokens, completion_tokens, latency_s)`` calls
  (every run's manifest keeps its live calls' totals and a sample of them, so the model is refitted
  from real runs with ``from_manifests``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from ..jsonl import loads_strict


@dataclass(frozen=True)
class LatencyModel:
    """Seconds of one call from its token counts (serial calls: llama.cpp serves one at a time)."""

    per_call_s: float
    prompt_tok_s: float
    gen_tok_s: float
    source: str
    calls: int = 0  # live calls fitted (0 for the nominal model)
    r2: float | None = None

    def __call__(self, prompt_tokens: int, completion_tokens: int) -> float:
        return self.per_call_s + prompt_tokens / self.prompt_tok_s + completion_tokens / self.gen_tok_s

    def total(self, calls: float, prompt_tokens: float, completion_tokens: float) -> float:
        return calls * self.per_call_s + prompt_tokens / self.prompt_tok_s + completion_tokens / self.gen_tok_s

    @classmethod
    def nominal(cls) -> "LatencyModel":
        # OFFLINE.md: Qwen-0.5B AVX2, n_threads=2: 116 prompt tok/s (~2.5k-token prompt), 24 gen tok/s.
        return cls(0.0, 116.0, 24.0, "nominal: OFFLINE.md throughput of the offline model, 2 idle cores")

    @classmethod
    def api_nominal(cls) -> "LatencyModel":
        # A rough hosted-API figure (about 0.5 s to first token, fast prefill, ~60 tok/s decoding);
        # used only when no live calls of the backend have been recorded yet.
        return cls(0.5, 5000.0, 60.0, "rough: a hosted OpenAI-compatible API (no live calls recorded yet)")

    @classmethod
    def fit(cls, samples: Iterable, *, min_calls: int = 30, min_r2: float = 0.8,
            source: str = "") -> "LatencyModel | None":
        """From live (prompt_tokens, completion_tokens, latency_s) samples; None without any.

        Least squares (non-negative) on all three terms when there are ``min_calls`` calls and the fit
        explains the latencies (R^2 >= ``min_r2``) with positive rates; otherwise the nominal model
        scaled by one load factor (sum of measured / sum of nominal latencies), which stays sensible
        on a handful of similar calls, such as a recording that shared the CPU.
        """
        data = np.asarray([(1.0, p, c, s) for p, c, s in samples if s > 0], dtype=float)
        if len(data) == 0:
            return None
        full = cls._least_squares(data, source) if len(data) >= min_calls else None
        if full is not None and full.r2 is not None and full.r2 >= min_r2:
            return full
        nom = cls.nominal()
        k = float(data[:, 3].sum()) / float(sum(nom(float(p), float(c)) for _, p, c, _ in data))
        pred = np.array([k * nom(float(p), float(c)) for _, p, c, _ in data])
        return cls(0.0, round(nom.prompt_tok_s / k, 2), round(nom.gen_tok_s / k, 2),
                   f"{source or 'live calls'}: nominal x load factor {k:.2f}", len(data), _r2(data[:, 3], pred))

    @classmethod
    def _least_squares(cls, data: np.ndarray, source: str) -> "LatencyModel | None":
        from scipy.optimize import nnls

        if np.ptp(data[:, 1]) == 0 or np.ptp(data[:, 2]) == 0:
            return None
        coef, _ = nnls(data[:, :3], data[:, 3])
        if coef[1] <= 0 or coef[2] <= 0:
            return None
        return cls(round(float(coef[0]), 4), round(1 / coef[1], 2), round(1 / coef[2], 2),
                   f"{source or 'live calls'}: least squares", len(data), _r2(data[:, 3], data[:, :3] @ coef))

    @classmethod
    def from_manifests(cls, paths: Iterable, *, model: str | None = None) -> "LatencyModel | None":
        """Refit from the live-call samples that run manifests keep under ``spent.live_call_samples``.

        ``paths``: ``*.manifests.jsonl`` files (one manifest per line) or ``manifest.json`` run files;
        ``model`` keeps only manifests of that LLM. Unreadable files and lines are skipped (and counted
        in ``source``): these files are untrusted input.
        """
        samples, bad, names = [], 0, []
        for path in map(Path, paths):
            if not path.is_file():
                continue
            names.append(path.name)
            docs, skipped = _manifest_docs(path)
            bad += skipped
            for doc in docs:
                if model and doc.get("llm_model") != model:
                    continue
                spent = doc.get("spent") if isinstance(doc.get("spent"), dict) else {}
                for s in spent.get("live_call_samples") or []:
                    if isinstance(s, (list, tuple)) and len(s) == 3 and all(
                            isinstance(x, (int, float)) and not isinstance(x, bool) for x in s):
                        samples.append(tuple(float(x) for x in s))
        note = f"live calls in {', '.join(names) or 'no manifest'}" + (f" ({bad} unreadable entries skipped)"
                                                                      if bad else "")
        return cls.fit(samples, source=note)

    def to_dict(self) -> dict:
        return asdict(self)


def _r2(y: np.ndarray, pred: np.ndarray) -> float | None:
    ss = float(((y - y.mean()) ** 2).sum())
    return round(1 - float(((y - pred) ** 2).sum()) / ss, 3) if ss else None


def _manifest_docs(path: Path) -> tuple[list[dict], int]:
    """The manifests in one file (a JSONL of manifests, or a run's manifest.json) and how many were unreadable."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".json":
        try:
            doc = loads_strict(text)
        except ValueError:  # invalid, too deep, or a number out of range: counted as unreadable
            return [], 1
        evals = doc.get("evaluations") if isinstance(doc, dict) else None
        return [d for d in evals or [] if isinstance(d, dict)], 0
    docs, bad = [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            doc = loads_strict(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(doc, dict):
            docs.append(doc)
    return docs, bad


def latency_model_for(llm, *, history: Iterable = ()) -> LatencyModel:
    """The latency model of a backend: refitted from ``history`` manifests when they hold live calls of
    its model, else the offline model's measured throughput (llama.cpp) or the rough API figure."""
    base = getattr(llm, "inner", None) or llm  # a record/replay cassette prices its live model
    model = getattr(base, "model", None)
    fitted = LatencyModel.from_manifests(history, model=model) if history else None
    if fitted is not None:
        return fitted
    if type(base).__name__ == "OpenAIChat" or getattr(base, "is_api", False):
        return LatencyModel.api_nominal()
    return LatencyModel.nominal()
