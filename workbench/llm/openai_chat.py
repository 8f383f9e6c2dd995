"""``OpenAIChat``: OpenAI and any OpenAI-compatible server (vLLM, Ollama, llama.cpp's server).

Structured output degrades gracefully: ``json_schema`` (OpenAI) -> ``json_object`` + ``schema``
(llama.cpp's server rejects ``json_schema`` but grammar-constrains this form) -> plain text with
the schema in the prompt and tolerant extraction. The first mode a server accepts is remembered.
Rate limits, 5xx and timeouts are retried here, with exponential backoff and a cap, and the
number of requests in flight is bounded by a semaphore.
"""
from __future__ import annotations

import json
import threading
import time

from .base import BaseLLM, Generation
from .errors import LLMError
from .redact import redact_text, redact_url

STRUCTURED_MODES = ("json_schema", "json_object", "text")
# Own words; appended in "text" mode so a server without structured output still sees the schema.
SCHEMA_HINT = "Reply with a single JSON value that matches this JSON Schema, and nothing else:\n{schema}"


class OpenAIChat(BaseLLM):
    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 structured: str = "auto", max_retries: int = 4, backoff_s: float = 1.0, max_backoff_s: float = 30.0,
                 timeout_s: float = 120.0, max_concurrency: int = 8, max_tokens: int = 1024, client=None):
        super().__init__()
        if structured != "auto" and structured not in STRUCTURED_MODES:
            raise ValueError(f"structured must be auto or one of {STRUCTURED_MODES}")
        self.model = model
        self.base_url = base_url
        self.structured = structured
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_tokens = max_tokens
        self._modes = list(STRUCTURED_MODES) if structured == "auto" else [structured]
        self._slots = threading.BoundedSemaphore(max_concurrency)
        if client is None:
            import openai

            # A local server needs no key; the openai package reads OPENAI_API_KEY itself otherwise.
            key = api_key if api_key is not None else ("not-needed" if base_url else None)
            client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout_s, max_retries=0)
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
        """A server refusing our response_format (400/422, or 500 from llama.cpp's server)."""
        status = getattr(exc, "status_code", None)
        text = str(exc)
        return status in (400, 422) or (status == 500 and ("response_format" in text or "json_schema" in text))

    def _with_retries(self, fn, *, structured: bool):
        import openai

        for attempt in range(self.max_retries + 1):
            try:
                with self._slots:
                    return fn()
            except openai.APIStatusError as exc:
                if structured and self._rejects_format(exc):
                    raise
                if exc.status_code not in (408, 409, 429) and exc.status_code < 500:
                    raise LLMError(redact_text(f"{type(exc).__name__} (status {exc.status_code}): {exc}")) from exc
                error = exc
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                error = exc
            if attempt == self.max_retries:
                raise LLMError(redact_text(f"{type(error).__name__} after {attempt + 1} attempts: {error}")) from error
            time.sleep(min(self.max_backoff_s, self.backoff_s * 2 ** attempt))

    def _generate(self, messages, *, schema, temperature, seed, max_tokens, role) -> Generation:
        import openai

        modes = list(self._modes) if schema is not None else ["text"]
        last_error = None
        for mode in modes:
            structured = schema is not None and mode != "text"
            try:
                resp = self._with_retries(
                    lambda: self._request(messages, schema, temperature, seed, max_tokens, mode), structured=structured)
            except openai.APIStatusError as exc:  # only format rejections reach here
                last_error = exc
                if self.structured == "auto" and mode in self._modes and len(self._modes) > 1:
                    self._modes.remove(mode)
                continue
            choice = resp.choices[0]
            usage = getattr(resp, "usage", None)
            return Generation(choice.message.content or "", getattr(resp, "model", None) or self.model,
                              getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
        raise LLMError(redact_text(f"no structured-output mode accepted by {redact_url(self.base_url) or 'the API'}: "
                                   f"{last_error}"))
