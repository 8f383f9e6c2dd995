"""The one protocol every method calls: ``llm.complete(messages, *, schema, temperature, seed)``.

``BaseLLM`` does the shared work once: message normalisation, JSON parsing with one repair
attempt and a bounded retry, token counting when the backend reports none, the usage ledger and
per-step tracking, and thread-pool batching. Backends implement only ``_generate``.
"""
from __future__ import annotations

import contextvars
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable

from ..trace import LLMCall, Usage
from ..failures import describe_error
from .bounds import apply_bounds
from .errors import LLMError, ParseError
from .jsonparse import parse_json
from .ledger import Ledger, current_tags
from .tokens import count_message_tokens, count_tokens

Messages = Sequence[dict]

# Own words; used by BaseLLM when a reply is not the JSON that was asked for.
JSON_REPAIR_PROMPT = (
    "Your previous reply could not be read as JSON matching the requested structure ({error}). "
    "Reply again with only the corrected JSON value and nothing else."
)


@dataclass(frozen=True)
class Generation:
    """What a backend returns for one request (token counts may be unknown)."""

    text: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached: bool = False


@dataclass(frozen=True)
class Completion:
    text: str
    parsed: Any
    usage: Usage
    model: str
    latency_s: float
    cached: bool


@runtime_checkable
class LLM(Protocol):
    model: str

    def complete(self, messages, *, schema: dict | None = None, temperature: float = 0.0,
                 seed: int | None = None, role: str = "", max_tokens: int | None = None) -> Completion: ...


def as_messages(messages) -> list[dict]:
    """Accept a prompt string or a list of ``{role, content}`` dicts."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    out = []
    for m in messages:
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise TypeError(f"each message needs 'role' and 'content', got {m!r}")
        out.append({"role": str(m["role"]), "content": str(m["content"])})
    return out


class BaseLLM:
    """Shared client behaviour. Subclasses set ``model`` and implement ``_generate``."""

    model: str = "unknown"
    #: attempts after the repair attempt when the reply is still not the requested JSON
    max_parse_retries: int = 1
    #: per-role output limits (``bounds.BOUNDED_OUTPUTS``); None = the method's schema and max_tokens as given
    output_bounds: dict | None = None

    @property
    def small_model(self) -> bool:
        """True for the offline local models (``workbench.runtime.models.MODELS``): a method built with
        ``profile="auto"`` then takes its ``small`` profile (``workbench.methods.profile``), else ``paper``."""
        from ..runtime.models import MODELS

        return str(self.model) in MODELS or any(str(self.model) == spec.filename.rsplit(".", 1)[0]
                                                for spec in MODELS.values())

    def __init__(self):
        self.ledger = Ledger()

    # -- backend hook -------------------------------------------------------------------------
    def _generate(self, messages: list[dict], *, schema, temperature, seed, max_tokens, role) -> Generation:
        raise NotImplementedError

    # -- public protocol ------------------------------------------------------------------------
    def complete(self, messages, *, schema: dict | None = None, temperature: float = 0.0,
                 seed: int | None = None, role: str = "", max_tokens: int | None = None) -> Completion:
        msgs = as_messages(messages)
        calls: list[LLMCall] = []
        sent_schema = schema
        if self.output_bounds:
            sent_schema, max_tokens = apply_bounds(self.output_bounds, role, schema, max_tokens)
        gen = self._call(msgs, sent_schema, temperature, seed, max_tokens, role, calls)
        parsed = None
        if schema is not None:
            parsed, gen = self._parse_with_repair(msgs, gen, schema, temperature, seed, max_tokens, role, calls,
                                                  sent_schema)
        usage = Usage.total(c.usage for c in calls)
        return Completion(gen.text, parsed, usage, gen.model, usage.latency_s, all(c.cached for c in calls))

    def complete_many(self, requests: Sequence[dict], *, workers: int = 4) -> list[Completion | Exception]:
        """Run independent ``complete(**request)`` calls on a thread pool, in order.

        Failures come back as exception objects in their slot, so one bad call never loses the others.
        """
        def run_one(req):
            try:
                return self.complete(**req)
            except Exception as exc:  # returned, not swallowed: the caller sees it in its slot
                return exc

        if workers <= 1 or len(requests) <= 1:
            return [run_one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(contextvars.copy_context().run, run_one, r) for r in requests]
            return [f.result() for f in futures]

    def track(self):
        from .ledger import track

        return track()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"

    # -- internals ------------------------------------------------------------------------------
    def _call(self, msgs, schema, temperature, seed, max_tokens, role, calls) -> Generation:
        tags = current_tags()
        start = time.perf_counter()
        try:
            gen = self._generate(msgs, schema=schema, temperature=temperature, seed=seed, max_tokens=max_tokens,
                                 role=role)
        except Exception as exc:
            # the ledger keeps the kind first ("CacheMiss: ..."): the census and the question view count by it
            call = LLMCall(role, tags.get("method", ""), tags.get("phase", ""), self.model, tuple(msgs), "",
                           count_message_tokens(msgs), 0, round(time.perf_counter() - start, 6), False,
                           f"{type(exc).__name__}: {exc}")
            self.ledger.record(call)
            if isinstance(exc, LLMError):
                raise
            raise LLMError(describe_error(exc, "the model call")) from exc
        latency = round(time.perf_counter() - start, 6)
        pt = gen.prompt_tokens if gen.prompt_tokens is not None else count_message_tokens(msgs)
        ct = gen.completion_tokens if gen.completion_tokens is not None else count_tokens(gen.text)
        call = LLMCall(role, tags.get("method", ""), tags.get("phase", ""), gen.model, tuple(msgs), gen.text,
                       pt, ct, latency, gen.cached)
        self.ledger.record(call)
        calls.append(call)
        return gen

    def _parse_with_repair(self, msgs, gen, schema, temperature, seed, max_tokens, role, calls, sent_schema=None):
        """Validate against the method's ``schema``; repairs and retries send ``sent_schema`` (the bounded one)."""
        sent_schema = schema if sent_schema is None else sent_schema
        try:
            return parse_json(gen.text, schema), gen
        except ParseError as first:
            error = first
        repair = msgs + [{"role": "assistant", "content": gen.text},
                         {"role": "user", "content": JSON_REPAIR_PROMPT.format(error=str(error)[:200])}]
        gen = self._call(repair, sent_schema, temperature, seed, max_tokens, f"{role}.repair", calls)
        try:
            return parse_json(gen.text, schema), gen
        except ParseError as exc:
            error = exc
        for attempt in range(1, self.max_parse_retries + 1):
            retry_seed = (seed or 0) + attempt
            gen = self._call(msgs, sent_schema, max(temperature, 0.3), retry_seed, max_tokens, f"{role}.retry",
                             calls)
            try:
                return parse_json(gen.text, schema), gen
            except ParseError as exc:
                error = exc
        raise ParseError(f"{role or 'call'}: reply is not the requested JSON after repair and "
                         f"{self.max_parse_retries} retr{'y' if self.max_parse_retries == 1 else 'ies'}: {error}",
                         gen.text)
