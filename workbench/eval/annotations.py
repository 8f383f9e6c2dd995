"""Planted phenomena: what a correct memory should do with the project's own conversations (issue: mechanism truth).

The census (``workbench.eval.mechanisms``) counts what fired; it cannot say whether a firing was right. The project
wrote its sample conversations, so it knows their knowledge updates, forget requests, recurring topics, multi-hop
chains, relative dates and groups of events, with turn ids: ``sample_data/annotations.json``. ``load_annotations``
reads and checks that file (a malformed entry is a ``DatasetError`` naming the file and the entry). The checks are
generic; a method's census (``MemoryMethod.census.check``) names the one that judges its mechanism and picks its
input from the run, and ``check_run`` dispatches (the methods named below are the built-ins that use each):

- ``edits`` (AMA): each edit at ingestion (UPDATE / DELETE event) is *right* when it is caused by a planted update's
  turn and writes its new value, or by a forget request's turn and removes what was to be forgotten; every other
  edit is *wrong* (it corrupted a fact). Planted updates and forget requests inside the ingested turns with no right
  edit are *missed*.
- ``escalations`` (HyMem): a deep escalation is *right* on a planted multi-hop question, *unneeded* elsewhere; a
  multi-hop question answered by the light path alone is *missed*.
- ``recurrence`` (RecMem): a consolidated unit (episode) is *on a planted recurrence* when at least two of its source
  turns, from two sessions or more, belong to one planted recurring topic and that topic touches at least 60 % of
  the parts it was made of (the share H-Mem's grouping check asks of a parent); *mixed* when the topic's turns are
  there, from two sessions, but touch fewer of its parts (an episode of eight exchanges, one of them on the topic in
  each of two sessions, is not a consolidated recurrence); else *off*. The parts are the exchanges the method
  clustered (``parts``: their source turns; a source turn in none is a part of its own), else single turns: the
  annotations mark the turns that name the topic,
  often not the partner's reply, so a share over turns would halve an exchange that is wholly on it. An episode
  that repeats another of the same consolidation word for word (``copy_of``) is a *repeat*, wrong whatever its
  topic: one recurrence should give one episode, not copies of it.
- ``grouping`` (H-Mem): a parent with two or more children is *coherent* when at least 60 % of its children's source
  turns belong to one planted topic or group of events; else *mixed*.
- ``gaps`` (MemR3): on a planted multi-hop question whose first retrieval lacked some of the question's turns, a
  gap cycle is *right* when a gap the router opened was searched for with a query of its own (not the question
  alone), that search brought a lacking turn and a later step closed the gap; a question with gaps but no such
  cycle is *off target*, one with no gap at all *missed*. A question whose first batch already held every turn
  needs no gap (*complete at first*); gaps on other questions are listed, not judged (free text: read them). A
  method whose census picks nothing for this check gets its gaps listed for reading only.

LoCoMo conversations have no planted phenomena, but two of them (``conv-26``, ``conv-41``) carry *annotated* ones
(``sample_data/labels/locomo_phenomena.json``, careful readings under CC BY-NC like the data): recurring topics, the
questions that need two or more turns, genuine updates, groups of turns about one event and relative dates, so the
same checks run at real scale. ``conv-30`` is never annotated: its answers are kept apart as the independent check
of the verdicts. Every check says which it rests on (``phenomena``: "planted" or "annotated"). A run over a
conversation with neither gets ``{"checkable": False, "why": ...}``, never a silent omission.
"""
from __future__ import annotations

import re
from collections import Counter
from datetime import date
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..data import DatasetError
from ..words import day_words, plural

ANNOTATIONS = Path(__file__).resolve().parents[1] / "sample_data" / "annotations.json"  # an installed wheel
if not ANNOTATIONS.is_file():  # a checkout
    ANNOTATIONS = Path(__file__).resolve().parents[2] / "sample_data" / "annotations.json"
#: phenomena read out of LoCoMo conversations (not planted: "annotated"), beside the labelled answers and their licence
LOCOMO_ANNOTATIONS = ANNOTATIONS.parent / "labels" / "locomo_phenomena.json"
ORIGINS = ("planted", "annotated")
_TURN_ID = re.compile(r"^D\d+:\d+$")  # an edit caused by one turn (AMA's Refresher), as the event log writes it
KINDS = ("updates", "forgets", "recurring", "multi_hop", "relative_times", "groups")


@dataclass(frozen=True)
class Update:
    id: str
    entity: str
    attribute: str
    old: str
    new: str
    old_turns: tuple[str, ...]
    new_turn: str


@dataclass(frozen=True)
class Forget:
    id: str
    turn: str
    forgets_turns: tuple[str, ...]
    about: str
    keywords: tuple[str, ...]


