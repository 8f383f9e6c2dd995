"""Each step's own decision checked against the question's gold (``workbench.eval.decisions``), and the per-method
tally the census carries (issue: a view that shows a mechanism firing says whether it fired right)."""
from __future__ import annotations

from workbench.data import QA, Conversation, Session, Turn
from workbench.eval.decisions import StepContext, Unchecked, answer_decisions, decide, tally, tally_text
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
    assert (stayed.fitting, stayed.verdict, stayed.kind) == (False, "kept a wrong answer without going deep", "vague")
    # the model's own request is its finished flag (2: go deep); an ablation without a deep module could not escalate
    asked = decide("light_tier", StepContext({"answer": "Porto", "finished": 2, "escalate": True}, QA1))
    assert asked.verdict == "escalation needed"
    # a trace without the escalate field is read by its flag, compared as the method compares it (an int)
    assert decide("light_tier", StepContext({"answer": "Porto", "finished": 2}, QA1)).verdict == "escalation needed"
    assert decide("light_tier", StepContext({"answer": "Porto", "finished": "2"}, QA1)).verdict == \
        "kept a wrong answer without going deep"
    assert tally_text({"router": {"right": 0, "wrong": 0, "unchecked": 3}}) == \
        "router: no checkable decision, 3 not checkable"
    assert isinstance(decide("light_tier", StepContext({"answer": "Porto", "finished": 2, "escalate": False}, QA1)),
                      Unchecked)
    assert decide("sufficiency", StepContext({"answer": "Porto", "done": False}, QA1)).verdict == "another round needed"
    assert decide("evidence_gaps", StepContext({"action": "retrieve", "draft_answer": "Porto"}, QA1)) is None
    assert decide("evidence_gaps", StepContext({"action": "answer", "draft_answer": "Porto"}, QA1)).fitting is False
    forced = decide("evidence_gaps", StepContext({"action": "answer", "forced": "budget", "draft_answer": "x"}, QA1))
    assert forced == Unchecked("a guard forced the answer (the step budget was spent)")  # not the router's choice
    fallback = decide("evidence_gaps", StepContext({"action": "answer", "fallback": "invalid", "draft_answer": "x"},
                                                   QA1))
    assert fallback == Unchecked("the router's reply was unusable; a fallback answered")
    gold = frozenset({"D1:1"})
    seen = (("fact:1", ("D1:1",)), ("fact:2", ("D1:2",)))
    retry = decide("verdict", StepContext({"verdict": "Retry"}, QA1, None, seen, gold))
    assert (retry.fitting, retry.basis) == (False, "gold evidence") and "(fact:1)" in retry.because
    assert retry.because == "gold evidence is already in its 2 candidates (fact:1)"
    assert decide("verdict", StepContext({"verdict": "Pass"}, QA1, None, seen[1:], gold)).because == \
        "no gold evidence turn is in its one candidate"
    # a Pass hands on the entries it named relevant: one that dropped the gold unit passed without the evidence
    dropped = decide("verdict", StepContext({"verdict": "Pass", "relevant_ids": ["fact:2"]}, QA1, None, seen, gold))
    assert (dropped.fitting, dropped.because) == (False, "no gold evidence turn is in the entry it named relevant")
    # a failed Judge call fell back to Pass: the Judge decided nothing
    failed = decide("verdict", StepContext({"verdict": "Pass", "error": "timeout"}, QA1, None, seen, gold))
    assert failed == Unchecked("its call failed; a fallback stood in")
    assert decide("verdict", StepContext({"verdict": "Refresh"}, QA1, None, seen, gold)) is None
    # as AMA hands on: named entries among the candidates, else every candidate (a name it invented is no entry)
    named = decide("verdict", StepContext({"verdict": "Pass", "relevant_ids": ["fact:1"]}, QA1, None, seen, gold))
    assert (named.fitting, named.because) == (True, "gold evidence is in the entry it named relevant (fact:1)")
    invented = decide("verdict", StepContext({"verdict": "Pass", "relevant_ids": ["fact:9"]}, QA1, None, seen, gold))
    assert (invented.fitting, invented.because) == (True, "gold evidence is in its 2 candidates (fact:1)")
    assert decide("verdict", StepContext({"verdict": "Retry"}, QA1, None, (), gold)).because == \
        "no gold evidence turn is in its candidates (it had none)"
    # nothing to check against: no question, a question the checker does not judge, an empty answer
    assert decide("light_tier", StepContext({"answer": "Lisbon", "escalate": True})) == Unchecked("no question given")
    preference = QA("lme/q2", "Any tips for my trip?", "The user would prefer budget hostels.",
                    "single-session-preference", ())
    assert decide("light_tier", StepContext({"answer": "Lisbon"}, preference)) == Unchecked(
        "a question the checker does not judge")
    # an adversarial question (category 5) is read as the checker reads it: an abstention in any wording is right,
    # an answer is made up; there is no gold to quote
    adversarial = QA("c/q2", "Where did Sam move?", "", 5, ())
    made_up = decide("light_tier", StepContext({"answer": "Lisbon"}, adversarial))
    assert (made_up.fitting, made_up.verdict, made_up.kind) == (False, "kept a wrong answer without going deep",
                                                                "wrong_value")
    assert made_up.because.startswith("the light answer is wrong: it answers where an adversarial question")
    abstained = decide("light_tier", StepContext({"answer": "The conversation doesn't say.", "escalate": True},
                                                 adversarial))
    assert (abstained.fitting, abstained.verdict) == (False, "escalation not needed")
    assert abstained.because == "the light answer is already right: it abstains, as an adversarial question " \
                                "(category 5) wants"
    assert "“" not in made_up.because + abstained.because
    assert decide("light_tier", StepContext({"answer": "", "escalate": True}, QA1)) == Unchecked("an empty answer")
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
    rows.append(row("hymem", [step("light", {"answer": "", "escalate": False})]))  # an empty answer: unchecked
    got = tally(rows, {QA1.id: QA1}, {"c": conv()})
    assert got == {"hymem": {"light": {"right": 1, "wrong": 1, "by": {"kept a wrong answer without going deep": 1,
                                                                      "right to keep its answer": 1},
                                       "unchecked": 1, "unchecked_why": {"an empty answer": 1}}},
                   "ama": {"judge": {"right": 0, "wrong": 1, "by": {"retry not needed": 1}, "unchecked": 0,
                                     "unchecked_why": {}}}}
    assert tally_text(got["hymem"]) == ("light: 1 of 2 right (kept a wrong answer without going deep 1, right to keep "
                                        "its answer 1), 1 not checkable (an empty answer 1)")
    md = census_markdown({"methods": {m: {"counts": {}, "decisions": d} for m, d in got.items()}})
    assert "Were the steps' own decisions right?" in md and "- **ama**: judge: 0 of 1 right (retry not needed 1)" in md


