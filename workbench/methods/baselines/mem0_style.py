"""``Mem0Style``: the structure of Mem0's LoCoMo pipeline, as a construction-cost and accuracy reference.

Mem0 (Chhikara et al., 2025, arXiv:2504.19413; the ``mem0`` package and its ``evaluation/`` LoCoMo
scripts) is the eager system the RecMem paper measures construction cost against (about 1.2-1.5M
tokens per LoCoMo conversation, some 4k per exchange). What it does per batch of messages, and what
this class reproduces in its own words and prompts (``mem0_style_prompts``):

1. Per speaker (Mem0's eval adds each exchange twice, once from each speaker's side, into separate
   memories): one extraction call with a long few-shot prompt returning a list of facts.
2. For each fact, the ``neighbours`` most similar stored memories of that speaker (cosine).
3. One decision call with all new facts and the union of their neighbours (small integer ids):
   per fact ADD / UPDATE (id + new text) / DELETE (id) / NONE, applied to the store and logged in
   the unified event log (ADD / UPDATE / DELETE; NONE is kept in ``decisions_``, saved with the facts and the
   memories shown as ``structures.json``, which the census reads: ``mem0_style_census``).

Answering: top-``top_k`` memories of each speaker by cosine, merged by score, into the answer prompt
of the retrieval baselines (``ANSWER_FROM_CONTEXT``). Fair arena (``answer_prompt="shared"``): the same
memories go into ``answer_prompt.SHARED_ANSWER`` instead; the native prompt differs from it as the
baselines' does (memories framed with ids and dates, the same length, date and abstention rules).

Departures from Mem0:
- Prompts and few-shot examples are ours; the extraction prompt keeps Mem0's length and shape.
- One exchange (two messages) per add, as Mem0's LoCoMo eval batches them; stored text is prefixed
  with the session date (Mem0 keeps the timestamp as metadata and shows it to the answer prompt).
- ``top_k`` defaults to 10 per speaker (Mem0's eval: 30 per speaker) to fit small local models.
- No graph memory (Mem0^g), no procedural memory, no history database; events are the log.
- A failed extraction or decision call is recorded in ``failures_`` and the exchange yields no
  change for that speaker (Mem0 logs and drops it). Actions naming an unknown id or event are
  recorded in ``failures_`` and skipped; an ADD without text stores the fact itself.
"""
from __future__ import annotations

from datetime import datetime
from typing import Literal

from .how_it_works import MEM0_STYLE
from .mem0_style_census import CENSUS
from ...data import Conversation
from ...llm.errors import LLMError
from ...structures import timeline_part
from ...trace import Answer
from ..base import MemoryMethod
from ..common import exchanges, format_date, format_turn
from ..store import MemoryUnit, MergedRetriever, UnitStore
from . import mem0_style_prompts as P
from .simple import answer_from_hits

EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")


