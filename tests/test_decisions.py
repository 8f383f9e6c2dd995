"""Each step's own decision checked against the question's gold (``workbench.eval.decisions``), and the per-method
tally the census carries (issue: a view that shows a mechanism firing says whether it fired right)."""
from __future__ import annotations

from workbench.data import QA, Conversation, Session, Turn
from workbench.eval.decisions import StepContext, answer_decisions, decide, tally, tally_text
from workbench.eval.mechanisms import census_markdown


def conv() -> Conversation:
    turns = (Turn("D1:1", "Priya", "I moved to Lisbon in May.", "S1"), Turn("D1:2", "Sam", "Nice!", "S1"))
    return Conversation("c", ("Priya", "Sam"), (Session("S1", None, turns),),
                        (QA("c/q1", "Where did Priya move?", "Lisbon", 1, ("D1:1",)),))


QA1 = conv().qa[0]


def step(kind, data, hits=()):
    return {"kind": kind, "title": kind, "data": data,
            "hits": [{"unit_id": u, "text": "", "score": 0.5, "source_ids": list(src), "kind": ""} for u, src in hits]}


def row(method, steps):
    return {"method": method, "qa_id": "c/q1", "conv_id": "c", "answer": {"question": "q", "text": "", "steps": steps}}


def test_each_kind_of_decision_is_right_or_wrong_by_the_gold():
    ctx = StepContext({"answer": "Lisbon", "escalate": True}, QA1, conv())
    went = decide("light_tier", ctx)
    assert (went.fitting, went.verdict) == (False, "escalation not needed") and "“Lisbon”" in went.because
    stayed = decide("light_tier", StepContext({"answer": "Porto", "escalate": False}, QA1, conv()))
    assert (stayed.fitting, stayed.verdict, stayed.kind) == (False, "stopped on a wrong answer", "vague")
    assert decide("sufficiency", StepContext({"answer": "Porto", "done": False}, QA1)).verdict == "another round needed"
    assert decide("evidence_gaps", StepContext({"action": "retrieve", "draft_answer": "Porto"}, QA1)) is None
    assert decide("evidence_gaps", StepContext({"action": "answer", "draft_answer": "Porto"}, QA1)).fitting is False
    gold = frozenset({"D1:1"})
    seen = (("fact:1", ("D1:1",)), ("fact:2", ("D1:2",)))
    retry = decide("verdict", StepContext({"verdict": "Retry"}, QA1, None, seen, gold))
    assert (retry.fitting, retry.basis) == (False, "gold evidence") and "(fact:1)" in retry.because
    assert decide("verdict", StepContext({"verdict": "Pass"}, QA1, None, seen[1:], gold)).fitting is False
    assert decide("verdict", StepContext({"verdict": "Refresh"}, QA1, None, seen, gold)) is None
    # nothing to check against: no question, a question the checker does not judge, an empty answer
    assert decide("light_tier", StepContext({"answer": "Lisbon", "escalate": True})) is None
    assert decide("light_tier", StepContext({"answer": "Lisbon"}, QA("c/q2", "?", "", 5, ()))) is None
    assert decide("light_tier", StepContext({"answer": "", "escalate": True}, QA1)) is None
    assert decide("retrieve", ctx) is None  # a card kind that decides nothing checkable


def test_decisions_follow_the_card_kinds_a_method_declares():
    """HyMem declares its "reflect" step a ``sufficiency`` card, MemR3 its "reflect" a ``reflect_note``: the same
    step kind is checked for one and not the other."""
    hymem = answer_decisions("hymem", [("reflect", {"answer": "Porto", "done": True}, ())], qa=QA1)
    assert [(i, k, d.verdict) for i, k, d in hymem] == [(0, "reflect", "stopped on a wrong answer")]
    assert answer_decisions("memr3", [("reflect", {"answer": "Porto", "done": True}, ())], qa=QA1) == []
    assert answer_decisions("no_such_method", [("light", {"answer": "Porto"}, ())], qa=QA1) == []


def test_the_tally_counts_per_method_and_step_kind_and_the_census_says_it():
    rows = [row("hymem", [step("light", {"answer": "Porto", "escalate": False}),
                          step("light", {"answer": "Lisbon", "escalate": False})]),
            row("ama", [step("retrieve", {}, [("fact:1", ("D1:1",))]), step("judge", {"verdict": "Retry"})]),
            row("naive_rag", [step("retrieve", {}), step("answer", {"answer": "Porto"})]),
            {"method": "hymem", "qa_id": "c/q9", "conv_id": "c", "answer": {"steps": []}}]  # an unknown question
    got = tally(rows, {QA1.id: QA1}, {"c": conv()})
    assert got == {"hymem": {"light": {"right": 1, "wrong": 1, "by": {"stopped on a wrong answer": 1,
                                                                      "right to stop here": 1}}},
                   "ama": {"judge": {"right": 0, "wrong": 1, "by": {"retry not needed": 1}}}}
    assert tally_text(got["hymem"]) == "light: 1 of 2 right (stopped on a wrong answer 1, right to stop here 1)"
    md = census_markdown({"methods": {m: {"counts": {}, "decisions": d} for m, d in got.items()}})
    assert "Were the steps' own decisions right?" in md and "- **ama**: judge: 0 of 1 right (retry not needed 1)" in md


def test_the_app_census_lists_the_decisions_one_click_away():
    from widgets.mechanisms_census import census_html

    value = {"methods": {"hymem": {"counts": {"questions": 1}, "decisions": {
        "light": {"right": 0, "wrong": 1, "by": {"stopped on a wrong answer": 1}}}}}}
    html = census_html(value, "mechanisms.json")
    assert "were the steps' own decisions right?" in html
    assert "<li>HyMem <code" in html and "light: 0 of 1 right (stopped on a wrong answer 1)</li>" in html
