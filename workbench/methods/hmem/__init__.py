"""H-Mem (Yu et al.): ``method`` (the ``HMem`` class: parameters, offline indexing, the answering
loop), ``tree`` (the temporal-semantic tree), ``graph`` (the entity graph and sub-query plans),
``retrieval`` (the online steps and ``HMemRetriever``), ``prompts``."""
from .method import HMem
from .retrieval import HMemRetriever

__all__ = ["HMem", "HMemRetriever"]
