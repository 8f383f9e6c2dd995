"""What the replay benchmarks share: ``ReplayProbe`` (a cassette client that accounts for every call),
the live calls of a results file, the latency model fitted from them, and repo-relative paths.

bench_compare and bench_overhead both import from here (and the latency model itself from
``workbench.llm.latency``), so neither imports the other at module level.
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

from workbench.llm import BaseLLM, CacheMiss
from workbench.llm.latency import LatencyModel
from workbench.llm.ledger import current_tags

ROOT = Path(__file__).resolve().parents[1]
LIVE_RESULTS = ROOT / "runs" / "record" / "results.jsonl"


def repo_relative(path) -> str:
    """A path as written into result files: relative to the checkout, never a machine's absolute path."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return p.name


class ReplayProbe(BaseLLM):
    """An LLM that replays a ``CachedLLM`` cassette and accounts for every call.

    Counts hits and ``CacheMiss`` per role (the miss is re-raised, so methods record it as the failure
    it is), keeps (role, phase, prompt and completion tokens, estimated latency) per hit, and with
    ``sleep_scale`` > 0 sleeps that many times the estimated latency under one lock (llama.cpp serves
    one call at a time). Built on ``BaseLLM``, so parsing, repair and the ledger behave as in a run.
    """

    def __init__(self, cached, latency: LatencyModel | None = None, *, sleep_scale: float = 0.0):
        super().__init__()
        self.cached = cached
        self.model = cached.model
        self.latency = latency or LatencyModel.nominal()
        self.sleep_scale = sleep_scale
        self.hits = 0
        self.misses: Counter = Counter()
        self.records: list[dict] = []
        self.slept_s = 0.0
        self._lock = threading.Lock()

    def _generate(self, messages, *, schema, temperature, seed, max_tokens, role):
        try:
            gen = self.cached._generate(messages, schema=schema, temperature=temperature, seed=seed,
                                        max_tokens=max_tokens, role=role)
        except CacheMiss:
            with self._lock:
                self.misses[role] += 1
            raise
        est = self.latency(gen.prompt_tokens or 0, gen.completion_tokens or 0)
        with self._lock:
            self.hits += 1
            self.records.append({"role": role, "phase": current_tags().get("phase", ""),
                                 "prompt_tokens": gen.prompt_tokens or 0,
                                 "completion_tokens": gen.completion_tokens or 0, "est_s": est})
            if self.sleep_scale > 0:
                t = time.perf_counter()
                time.sleep(est * self.sleep_scale)
                self.slept_s += time.perf_counter() - t
        return gen

    def phase_totals(self) -> dict:
        """Per phase: calls, prompt and completion tokens, estimated live seconds."""
        out: dict[str, Counter] = {}
        for r in self.records:
            c = out.setdefault(r["phase"] or "other", Counter())
            c.update(calls=1, prompt_tokens=r["prompt_tokens"], completion_tokens=r["completion_tokens"],
                     est_s=r["est_s"])
        return {k: {**v, "est_s": round(v["est_s"], 2)} for k, v in out.items()}

    @property
    def est_s(self) -> float:
        return sum(r["est_s"] for r in self.records)


def live_calls(path: Path) -> list[dict]:
    """Every live (uncached, error-free) call recorded in the answers of a results file."""
    out = []
    for row in _rows(path):
        for step in ((row.get("answer") or {}).get("steps") or []):
            for c in step.get("calls") or []:
                if not c.get("cached") and not c.get("error") and c.get("latency_s", 0) > 0:
                    out.append({"method": row["method"], "role": c.get("role", ""), "qa_id": row["qa_id"],
                                "prompt_tokens": c.get("prompt_tokens", 0),
                                "completion_tokens": c.get("completion_tokens", 0), "latency_s": c["latency_s"]})
    return out


def _rows(path: Path) -> list[dict]:
    from workbench.eval.store import ResultsStore

    return list(ResultsStore(path)) if Path(path).exists() else []


def fitted_or_nominal(path: Path = LIVE_RESULTS) -> LatencyModel:
    samples = [(c["prompt_tokens"], c["completion_tokens"], c["latency_s"]) for c in live_calls(path)]
    return LatencyModel.fit(samples, source=f"live query calls of {repo_relative(path)}") or LatencyModel.nominal()
