"""MemR3 (Du et al.): ``method`` (the ``MemR3`` controller and its nodes), ``state`` (the frozen
router state and the pure guard rules), ``prompts``."""
from .method import MemR3

__all__ = ["MemR3"]
