"""The baselines every memory paper compares against, plus two eager extractors for cost comparison.

- ``FullContext``: the whole conversation (with session dates) in one prompt per question.
- ``NaiveRAG``: chunks (by turn, by session, or token windows that never split a message),
  cosine top-k, one answer prompt.
- ``EagerFloor`` (formerly ``EagerFacts``): the cheapest possible eager construction, one short
  LLM call per exchange extracting facts, append-only. It is a *floor* on what an eager method
  costs, not a reproduction of any system: no per-speaker passes, no few-shot prompt, no update call.
  ``EagerFacts`` stays as a deprecated alias (name ``eager_facts``) so saved runs, result files and
  recorded calls keep loading.
- ``Mem0Style`` (``mem0_style.py``): the structure of Mem0's LoCoMo pipeline, the reference the
  RecMem paper measures construction cost against.

Fair arena (``answer_prompt="shared"``, ``answer_prompt.SHARED_ANSWER``): the same context block
(retrieved units, or the whole conversation) goes into the shared prompt instead. How the native
prompts differ from it: ``ANSWER_FROM_CONTEXT`` says the lines are memories with ids and dates and
asks for "at most about six words" (same length rule), the same date, recency and abstention rules;
``ANSWER_FROM_CONVERSATION`` frames the context as a session-by-session conversation and resolves
relative times against the session date.
"""
from __future__ import annotations

import warnings
from datetime import datetime
from typing import Literal

from . import how_it_works as HW
from ...data import Conversation
from ...llm.tokens import count_tokens
from ...trace import Answer, Hit
from ..answer_prompt import shared_prompt
from ..base import MemoryMethod
from ..common import exchanges, format_conversation, format_date, format_hits, format_turn, question_date_line
from ..store import MemoryUnit, UnitStore
from . import simple_prompts as P
from .eager_floor_census import CENSUS

# the modules whose prompts these baselines send (``MemoryMethod.prompt_modules``)
_PROMPT_MODULES = ("baselines.simple", "baselines.simple_prompts", "baselines.how_it_works")


def answer_from_hits(method: MemoryMethod, question: str, hits: list[Hit], now, steps, *, role: str) -> str:
    """The answer call of the retrieval baselines (native prompt, or the fair-arena shared one)."""
    with method.step(steps, "answer", "Answer from retrieved memories") as s:
        if getattr(method, "answer_prompt", "native") == "shared":
            prompt = shared_prompt(format_hits(hits), question, now)
        else:
            prompt = P.ANSWER_FROM_CONTEXT.format(context=format_hits(hits), now_line=question_date_line(now),
                                                  question=question)
        text = method.llm.complete(prompt, role=role).text.strip()
        s.data["answer"] = text
        s.data.update(_prompt_tag(method))
    return text


def _prompt_tag(method) -> dict:
    """``{"answer_prompt": "shared"}`` in shared mode; nothing in native mode (traces stay as they were)."""
    return {"answer_prompt": "shared"} if getattr(method, "answer_prompt", "native") == "shared" else {}


def retrieve_then_answer(method: MemoryMethod, question: str, now, *, unit: str) -> Answer:
    """Cosine top-k from ``method.store_``, then the shared answer call (NaiveRAG, EagerFloor)."""
    steps = []
    with method.step(steps, "retrieve", f"Cosine top-{method.top_k} {unit}") as s:
        hits = method.store_.search(question, method.top_k)
        s.hits = hits
        s.data["query"] = question
    text = answer_from_hits(method, question, hits, now, steps, role=f"{method.name}.answer")
    return Answer(question, text, tuple(steps), tuple(hits))


