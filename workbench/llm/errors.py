"""Errors raised at the LLM boundary."""
from ..failures import EnvironmentFailure, InWords


class LLMError(InWords, RuntimeError):
    """A model call failed after the client's own retries."""


class ParseError(LLMError):
    """The model's reply could not be parsed as the requested JSON, even after repair and retry.

    ``raw`` carries the last reply so callers can record it; long runs record and continue. ``local_repair``:
    why ``json_repair``'s reading of the reply was refused too (``jsonparse.read_json``), None when not tried.
    """

    def __init__(self, message: str, raw: str = ""):
        super().__init__(message)
        self.raw = raw
        self.local_repair: str | None = None


class CacheMiss(LLMError):
    """A replay-only cache was asked for a call it has not recorded."""


class NoModelError(LLMError):
    """No language model is configured or installed."""


class CassetteWriteFailed(EnvironmentFailure):
    """A reply could not be recorded in the cassette (a full or read-only disk): the run stops with this, never
    a failure row of the method (``EnvironmentFailure``). The reply was received but is not kept; the next run
    asks for it again. ``path`` is the cassette, ``error`` the ``OSError``."""

    def __init__(self, path, error: OSError):
        self.path, self.error = str(path), error
        why = error.strerror or str(error)
        super().__init__(f"cannot write the cassette {path}: {why}; the run was stopped, its finished rows are kept. "
                         "Free some space (or make the folder writable), then run the same command again to resume")
