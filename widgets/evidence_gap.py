"""``EvidenceGapView``: MemR3's evidence and gaps, router iteration by router iteration.

MemR3 keeps an evidence list and a gap list that each router call rewrites. This view is the trace
timeline's notebook stepper (``widgets.trace_stepper.TraceStepper``) visiting only the router steps:
each stop shows the same router card the app's Traces tab shows (``widgets.trace_cards.evidence_gaps_card``:
the action and what decided it, evidence added / kept / dropped and gaps opened / closed as a diff
against the previous router step, the next query, the draft). The waterfall above the slider still
lists every step, so the retrievals between two iterations stay in view. Nothing is rendered here.

    EvidenceGapView(answer, conversation=conv, qa=qa).goto(2)   # the third iteration
"""
from __future__ import annotations

from typing import Iterable, Mapping

from .trace_stepper import TraceStepper

#: the step kinds the view visits: MemR3's router steps (``Step.kind == "router"``)
ROUTER_KINDS = ("router",)


class EvidenceGapView(TraceStepper):
    """A ``TraceStepper`` over MemR3's router steps. ``index`` counts iterations from 0; ``iterations``
    are the router steps themselves; ``current_html`` is the timeline at the current one."""

    unit = "iteration"
    intro = ("The router iterations only: after each router call, the evidence and the gaps as a diff "
             "against the previous call (+ added or opened, − dropped or closed) and what decided the action.")

    def __init__(self, answer, *, conversation=None, gold_evidence: Iterable[str] | None = None,
                 memories: Iterable[Mapping] = (), qa=None):
        super().__init__(answer, conversation=conversation, gold_evidence=gold_evidence, memories=memories,
                         kinds=ROUTER_KINDS, qa=qa)

    @property
    def iterations(self) -> tuple:
        """The router steps, in trace order (one per iteration)."""
        return tuple(self.steps[i] for i in self.stops)
