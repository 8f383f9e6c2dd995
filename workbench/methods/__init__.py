"""Memory methods and baselines, all on the ``MemoryMethod`` contract, one subpackage per method.

``REGISTRY`` maps the names used on the command line and in result files to classes; it is filled from
the entry-point group ``workbench.methods`` (``registry``), where plugins register the same way the
built-ins do, and ``register(cls)`` adds a class made at run time. ``DEPRECATED`` maps old names still
registered (so saved runs and result files load) to the name to use instead. Shared pieces stay at this
level: ``base`` (the contract), ``registry``, ``store``, ``common``, ``answer_prompt``, ``calibration``,
``spec``, ``progress`` and ``moved`` (old module paths of saved memories).
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

from .registry import (DEPRECATED, REGISTRY, PluginWarning, display_name, display_options, get_method, readable_text,
                       register)


__all__ = ["MemoryMethod", "NotIngestedError", "FullContext", "NaiveRAG", "EagerFloor", "EagerFacts", "Mem0Style",
           "HyMem", "AMA", "HMem", "RecMem", "MemR3",
           "MemoryUnit", "DEPRECATED", "MergedRetriever", "Retriever", "UnitStore", "REGISTRY", "get_method",
           "method_base", "register", "PluginWarning", "display_name", "display_options",
           "readable_text"]
