"""Methods from command-line specs: ``--method NAME --param key=value ...``.

Shared by ``workbench build/ask`` and ``workbench eval`` (and anything else that builds a method
from strings), so that neither command line imports the other.
"""
from __future__ import annotations

import inspect
import json
from typing import Any, Iterable

from . import get_method
from .base import MemoryMethod


def parse_params(pairs: Iterable[str] | None) -> dict[str, Any]:
    """``["top_k=5", "mode=fast"]`` -> ``{"top_k": 5, "mode": "fast"}``: values are JSON when they
    parse as JSON, else plain strings. ``ValueError`` names a pair without ``=``."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--param expects key=value, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def build_method(name: str, llm, embedder, params: dict[str, Any] | None = None) -> MemoryMethod:
    """The registered method ``name`` with ``params``, given ``llm``/``embedder`` only when its
    constructor takes them (Full-Context has no embedder)."""
    cls = get_method(name)
    accepted = inspect.signature(cls.__init__).parameters
    kw = {k: v for k, v in (("llm", llm), ("embedder", embedder)) if k in accepted}
    return cls(**kw, **(params or {}))


__all__ = ["parse_params", "build_method"]
