"""``OpenAIChat``: OpenAI and any OpenAI-compatible server (vLLM, Ollama, llama.cpp's server).

Structured output degrades gracefully: ``json_schema`` (OpenAI) -> ``json_object`` + ``schema``
(llama.cpp's server rejects ``json_schema`` but grammar-constrains this form) -> plain text with
the schema in the prompt and tolerant extraction. The first mode a server accepts is remembered.
Rate limits (429), 408/409, 5xx, timeouts and dropped connections are retried by the ``openai``
client itself (exponential backoff with jitter, honouring the server's ``Retry-After``); the
number of requests in flight is bounded by a semaphore.

How long one call may take is bounded: each request waits at most ``timeout_s`` for the server
(default 60 s) and is tried at most ``attempts`` times (default 3), so a server that never answers
costs about ``attempts * timeout_s`` plus the client's short backoff (about 3 minutes by
default; it was 120 s x 5 tries). Both are options: ``workbench eval --request-timeout S
--attempts N``, or the constructor's arguments.
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


#: seconds one request waits for the server, and tries per call: a dead server costs ~3 minutes, not 10
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_ATTEMPTS = 3


def request_bounds(timeout_s: float | None, attempts: int | None) -> tuple[float, int]:
    """Checked ``(timeout_s, attempts)``, defaults for ``None``; ``ValueError`` saying what is wrong."""
    timeout_s = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    attempts = DEFAULT_ATTEMPTS if attempts is None else attempts
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s <= 3600:
        raise ValueError(f"request timeout must be between 0 and 3600 seconds, got {timeout_s!r}")
    if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= 20:
        raise ValueError(f"attempts must be a whole number from 1 to 20, got {attempts!r}")
    return float(timeout_s), attempts


class OpenAIChat(BaseLLM):
    """``timeout_s``: seconds each request waits; ``attempts``: tries per call (the first included).
    ``max_retries`` (retries after the first try) is the older spelling of ``attempts - 1``."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 structured: str = "auto", attempts: int | None = None, timeout_s: float | None = None,
                 max_retries: int | None = None, max_concurrency: int = 8, max_tokens: int = 1024, client=None):
        super().__init__()
        if structured != "auto" and structured not in STRUCTURED_MODES:
            raise ValueError(f"structured must be auto or one of {STRUCTURED_MODES}")
        if max_retries is not None:
            if attempts is not None and attempts != max_retries + 1:
                raise ValueError(f"attempts={attempts} and max_retries={max_retries} disagree: give one of them")
            attempts = max_retries + 1
        self.timeout_s, self.attempts = request_bounds(timeout_s, attempts)
        self.model = model
        self.base_url = base_url
        self.structured = structured
        self.max_retries = self.attempts - 1
        self.max_tokens = max_tokens
        self._modes = list(STRUCTURED_MODES) if structured == "auto" else [structured]
        self._slots = threading.BoundedSemaphore(max_concurrency)
        if client is None:
            import openai

            # A local server needs no key; the openai package reads OPENAI_API_KEY itself otherwise.
            key = api_key if api_key is not None else ("not-needed" if base_url else None)
            client = openai.OpenAI(base_url=base_url, api_key=key, timeout=self.timeout_s,
                                   max_retries=self.max_retries)
        self.client = client

    def bound_requests(self, *, timeout_s: float | None = None, attempts: int | None = None) -> "OpenAIChat":
        """Change the per-request timeout and/or the tries per call (``None`` keeps the current one)."""
        self.timeout_s, self.attempts = request_bounds(self.timeout_s if timeout_s is None else timeout_s,
                                                       self.attempts if attempts is None else attempts)
        self.max_retries = self.attempts - 1
        if hasattr(self.client, "with_options"):  # an injected test client may lack it: then only our fields
            self.client = self.client.with_options(timeout=self.timeout_s, max_retries=self.max_retries)
        return self

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

    def _failure_words(self, exc) -> str:
        """What a failed request means, in words: which server, what it did, after how many tries."""
        import openai

        where = f"the server at {redact_url(self.base_url)}" if self.base_url else "the OpenAI API"
        tries = f"{self.attempts} attempt{'s' if self.attempts != 1 else ''}"
        if isinstance(exc, openai.APITimeoutError):
            return (f"{where} did not answer within {self.timeout_s:g} s ({tries}; --request-timeout and --attempts "
                    "change both)")
        if isinstance(exc, openai.APIConnectionError):
            return f"could not connect to {where} ({tries}): {exc}"
        status = getattr(exc, "status_code", None)
        return f"{where} refused the request with status {status} ({tries}): {exc}"

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
                raise LLMError(redact_text(self._failure_words(exc))) from exc  # after the client's own retries
            choice = resp.choices[0]
            usage = getattr(resp, "usage", None)
            return Generation(choice.message.content or "", getattr(resp, "model", None) or self.model,
                              getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None))
        raise LLMError(redact_text(f"no structured-output mode accepted by {redact_url(self.base_url) or 'the API'}: "
                                   f"{last_error}"))
