"""Memory methods and baselines, all on the ``MemoryMethod`` contract.

``REGISTRY`` maps the names used on the command line and in result files to classes. Methods
that are not implemented yet are simply absent. ``DEPRECATED`` maps old names still registered (so
saved runs and result files load) to the name to use instead.
"""
from __future__ import annotations

import importlib

from .base import MemoryMethod, NotIngestedError
from .baselines import EagerFacts, EagerFloor, FullContext, NaiveRAG
from .mem0_style import Mem0Style
from .store import MemoryUnit, MergedRetriever, Retriever, UnitStore

REGISTRY: dict[str, type[MemoryMethod]] = {"full_context": FullContext, "naive_rag": NaiveRAG,
                                           "eager_floor": EagerFloor, "mem0_style": Mem0Style,
                                           "eager_facts": EagerFacts}
DEPRECATED: dict[str, str] = {"eager_facts": "eager_floor"}

# Paper methods live in their own modules; each registers here when present.
for _module, _cls in (("hymem", "HyMem"), ("ama", "AMA"), ("hmem", "HMem"), ("recmem", "RecMem"), ("memr3", "MemR3")):
    try:
        _mod = importlib.import_module(f"{__name__}.{_module}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{_module}":
            raise
        continue
    REGISTRY[getattr(_mod, _cls).name] = getattr(_mod, _cls)
    globals()[_cls] = getattr(_mod, _cls)


def get_method(name: str) -> type[MemoryMethod]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; available: {sorted(REGISTRY)}") from None


__all__ = ["MemoryMethod", "NotIngestedError", "FullContext", "NaiveRAG", "EagerFloor", "EagerFacts", "Mem0Style",
           "MemoryUnit", "DEPRECATED",
           "MergedRetriever", "Retriever", "UnitStore", "REGISTRY", "get_method"]
