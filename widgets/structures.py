"""Inputs of the structure views (``TreeView``, ``GraphView``, ``ClusterView``): a built method or a
saved ``structures.json`` dict, and the conversation to show source turns from.

One module below every view, so that the views import it and never each other's helpers.
"""
from __future__ import annotations

from typing import Any, Mapping


def structures_of(obj: Any) -> dict:
    """A structures dict from a built method (``obj.structures()``) or a saved ``structures.json`` dict."""
    if isinstance(obj, Mapping):
        return dict(obj)
    if callable(getattr(obj, "structures", None)):
        return obj.structures()
    raise TypeError(f"expected a built method with .structures() or a structures dict, got {type(obj).__name__}")


def conversation_of(obj: Any, conversation=None):
    """The conversation given, else the one a built method ingested (None for a plain dict)."""
    return conversation if conversation is not None else getattr(obj, "conversation_", None)