@dataclass(frozen=True)
class ConversationAnnotations:
    """The phenomena of one conversation: planted (the project wrote the conversation around them) or annotated
    (read out of a conversation someone else wrote, LoCoMo's), ``origin``."""

    conv_id: str
    updates: tuple[Update, ...] = ()
    forgets: tuple[Forget, ...] = ()
    recurring: tuple[Mapping, ...] = ()  # {"id", "topic", "turns"}
    multi_hop: tuple[Mapping, ...] = ()  # {"qa_id", "question", "turns"}
    relative_times: tuple[Mapping, ...] = ()  # {"turn", "phrase", "date"}
    groups: tuple[Mapping, ...] = ()  # {"id", "by": "topic" | "time", "turns"}
    extra: Mapping = field(default_factory=dict, compare=False)
    origin: str = field(default="planted", compare=False)

    def topics(self) -> list[tuple[str, set[str]]]:
        """(id, turns) of every recurring topic and group of events."""
        return [(t["id"], set(t["turns"])) for t in (*self.recurring, *self.groups)]

    def topic_words(self, topic_id: Any) -> str:
        """A recurring topic or group as a reader says it: its ``topic`` text where it has one ("Tomasz's knee"),
        else its id with spaces for hyphens ("move to bristol")."""
        for t in (*self.recurring, *self.groups):
            if t.get("id") == topic_id:
                return str(t.get("topic") or str(topic_id).replace("-", " ").replace("_", " "))
        return str(topic_id)


def _fail(path, where: str, what: str):
    raise DatasetError(str(path), where, what)


def _turn_list(path, where, value, *, empty_ok=False) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(t, str) and t for t in value) or (not value and not empty_ok):
        _fail(path, where, "must be a non-empty list of turn ids" if not empty_ok else "must be a list of turn ids")
    return tuple(value)


def _strings(path, where, entry, names):
    for n in names:
        if not isinstance(entry.get(n), str) or not entry[n].strip():
            _fail(path, where, f"field {n!r} must be a non-empty string")


def _conversation(path, conv_id: str, body, origin: str = "planted") -> ConversationAnnotations:
    if not isinstance(body, dict):
        _fail(path, f"conversations.{conv_id}", "must be an object")
    unknown = set(body) - set(KINDS)
    if unknown:
        _fail(path, f"conversations.{conv_id}", f"unknown kind(s) {sorted(unknown)}; known: {list(KINDS)}")
    out: dict = {}
    for kind in KINDS:
        entries = body.get(kind, [])
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            _fail(path, f"conversations.{conv_id}.{kind}", "must be a list of objects")
        parsed = []
        for i, e in enumerate(entries):
            where = f"conversations.{conv_id}.{kind}[{i}]"
            if kind == "updates":
                _strings(path, where, e, ("id", "entity", "attribute", "old", "new", "new_turn"))
                parsed.append(Update(e["id"], e["entity"], e["attribute"], e["old"], e["new"],
                                     _turn_list(path, where + ".old_turns", e.get("old_turns"), empty_ok=True),
                                     e["new_turn"]))
            elif kind == "forgets":
                _strings(path, where, e, ("id", "turn", "about"))
                keywords = e.get("keywords")
                if not isinstance(keywords, list) or not keywords \
                        or not all(isinstance(k, str) and k for k in keywords):
                    _fail(path, where, "field 'keywords' must be a non-empty list of strings")
                parsed.append(Forget(e["id"], e["turn"], _turn_list(path, where + ".forgets_turns",
                                                                    e.get("forgets_turns")), e["about"],
                                     tuple(keywords)))
            elif kind == "relative_times":
                _strings(path, where, e, ("turn", "phrase", "date"))

                try:
                    date.fromisoformat(e["date"])
                except ValueError:
                    _fail(path, where, f"field 'date' must be an ISO date (YYYY-MM-DD), not {e['date']!r}")
                parsed.append(dict(e))
            else:
                _strings(path, where, e, ("qa_id",) if kind == "multi_hop" else ("id",))
                _turn_list(path, where + ".turns", e.get("turns"))
                if kind == "groups" and e.get("by") not in ("topic", "time"):
                    _fail(path, where, "field 'by' must be 'topic' or 'time'")
                parsed.append(dict(e))
        ids = [getattr(p, "id", None) or p.get("id") or p.get("qa_id") or p.get("turn") for p in parsed]
        dup = [k for k, n in Counter(ids).items() if n > 1 and kind != "relative_times"]
        if dup:
            _fail(path, f"conversations.{conv_id}.{kind}", f"repeated id(s) {dup}")
        out[kind] = tuple(parsed)
    return ConversationAnnotations(conv_id, **out, origin=origin)