class Mem0Style(MemoryMethod):
    """Mem0's pipeline shape: per-speaker fact extraction, then ADD/UPDATE/DELETE/NONE per fact
    against the retrieved neighbours (see the module docstring for the departures)."""

    # as Mem0's paper labels the LoCoMo integers in its tables
    category_labels = {1: "single-hop", 2: "temporal", 3: "multi-hop", 4: "open-domain", 5: "(not scored)"}
    name = "mem0_style"
    title = "Mem0-style"
    how_it_works = MEM0_STYLE
    structure_view = "speaker_memories"
    census = CENSUS  # its decisions counted (mem0_style_census.py), run by the generic census
    prompt_modules = ("baselines.mem0_style", "baselines.mem0_style_prompts", "baselines.mem0_style_census")

    def __init__(self, *, llm=None, embedder=None,
                 neighbours: int = 5,  # Mem0: top 5 stored memories searched per new fact
                 top_k: int = 10,  # [ours] per speaker at answer time (Mem0 eval: 30)
                 answer_prompt: Literal["native", "shared"] = "native"):  # [ours] fair arena (answer_prompt.py)
        self.llm = llm
        self.embedder = embedder
        self.neighbours = neighbours
        self.top_k = top_k
        self.answer_prompt = answer_prompt

    def _validate_params(self) -> None:
        super()._validate_params()
        if self.top_k < 1 or self.neighbours < 0:
            raise ValueError("top_k must be positive and neighbours non-negative")

    def _reset(self) -> None:
        self.stores_: dict[str, UnitStore] = {}
        self.failures_: list[dict] = []
        self.decisions_: list[dict] = []
        self.next_id_ = 0

    # -- construction ------------------------------------------------------------------------------
    def _speakers(self, conv: Conversation) -> list[str]:
        names = list(conv.speakers) or list(dict.fromkeys(t.speaker for t in conv.turns))
        return [s for s in names if s]

    def _build(self, conv: Conversation) -> None:
        speakers = self._speakers(conv)
        self.stores_ = {s: UnitStore(self.embedder, f"memories:{s}") for s in speakers}
        for session in conv.sessions:
            date = format_date(session.date_time)
            for ex in exchanges(session):
                ids = tuple(t.id for t in ex)
                text = "\n".join(format_turn(t) for t in ex)
                facts = {s: self._extract(s, speakers, date, text, ids) for s in speakers}
                for s in speakers:
                    if facts[s]:
                        self._decide(s, facts[s], date, session.date_time, ids)

    def _extract(self, speaker: str, speakers: list[str], date: str, text: str, ids) -> list[str]:
        prompt = P.EXTRACT.format(speaker=speaker, speakers=" and ".join(speakers), date=date, exchange=text)
        try:
            facts = self.llm.complete(prompt, schema=P.EXTRACT_SCHEMA, role=f"{self.name}.extract").parsed["facts"]
        except LLMError as exc:
            self.failures_.append({"stage": "extract", "speaker": speaker, "source_ids": list(ids), "error": str(exc)})
            return []
        return [str(f).strip() for f in facts if str(f).strip()]

    def _decide(self, speaker: str, facts: list[str], date: str, when, ids) -> None:
        store = self.stores_[speaker]
        shown: dict[str, str] = {}  # prompt id -> unit id (Mem0 shows small integers, not real ids)
        for fact in facts:
            for h in store.search(fact, self.neighbours):
                if h.unit_id not in shown.values():
                    shown[str(len(shown))] = h.unit_id
        memories = "\n".join(f"{i}: {store[u].text}" for i, u in shown.items()) or "(none yet)"
        listed = "\n".join(f"{i}. {f}" for i, f in enumerate(facts, 1))
        prompt = P.DECIDE.format(speaker=speaker, memories=memories, date=date, facts=listed)
        record = {"speaker": speaker, "source_ids": list(ids), "facts": facts, "shown": dict(shown), "actions": []}
        self.decisions_.append(record)
        try:
            actions = self.llm.complete(prompt, schema=P.DECIDE_SCHEMA, role=f"{self.name}.decide").parsed["actions"]
        except LLMError as exc:
            self.failures_.append({"stage": "decide", "speaker": speaker, "source_ids": list(ids), "error": str(exc)})
            return
        for action in actions if isinstance(actions, list) else []:
            record["actions"].append(self._apply(store, speaker, action, facts, shown, date, when, ids))

    def _apply(self, store: UnitStore, speaker: str, action, facts, shown, date, when, ids) -> dict:
        """Apply one decided action; returns what was done (``applied`` or a ``skipped`` reason)."""
        action = action if isinstance(action, dict) else {}
        event = str(action.get("event", "")).upper()
        fact = self._fact(action.get("fact"), facts)
        target = shown.get(str(action.get("id", "")).strip())
        text = str(action.get("text") or "").strip()
        out = {"event": event, "fact": fact, "unit_id": target, "text": text}
        cause = f"{speaker}, exchange {'/'.join(ids)}: {fact or '?'}"
        problem = None
        if event not in EVENTS:
            problem = f"unknown event {event!r}"
        elif event in ("UPDATE", "DELETE") and target is None:
            problem = f"{event} names id {action.get('id')!r}, not one of the memories shown"
        if problem:
            self.failures_.append({"stage": "apply", "speaker": speaker, "source_ids": list(ids), "error": problem,
                                   "action": action})
            return {**out, "skipped": problem}
        if event == "ADD":
            text = text or fact
            if not text:
                return {**out, "skipped": "ADD without text or fact"}
            unit = MemoryUnit(f"mem-{self.next_id_}", "memory", f"[{date}] {text}", ids, when, {"speaker": speaker})
            self.next_id_ += 1
            store.add([unit])
            self._emit("ADD", unit.id, after=unit.text, cause=cause, source_ids=ids, time=unit.time, speaker=speaker)
            out["unit_id"] = unit.id
        elif event == "UPDATE":
            old = store[target]
            new_text = f"[{date}] {text or fact}"
            sources = tuple(dict.fromkeys(old.source_ids + tuple(ids)))
            new = store.update(target, text=new_text, source_ids=sources, time=when.isoformat() if when else old.time)
            self._emit("UPDATE", target, before=old.text, after=new.text, cause=cause, source_ids=sources,
                       time=new.time, speaker=speaker)
        elif event == "DELETE":
            old = store.delete(target)
            self._emit("DELETE", target, before=old.text, cause=cause, source_ids=ids, time=old.time, speaker=speaker)
        return {**out, "applied": True}

    @staticmethod
    def _fact(number, facts: list[str]) -> str:
        try:
            i = int(number)
        except (TypeError, ValueError):
            return facts[0] if len(facts) == 1 else ""
        return facts[i - 1] if 1 <= i <= len(facts) else ""

    # -- answering -------------------------------------------------------------------------------
    def as_retriever(self) -> MergedRetriever:
        self._check_ingested()
        return MergedRetriever(list(self.stores_.values()), "mem0_style")

    def _answer(self, question: str, *, now: datetime | None) -> Answer:
        steps = []
        with self.step(steps, "retrieve", f"Cosine top-{self.top_k} memories per speaker") as s:
            hits = [h for store in self.stores_.values() for h in store.search(question, self.top_k)]
            hits.sort(key=lambda h: -h.score)
            s.hits = hits
            s.data.update(query=question, speakers=list(self.stores_))
        text = answer_from_hits(self, question, hits, now, steps, role=f"{self.name}.answer")
        return Answer(question, text, tuple(steps), tuple(hits))

    def structures(self) -> dict:
        """Plain JSON of the construction decisions (saved as ``structures.json``): per speaker and exchange with
        facts, the facts, the stored memories shown to the decision call (prompt id -> unit id) and what was done
        with each action; and the failed calls and skipped actions (``failures_``)."""
        return {"decisions": [dict(d, actions=[dict(a) for a in d["actions"]]) for d in self.decisions_],
                "failures": [dict(f) for f in self.failures_], "parts": [self._decision_timeline()]}

    def _decision_timeline(self) -> dict:
        """The decisions as a declared ``timeline`` part (``workbench.structures``), drawn by the Structures tab
        under the speaker-memories card with no view code of its own: one event per speaker and exchange, what the
        decision call did with its facts."""
        events = []
        for d in self.decisions_:
            done = [f"{a.get('event', '?')} {a.get('unit_id') or a.get('target') or ''}".strip()
                    + ("" if a.get("applied") else f" (skipped: {a.get('skipped', 'not applied')})")
                    for a in d["actions"]]
            events.append({"label": d["speaker"], "source_ids": list(d["source_ids"]),
                           "text": f"{len(d['facts'])} facts: " + " | ".join(d["facts"])
                                   + f" → {', '.join(done) or 'no action'}"})
        return timeline_part(events, title="Decisions, exchange by exchange",
                             about="Per speaker and exchange with facts: the facts extracted and what the decision "
                                   "call did with them (ADD, UPDATE, DELETE, NONE), in the order they were made.")

    def _units(self) -> list[dict]:
        return [u.row() for store in self.stores_.values() for u in store]
