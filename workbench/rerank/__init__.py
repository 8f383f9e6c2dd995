"""Rerankers: ``reranker(query, documents) -> np.ndarray`` of one relevance score per document (higher is more
relevant; only the order within one call is meaningful). The paper methods that rerank (H-Mem, MemR3) take one
as the service parameter ``reranker=`` (None: no reranking, a departure from those papers)."""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Reranker(Protocol):
    name: str

    def __call__(self, query: str, documents: Sequence[str]) -> np.ndarray: ...