def load_annotations(path: str | Path = ANNOTATIONS, *, dataset=None) -> dict[str, ConversationAnnotations]:
    """``{conv_id: ConversationAnnotations}`` from ``path``; with ``dataset``, every turn id and question id is
    checked against its conversations (an annotation pointing at a turn that does not exist is an error)."""
    from .labels import parse_label_json, read_label_file  # not a pipe, not huge, UTF-8, no repeated key

    path = Path(path)
    data = parse_label_json(path, read_label_file(path))
    if not isinstance(data, dict) or data.get("schema") != 1 or not isinstance(data.get("conversations"), dict):
        _fail(path, "top level", "expected {'schema': 1, 'conversations': {conv_id: {...}}}")
    origin = data.get("origin", "planted")
    if origin not in ORIGINS:
        _fail(path, "origin", f"must be one of {list(ORIGINS)}, not {origin!r}")
    out = {cid: _conversation(path, cid, body, origin) for cid, body in data["conversations"].items()}
    if dataset is not None:
        convs = {c.id: c for c in dataset}
        for cid, ann in out.items():
            conv = convs.get(cid)
            if conv is None:
                continue
            turns, qas = {t.id for t in conv.turns}, {q.id for q in conv.qa}
            for kind in KINDS:
                for i, e in enumerate(getattr(ann, kind)):
                    used = _turns_of(e)
                    bad = sorted(t for t in used if t not in turns)
                    if bad:
                        _fail(path, f"conversations.{cid}.{kind}[{i}]", f"turn id(s) {bad} not in {cid}")
                    qa = e.get("qa_id") if isinstance(e, Mapping) else None
                    if qa and qa not in qas:
                        _fail(path, f"conversations.{cid}.{kind}[{i}]", f"question {qa!r} not in {cid}")
    return out


def _turns_of(e) -> set[str]:
    if isinstance(e, Update):
        return {*e.old_turns, e.new_turn}
    if isinstance(e, Forget):
        return {e.turn, *e.forgets_turns}
    return set(e.get("turns") or ()) | ({e["turn"]} if e.get("turn") else set())


_CACHE: dict = {}


def method_annotations(name) -> dict[str, ConversationAnnotations]:
    """The shipped annotations with those of ``name``'s own resources over them (``name``: a method's registered
    name or class; a plugin ships its gallery's planted phenomena in its package, ``MemoryMethod.resources``),
    checked against the plugin's own conversations when it ships them. A damaged file raises its ``DatasetError``;
    a bad ``resources`` declaration its ``ValueError``."""
    from ..data import load_locomo
    from ..methods.base import method_base
    from ..methods.registry import resource_file

    merged = dict(shipped_annotations())
    key = method_base(name) if isinstance(name, str) else name
    own = resource_file(key, "annotations.json")
    if own is not None:
        convs = resource_file(key, "gallery_conversations.json")
        merged.update(load_annotations(own, dataset=load_locomo(convs) if convs is not None else None))
    return merged


def shipped_annotations() -> dict[str, ConversationAnnotations]:
    """The annotations shipped with the package: the sample conversations' planted phenomena and the annotated
    LoCoMo ones (either file may be absent), read once per file version. A damaged file raises its
    ``DatasetError`` (each caller carries on without phenomena) and is said once (``labels.label_problems``)."""
    from .labels import note_label_problem

    files = [p for p in (ANNOTATIONS, LOCOMO_ANNOTATIONS) if p.exists()]
    try:
        key = tuple((str(p), p.stat().st_mtime) for p in files)
    except OSError:  # a file removed between the listing and its stat: read again next time
        key = None
    got = _CACHE.get(key) if key is not None else None
    if got is None:
        try:
            merged: dict[str, ConversationAnnotations] = {}
            for p in files:
                merged.update(load_annotations(p))
            got = merged
        except DatasetError as exc:  # each caller goes on without phenomena (and says so); said once here too
            note_label_problem(f"phenomena annotations unusable, so no mechanism is checked against them: {exc}")
            got = exc  # kept, so a damaged file is not parsed again by every view
        _CACHE.clear()
        if key is not None:
            _CACHE[key] = got
    if isinstance(got, DatasetError):  # a fresh error each time (one raised again would grow its traceback)
        raise DatasetError(got.file, got.location, got.what)
    return got


def not_checkable(conv_ids: Iterable[str], ann: Mapping[str, ConversationAnnotations] | None = None) -> dict:
    """The check result of a run none of whose conversations carries phenomena; its reason names the
    conversations that do (read from ``ann``), or says the annotation files could not be read (``ann`` None)."""
    ids = ", ".join(sorted(set(conv_ids))) or "this run"
    if ann is None:
        return {"checkable": False, "why": f"no phenomena checked for {ids}: the annotation files could not be read"}
    by_origin = {o: sorted(c for c, a in ann.items() if a.origin == o) for o in ORIGINS}
    root = ANNOTATIONS.parents[1]
    files = {o: p.relative_to(root).as_posix() for o, p in (("planted", ANNOTATIONS),
                                                             ("annotated", LOCOMO_ANNOTATIONS))}
    named = "; ".join(f"{o}: {', '.join(cs) if len(cs) <= 3 else f'{len(cs)} conversations'} in {files[o]}"
                      for o, cs in by_origin.items() if cs) or "no conversation carries any"
    return {"checkable": False, "why": f"no phenomena annotated for {ids} ({named}; LoCoMo conv-30 is kept apart)"}


