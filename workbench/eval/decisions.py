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

from ..words import counted, one_line
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
        """The checker on ``text`` as an answer to the question (a LoCoMo adversarial one, category 5, by
        ``check_adversarial``: abstaining is right); None without a question, for one the checker does not judge
        (LongMemEval, no short gold) or for an empty text."""
        if self.qa is None or not str(text or "").strip():
            return None
        return check_qa(self.qa, str(text), conversation=self.conversation)


@dataclass(frozen=True)
class Unchecked:
    """A decision that could not be checked, and why (a failed call whose fallback stood in, an empty answer, a
    question the checker does not judge, ...): counted apart, never as right or wrong."""

    why: str


def _said(ctx: StepContext, text: Any) -> tuple[bool, str, str] | Unchecked:
    """(right, "right against the gold “Pilot”" / "wrong against the gold “Pilot” (names Biscuit, not Pilot)",
    kind) for ``text``; on an adversarial question, which has no gold to quote, "right: it abstains ..." / "wrong:
    it answers where ... wants an abstention"; ``Unchecked`` where it cannot be checked."""
    if ctx.qa is None:
        return Unchecked("no question given")
    if not str(text or "").strip():
        return Unchecked("an empty answer")
    check = ctx.check(text)
    if check is None:
        return Unchecked("a question the checker does not judge")
    if _adversarial(ctx.qa):  # no gold to quote: abstaining is the right answer (``checker.check_adversarial``)
        if check.correct:
            return True, "right: it abstains, as an adversarial question (category 5) wants", ""
        return False, ("wrong: it answers where an adversarial question (category 5), which the conversation does "
                       "not answer, wants an abstention"), check.kind
    gold = one_line(getattr(ctx.qa, "answer", ""), 80)
    if check.correct:
        return True, f"right against the gold “{gold}”", ""
    return False, f"wrong against the gold “{gold}” ({one_line(check.reason, 120)})", check.kind


def _adversarial(qa: Any) -> bool:
    """A LoCoMo adversarial question (category 5, an int as LoCoMo numbers it): the checker reads it by
    ``check_adversarial``, an abstention in any wording right and any answer a fabrication."""
    category = getattr(qa, "category", None)
    return isinstance(category, int) and not isinstance(category, bool) and category == 5


def _failed(ctx: StepContext) -> Unchecked | None:
    """A step whose call failed decided nothing itself (a fallback stood in: AMA's Judge passes everything, HyMem's
    reflection stops)."""
    return Unchecked("its call failed; a fallback stood in") if ctx.data.get("error") else None


def _flag(value: Any) -> int | None:
    """A recorded integer flag as the method compared it (an int, not a bool, a float or a string); else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


#: a MemR3 guard's name as a reader says it (``forced`` in a router step)
GUARD_WORDS = {"budget": "the step budget was spent", "nothing_left": "nothing was left to retrieve",
               "empty_retrieval": "the last retrieval came back empty",
               "reflect_streak": "too many reflections in a row"}


def escalation(ctx: StepContext) -> Decision | Unchecked:
    """A light step: going deep is needed when the light answer is wrong, not needed when it is right; keeping the
    answer without going deep the other way round. What the model asked for is its finished flag (2: go deep);
    where the configuration has no deep module (an ablation) it could not escalate, so nothing is checked."""
    failed = _failed(ctx)
    if failed is not None:
        return failed
    finished, escalate = _flag(ctx.data.get("finished")), ctx.data.get("escalate")
    asked = bool(escalate) or (finished == 2 and escalate is None)
    if finished == 2 and escalate is False:  # the method escalates on a 2 whenever it has a deep module
        return Unchecked("it asked for the deep module but did not escalate: no deep module in this configuration")
    found = _said(ctx, ctx.data.get("answer"))
    if isinstance(found, Unchecked):
        return found
    right, said, kind = found
    if asked:
        return (Decision(False, "escalation not needed", f"the light answer is already {said}") if right
                else Decision(True, "escalation needed", f"the light answer is {said}", kind=kind))
    return (Decision(True, "right to keep its answer", f"the light answer is {said}") if right
            else Decision(False, "kept a wrong answer without going deep", f"the light answer is {said}", kind=kind))


def reflection(ctx: StepContext) -> Decision | Unchecked:
    """A reflection: "complete" (stop) is right on a right answer; "not complete" (another round) on a wrong one."""
    failed = _failed(ctx)
    if failed is not None:
        return failed
    found = _said(ctx, ctx.data.get("answer"))
    if isinstance(found, Unchecked):
        return found
    right, said, kind = found
    if ctx.data.get("done"):
        return (Decision(True, "right to stop", f"the answer judged complete is {said}") if right
                else Decision(False, "stopped on a wrong answer", f"the answer judged complete is {said}", kind=kind))
    return (Decision(False, "another round not needed", f"the answer judged incomplete is already {said}") if right
            else Decision(True, "another round needed", f"the answer judged incomplete is {said}", kind=kind))


def draft(ctx: StepContext) -> Decision | Unchecked | None:
    """A router step that chose to answer, by the draft it answered from; a step a guard forced to answer (the
    budget spent, nothing left) was no choice of the router's, and a step with another action decides no answer."""
    if str(ctx.data.get("action") or "") != "answer":
        return None
    if ctx.data.get("forced"):
        guard = str(ctx.data.get("forced"))
        return Unchecked(f"a guard forced the answer ({GUARD_WORDS.get(guard, one_line(guard, 40))})")
    if ctx.data.get("error") or ctx.data.get("fallback"):  # an unusable reply: the default action stood in
        return Unchecked("the router's reply was unusable; a fallback answered")
    found = _said(ctx, ctx.data.get("draft_answer"))
    if isinstance(found, Unchecked):
        return found
    right, said, kind = found
    return (Decision(True, "answered on a right draft", f"the draft is {said}") if right
            else Decision(False, "answered on a wrong draft", f"the draft is {said}", kind=kind))


