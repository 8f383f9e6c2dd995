"""HyMem (Zhao et al.): ``method`` (the ``HyMem`` class), ``segment`` (event segmentation and the
Level-2 retriever), ``prompts``."""
from .method import HyMem

__all__ = ["HyMem"]
