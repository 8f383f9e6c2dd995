"""Failures said in words: what went wrong, before the exception's own message and type.

A result row's ``error`` is read by people comparing methods, not by the developer who wrote the
method: ``IndexError: list index out of range`` says where the code broke, not what failed. So
``describe_error`` leads with a phrase for the kind of failure (a missing item, a value of the
wrong type, a model server that did not answer...), then the exception's message, then its type
in brackets (kept for whoever debugs it). Failures that already speak in words (``InWords``:
``LLMError`` and its kinds, whose messages this package writes) keep their message as it is.
``EnvironmentFailure`` is the one failure that is never a row's: it stops the run.
"""
from __future__ import annotations


class InWords(Exception):
    """Marks an error whose message this package wrote to say what failed (kept as it is)."""


class EnvironmentFailure(BaseException):
    """The machine failed a run, not the method: a file the run must write (the record/replay cassette) could not be
    written, on a full or read-only disk. Recorded as the method's failure, it would score as a wrong answer and a
    plain resume would keep it; so it stops the run instead (the rows already written are kept, and running the
    same command again resumes). A ``BaseException``, as ``KeyboardInterrupt`` is, because methods take fallback
    paths on ``except Exception`` and the harness turns an ``Exception`` into a failure row: neither may catch
    this. ``workbench`` prints its message in one line (``cli.main``)."""


#: exception type -> what it means for a reader of a result row (the first matching base wins)
WORDS: tuple[tuple[type[BaseException], str], ...] = (
    (TimeoutError, "an operation took too long and was stopped"),
    (ConnectionError, "a connection (to a model server?) failed"),
    (MemoryError, "ran out of memory"),
    (RecursionError, "data nested too deeply to process"),
    (IndexError, "an item the method expected is missing (an index past the end of a list)"),
    (KeyError, "a field or entry the method expected is missing"),
    (ZeroDivisionError, "a division by zero (an empty set where a count was expected)"),
    (UnicodeError, "text that could not be encoded or decoded"),
    (TypeError, "a value of the wrong type reached the method"),
    (ValueError, "a value the method could not use"),
    (AttributeError, "the method used a part of an object that is not there"),
    (NotImplementedError, "the method does not implement this step"),
    (OSError, "a file or system operation failed"),
)


def describe_error(exc: BaseException, doing: str | None = None) -> str:
    """One line: ``[doing failed: ]what happened: message [Type]`` (``InWords`` errors: their own message)."""
    message = " ".join(str(exc).split())
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        message = repr(exc.args[0])
    if isinstance(exc, InWords):
        text = message or "the model call failed"
    else:
        words = next((w for kind, w in WORDS if isinstance(exc, kind)), "an unexpected error")
        text = f"{words}: {message} [{type(exc).__name__}]" if message else f"{words} [{type(exc).__name__}]"
    return f"{doing} failed: {text}" if doing else text