def phenomena_word(ann: Mapping[str, ConversationAnnotations], convs: Iterable[str]) -> str:
    """"planted", "annotated" or "planted or annotated": what the conversations of a check rest on."""
    found = [o for o in ORIGINS if any(c in ann and ann[c].origin == o for c in convs)]
    return " or ".join(found) or "planted"


def _session(turn: str) -> str:
    return turn.rsplit(":", 1)[0]


def _ingested(events: Sequence[Mapping]) -> set[str]:
    return {str(s) for e in events for s in (e.get("source_ids") or ())} | {str(e.get("cause")) for e in events}


def planted_edit(e: Mapping, a: ConversationAnnotations) -> Update | Forget | None:
    """The planted update or forget request an edit event carries out, or None: an UPDATE caused by an update's
    turn that writes its new value, or an edit caused by a forget request's turn that removes what was to be
    forgotten (a DELETE, or an UPDATE whose text no longer says it)."""
    cause, before, after = str(e.get("cause")), str(e.get("before") or ""), str(e.get("after") or "")
    found = next((u for u in a.updates if u.new_turn == cause and e.get("kind") == "UPDATE"
                  and u.new.lower() in after.lower()), None)
    if found is None:
        found = next((f for f in a.forgets if f.turn == cause and any(k.lower() in before.lower() for k in f.keywords)
                      and (e.get("kind") == "DELETE" or not any(k.lower() in after.lower() for k in f.keywords))),
                     None)
    return found


def edit_verdict(e: Mapping, conv_id: str | None) -> tuple[bool | None, str]:
    """(right, why) for one UPDATE / DELETE event of a conversation: checked against the shipped annotations,
    (None, why) where the conversation has none or the edit happened at question time."""
    ann = shipped_annotations().get(conv_id or "")
    if ann is None:
        return None, "not checkable: no phenomena annotated for this conversation"
    if str(e.get("cause", "")).startswith("question:"):
        return None, f"a question-time edit: not checked against the {ann.origin} phenomena"
    if not _TURN_ID.match(str(e.get("cause", ""))):
        return None, "not caused by a turn (e.g. a profile rewritten after a session): not a knowledge-update edit"
    found = planted_edit(e, ann)
    if found is not None:
        return True, f"carries out the {ann.origin} {'update' if isinstance(found, Update) else 'forget request'} " \
                     f"{found.id!r}"
    return False, f"no {ann.origin} update or forget request at this turn writes this: a corrupted fact"


def check_edits(events_by_conv: Mapping[str, Sequence[Mapping]], ann: Mapping[str, ConversationAnnotations]) -> dict:
    """Right / wrong edits at ingestion and missed updates / forget requests (see the module docstring)."""
    convs = [c for c in events_by_conv if c in ann]
    if not convs:
        return not_checkable(events_by_conv, ann)
    right, wrong, missed_updates, missed_forgets = [], [], [], []
    for cid in convs:
        a, events = ann[cid], events_by_conv[cid]
        seen = _ingested(events)
        hit: set[str] = set()
        for e in events:
            if e.get("kind") not in ("UPDATE", "DELETE") or str(e.get("cause", "")).startswith("question:"):
                continue
            item = {"conversation": cid, "turn": str(e.get("cause")), "kind": e.get("kind"),
                    "before": str(e.get("before") or ""), "after": str(e.get("after") or "")}
            found = planted_edit(e, a)
            if found is not None:
                hit.add(found.id)
                right.append({**item, "planted": found.id})
            else:
                wrong.append({**item, "why": f"no {a.origin} update or forget request at this turn writes this"})
        missed_updates += [{"conversation": cid, "planted": u.id, "turn": u.new_turn,
                            "what": f"{u.entity}'s {u.attribute}: {u.old} -> {u.new}"}
                           for u in a.updates if u.new_turn in seen and u.id not in hit]
        missed_forgets += [{"conversation": cid, "planted": f.id, "turn": f.turn, "what": f.about}
                           for f in a.forgets if f.turn in seen and f.id not in hit]
    return {"checkable": True, "phenomena": phenomena_word(ann, convs),
            "edits_right": len(right), "edits_wrong": len(wrong),
            "missed_updates": len(missed_updates), "missed_forgets": len(missed_forgets),
            "right": right, "wrong": wrong, "missed": missed_updates + missed_forgets}