def judge(ctx: StepContext) -> Decision | Unchecked | None:
    """A Judge's Pass (answer from the entries it kept) or Retry (look further), by the question's gold evidence
    turns: a Pass is right when the entries it hands on (those it named relevant, else every candidate) hold one,
    a Retry when none of the candidates it judged (every unit retrieved so far) does. A Refresh decides no answer."""
    verdict = str(ctx.data.get("verdict") or "").lower()
    if verdict not in ("pass", "retry"):
        return None
    failed = _failed(ctx)
    if failed is not None:
        return failed
    if not ctx.gold:
        return Unchecked("the question names no gold evidence turn")
    seen = dict(ctx.candidates)
    named = [str(x) for x in ctx.data.get("relevant_ids") or () if isinstance(x, (str, int))] \
        if isinstance(ctx.data.get("relevant_ids"), (list, tuple)) else []
    # what AMA hands on (``AMA._relevant``): the named entries that are among the candidates, else every candidate
    kept = ({u: seen[u] for u in named if u in seen} or seen) if verdict == "pass" else seen
    named = named if kept is not seen else []
    found = [u for u, src in kept.items() if u in ctx.gold or ctx.gold & set(map(str, src or ()))]
    basis = "gold evidence"
    if verdict == "pass":
        what = (f"the {counted(len(kept), 'entry', 'entries')} it named relevant" if named and len(kept) > 1 else
                "the entry it named relevant" if named else _candidates(len(seen)))
        return (Decision(True, "right to pass", f"gold evidence is in {what} ({_ids(found)})", basis) if found
                else Decision(False, "passed without the evidence", f"no gold evidence turn is in {what}", basis))
    return (Decision(False, "retry not needed", f"gold evidence is already in {_candidates(len(seen))} "
                                                f"({_ids(found)})", basis)
            if found else Decision(True, "right to look further", f"no gold evidence turn is in "
                                                                   f"{_candidates(len(seen))}", basis))


def _candidates(n: int) -> str:
    return "its one candidate" if n == 1 else "its candidates (it had none)" if n == 0 else f"its {n:,} candidates"


#: the card kinds (``MemoryMethod.step_cards``) whose step decides on something checkable, with its check
CHECKS: dict[str, Callable[[StepContext], Decision | Unchecked | None]] = {
    "light_tier": escalation, "sufficiency": reflection, "evidence_gaps": draft, "verdict": judge,
}


def decide(card_kind: str, ctx: StepContext) -> Decision | Unchecked | None:
    """The decision check of a step of ``card_kind``: a ``Decision``, ``Unchecked`` (a decision that cannot be
    checked, with why), or None where the step decides nothing checkable (its kind, or e.g. a router step that
    chose to retrieve)."""
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


