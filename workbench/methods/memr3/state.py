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

import json
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
GUARD_NOTHING_LEFT = "nothing_left"    # [ours] a fourth guard (not the paper's): see guard(), ``nothing_left``
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
    delta_q: str | None = None               # the refinement of the coming retrieval (None: q alone)
    gaps_written: tuple[str, ...] | None = None  # the gaps as the router wrote them (small prompts show these)
    draft: str | None = None                 # w_k, the draft answer
    last_action: str | None = None
    answer: str = ""                         # the final answer, written by the answer node

    def apply(self, changes: dict) -> "RouterState":
        return replace(self, **changes)


def allowed_actions(reflect: bool = True, retrieve: bool = True) -> tuple[str, ...]:
    """The decision enum; the ``reflect=False`` ablation removes the reflect node, and
    ``nothing_left="no_retrieve"`` removes retrieve once the backend has nothing new (``retrieve=False``)."""
    return tuple(a for a in ACTIONS if (reflect or a != "reflect") and (retrieve or a != "retrieve"))


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


#: what the router may do once the backend has nothing new (MemR3's ``nothing_left`` parameter); "choose" is the
#: paper's three guards alone (the paper profile), the others add a fourth
NOTHING_LEFT_MODES = ("reflect_then_answer", "reflect", "no_retrieve", "choose")


def guard(state: RouterState, *, n_max: int, n_cap: int, more: bool, reflect: bool = True,
          nothing_left: str = "reflect_then_answer") -> tuple[str | None, str | None]:
    """Alg. 1 for the coming iteration k = state.k + 1: (forced action, guard name) or (None, None).

    Priority as in the paper: budget, then empty retrieval, then reflect streak (paper §3.4: exactly these
    three; App. A.1's "no useful retrieval remains" describes the empty-retrieval one).
    - budget: k >= n_max forces answer, so n_max counts generate calls and n_max=1 is one
      forced-answer call (digest §10.2).
    - empty retrieval: right after a retrieve that returned nothing, force reflect.
    - reflect streak: only while the backend can still return new items ([code]
      ``_has_retrieval_opportunity``, src/memr3_base.py:319-337).
    - nothing left: whenever the backend can return no new item (``more`` False), by ``nothing_left``:
      ``"choose"`` (the paper profile): no fourth guard; nothing is forced, retrieve stays offered (a
      retrieve then comes back empty and the empty-retrieval guard forces reflect), the streak guard is off
      for want of an opportunity: Alg. 1 with [code]'s gate (turn-4 review N2: on a drained 8-chunk store
      [code] answers after 2 router calls, ``"reflect"`` after 5). The other three add a fourth guard, [ours]:
      ``"reflect"``: reflect is forced on every step until the budget (a literal reading of App. A.1 kept as
      an option; the paper profile used it before turn 4); ``"reflect_then_answer"`` (small profile): reflect,
      and once the reflect streak is at ``n_cap`` answer, since a retrieve can bring nothing and reflecting
      again only repeats the same call; ``"no_retrieve"`` (reviews/memr3.md "to 10" item 5): nothing forced,
      but retrieve is not offered (``allowed_actions(retrieve=False)``).
    - With ``reflect=False`` there is no reflect node: [ours] the three fourth-guard modes force answer
      instead; ``"choose"`` forces nothing (an empty retrieval then forces answer).
    """
    k = state.k + 1
    if k >= n_max:
        return "answer", GUARD_BUDGET
    if state.just_retrieved and not state.snippets:
        return ("reflect" if reflect else "answer"), GUARD_EMPTY
    if not more and nothing_left == "choose":
        return None, None  # the paper's guards only: the streak guard needs an opportunity ([code])
    if not more:
        if not reflect:
            return "answer", GUARD_NOTHING_LEFT
        if nothing_left == "reflect":
            return "reflect", GUARD_NOTHING_LEFT
        if nothing_left == "no_retrieve":
            return None, None  # retrieve is not offered; the streak guard needs an opportunity ([code])
        return ("reflect" if state.reflect_streak < n_cap else "answer"), GUARD_NOTHING_LEFT
    if reflect and state.reflect_streak >= n_cap:
        return "retrieve", GUARD_STREAK
    return None, None