def check_escalations(deep_by_question: Mapping[str, bool], conv_of: Mapping[str, str],
                ann: Mapping[str, ConversationAnnotations], right_of: Mapping[str, float | None] | None = None) -> dict:
    """Deep escalations on planted multi-hop questions (right), elsewhere (unneeded), and multi-hop questions
    the light path answered alone (missed). ``deep_by_question``: qa id -> went deep. ``right_of`` (qa id -> the
    row's verdict, 1.0 right, 0.0 wrong, None undecided) adds how many answers of each group were right, so a
    missed escalation whose light answer was right anyway reads as such."""
    asked = {q: conv_of.get(q) for q in deep_by_question}
    if not any(c in ann for c in asked.values()):
        return not_checkable(set(asked.values()) - {None}, ann)
    # only the questions of annotated conversations: a deep escalation elsewhere is unchecked, not "unneeded"
    deep_by_question = {q: d for q, d in deep_by_question.items() if asked[q] in ann}
    multi = {m["qa_id"] for c in set(asked.values()) if c in ann for m in ann[c].multi_hop}
    deep = {q for q, d in deep_by_question.items() if d}
    missed = (multi & set(deep_by_question)) - deep
    out = {"checkable": True, "phenomena": phenomena_word(ann, set(asked.values())),
           "deep_on_multi_hop": len(deep & multi), "deep_elsewhere": len(deep - multi),
           "multi_hop_not_escalated": len(missed), "multi_hop_asked": len(multi & set(deep_by_question)),
           "deep_elsewhere_ids": sorted(deep - multi), "missed_ids": sorted(missed)}
    if right_of is not None:
        def right(ids):  # answers of ``ids`` with a verdict, and how many of them were right
            decided = [right_of[q] for q in ids if right_of.get(q) is not None]
            return {"right": sum(v >= 0.5 for v in decided), "decided": len(decided)}
        out["answers"] = {"deep_on_multi_hop": right(deep & multi), "deep_elsewhere": right(deep - multi),
                          "multi_hop_not_escalated": right(missed)}
    return out


def check_gaps(cycles_by_question: Mapping[str, Mapping], conv_of: Mapping[str, str],
               ann: Mapping[str, ConversationAnnotations]) -> dict:
    """Gap cycles on planted multi-hop questions (see the module docstring). ``cycles_by_question``: qa id ->
    ``{"first": turns of the initial batch, "cycles": [{"gap", "query", "found", "closed"}]}`` (MemR3's census,
    ``memr3.census.gap_cycles``): ``query`` is the refinement the search made for the open gap used (None: the
    question alone), ``found`` the turns it brought."""
    asked = {q: conv_of.get(q) for q in cycles_by_question}
    if not any(c in ann for c in asked.values()):
        return not_checkable(set(asked.values()) - {None}, ann)
    multi = {m["qa_id"]: set(m["turns"]) for c in set(asked.values()) if c in ann for m in ann[c].multi_hop}
    right, off, missed, complete, elsewhere = [], [], [], [], []
    for qid, q in cycles_by_question.items():
        if asked[qid] not in ann:
            continue
        cycles = [c for c in (q.get("cycles") or ()) if isinstance(c, Mapping)]
        if qid not in multi:
            if cycles:
                elsewhere.append({"qa_id": qid, "gaps": [str(c.get("gap")) for c in cycles]})
            continue
        lacking = multi[qid] - {str(t) for t in (q.get("first") or ())}
        item = {"qa_id": qid, "lacking": sorted(lacking), "gaps": [str(c.get("gap")) for c in cycles]}
        if not lacking:
            complete.append(item)
            continue
        aimed = [c for c in cycles if c.get("query") and c.get("closed")
                 and lacking & {str(t) for t in (c.get("found") or ())}]
        if aimed:
            c = aimed[0]
            right.append({**item, "gap": str(c.get("gap")), "query": str(c.get("query")),
                          "found": sorted(lacking & {str(t) for t in c["found"]})})
        elif cycles:
            why = ("no gap was searched for with a query of its own" if not any(c.get("query") for c in cycles) else
                   "no search for a gap brought a lacking turn" if not any(
                       lacking & {str(t) for t in (c.get("found") or ())} for c in cycles) else
                   "the gap whose search brought a lacking turn was never closed")
            off.append({**item, "why": why})
        else:
            missed.append({**item, "why": "no gap was written, though the first retrieval lacked "
                                          + ", ".join(sorted(lacking))})
    return {"checkable": True, "phenomena": phenomena_word(ann, set(asked.values())),
            "gap_cycles_right": len(right), "gap_cycles_off_target": len(off), "multi_hop_gaps_missed": len(missed),
            "multi_hop_complete_at_first": len(complete), "gaps_elsewhere": len(elsewhere),
            "right": right, "off_target": off, "missed": missed, "complete_at_first": complete,
            "elsewhere": elsewhere}


