"""RecMem (Dai et al.): ``method`` (the ``RecMem`` class), ``trigger`` (the recurrence gate and its
offline replay and calibration), ``inspection`` (the read-only views' bodies), ``prompts``."""
from .method import RecMem

__all__ = ["RecMem"]
