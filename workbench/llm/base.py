"""The one protocol every method calls: ``llm.complete(messages, *, schema, temperature, seed)``.

``BaseLLM`` does the shared work once: message normalisation, JSON parsing (local repair with
``json_repair`` where it is on, then one repair call and a bounded retry), token counting when the backend
reports none, the usage ledger and per-step tracking, and thread-pool batching. Backends implement only
``_generate``.
"""
from __future__ import annotations

import contextvars
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable

from ..trace import LLMCall, Usage
from ..failures import describe_error
from .bounds import apply_bounds
from .errors import LLMError, ParseError
from .jsonparse import read_json
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
    #: "local" when the reply that was read needed ``json_repair`` (``jsonparse.LOCAL_REPAIR``), else ""
    repaired: str = ""


@runtime_checkable
class LLM(Protocol):
    model: str

    def complete(self, messages, *, schema: dict | None = None, temperature: float = 0.0,
                 seed: int | None = None, role: str = "", max_tokens: int | None = None,
                 accept: dict | None = None) -> Completion: ...


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
    #: repair a reply that is not valid JSON locally (``json_repair``, ``jsonparse.read_json``) before any repair
    #: call, as RecMem's and MemR3's own clients do; the repaired value must still pass the schema. True, False, or
    #: None ("auto"): on for every model but the offline ones (``small_model``), whose committed recordings were
    #: made without it: a reply repaired here makes no repair call, so the method reads other text than the
    #: recorded repair or retry and its next prompts would miss the cassette.
    local_repair: bool | None = None

    @property
    def small_model(self) -> bool:
        """True for the offline local models (``workbench.runtime.models.MODELS``): a method built with
        ``profile="auto"`` then takes its ``small`` profile (``workbench.methods.profile``), else ``paper``."""
        from ..runtime.models import MODELS

        return str(self.model) in MODELS or any(str(self.model) == spec.filename.rsplit(".", 1)[0]
                                                for spec in MODELS.values())

    def __init__(self):
        self.ledger = Ledger()
        #: replies read only after local repair, by role (``role``, ``role.repair`` or ``role.retry``)
        self.local_repairs: Counter = Counter()
        self._repairs_lock = threading.Lock()

    @property
    def repairs_locally(self) -> bool:
        """Whether this client repairs malformed JSON locally (``local_repair``, "auto" resolved)."""
        return bool(self.local_repair) if self.local_repair is not None else not self.small_model

    # -- backend hook -------------------------------------------------------------------------
    def _generate(self, messages: list[dict], *, schema, temperature, seed, max_tokens, role) -> Generation:
        raise NotImplementedError

    # -- public protocol ------------------------------------------------------------------------
    def complete(self, messages, *, schema: dict | None = None, temperature: float = 0.0,
                 seed: int | None = None, role: str = "", max_tokens: int | None = None,
                 accept: dict | None = None) -> Completion:
        """One call; with ``schema``, the reply parsed and validated (``Completion.parsed``).

        ``accept``: the schema a reply is validated against when it is not ``schema`` itself, which is still the
        one sent (response format, grammar, cache key). A method whose paper's code reads replies more
        leniently than the structure it asks for (MemR3's paper profile) sends the strict schema and accepts
        what that code accepts; the method then reads the reply the way that code does."""
        msgs = as_messages(messages)
        calls: list[LLMCall] = []
        sent_schema = schema
        if self.output_bounds:
            sent_schema, max_tokens = apply_bounds(self.output_bounds, role, schema, max_tokens)
        gen = self._call(msgs, sent_schema, temperature, seed, max_tokens, role, calls)
        parsed, repaired = None, ""
        if schema is not None:
            parsed, repaired, gen = self._parse_with_repair(msgs, gen, schema if accept is None else accept,
                                                            temperature, seed, max_tokens, role, calls, sent_schema)
        usage = Usage.total(c.usage for c in calls)
        return Completion(gen.text, parsed, usage, gen.model, usage.latency_s, all(c.cached for c in calls),
                          repaired)

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

    def _read(self, gen: Generation, schema, role: str, calls=None):
        """``read_json`` with this client's local repair; a locally repaired reply is counted (``local_repairs``)
        and marked on its call's record (``LLMCall.repaired``), so the ledger and saved traces say which replies
        were repaired without a call."""
        value, how = read_json(gen.text, schema, local_repair=self.repairs_locally)
        if how:
            with self._repairs_lock:
                self.local_repairs[role] += 1
            if calls:
                calls[-1].marked_repaired(how)
        return value, how

    def _parse_with_repair(self, msgs, gen, schema, temperature, seed, max_tokens, role, calls, sent_schema=None):
        """Validate against ``schema`` (the method's, or its ``accept``); repairs and retries send ``sent_schema``
        (what was sent: the bounded one). Returns (value, "local" or "", the generation read). Local repair, where
        it is on, is tried on each reply before the next call is spent on it."""
        sent_schema = schema if sent_schema is None else sent_schema
        try:
            return (*self._read(gen, schema, role, calls), gen)
        except ParseError as first:
            error = first
        repair = msgs + [{"role": "assistant", "content": gen.text},
                         {"role": "user", "content": JSON_REPAIR_PROMPT.format(error=str(error)[:200])}]
        gen = self._call(repair, sent_schema, temperature, seed, max_tokens, f"{role}.repair", calls)
        try:
            return (*self._read(gen, schema, f"{role}.repair", calls), gen)
        except ParseError as exc:
            error = exc
        for attempt in range(1, self.max_parse_retries + 1):
            retry_seed = (seed or 0) + attempt
            gen = self._call(msgs, sent_schema, max(temperature, 0.3), retry_seed, max_tokens, f"{role}.retry",
                             calls)
            try:
                return (*self._read(gen, schema, f"{role}.retry", calls), gen)
            except ParseError as exc:
                error = exc
        local = f"; local repair: {error.local_repair}" if error.local_repair else ""
        final = ParseError(f"{role or 'call'}: reply is not the requested JSON after repair and "
                           f"{self.max_parse_retries} retr{'y' if self.max_parse_retries == 1 else 'ies'}: {error}"
                           f"{local}", gen.text)
        final.local_repair = error.local_repair
        raise final
