"""The baselines: ``simple`` (``FullContext``, ``NaiveRAG``, ``EagerFloor`` and its deprecated alias
``EagerFacts``) with ``simple_prompts``; ``mem0_style`` (``Mem0Style``) with ``mem0_style_prompts``."""
from .mem0_style import Mem0Style
from .simple import EagerFacts, EagerFloor, FullContext, NaiveRAG

__all__ = ["EagerFacts", "EagerFloor", "FullContext", "Mem0Style", "NaiveRAG"]
