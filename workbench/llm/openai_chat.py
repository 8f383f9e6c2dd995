"""``OpenAIChat``: OpenAI and any OpenAI-compatible server (vLLM, Ollama, llama.cpp's server).

Structured output degrades gracefully: ``json_schema`` (OpenAI) -> ``json_object`` + ``schema``
(llama.cpp's server rejects ``json_schema`` but grammar-constrains this form) -> plain text with
the schema in the prompt and tolerant extraction. The first mode a server accepts is remembered.
Rate limits (429), 408/409, 5xx, timeouts and dropped connections are retried by the ``openai``
client itself (``max_retries``: exponential backoff with jitter, honouring the server's
``Retry-After``); the number of requests in flight is bounded by a semaphore.
"""
from __future__ import annotations

import json
import threading

from .base import BaseLLM, Generation
from .errors import LLMError
from .redact import redact_text, redact_url

STRUCTURED_MODES = ("json_schema", "json_object", "text")
# Own words; appended in "text" mode so a server without structured output still sees the schema.
SCHEMA_HINT = "Reply with a single JSON value that matches this JSON Schema, and nothing else:\n{schema}"


class OpenAIChat(BaseLLM):
    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 structured: str = "auto", max_retries: int = 4, timeout_s: float = 120.0, max_concurrency: int = 8,
                 max_tokens: int = 1024, client=None):
        super().__init__()
        if structured != "auto" and structured not in STRUCTURED_MODES:
            raise ValueError(f"structured must be auto or one of {STRUCTURED_MODES}")
        self.model = model
        self.base_url = base_url
        self.structured = structured
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self._modes = list(STRUCTURED_MODES) if structured == "auto" else [structured]
        self._slots = threading.BoundedSemaphore(max_concurrency)
        if client is None:
            import openai

            # A local server needs no key; the openai package reads OPENAI_API_KEY itself otherwise.
            key = api_key if api_key is not None else ("not-needed" if base_url else None)
            client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout_s, max_retries=max_retries)
        self.client = client

    def __repr__(self) -> str:
        # The base URL may carry user:password or a token parameter: shown redacted only.
        return f"OpenAIChat({self.model!r}" + (f", base_url={redact_url(self.base_url)!r})" if self.base_url else ")")

    def _request(self, messages, schema, temperature, seed, max_tokens, mode):
        kw = {"model": self.model, "messages": messages, "temperature": temperature,
              "max_tokens": max_tokens or self.max_tokens}
        if seed is not None:
            kw["seed"] = seed
        if schema is not None:
            if mode == "json_schema":
                kw["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "reply", "schema": schema, "strict": False}}
            elif mode == "json_object":
                kw["response_format"] = {"type": "json_object", "schema": schema}
            else:
                hint = SCHEMA_HINT.format(schema=json.dumps(schema))
                kw["messages"] = list(messages) + [{"role": "system", "content": hint}]
        return self.client.chat.completions.create(**kw)

    @staticmethod
    def _rejects_format(exc) -> bool:
        """A server refusing our response_format (400/422, or 500 from llama.cpp's server).

        A 500 is retried by the client before it reaches here; that costs one round of retries,
        once, since the refused mode is then dropped."""
        status = getattr(exc, "status_code", None)
        text = str(exc)
        return status in (400, 422) or (status == 500 and ("response_format" in text or "json_schema" in text))

    def _generate(self, messages, *, schema, temperature, seed, max_tokens, role) -> Generation:
        import openai

        modes = list(self._modes) if schema is not None else ["text"]
        last_error = None
        for mode in modes:
            structured = schema is not None and mode != "text"
            try:
                with self._slots:
                    resp = self._request(messages, schema, temperature, seed, max_tokens, mode)
            except (openai.APIStatusError, openai.APITimeoutError, openai.APIConnectionError) as exc:
                if structured and self._rejects_format(exc):  # try the next structured-output mode
                    last_error = exc
                    if self.structured == "auto" and mode in self._modes and len(self._modes) > 1:
                        self._modes.remove(mode)
                    continue
                # after the client's own retries
                status = f" (status {exc.status_code})" if getattr(exc, "status_code", None) is not None else ""
                raise LLMError(redact_text(f"{type(exc).__name__}{status}: {exc}")) from exc
            choice = resp.choices[0]
            usage = getattr(resp, "usage", None)
            return Generation(choice.message.content or "", getattr(resp, "model", None) or self.model,
                              getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
        raise LLMError(redact_text(f"no structured-output mode accepted by {redact_url(self.base_url) or 'the API'}: "
                                   f"{last_error}"))
