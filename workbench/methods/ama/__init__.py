"""AMA (Huang et al.): ``method`` (the ``AMA`` class), ``agents`` (the four agents' calls and the
Refresher's edits, as functions of the method), ``prompts``."""
from .method import AMA

__all__ = ["AMA"]
