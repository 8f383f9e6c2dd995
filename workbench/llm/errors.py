"""Errors raised at the LLM boundary."""
from ..failures import InWords


class LLMError(InWords, RuntimeError):
    """A model call failed after the client's own retries."""


class ParseError(LLMError):
    """The model's reply could not be parsed as the requested JSON, even after repair and retry.

    ``raw`` carries the last reply so callers can record it; long runs record and continue.
    """

    def __init__(self, message: str, raw: str = ""):
        super().__init__(message)
        self.raw = raw


class CacheMiss(LLMError):
    """A replay-only cache was asked for a call it has not recorded."""


class NoModelError(LLMError):
    """No language model is configured or installed."""
