"""Whether a step's own decision was right, read from a trace against the question's gold.

Some steps decide on something before the final answer: HyMem's light module says whether its answer is enough or
the deep module must run, its reflection says whether the answer is complete, MemR3's router chooses to answer from
its draft, AMA's Judge passes its candidates to the answerer or sends the search on. Each decision can be checked
with what the workbench already trusts: the answer the step decided on against the gold answer, with the checker
every verdict uses (``checker.check_qa``), or, for a Judge, which reads no answer, whether the question's gold
evidence turns were among the candidates it judged. A mechanism that fires is then shown with whether it fired
right: the trace views write the result under the step (``widgets.trace_cards``) and the census counts them per
method (``tally``, ``mechanisms.census``).

Which check a step gets follows the card kind its method declares for the step (``MemoryMethod.step_cards``: the
same vocabulary the trace views draw with), so a plugin whose steps use those card kinds is checked too.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from .checker import Check, check_qa


@dataclass(frozen=True)
class Decision:
    """Whether a step's decision was right (``fitting``), in a few words (``verdict``: "escalation not needed"),
    why (``because``, plain text: the checker's verdict on the answer it decided on, or the gold evidence it had),
    what it was checked with (``basis``) and, for a wrong answer, the checker's kind of error (``kind``)."""

    fitting: bool
    verdict: str
    because: str
    basis: str = "checker"
    kind: str = ""


@dataclass(frozen=True)
class StepContext:
    """What a check reads: the step's recorded ``data``, the question (``qa``, a ``QA``) and its conversation (the
    checker's names), and the units retrieved before the step with their source turns (``candidates``)."""

    data: Mapping[str, Any]
    qa: Any = None
    conversation: Any = None
    candidates: Sequence[tuple[str, Sequence[str]]] = ()
    gold: frozenset = field(default_factory=frozenset)

    def check(self, text: Any) -> Check | None:
        """The checker on ``text`` as an answer to the question; None without a question, for one the checker does
        not judge (LongMemEval, adversarial, no short gold) or for an empty text."""
        if self.qa is None or not str(text or "").strip():
            return None
        return check_qa(self.qa, str(text), conversation=self.conversation)


def _said(ctx: StepContext, text: Any) -> tuple[bool, str, str] | None:
    """(right, "right against the gold “Pilot”" / "wrong against the gold “Pilot” (names Biscuit, not Pilot)",
    kind) for ``text``; None where it cannot be checked."""
    check = ctx.check(text)
    if check is None:
        return None
    gold = _short(getattr(ctx.qa, "answer", ""), 80)
    if check.correct:
        return True, f"right against the gold “{gold}”", ""
    return False, f"wrong against the gold “{gold}” ({_short(check.reason, 120)})", check.kind


def escalation(ctx: StepContext) -> Decision | None:
    """A light step: going deep is needed when the light answer is wrong, not needed when it is right; stopping
    the other way round."""
    found = _said(ctx, ctx.data.get("answer"))
    if found is None:
        return None
    right, said, kind = found
    if ctx.data.get("escalate"):
        return (Decision(False, "escalation not needed", f"the light answer is already {said}") if right
                else Decision(True, "escalation needed", f"the light answer is {said}", kind=kind))
    return (Decision(True, "right to stop here", f"the light answer is {said}") if right
            else Decision(False, "stopped on a wrong answer", f"the light answer is {said}, and it stands", kind=kind))


def reflection(ctx: StepContext) -> Decision | None:
    """A reflection: "complete" (stop) is right on a right answer; "not complete" (another round) on a wrong one."""
    found = _said(ctx, ctx.data.get("answer"))
    if found is None:
        return None
    right, said, kind = found
    if ctx.data.get("done"):
        return (Decision(True, "right to stop", f"the answer judged complete is {said}") if right
                else Decision(False, "stopped on a wrong answer", f"the answer judged complete is {said}", kind=kind))
    return (Decision(False, "another round not needed", f"the answer judged incomplete is already {said}") if right
            else Decision(True, "another round needed", f"the answer judged incomplete is {said}", kind=kind))


def draft(ctx: StepContext) -> Decision | None:
    """A router step that chose to answer, by the draft it answered from."""
    if str(ctx.data.get("action") or "") != "answer":
        return None
    found = _said(ctx, ctx.data.get("draft_answer"))
    if found is None:
        return None
    right, said, kind = found
    return (Decision(True, "answered on a right draft", f"the draft is {said}") if right
            else Decision(False, "answered on a wrong draft", f"the draft is {said}", kind=kind))


def judge(ctx: StepContext) -> Decision | None:
    """A Judge's Pass (answer from these candidates) or Retry (look further), by whether the question's gold
    evidence is among the candidates it judged (every unit retrieved so far whose source turns hold a gold turn):
    Pass with it, or Retry without it, was right. A Refresh, or a question without gold evidence, is not checked."""
    verdict = str(ctx.data.get("verdict") or "").lower()
    if verdict not in ("pass", "retry") or not ctx.gold:
        return None
    seen = dict(ctx.candidates)
    found = [u for u, src in seen.items() if ctx.gold & set(map(str, src or ())) or u in ctx.gold]
    n = f"{len(seen):,} candidate{'' if len(seen) == 1 else 's'}"
    basis = "gold evidence"
    if verdict == "pass":
        return (Decision(True, "right to pass", f"gold evidence is among its {n} ({_ids(found)})", basis) if found
                else Decision(False, "passed without the evidence", f"none of its {n} holds a gold evidence turn",
                              basis))
    return (Decision(False, "retry not needed", f"gold evidence is already among its {n} ({_ids(found)})", basis)
            if found else Decision(True, "right to look further", f"none of its {n} holds a gold evidence turn",
                                   basis))


#: the card kinds (``MemoryMethod.step_cards``) whose step decides on something checkable, with its check
CHECKS: dict[str, Callable[[StepContext], Decision | None]] = {
    "light_tier": escalation, "sufficiency": reflection, "evidence_gaps": draft, "verdict": judge,
}


def decide(card_kind: str, ctx: StepContext) -> Decision | None:
    """The decision check of a step of ``card_kind``; None where its kind decides on nothing checkable or the
    step cannot be checked."""
    check = CHECKS.get(card_kind)
    return check(ctx) if check is not None else None


def declared_cards(method: str) -> Mapping[str, str]:
    """``step kind -> card kind`` as the method's class declares it; {} for one that declares none or that this
    installation does not have."""
    from ..methods import get_method, method_base

    try:
        cards = getattr(get_method(method_base(method or "")), "step_cards", None)
    except ValueError:
        return {}
    return cards if isinstance(cards, Mapping) else {}


def answer_decisions(method: str, steps: Sequence[tuple[str, Mapping, Sequence[tuple[str, Sequence[str]]]]], *,
                     qa=None, conversation=None) -> list[tuple[int, str, Decision]]:
    """``(step index, step kind, Decision)`` for each checkable step of one answer; ``steps``: ``(kind, data,
    hits as (unit id, source turn ids))`` in order."""
    cards = declared_cards(method)
    gold = frozenset(map(str, getattr(qa, "evidence", None) or ()))
    out, seen = [], []
    for i, (kind, data, hits) in enumerate(steps):
        card = cards.get(kind)
        if card in CHECKS and isinstance(data, Mapping):
            found = decide(card, StepContext(data, qa, conversation, tuple(seen), gold))
            if found is not None:
                out.append((i, kind, found))
        seen.extend(hits)
    return out


def tally(rows: Iterable[Mapping], qa_of: Mapping[str, Any], conversations: Mapping[str, Any]) -> dict:
    """Per method, per step kind: how many of its checkable decisions were right and wrong, and by verdict
    (``{"hymem": {"light": {"right": 21, "wrong": 149, "by": {"stopped on a wrong answer": 120, ...}}}}``).
    ``rows``: result rows with their traces (``answer``); ``qa_of``: qa id -> ``QA``; ``conversations``: conversation
    id -> ``Conversation`` (the checker's names). Rows without a trace or a known question are skipped."""
    out: dict[str, dict[str, dict]] = {}
    for r in rows:
        answer, qa = r.get("answer"), qa_of.get(str(r.get("qa_id")))
        if not isinstance(answer, Mapping) or qa is None or not isinstance(answer.get("steps"), list):
            continue
        steps = [(str(s.get("kind")), s.get("data") or {}, _hits(s.get("hits"))) for s in answer["steps"]
                 if isinstance(s, Mapping)]
        for _, kind, d in answer_decisions(str(r.get("method")), steps, qa=qa,
                                           conversation=conversations.get(str(r.get("conv_id")))):
            slot = out.setdefault(str(r.get("method")), {}).setdefault(kind, {"right": 0, "wrong": 0, "by": Counter()})
            slot["right" if d.fitting else "wrong"] += 1
            slot["by"][d.verdict] += 1
    return {m: {k: {**v, "by": dict(v["by"].most_common())} for k, v in kinds.items()} for m, kinds in out.items()}


def tally_text(kinds: Mapping[str, Mapping]) -> str:
    """One method's tally in words: "light: 21 of 170 right (stopped on a wrong answer 149, ...); reflect: ..."."""
    parts = []
    for kind, v in kinds.items():
        n = int(v.get("right", 0)) + int(v.get("wrong", 0))
        by = ", ".join(f"{verdict} {count}" for verdict, count in (v.get("by") or {}).items())
        parts.append(f"{kind}: {v.get('right', 0)} of {n} right ({by})")
    return "; ".join(parts)


def _hits(value) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for h in value if isinstance(value, list) else ():
        if isinstance(h, Mapping) and h.get("unit_id") is not None:
            src = h.get("source_ids")
            out.append((str(h["unit_id"]), tuple(map(str, src)) if isinstance(src, (list, tuple)) else ()))
    return out


def _ids(ids: Sequence[str], limit: int = 3) -> str:
    return ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _short(text: Any, n: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[:n - 1] + "…"