def best_topic(turns: set[str], a: ConversationAnnotations) -> tuple[str | None, set[str]]:
    """The planted topic or group sharing most turns with ``turns``, and the shared turns."""
    best, shared = None, set()
    for tid, tturns in a.topics():
        s = turns & tturns
        if len(s) > len(shared):
            best, shared = tid, s
    return best, shared


def check_recurrence(episodes_by_conv: Mapping[str, Sequence[Mapping]],
                     ann: Mapping[str, ConversationAnnotations], threshold: float = 0.6) -> dict:
    """Episodes on a planted recurrence, mixed (the recurrence's turns are there among parts on other things) or off
    it (see the module docstring). An episode may name its ``parts`` (lists of source turns, one per exchange it was
    made of; a source turn in none is a part of its own); the share is over those, else over its turns. Of the
    topics that recur in it (two turns or more, from two sessions or more) the one touching most parts is judged;
    an off episode says why (``why``: no recurring topic's turns, or only one session's)."""
    convs = [c for c in episodes_by_conv if c in ann]
    if not convs:
        return not_checkable(episodes_by_conv, ann)
    on, mixed, off, repeats = [], [], [], []
    for cid in convs:
        recurring = [(r["id"], set(r["turns"])) for r in ann[cid].recurring]
        for ep in episodes_by_conv[cid]:
            if ep.get("copy_of"):  # one recurrence, one episode: a word-for-word copy is not a second one
                repeats.append({"conversation": cid, "episode": ep.get("id"), "copy_of": ep["copy_of"]})
                continue
            turns = {str(t) for t in (ep.get("source_ids") or ())}
            parts = [{str(t) for t in p} for p in (ep.get("parts") or ()) if p]
            covered = set().union(*parts) if parts else set()
            parts += [{t} for t in sorted(turns - covered)]
            seen = [(rid, turns & rt, sum(1 for p in parts if p & rt)) for rid, rt in recurring if turns & rt]
            recurs = [x for x in seen if len(x[1]) >= 2 and len({_session(t) for t in x[1]}) >= 2]
            topic, shared, touched = max(recurs or seen, key=lambda x: (x[2], len(x[1])), default=(None, set(), 0))
            item = {"conversation": cid, "episode": ep.get("id"), "turns": len(turns), "parts": len(parts),
                    "topic": topic, "shared": sorted(shared), "parts_on_topic": touched,
                    "share": round(touched / len(parts), 2) if parts else 0}
            if not recurs:
                item["why"] = ("none of its turns is on a recurring topic" if not seen else
                               "its recurring topic's turns are from one session" if len(shared) >= 2 else
                               "one turn of a recurring topic only")
                off.append(item)
            else:
                (on if touched >= threshold * len(parts) else mixed).append(item)
    return {"checkable": True, "phenomena": phenomena_word(ann, convs), "on_planted_recurrence": len(on),
            "mixed_planted_recurrence": len(mixed), "off_planted_recurrence": len(off),
            "repeated_episodes": len(repeats), "threshold": threshold,
            "on": on, "mixed": mixed, "off": off, "repeats": repeats}


def check_grouping(tree_by_conv: Mapping[str, Sequence[Mapping]], ann: Mapping[str, ConversationAnnotations],
               share: float = 0.6) -> dict:
    """Multi-child parents whose children's turns mostly belong to one planted topic or group (coherent) or
    not (mixed)."""
    convs = [c for c in tree_by_conv if c in ann]
    if not convs:
        return not_checkable(tree_by_conv, ann)
    coherent, mixed = [], []
    for cid in convs:
        nodes = {n.get("id"): n for n in tree_by_conv[cid] if isinstance(n, Mapping)}
        for n in nodes.values():
            kids = [nodes[k] for k in (n.get("children") or ()) if k in nodes]
            if len(kids) < 2:
                continue
            turns = {str(t) for k in kids for t in (k.get("source_ids") or ())}
            topic, shared = best_topic(turns, ann[cid])
            item = {"conversation": cid, "node": n.get("id"), "level": n.get("level"), "children": len(kids),
                    "turns": len(turns), "topic": topic, "share": round(len(shared) / len(turns), 2) if turns else 0}
            (coherent if turns and len(shared) / len(turns) >= share else mixed).append(item)
    return {"checkable": True, "phenomena": phenomena_word(ann, convs),
            "coherent_parents": len(coherent), "mixed_parents": len(mixed),
            "coherent": coherent, "mixed": mixed}


