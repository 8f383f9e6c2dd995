"""The one boundary to language models. Methods receive an ``llm`` and call ``llm.complete``."""
from .base import LLM, BaseLLM, Completion, Generation, as_messages
from .cache import CachedLLM, cache_key
from .default import default_llm, llm_from_options, llm_from_spec, local_llm
from .errors import CacheMiss, LLMError, NoModelError, ParseError
from .fake import ScriptedLLM
from .jsonparse import extract_json, parse_json
from .ledger import Ledger, llm_tags, track
from .tokens import count_message_tokens, count_tokens


def __getattr__(name):  # heavy optional clients load lazily
    if name == "OpenAIChat":
        from .openai_chat import OpenAIChat

        return OpenAIChat
    if name == "LlamaCpp":
        from .llamacpp import LlamaCpp

        return LlamaCpp
    raise AttributeError(name)


__all__ = ["LLM", "BaseLLM", "Completion", "Generation", "as_messages", "CachedLLM", "cache_key",
           "default_llm", "llm_from_options", "llm_from_spec", "local_llm", "CacheMiss", "LLMError", "NoModelError",
           "ParseError", "ScriptedLLM",
           "extract_json", "parse_json", "Ledger", "llm_tags", "track", "count_tokens", "count_message_tokens",
           "OpenAIChat", "LlamaCpp"]