def answer_decisions(method: str, steps: Sequence[tuple[str, Any, Any]], *, qa=None, conversation=None
                     ) -> list[tuple[int, str, Decision | Unchecked]]:
    """``(step index, step kind, Decision or Unchecked)`` for each step of one answer that decided something
    checkable; ``steps``: ``(kind, data, hits as (unit id, source turn ids))`` in order. Shapes are not trusted: a
    step whose data is not a mapping is passed over, hits that are not pairs are not candidates."""
    cards = declared_cards(method)
    gold = frozenset(map(str, getattr(qa, "evidence", None) or ()))
    out, seen = [], []
    for i, (kind, data, hits) in enumerate(steps):
        card = cards.get(kind)
        if card in CHECKS and isinstance(data, Mapping):
            found = decide(card, StepContext(data, qa, conversation, tuple(seen), gold))
            if found is not None:
                out.append((i, kind, found))
        seen.extend(h for h in hits or () if isinstance(h, tuple) and len(h) == 2)
    return out


def tally(rows: Iterable[Any], qa_of: Mapping[str, Any], conversations: Mapping[str, Any]) -> dict:
    """Per method, per step kind: how many of its decisions were right and wrong, by verdict, and how many could not be
    checked, by why (HyMem over conv-41: ``{"hymem": {"light": {"right": 22, "wrong": 151, "by": {"kept a wrong
    answer without going deep": 149, ...}, "unchecked": 12, "unchecked_why": {"its call failed; a fallback stood
    in": 12}}}}``). ``rows``: result rows with their traces (``answer``); ``qa_of``: qa id -> ``QA``;
    ``conversations``: conversation id -> ``Conversation`` (the checker's names). A row that is not a mapping, has
    no trace or no known question is skipped; so are steps of a shape no check reads."""
    out: dict[str, dict[str, dict]] = {}
    for r in rows:
        if not isinstance(r, Mapping):
            continue
        answer, qa = r.get("answer"), qa_of.get(str(r.get("qa_id")))
        if not isinstance(answer, Mapping) or qa is None or not isinstance(answer.get("steps"), list):
            continue
        steps = [(str(s.get("kind")), s.get("data"), _hits(s.get("hits"))) for s in answer["steps"]
                 if isinstance(s, Mapping)]
        for _, kind, d in answer_decisions(str(r.get("method")), steps, qa=qa,
                                           conversation=conversations.get(str(r.get("conv_id")))):
            slot = out.setdefault(str(r.get("method")), {}).setdefault(
                kind, {"right": 0, "wrong": 0, "by": Counter(), "unchecked": 0, "unchecked_why": Counter()})
            if isinstance(d, Unchecked):
                slot["unchecked"] += 1
                slot["unchecked_why"][d.why] += 1
                continue
            slot["right" if d.fitting else "wrong"] += 1
            slot["by"][d.verdict] += 1
    return {m: {k: {**v, "by": dict(v["by"].most_common()), "unchecked_why": dict(v["unchecked_why"].most_common())}
                for k, v in kinds.items()} for m, kinds in out.items()}


def tally_text(kinds: Any) -> str:
    """One method's tally in words: "light: 22 of 173 right (kept a wrong answer without going deep 149, ...), 12 not
    checkable (its call failed; a fallback stood in 12); reflect: ...". Read from a saved census, so any shape is
    tolerated: what is not a count is left out."""
    if not isinstance(kinds, Mapping):
        return ""
    parts = []
    for kind, v in kinds.items():
        if not isinstance(v, Mapping):
            continue
        right, wrong, unchecked = (_count(v.get(k)) for k in ("right", "wrong", "unchecked"))
        by = _pairs(v.get("by"))
        text = (f"{kind}: {right} of {right + wrong} right" + (f" ({by})" if by else "") if right + wrong else
                f"{kind}: no checkable decision")
        if unchecked:
            why = _pairs(v.get("unchecked_why"))
            text += f", {unchecked} not checkable" + (f" ({why})" if why else "")
        parts.append(text)
    return "; ".join(parts)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _pairs(value: Any) -> str:
    if not isinstance(value, Mapping):
        return ""
    return ", ".join(f"{k} {_count(n)}" for k, n in value.items() if _count(n))


def _hits(value) -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for h in value if isinstance(value, list) else ():
        if isinstance(h, Mapping) and h.get("unit_id") is not None:
            src = h.get("source_ids")
            out.append((str(h["unit_id"]), tuple(map(str, src)) if isinstance(src, (list, tuple)) else ()))
    return out


def _ids(ids: Sequence[str], limit: int = 3) -> str:
    return ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")
