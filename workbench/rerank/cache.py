"""Memoised reranking: a (query, document) pair is scored once per run.

Why: H-Mem and MemR3 rerank overlapping candidate pools question after question (the same memory comes back
for related questions), and an endpoint call costs a round trip and, on a paid service, money. Persisted
(``path``), the scores also let a run that reranked through an endpoint be replayed where that endpoint is
not running, the way a cassette replays the LLM.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from .endpoint import finite_number


class CachedReranker:
    """Scores from ``inner`` memoised by exact (query, document); only for a ``pointwise`` reranker, whose
    score of a pair does not depend on the other documents of the call (a cross-encoder, an endpoint), since
    a cached score must be the one a fresh call would give.

    ``path``: a JSON file the scores are loaded from (when it exists) and written to by ``save()``; it records
    the reranker's name and is refused for another reranker."""

    pointwise = True

    def __init__(self, inner, path: str | Path | None = None):
        if not getattr(inner, "pointwise", False):
            raise ValueError(f"{getattr(inner, 'name', inner)!r} scores a document against its companions "
                             "(not pointwise): its scores cannot be memoised by (query, document)")
        self.inner = inner
        self.name = inner.name
        self.path = Path(path) if path else None
        self._cache: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        if self.path and self.path.exists():
            self._load(self.path)

    def __call__(self, query: str, documents: Sequence[str]) -> np.ndarray:
        docs = list(documents)
        with self._lock:
            missing = list(dict.fromkeys(d for d in docs if (query, d) not in self._cache))
        if missing:
            scores = np.asarray(self.inner(query, missing), dtype=np.float64)
            if scores.shape != (len(missing),):
                raise ValueError(f"{self.name} returned {scores.shape} scores for {len(missing)} documents")
            with self._lock:
                for d, s in zip(missing, scores):
                    self._cache[(query, d)] = float(s)
        with self._lock:
            self.misses += len(missing)
            self.hits += len(docs) - len(missing)
            return np.array([self._cache[(query, d)] for d in docs], dtype=np.float64)

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"rerank cache {path} cannot be read: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("scores"), list):
            raise ValueError(f'rerank cache {path} is not a rerank cache (no "scores" list)')
        if data.get("reranker") != self.name:
            raise ValueError(f"rerank cache {path} holds scores of {data.get('reranker')!r}, not of {self.name!r}")
        for k, row in enumerate(data["scores"]):
            ok = isinstance(row, list) and len(row) == 3 and isinstance(row[0], str) and isinstance(row[1], str) \
                and finite_number(row[2]) is not None
            if not ok:
                raise ValueError(f"rerank cache {path}: scores[{k}] is not [query, document, finite score]")
            self._cache[(row[0], row[1])] = float(row[2])

    def save(self) -> None:
        """Write the scores to ``path`` (no-op without one), atomically: a crash leaves the old file."""
        if not self.path:
            return
        with self._lock:
            rows = [[q, d, s] for (q, d), s in self._cache.items()]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"reranker": self.name, "scores": rows}, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self.path)

    def __repr__(self) -> str:
        return f"CachedReranker({self.inner!r})"
