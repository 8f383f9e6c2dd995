"""What RecMem hands the views' ``clusters`` kind: the functions its threshold replay needs, and its episodes in the
form the recurrence check reads (the view calls them through ``MemoryMethod.structure_hooks`` and never imports
RecMem by name)."""
from __future__ import annotations

import re
from typing import Any, Mapping

from .inspection import repeated_episodes
from .trigger import TriggerDecision, check_gate_k, replay_triggers


def decision_of(d: Mapping | TriggerDecision) -> TriggerDecision:
    """A ``trigger_log`` row of structures.json (or a decision already) as a ``TriggerDecision``."""
    if isinstance(d, TriggerDecision):
        return d
    return TriggerDecision(str(d["unit_id"]), int(d["position"]), tuple((str(i), float(c)) for i, c in
                                                                         d.get("neighbours") or ()),
                           tuple(d.get("relevant_ids") or ()), int(d.get("count", 0)), bool(d.get("fired")),
                           str(d.get("outcome", "buffered")))


def _replay(vectors: Any, *args: Any, **kwargs: Any) -> list[TriggerDecision]:
    return replay_triggers(vectors, None, *args, **kwargs)


def episodes_with_parts(structures: Mapping, copies: Mapping[str, str] | None = None) -> list[dict]:
    """The saved episodes, each with ``parts``: the source turns of each exchange it was made of (its member units,
    merged ones included), which the recurrence check counts its topic share over (``annotations.check_recurrence``:
    an annotation marks the turns that name a topic, often not the partner's reply in the same exchange); and
    ``copy_of`` for an episode that repeats an earlier one of its consolidation word for word: as RecMem named it
    when it wrote the episode (saved since copies are judged), else ``copies`` (the census finds them in the
    CONSOLIDATE events of an older run), else found in the saved texts, consolidation by consolidation."""
    def ids(value) -> list:  # read from a run directory: keep what can be an id
        return [i for i in value if isinstance(i, (str, int))] if isinstance(value, list) else []

    units = {u.get("id"): ids(u.get("source_ids")) for u in _list(structures.get("units"))
             if isinstance(u, Mapping) and isinstance(u.get("id"), (str, int))}
    episodes = [e for e in _list(structures.get("episodes")) if isinstance(e, Mapping)
                and isinstance(e.get("id"), (str, int))]
    if any("copy_of" in e for e in episodes):  # named when it was written (runs since copies were judged)
        copies = {e["id"]: e["copy_of"] for e in episodes if e.get("copy_of")}
    elif copies is None:
        by_cluster: dict = {}
        for e in episodes:
            by_cluster.setdefault(str(e.get("cluster") or e.get("id")), []).append(e)
        copies = {i: first for eps in by_cluster.values() for i, first in repeated_episodes(eps).items()}
    return [{**e, "source_ids": ids(e.get("source_ids")), "parts": [units[i] for i in ids(e.get("member_ids"))
                                                                    if i in units],
             **({"copy_of": copies[e["id"]]} if e["id"] in copies else {})} for e in episodes]


_STAMPED = re.compile(r"\[Message Timestamp\]:\s*.*?\s*\[Message\]:\s*(.*)", re.S)
_SPEAKER = re.compile(r"(?m)^[ \t]*\[([^\]\n]{1,60})\]: ")  # a speaker opens a line; "[x]: " inside one stays


def readable_unit(text: Any) -> str:
    """A buffered unit's stored text as a person reads it: without the "[Message Timestamp]: ... [Message]:"
    frame the authors' code embeds (the view shows the time in its own column) and with "Priya: ..." for
    "[Priya]: ..." (an image caption, "[Showing Image]: ...", becomes "(image: ...)"). Other text is unchanged; what
    RecMem stored and embedded is the structures file's ``text``, untouched."""
    text = str(text or "")
    framed = _STAMPED.fullmatch(text.strip())
    if not framed:
        return text
    body = framed.group(1)
    body = re.sub(r" ?\[Showing Image\]: ([^\n]*)", r" (image: \1)", body)
    return _SPEAKER.sub(r"\1: ", body)


def _list(value) -> list:
    return value if isinstance(value, list) else []


#: decision: a trigger-log row as a decision; replay: the gate replayed on stored vectors; check: whether a
#: (theta_count, gate_k) pair is valid; repeated: episodes that copy an earlier one word for word; checkable:
#: the episodes in the form the recurrence check reads (the view checks them against the annotated topics);
#: readable: a unit's stored text as the view shows it
CLUSTER_HOOKS = {"decision": decision_of, "replay": _replay, "check": check_gate_k, "repeated": repeated_episodes,
                 "checkable": episodes_with_parts, "readable": readable_unit}