class FullContext(MemoryMethod):
    """Whole conversation in the prompt. Context (what the reader saw, for evidence recall) is every turn.
    ``answer_prompt``: native ``ANSWER_FROM_CONVERSATION`` or the shared prompt (module docstring)."""

    reference = True  # the papers' Full-Context upper bound
    title = "Full-Context"
    whole_conversation_roles = frozenset({"answer"})
    name = "full_context"
    how_it_works = HW.FULL_CONTEXT
    structure_view = "whole_conversation"
    prompt_modules = _PROMPT_MODULES

    def __init__(self, *, llm=None, answer_prompt: Literal["native", "shared"] = "native"):
        self.llm = llm
        self.answer_prompt = answer_prompt

    def _build(self, conv: Conversation) -> None:
        self.text_ = format_conversation(conv)
        self.turn_units_ = [MemoryUnit(t.id, "turn", format_turn(t, with_date=True), (t.id,), t.time)
                            for t in conv.turns]
        self.prompt_tokens_ = count_tokens(self.text_)

    def _answer(self, question: str, *, now: datetime | None) -> Answer:
        steps = []
        context = tuple(u.hit(1.0) for u in self.turn_units_)
        with self.step(steps, "answer", "Answer from the full conversation") as s:
            if self.answer_prompt == "shared":
                prompt = shared_prompt(self.text_, question, now)
            else:
                prompt = P.ANSWER_FROM_CONVERSATION.format(conversation=self.text_, now_line=question_date_line(now),
                                                           question=question)
            text = self.llm.complete(prompt, role="full_context.answer").text.strip()
            s.data.update(answer=text, conversation_tokens=self.prompt_tokens_, **_prompt_tag(self))
        return Answer(question, text, tuple(steps), context)

    def _units(self) -> list[dict]:
        return [u.row() for u in self.turn_units_]


class NaiveRAG(MemoryMethod):
    """Chunk, embed, cosine top-k, answer. ``chunking``: ``turn`` | ``session`` | ``window``.
    ``answer_prompt``: native ``ANSWER_FROM_CONTEXT`` or the shared prompt (module docstring)."""

    default_choice = True  # what `workbench eval` runs when no method is named: the plain retrieval baseline
    name = "naive_rag"
    title = "Naive RAG"
    how_it_works = HW.NAIVE_RAG
    structure_view = "chunks"
    prompt_modules = _PROMPT_MODULES

    def __init__(self, *, llm=None, embedder=None, chunking: Literal["turn", "session", "window"] = "turn",
                 chunk_tokens: int = 256, top_k: int = 10, answer_prompt: Literal["native", "shared"] = "native"):
        self.llm = llm
        self.embedder = embedder
        self.chunking = chunking
        self.chunk_tokens = chunk_tokens
        self.top_k = top_k
        self.answer_prompt = answer_prompt

    def _validate_params(self) -> None:
        super()._validate_params()
        if self.chunking not in ("turn", "session", "window"):
            raise ValueError(f"chunking must be turn, session or window, got {self.chunking!r}")
        if self.top_k < 1 or self.chunk_tokens < 1:
            raise ValueError("top_k and chunk_tokens must be positive")

    def _chunks(self, conv: Conversation) -> list[MemoryUnit]:
        units = []
        for session in conv.sessions:
            date = format_date(session.date_time)
            groups: list[list] = []
            if self.chunking == "turn":
                groups = [[t] for t in session.turns]
            elif self.chunking == "session":
                groups = [list(session.turns)] if session.turns else []
            else:  # token windows that never split a message
                current, size = [], 0
                for t in session.turns:
                    n = count_tokens(format_turn(t))
                    if current and size + n > self.chunk_tokens:
                        groups.append(current)
                        current, size = [], 0
                    current.append(t)
                    size += n
                if current:
                    groups.append(current)
            for g in groups:
                text = f"[{date}] " + "\n".join(format_turn(t) for t in g)
                units.append(MemoryUnit(f"chunk-{len(units)}", "chunk", text, tuple(t.id for t in g),
                                        session.date_time, {"session_id": session.id}))
        return units

    def _reset(self) -> None:
        self.store_ = UnitStore(self.embedder, "chunks")

    def _build(self, conv: Conversation) -> None:
        units = self.store_.add(self._chunks(conv))
        for u in units:
            self._emit("ADD", u.id, after=u.text, cause="chunked", source_ids=u.source_ids, time=u.time)

    def _answer(self, question: str, *, now: datetime | None) -> Answer:
        return retrieve_then_answer(self, question, now, unit="chunks")

    def _units(self) -> list[dict]:
        return self.store_.rows()

    def as_retriever(self) -> UnitStore:
        self._check_ingested()
        return self.store_


