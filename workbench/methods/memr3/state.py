"""MemR3's controller state and its pure router (Alg. 1), without LangGraph.

The paper builds MemR3 as a LangGraph graph (``START -> retrieve -> generate -> router ->
{retrieve | reflect | answer}``). Here the same loop is a small explicit state machine
(STYLE.md §7, §8 lesson 11):

- ``RouterState`` is frozen; every node returns a dict of the fields it changes, applied with
  ``state.apply(changes)`` (``dataclasses.replace``).
- ``guard(...)`` is the deterministic part of the router: the three constraints of Alg. 1, in the
  paper's priority order (budget > empty retrieval > reflect streak).
- ``resolve(...)`` turns the LLM's proposed decision into the action actually taken: a forced
  action always wins; a decision outside the allowed set falls back to ``fallback_action``.

Nothing in this module calls an LLM or a retriever, so every branch is testable with plain values.
Digest: ``../shared/methods/memr3.md`` §3 and §10; paper §3.4, Alg. 1.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, Sequence

from ...trace import Hit
from . import prompts as _prompts  # a module, not its constants: this module's own strings are hashed as prompts

Action = Literal["retrieve", "reflect", "answer"]
ACTIONS: tuple[str, ...] = ("retrieve", "answer", "reflect")  # [code] the router prompt's enum order

# Guard names, as recorded in each router step's ``forced`` field (None when the LLM's choice stood).
GUARD_BUDGET = "budget"                # paper Alg. 1 line 3: k >= n_max -> answer
GUARD_EMPTY = "empty_retrieval"        # paper Alg. 1 line 5: S_{k-1} empty -> reflect
GUARD_STREAK = "reflect_streak"        # paper Alg. 1 line 7: n_streak >= n_cap -> retrieve
GUARD_NOTHING_LEFT = "nothing_left"    # digest §6 "no useful retrieval left": reflect; [ours] answer at the cap
GUARDS: tuple[str, ...] = (GUARD_BUDGET, GUARD_EMPTY, GUARD_STREAK, GUARD_NOTHING_LEFT)

# Words the tracker may use for "nothing is missing" (digest §10.5: normalise gaps to a list).
_CLOSED_GAP = {"", "none", "none.", "no gaps", "no gaps.", "n/a", "nothing", "-"}


@dataclass(frozen=True)
class RouterState:
    """s = (q, S, E, G, k) of the paper plus what Alg. 1 and the nodes rely on (digest §2.1).

    ``snippets`` is S, the latest retrieval batch only (never accumulated, paper Eq. 5);
    ``seen_ids`` is M^ret, everything retrieved so far for this question (the mask);
    ``just_retrieved`` is True right after a retrieve node ran (the empty-retrieval guard only
    looks at that batch, digest §10.3); ``exhausted`` is True once a masked retrieval came back
    empty (the backend has no new items for this question).
    """

    question: str
    evidence: tuple[str, ...] = ()
    gaps: tuple[str, ...] = ()
    k: int = 0                               # generate/router calls made so far
    reflect_streak: int = 0                  # n_streak
    seen_ids: frozenset = frozenset()        # M^ret
    snippets: tuple[Hit, ...] = ()           # S_k
    retrieved: tuple[Hit, ...] = ()          # every hit of this question, in order (steps' hits)
    just_retrieved: bool = False
    exhausted: bool = False
    backend_errors: int = 0                  # retrievals of this question that failed (recorded)
    reasoning: str | None = None             # F, the latest reflect reasoning
    last_query: str | None = None            # the latest delta-q ("Prior query" in the prompt)
    draft: str | None = None                 # w_k, the draft answer
    last_action: str | None = None
    answer: str = ""                         # the final answer, written by the answer node

    def apply(self, changes: dict) -> "RouterState":
        return replace(self, **changes)


def allowed_actions(reflect: bool = True) -> tuple[str, ...]:
    """The decision enum; the ``reflect=False`` ablation removes the reflect node."""
    return ACTIONS if reflect else tuple(a for a in ACTIONS if a != "reflect")


def has_more(state: RouterState, *, mask: bool, total: int | None) -> bool:
    """Can the backend still return new items? ([code]: "opportunity" = unmasked chunks remain.)

    ``total`` is the backend's size when it tells (``len(retriever)``), else None. Without the
    mask every retrieval may return the same items again, so the only stop is an empty backend.
    """
    if not mask:
        return total != 0
    if state.exhausted:
        return False
    return total is None or len(state.seen_ids) < total


def guard(state: RouterState, *, n_max: int, n_cap: int, more: bool, reflect: bool = True
          ) -> tuple[str | None, str | None]:
    """Alg. 1 for the coming iteration k = state.k + 1: (forced action, guard name) or (None, None).

    Priority as in the paper: budget, then no useful retrieval (empty / nothing left), then reflect
    streak.
    - budget: k >= n_max forces answer, so n_max counts generate calls and n_max=1 is one
      forced-answer call (digest §10.2).
    - empty retrieval: right after a retrieve that returned nothing, force reflect.
    - nothing left: whenever the backend can return no new item (``more`` False), force reflect
      too (digest §6: the forced reflect means "no useful retrieval left"), so the router is never
      offered a retrieval that can only come back empty. [ours] Once the reflect streak is at
      ``n_cap`` with nothing left, force answer: the streak guard's retrieve can bring nothing, and
      reflecting again until the budget (the literal Alg. 1) only repeats the same call.
    - With ``reflect=False`` there is no reflect node: [ours] both force answer instead.
    - reflect streak: only while the backend can still return new items ([code]).
    """
    k = state.k + 1
    if k >= n_max:
        return "answer", GUARD_BUDGET
    if state.just_retrieved and not state.snippets:
        return ("reflect" if reflect else "answer"), GUARD_EMPTY
    if not more:
        return ("reflect" if reflect and state.reflect_streak < n_cap else "answer"), GUARD_NOTHING_LEFT
    if reflect and state.reflect_streak >= n_cap:
        return "retrieve", GUARD_STREAK
    return None, None


def fallback_action(*, reflect: bool, more: bool) -> str:
    """What an unusable decision becomes: reflect ([code], digest §10.15); without the reflect node
    [ours]: retrieve while new items remain, else answer."""
    if reflect:
        return "reflect"
    return "retrieve" if more else "answer"


def resolve(proposed, forced: str | None, *, reflect: bool, more: bool) -> tuple[str, str | None]:
    """(final action, why the proposal was not usable or None).

    A forced action always wins (the paper changes the directive; [code] also overwrites the
    decision afterwards: we do both). Otherwise a decision outside the allowed set is replaced by
    ``fallback_action`` and the reason is returned for the trace.
    """
    if forced is not None:
        return forced, None
    if isinstance(proposed, str) and proposed.strip().lower() in allowed_actions(reflect):
        return proposed.strip().lower(), None
    return fallback_action(reflect=reflect, more=more), f"invalid decision {proposed!r}"


def normalize_gaps(raw) -> tuple[str, ...]:
    """Gaps as a tuple of strings; "None", empty strings and [] mean closed (digest §10.5)."""
    if raw is None:
        return ()
    items: Sequence = [raw] if isinstance(raw, str) else raw if isinstance(raw, (list, tuple)) else [str(raw)]
    out = []
    for item in items:
        text = str(item).strip()
        if text.lower() not in _CLOSED_GAP:
            out.append(text)
    return tuple(out)


def normalize_evidence(raw) -> tuple[str, ...]:
    """Evidence bullets as a tuple of non-empty strings (the LLM rewrites them in full each call)."""
    if raw is None:
        return ()
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, (list, tuple)) else [str(raw)]
    return tuple(t for t in (str(i).strip() for i in items) if t)


def retrieval_query(question: str, delta: str | None, *, use_delta: bool) -> str:
    """q (+) delta-q: [code] joins with ". " (digest §10.7); q alone without delta or when ablated."""
    if use_delta and delta and delta.strip():
        return f"{question.rstrip()}. {delta.strip()}"
    return question


def is_placeholder_gap(text: str) -> bool:
    """The router prompt's own empty-gaps line (``prompts.NO_GAPS``, "No gaps noted."), copied into
    the gaps list by a small model (the 0.5B did, conv-30): it names nothing missing.

    ``normalize_gaps`` keeps it, so the next prompt shows the list as the model wrote it: the
    published recordings were made that way, and dropping it would change their prompts."""
    return str(text).strip().lower().rstrip(".") == _prompts.NO_GAPS.lower().rstrip(".")


def open_gaps(gaps: Sequence[str]) -> tuple[str, ...]:
    """The gaps that name something missing: ``gaps`` without the prompt's placeholder."""
    return tuple(g for g in gaps if not is_placeholder_gap(g))


def delta_fallback(gaps: Sequence[str]) -> str | None:
    """A missing retrieval query becomes the first open gap, else nothing, i.e. q alone (digest §10.15);
    never the placeholder, which would search for "<question>. No gaps noted."."""
    real = open_gaps(gaps)
    return real[0] if real else None
