"""``widgets.tables``: the notebooks' small tables and one-line trace summaries (pure functions)."""
from __future__ import annotations

from types import SimpleNamespace

from widgets.tables import PROBE_COLUMNS, answers_frame, probe_table, router_actions, tiers, verdicts
from workbench.trace import Answer, Step, Usage


def _answer(*steps, text="Lyon"):
    return Answer("where?", text, tuple(steps), usage=Usage(prompt_tokens=10, completion_tokens=2, calls=2))


def test_trace_summaries_read_the_steps():
    a = _answer(Step("light", "light"), Step("reflect", "r"), Step("deep", "deep"),
                Step("judge", "j", {"verdict": "Retry"}), Step("judge", "j", {"verdict": "Pass"}),
                Step("router", "r", {"action": "retrieve"}), Step("router", "r", {"action": "answer"}))
    assert tiers(a) == "L D"
    assert verdicts(a) == ["Retry", "Pass"]
    assert router_actions(a) == ["retrieve", "answer"]
    assert tiers(_answer()) == "" and verdicts(_answer()) == []


def test_answers_frame_one_row_per_question_with_extra_columns():
    qs = [SimpleNamespace(id="q0", question="where?", answer="Lyon"), SimpleNamespace(id="q1", question="when?",
                                                                                       answer="May")]
    frame = answers_frame(qs, [_answer(Step("light", "l")), _answer(text="June")], tiers=tiers)
    assert list(frame.columns) == ["id", "question", "gold", "answer", "tokens", "calls", "tiers"]
    assert frame["answer"].tolist() == ["Lyon", "June"] and frame["tiers"].tolist() == ["L", ""]
    assert frame["tokens"].tolist() == [12, 12]


def test_probe_table_lists_every_probe_and_is_empty_without_any():
    probe = {"id": "fact:1", "question": "city?", "memory_answer": "Lyon", "new_answer": "Geneva", "conflict": True,
             "why": "different answers"}
    ama = SimpleNamespace(turn_steps_={"D2:1": [Step("judge", "j", {"probes": [probe]}), Step("other", "o")],
                                       "D2:2": []})
    table = probe_table(ama)
    assert list(table.columns) == list(PROBE_COLUMNS) and table.to_dict("records") == [{"turn": "D2:1", **probe}]
    assert probe_table(SimpleNamespace(turn_steps_={})).empty