def fallback_action(*, reflect: bool, more: bool, retrieve: bool = True) -> str:
    """What an unusable decision becomes: reflect ([code], digest §10.15); without the reflect node
    [ours]: retrieve while new items remain (and retrieve is offered), else answer."""
    if reflect:
        return "reflect"
    return "retrieve" if more and retrieve else "answer"


def resolve(proposed, forced: str | None, *, reflect: bool, more: bool, retrieve: bool = True
            ) -> tuple[str, str | None]:
    """(final action, why the proposal was not usable or None).

    A forced action always wins (the paper changes the directive; [code] also overwrites the
    decision afterwards: we do both). Otherwise a decision outside the allowed set is replaced by
    ``fallback_action`` and the reason is returned for the trace.
    """
    if forced is not None:
        return forced, None
    if isinstance(proposed, str) and proposed.strip().lower() in allowed_actions(reflect, retrieve):
        return proposed.strip().lower(), None
    return fallback_action(reflect=reflect, more=more, retrieve=retrieve), f"invalid decision {proposed!r}"


def normalize_gaps(raw) -> tuple[str, ...]:
    """The open gaps G: "None", empty strings, [] and the prompt's own "No gaps noted." mean closed
    (digest §10.5; the placeholder: reviews/memr3.md B3). ``written_gaps`` keeps the placeholder."""
    return open_gaps(written_gaps(raw))


def written_gaps(raw) -> tuple[str, ...]:
    """The gaps as the router wrote them, less the closed words: what the small profile's next prompt
    shows (the recordings were made so), the placeholder "No gaps noted." included."""
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

    ``normalize_gaps`` drops it from the open gaps G; ``written_gaps`` keeps it, so the small profile's next
    prompt shows the list as the model wrote it (the published recordings were made that way)."""
    return str(text).strip().lower().rstrip(".") == _prompts.NO_GAPS.lower().rstrip(".")


def open_gaps(gaps: Sequence[str]) -> tuple[str, ...]:
    """The gaps that name something missing: ``gaps`` without the prompt's placeholder."""
    return tuple(g for g in gaps if not is_placeholder_gap(g))


def delta_fallback(gaps: Sequence[str]) -> str | None:
    """A missing retrieval query becomes the first open gap, else nothing, i.e. q alone (digest §10.15);
    never the placeholder, which would search for "<question>. No gaps noted."."""
    real = open_gaps(gaps)
    return real[0] if real else None


# What the paper profile's router accepts from a reply ([code] src/memr3_base.py:389-407,
# ``_parse_generation_response``): any JSON object whose decision, when written, is a string. [code] calls
# ``.lower()`` on the decision, so a null or non-string one (or a reply that is not an object) raises and the call
# is made again; everything else is read.
LENIENT_ACCEPT = {"type": "object", "properties": {"decision": {"type": "string"}}}


def read_leniently(reply: dict) -> dict:
    """A router reply read as [code] reads it (``_parse_generation_response`` with ``_normalize_evidence`` and
    ``_normalize_answer``, src/memr3_base.py:389-440), for the paper profile's ``reading="lenient"``.

    Every key the router uses is present afterwards: a null or missing ``evidence`` is ``[]`` (E is rewritten in
    full, so [code]'s tracker empties), a null item in it is dropped, a string is one bullet; a null or missing
    ``gaps`` closes G ([code] shows "No gaps noted."); the payload keys stay as written, null when absent, and a
    draft or reasoning that is not a string is written out as JSON ([code] dumps a non-string draft). The
    decision stays as written: ``resolve`` matches it case-insensitively and replaces one outside the enum (or a
    missing one) by reflect, recording why, where [code] turns it into reflect without a word."""
    evidence = reply.get("evidence")
    if isinstance(evidence, (list, tuple)):
        evidence = [item for item in evidence if item is not None]
    out = {"evidence": evidence, "gaps": reply.get("gaps"), "decision": reply.get("decision")}
    for key in ("retrieval_query", "detailed_answer", "reasoning"):
        value = reply.get(key)
        if value is not None and not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False)
        out[key] = value
    return out