def test_the_app_census_lists_the_decisions_one_click_away():
    from widgets.mechanisms_census import census_html

    value = {"methods": {"hymem": {"counts": {"questions": 1}, "decisions": {
        "light": {"right": 0, "wrong": 1, "by": {"kept a wrong answer without going deep": 1}}}}}}
    html = census_html(value, "mechanisms.json")
    assert "were the steps' own decisions right?" in html
    assert "<li>HyMem <code" in html and "light: 0 of 1 right (kept a wrong answer without going deep 1)</li>" in html


def test_damaged_traces_and_saved_tallies_are_read_without_a_crash():
    """Anything read from a run directory is untrusted: rows, steps, data and hits of any shape are skipped, and a
    saved census whose decisions are damaged still renders (the app header reads mechanisms.json as saved)."""
    rows = ["not a row", {"method": "hymem", "qa_id": "c/q1", "answer": {"steps": "nope"}},
            row("hymem", ["a step", step("light", ["data", "as", "a", "list"]),
                          {"kind": "light", "data": {"answer": "Porto", "escalate": False}, "hits": ["x", 3, None]}]),
            row("ama", [{"kind": "retrieve", "data": {}, "hits": [{"unit_id": "fact:1", "source_ids": "D1:1"}, "h"]},
                        step("judge", {"verdict": "RETRY"})])]
    got = tally(rows, {QA1.id: QA1}, {"c": conv()})
    assert got["hymem"]["light"]["wrong"] == 1
    assert got["ama"]["judge"]["by"] == {"right to look further": 1}  # source ids not a list: no gold read from it
    for damaged in ({"light": "oops"}, {"light": {"right": "x", "wrong": None, "by": ["a"]}}, "text", None, [1]):
        tally_text(damaged)
        md = census_markdown({"methods": {"hymem": {"counts": {}, "decisions": damaged}}})
        assert md.startswith("## Mechanisms fired")
    assert tally_text({"light": {"right": "x", "wrong": 2, "by": {"a": "b", "c": 2}}}) == "light: 0 of 2 right (c 2)"


def test_the_census_reads_a_conversation_under_a_hash_shortened_name_and_says_when_one_is_missing(tmp_path):
    """A conversation id too long for a file name is saved under a hashed name that cannot be read back into the id;
    the census still finds it by the rows' id. A conversation the run never saved is a problem, not a silence."""
    from dataclasses import replace

    from workbench.eval.mechanisms import census
    from workbench.rundir import save_conversation, write_jsonl

    long_id = "c" * 300
    c = replace(conv(), id=long_id, qa=(replace(QA1, id=f"{long_id}/q1"),))
    save_conversation(tmp_path, c)
    assert [p.stem[-17] for p in (tmp_path / "conversations").iterdir()] == ["~"]  # hash-shortened
    light = [step("light", {"answer": "Porto", "escalate": False})]
    rows = [{**row("hymem", light), "conv_id": long_id, "qa_id": f"{long_id}/q1"},
            {**row("hymem", light), "conv_id": "gone", "qa_id": "gone/q1"},
            {**row("naive_rag", [step("answer", {"answer": "Porto"})]), "conv_id": "gone2", "qa_id": "gone2/q1"}]
    write_jsonl(tmp_path / "results.jsonl", [{**r, "params_hash": "p", "dataset": "d"} for r in rows])
    got = census(tmp_path)
    assert got["methods"]["hymem"]["decisions"]["light"]["by"] == {"kept a wrong answer without going deep": 1}
    missing = [p for p in got["problems"] if "not saved in the run" in p]
    assert missing == ["1 conversation not saved in the run ('gone'): the decisions made on their questions are not "
                       "checked"]  # naive_rag decides nothing checkable: its missing conversation is no problem