class EagerFloor(MemoryMethod):
    """Eager-extraction floor: one short LLM call per exchange extracting facts; top-k facts answer.
    ``answer_prompt``: native ``ANSWER_FROM_CONTEXT`` or the shared prompt (module docstring).

    A lower bound on eager construction cost (RecMem's comparison point), not Mem0: Mem0 extracts
    per speaker with a long few-shot prompt and then makes an ADD/UPDATE/DELETE/NONE call against
    retrieved memories (see ``Mem0Style``). Facts are append-only here.
    """

    name = "eager_floor"
    title = "Eager floor"
    how_it_works = HW.EAGER_FLOOR
    structure_view = "fact_list"
    census = CENSUS  # its facts read against their turns (eager_floor_census.py), run by the generic census
    prompt_modules = (*_PROMPT_MODULES, "baselines.eager_floor_census")

    def __init__(self, *, llm=None, embedder=None, top_k: int = 10,
                 answer_prompt: Literal["native", "shared"] = "native"):
        self.llm = llm
        self.embedder = embedder
        self.top_k = top_k
        self.answer_prompt = answer_prompt

    def _reset(self) -> None:
        self.store_ = UnitStore(self.embedder, "facts")
        self.failures_: list[dict] = []

    def _build(self, conv: Conversation) -> None:
        from ...llm.errors import LLMError

        for session in conv.sessions:
            for ex in exchanges(session):
                text = "\n".join(format_turn(t) for t in ex)
                prompt = P.EXTRACT_FACTS.format(date=format_date(session.date_time), exchange=text)
                ids = tuple(t.id for t in ex)
                self._advance(len(ex))  # progress: this exchange is being extracted
                try:
                    facts = self.llm.complete(prompt, schema=P.FACTS_SCHEMA,
                                              role=f"{self.name}.extract").parsed["facts"]
                except LLMError as exc:  # recorded, the run goes on; the exchange simply yields no facts
                    self.failures_.append({"source_ids": list(ids), "error": str(exc)})
                    continue
                units = [MemoryUnit(f"fact-{len(self.store_) + i}", "fact", f"[{format_date(session.date_time)}] {f}",
                                    ids, session.date_time) for i, f in enumerate(x for x in facts if str(x).strip())]
                for u in self.store_.add(units):
                    self._emit("ADD", u.id, after=u.text, cause=f"extracted from exchange {'/'.join(ids)}",
                               source_ids=ids, time=u.time)

    def _answer(self, question: str, *, now: datetime | None) -> Answer:
        return retrieve_then_answer(self, question, now, unit="facts")

    def _units(self) -> list[dict]:
        return self.store_.rows()

    def as_retriever(self) -> UnitStore:
        self._check_ingested()
        return self.store_


class EagerFacts(EagerFloor):
    """Deprecated alias of ``EagerFloor`` under its old name ``eager_facts``.

    Same prompts and behaviour (so recorded calls still replay: the cassette key does not include
    the role); it keeps the old name in results, roles and saved memories, so runs saved before the
    rename load and resume unchanged. New code should use ``EagerFloor``.
    """

    name = "eager_facts"

    def __init__(self, *, llm=None, embedder=None, top_k: int = 10,
                 answer_prompt: Literal["native", "shared"] = "native"):
        warnings.warn("EagerFacts is deprecated: it is an eager-extraction floor, use EagerFloor ('eager_floor'); "
                      "Mem0Style ('mem0_style') is the Mem0-like reference", DeprecationWarning, stacklevel=2)
        super().__init__(llm=llm, embedder=embedder, top_k=top_k, answer_prompt=answer_prompt)