def check_run(kind: str, data, ann: Mapping[str, ConversationAnnotations], *, convs: Iterable[str],
              conv_of: Mapping[str, str], entry: Mapping, right_of: Mapping[str, float | None] | None = None) -> dict:
    """The generic check ``kind`` (``workbench.methods.census_kit.CHECK_KINDS``) of one method's run, on the
    input its census picked (``data``): ``edits`` (conversation -> events), ``escalations`` (question id ->
    went deep), ``recurrence`` (conversation -> consolidated units with ``source_ids``), ``grouping``
    (conversation -> hierarchy nodes with ``children``), ``gaps`` (question id -> its first batch and gap cycles,
    see ``check_gaps``; None: free-text gaps are listed for reading, with the count of gaps opened from
    ``entry``). ``convs``: the run's conversations; ``right_of``: each question's verdict, which ``escalations``
    reports per group (see ``check_escalations``)."""
    convs = set(convs)
    if kind == "edits":
        return _unchecked(check_edits(data, ann), convs, ann) if data else not_checkable(convs, ann)
    if kind == "escalations":
        return _unchecked(check_escalations(data or {}, conv_of, ann, right_of), convs, ann)
    if kind == "recurrence":
        return _unchecked(check_recurrence(data, ann), convs, ann) if data else not_checkable(convs, ann)
    if kind == "grouping":
        return _unchecked(check_grouping(data, ann), convs, ann) if data else not_checkable(convs, ann)
    if kind == "gaps" and data is not None:
        return _unchecked(check_gaps(data, conv_of, ann), convs, ann)
    if kind == "gaps":  # a census that picks nothing: the gaps are listed for reading
        if not any(c in ann for c in convs):
            return not_checkable(convs, ann)
        gaps = (entry.get("counts") or {}).get("gaps_opened")
        w = phenomena_word(ann, convs)
        return {"checkable": True, "phenomena": w, "gaps_opened": gaps,
                "note": (f"no gap was written: nothing to check against the {w} items" if not gaps else
                         f"gaps are free text: read them in the trace stepper against the {w} items")}
    raise ValueError(f"unknown mechanism check {kind!r}")


def _unchecked(result: dict, convs: Iterable[str], ann: Mapping[str, ConversationAnnotations]) -> dict:
    """A checkable result over a run that also holds unannotated conversations names them (``unchecked``): their
    firings were left out of the check, not counted right or wrong."""
    left = sorted(c for c in set(convs) if c and c != "None" and c not in ann)
    return {**result, "unchecked": left} if result.get("checkable") and left else result


def checked_text(checked: Mapping | None) -> str:
    """One line saying how many firings were right, wrong or missed (for headers, reports and the terminal), and
    which conversations of the run were left out for want of annotations."""
    line = _checked_line(checked)
    left = (checked or {}).get("unchecked") if (checked or {}).get("checkable") else None
    return line + (f" (not checked: {', '.join(map(str, left))}, no phenomena annotated)" if left else "")


def _checked_line(checked: Mapping | None) -> str:
    if not checked:
        return ""
    if not checked.get("checkable"):
        return "not checkable: " + str(checked.get("why", "no annotations"))
    w = str(checked.get("phenomena") or "planted")
    if "edits_right" in checked:
        n = checked["edits_right"] + checked["edits_wrong"]
        mu, mf = checked["missed_updates"], checked["missed_forgets"]
        return (f"{checked['edits_right']} of {n} {plural(n, 'edit')} {'matches' if n == 1 else 'match'} a {w} "
                f"update or forget request; missed {mu} {w} {plural(mu, 'update')} and {mf} forget "
                f"{plural(mf, 'request')}")
    if "deep_on_multi_hop" in checked:
        deep, asked = checked["deep_on_multi_hop"], checked["multi_hop_asked"]
        answers = checked.get("answers") if isinstance(checked.get("answers"), Mapping) else {}

        def right(group: str, words: str) -> str:  # " (2 of them answered right)", when verdicts were given
            a = answers.get(group)
            if not isinstance(a, Mapping) or not checked.get(group):
                return ""
            if not a["decided"]:
                return " (none with a verdict)"
            some = "" if a["decided"] >= checked[group] else \
                " of 1 with a verdict" if a["decided"] == 1 else f" of the {a['decided']} with a verdict"
            return f" ({a['right']}{some} {words})"
        return (f"{deep} deep {plural(deep, 'escalation')} on {w} multi-hop questions"
                f"{right('deep_on_multi_hop', 'answered right')}, {checked['deep_elsewhere']} elsewhere"
                f"{right('deep_elsewhere', 'answered right')}; {checked['multi_hop_not_escalated']} of "
                f"{asked} multi-hop {plural(asked, 'question')} not escalated"
                f"{right('multi_hop_not_escalated', 'answered right by the light path alone')}")
    if "on_planted_recurrence" in checked:
        article = "an" if w[0] == "a" else "a"
        mixed = checked.get("mixed_planted_recurrence", 0)
        cut = f"{checked.get('threshold', 0.6):.0%}"
        on = checked["on_planted_recurrence"]
        rep = checked.get("repeated_episodes", 0)
        return (f"{on} {plural(on, 'episode')} on {article} {w} recurrence (the topic in >= {cut} of the "
                f"exchanges {'it was' if on == 1 else 'they were'} made of), {mixed} mixed"
                f"{' (in fewer)' if mixed else ''}, {checked['off_planted_recurrence']} off"
                + (f"; {rep} more {'is a word-for-word copy' if rep == 1 else 'are word-for-word copies'} of "
                   "another episode of the same consolidation" if rep else ""))
    if "coherent_parents" in checked:
        good, mixed = checked["coherent_parents"], checked["mixed_parents"]
        return (f"{good} multi-child {plural(good, 'parent')} {'holds' if good == 1 else 'hold'} one {w} topic or "
                f"group (>= 60 % of {'its' if good == 1 else 'their'} turns), {mixed} "
                f"{'is' if mixed == 1 else 'are'} mixed")
    if "gap_cycles_right" in checked:
        good, off, missed = (checked[k] for k in ("gap_cycles_right", "gap_cycles_off_target", "multi_hop_gaps_missed"))
        done, other = checked.get("multi_hop_complete_at_first", 0), checked.get("gaps_elsewhere", 0)
        return (f"{good} {w} multi-hop {plural(good, 'question')} found {'its' if good == 1 else 'their'} lacking "
                f"turn through a gap (opened, searched for, closed), {off} with gaps off target, {missed} without a "
                f"gap though the first retrieval lacked a turn; {done} complete at the first retrieval"
                + (f"; gaps on {other} other {plural(other, 'question')}, listed for reading" if other else ""))
    return str(checked.get("note", ""))


