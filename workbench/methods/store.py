"""``UnitStore``: text units with provenance, embedded in a ``VectorIndex`` — the shared storage
every method builds on (RAG chunks, HyMem Level-1, AMA's three stores, RecMem's layers, facts).

A store is also a ``Retriever``: ``search(query, k, exclude) -> list[Hit]``, which is how MemR3
(or anything) drives another method's memory.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from ..index import VectorIndex
from ..trace import Hit


@runtime_checkable
class Retriever(Protocol):
    """What MemR3 and comparisons need from any memory: ranked hits, with a mask."""

    def search(self, query: str, k: int, exclude: frozenset = frozenset()) -> list[Hit]: ...


@dataclass(frozen=True)
class MemoryUnit:
    """One stored unit. ``source_ids`` are the ids of the turns it came from (provenance)."""

    id: str
    kind: str
    text: str
    source_ids: tuple[str, ...] = ()
    time: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "source_ids", tuple(self.source_ids))
        if self.time is not None and not isinstance(self.time, str):
            object.__setattr__(self, "time", self.time.isoformat())

    def hit(self, score: float = 0.0) -> Hit:
        return Hit(self.id, self.text, score, self.source_ids, self.kind)

    def row(self) -> dict:
        return {"id": self.id, "kind": self.kind, "text": self.text, "source_ids": list(self.source_ids),
                "time": self.time, **{k: v for k, v in self.meta.items() if k not in ("id", "kind", "text")}}


class UnitStore:
    """Units by id plus their embeddings. The embedder is a service: it is not pickled."""

    def __init__(self, embedder, name: str = "store"):
        self.embedder = embedder
        self.name = name
        self.units: dict[str, MemoryUnit] = {}
        self.index: VectorIndex | None = None

    def __len__(self) -> int:
        return len(self.units)

    def __iter__(self):
        return iter(self.units.values())

    def __contains__(self, unit_id: str) -> bool:
        return unit_id in self.units

    def __getitem__(self, unit_id: str) -> MemoryUnit:
        return self.units[unit_id]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embedder(list(texts))

    def add(self, units: Iterable[MemoryUnit], vectors: np.ndarray | None = None) -> list[MemoryUnit]:
        """Add (or replace) units; embeds their text in one batch unless vectors are given."""
        units = list(units)
        if not units:
            return []
        vecs = self.embed([u.text for u in units]) if vectors is None else np.asarray(vectors, dtype=np.float32)
        if self.index is None:
            self.index = VectorIndex(vecs.shape[1])
        self.index.add([u.id for u in units], vecs)
        for u in units:
            self.units[u.id] = u
        return units

    def update(self, unit_id: str, **changes) -> MemoryUnit:
        """Replace fields of a unit; re-embeds when the text changes."""
        old = self.units[unit_id]
        new = replace(old, **changes)
        if new.text != old.text:
            self.index.add([unit_id], self.embed([new.text]))
        self.units[unit_id] = new
        return new

    def delete(self, unit_id: str) -> MemoryUnit:
        unit = self.units.pop(unit_id)
        if self.index is not None:
            self.index.delete([unit_id])
        return unit

    def vector(self, unit_id: str) -> np.ndarray:
        return self.index.vector(unit_id)

    def search_vector(self, vector: np.ndarray, k: int, exclude: Iterable[str] = frozenset()) -> list[Hit]:
        if self.index is None or k <= 0:
            return []
        return [self.units[i].hit(s) for i, s in self.index.search(vector, k, exclude)]

    def search(self, query: str, k: int, exclude: frozenset = frozenset()) -> list[Hit]:
        if not self.units or k <= 0:
            return []
        return self.search_vector(self.embed([query])[0], k, exclude)

    def rows(self) -> list[dict]:
        return [u.row() for u in self.units.values()]

    def __getstate__(self):
        state = dict(self.__dict__)
        state["embedder"] = None
        return state

    def __repr__(self) -> str:
        return f"UnitStore({self.name!r}, units={len(self)})"


class MergedRetriever:
    """Search several retrievers and merge their hits by score (ties keep retriever order)."""

    def __init__(self, retrievers: Sequence[Retriever], name: str = "merged"):
        self.retrievers = list(retrievers)
        self.name = name

    def search(self, query: str, k: int, exclude: frozenset = frozenset()) -> list[Hit]:
        hits = [h for r in self.retrievers for h in r.search(query, k, exclude)]
        seen, out = set(), []
        for h in sorted(hits, key=lambda h: -h.score):
            if h.unit_id not in seen:
                seen.add(h.unit_id)
                out.append(h)
        return out[:k]
