"""Memory methods and baselines, all on the ``MemoryMethod`` contract, one subpackage per method.

``REGISTRY`` maps the names used on the command line and in result files to classes.
``DEPRECATED`` maps old names still registered (so saved runs and result files load) to the name
to use instead. Shared pieces stay at this level: ``base`` (the contract), ``store``, ``common``,
``answer_prompt``, ``calibration``, ``spec``, ``progress`` and ``moved`` (old module paths of
saved memories).
"""
from __future__ import annotations

from .ama import AMA
from .base import MemoryMethod, NotIngestedError, method_base
from .baselines import EagerFacts, EagerFloor, FullContext, Mem0Style, NaiveRAG
from .hmem import HMem
from .hymem import HyMem
from .memr3 import MemR3
from .recmem import RecMem
from .store import MemoryUnit, MergedRetriever, Retriever, UnitStore

REGISTRY: dict[str, type[MemoryMethod]] = {cls.name: cls for cls in (
    FullContext, NaiveRAG, EagerFloor, Mem0Style, EagerFacts, HyMem, AMA, HMem, RecMem, MemR3)}
DEPRECATED: dict[str, str] = {"eager_facts": "eager_floor"}


def get_method(name: str) -> type[MemoryMethod]:
    """The class of a registered name, or of a labelled variant's name (``ama[probe]`` -> AMA)."""
    try:
        return REGISTRY[method_base(name)]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; available: {sorted(REGISTRY)}") from None


__all__ = ["MemoryMethod", "NotIngestedError", "FullContext", "NaiveRAG", "EagerFloor", "EagerFacts", "Mem0Style",
           "HyMem", "AMA", "HMem", "RecMem", "MemR3",
           "MemoryUnit", "DEPRECATED", "MergedRetriever", "Retriever", "UnitStore", "REGISTRY", "get_method",
           "method_base"]
