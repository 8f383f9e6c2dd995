"""What RecMem hands the views' ``clusters`` kind: the functions its threshold replay needs (the view calls them
through ``MemoryMethod.structure_hooks`` and never imports RecMem by name)."""
from __future__ import annotations

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


#: decision: a trigger-log row as a decision; replay: the gate replayed on stored vectors; check: whether a
#: (theta_count, gate_k) pair is valid; repeated: episodes that copy an earlier one word for word
CLUSTER_HOOKS = {"decision": decision_of, "replay": _replay, "check": check_gate_k, "repeated": repeated_episodes}