#: what ``checked_verdict`` can say of one method's mechanism on an annotated conversation
VERDICTS = ("right", "partly right", "wrong", "missed", "did not fire", "to read", "not checkable")


def checked_verdict(checked: Mapping | None) -> tuple[str, str]:
    """One word for a checked census entry (``VERDICTS``) and the line it rests on (``checked_text``): *right*
    when every firing was right and nothing planted was missed; *partly right* when some were; *wrong* when
    none was; *missed* when the mechanism had something planted to act on and did nothing; *did not fire* when
    nothing fired; *to read* when the firings are free text (gaps) with no automatic check."""
    line = checked_text(checked)
    if not checked or not checked.get("checkable"):
        return "not checkable", line
    if "edits_right" in checked:
        good, bad = checked["edits_right"], checked["edits_wrong"]
        missed = checked["missed_updates"] + checked["missed_forgets"]
    elif "deep_on_multi_hop" in checked:
        good, bad, missed = checked["deep_on_multi_hop"], checked["deep_elsewhere"], checked["multi_hop_not_escalated"]
    elif "on_planted_recurrence" in checked:
        good, missed = checked["on_planted_recurrence"], 0
        bad = checked["off_planted_recurrence"] + checked.get("mixed_planted_recurrence", 0) + \
            checked.get("repeated_episodes", 0)
    elif "coherent_parents" in checked:
        good, bad, missed = checked["coherent_parents"], checked["mixed_parents"], 0
    elif "gap_cycles_right" in checked:
        good, bad, missed = checked["gap_cycles_right"], checked["gap_cycles_off_target"], \
            checked["multi_hop_gaps_missed"]
    else:  # gaps: free text, listed for reading
        return ("to read" if checked.get("gaps_opened") else "did not fire"), line
    if good + bad == 0:
        return ("missed" if missed else "did not fire"), line
    if bad == 0 and missed == 0:
        return "right", line
    return ("partly right" if good else "wrong"), line


def planted_marks(ann: ConversationAnnotations | None) -> dict[str, list[str]]:
    """Turn id -> what is planted there, in words (a knowledge update's old and new value, a forget request, a
    recurring topic, a multi-hop chain, a relative date, a group of events): what a view marks on the transcript."""
    marks: dict[str, list[str]] = {}
    if ann is None:
        return marks

    def mark(turns, text):
        for t in turns:
            marks.setdefault(t, []).append(text)

    for u in ann.updates:
        mark(u.old_turns, f"update {u.id}: old value of {u.entity}'s {u.attribute} ({u.old})")
        mark([u.new_turn], f"update {u.id}: {u.entity}'s {u.attribute} becomes {u.new}")
    for f in ann.forgets:
        mark([f.turn], f"forget request {f.id}: forget {f.about}")
        mark(f.forgets_turns, f"to be forgotten ({f.id})")
    for r in ann.recurring:
        mark(r.get("turns") or (), f"recurring topic: {r.get('topic') or r.get('id')}")
    for m in ann.multi_hop:
        mark(m.get("turns") or (), f"multi-hop chain of: {m.get('question') or m.get('qa_id')}")
    for t in ann.relative_times:
        mark([t["turn"]], f"\"{t.get('phrase')}\" means {day_words(t.get('date'))}")
    for g in ann.groups:
        mark(g.get("turns") or (), f"group by {g.get('by')}: {ann.topic_words(g.get('id'))}")
    return marks
