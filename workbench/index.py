"""Vector index with stable string ids, update/delete, and exclusion masks (faiss inner product).

Vectors are expected L2-normalised, so inner product is cosine similarity. ``search`` takes an
``exclude`` set (MemR3's masking of already-retrieved ids) and over-fetches so that ``k`` results
survive the mask. Each index keeps its own id<->int mapping; deleted ids are removed from faiss.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .jsonl import read_json, write_text_atomic


class VectorIndex:
    def __init__(self, dim: int):
        import faiss

        self.dim = int(dim)
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))
        self._to_int: dict[str, int] = {}
        self._to_str: dict[int, str] = {}
        self._next = 0

    def __len__(self) -> int:
        return len(self._to_int)

    def __contains__(self, unit_id: str) -> bool:
        return unit_id in self._to_int

    @property
    def ids(self) -> list[str]:
        return list(self._to_int)

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Add new ids; an id already present is replaced (update)."""
        ids = list(ids)
        vectors = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32).reshape(len(ids), self.dim))
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate ids in one add() call")
        present = [i for i in ids if i in self._to_int]
        if present:
            self.delete(present)
        ints = np.arange(self._next, self._next + len(ids), dtype=np.int64)
        self._next += len(ids)
        for s, n in zip(ids, ints):
            self._to_int[s] = int(n)
            self._to_str[int(n)] = s
        if len(ids):
            self._index.add_with_ids(vectors, ints)

    update = add

    def delete(self, ids: Iterable[str]) -> int:
        ints = [self._to_int.pop(i) for i in ids if i in self._to_int]
        for n in ints:
            del self._to_str[n]
        if ints:
            self._index.remove_ids(np.array(ints, dtype=np.int64))
        return len(ints)

    def vector(self, unit_id: str) -> np.ndarray:
        return self._index.reconstruct(self._to_int[unit_id])

    def vectors(self, ids: Sequence[str] | None = None) -> np.ndarray:
        ids = self.ids if ids is None else list(ids)
        if not ids:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vector(i) for i in ids])

    def search(self, query: np.ndarray, k: int, exclude: Iterable[str] = frozenset()) -> list[tuple[str, float]]:
        """Top-``k`` (id, cosine) for one query vector, skipping ``exclude``."""
        exclude = set(exclude)
        if k <= 0 or not self._to_int:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(1, self.dim)
        want = min(len(self._to_int), k + len(exclude & self._to_int.keys()))
        scores, ints = self._index.search(q, want)
        out = []
        for score, n in zip(scores[0], ints[0]):
            if n < 0:
                continue
            sid = self._to_str[int(n)]
            if sid in exclude:
                continue
            out.append((sid, float(score)))
            if len(out) == k:
                break
        return out

    def similarities(self, query: np.ndarray, ids: Sequence[str]) -> np.ndarray:
        """Cosine of ``query`` with each of ``ids`` (no search)."""
        if not ids:
            return np.zeros(0, dtype=np.float32)
        return self.vectors(ids) @ np.asarray(query, dtype=np.float32).reshape(self.dim)

    # -- persistence --------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        ids = self.ids
        np.save(path / "vectors.npy", self.vectors(ids))
        write_text_atomic(path / "ids.json", json.dumps({"dim": self.dim, "ids": ids}))

    @classmethod
    def load(cls, path: str | Path) -> "VectorIndex":
        path = Path(path)
        meta = read_json(path / "ids.json")
        index = cls(meta["dim"])
        if meta["ids"]:
            index.add(meta["ids"], np.load(path / "vectors.npy"))
        return index

    def __getstate__(self):
        ids = self.ids
        return {"dim": self.dim, "ids": ids, "vectors": self.vectors(ids)}

    def __setstate__(self, state):
        self.__init__(state["dim"])
        if state["ids"]:
            self.add(state["ids"], state["vectors"])

    def __repr__(self) -> str:
        return f"VectorIndex(dim={self.dim}, size={len(self)})"
