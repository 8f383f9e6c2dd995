"""Issue 17 items 3-5: evidence recall on what the final reader saw, failure attribution, fair arena."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from workbench.data import Dataset, load_sample
from workbench.embed import HashEmbedder
from workbench.eval import evaluate
from workbench.eval.attribution import LABELS, attribute, attribution_markdown, attribution_table
from workbench.eval.metrics import evidence_precision, evidence_recall, turns_shown
from workbench.llm import ScriptedLLM
from workbench.methods import REGISTRY, MemoryMethod, NaiveRAG
from workbench.methods.answer_prompt import SHARED_ANSWER
from workbench.methods.memr3 import MemR3
from workbench.trace import Answer, Hit

SHARED_MARK = SHARED_ANSWER.splitlines()[0]  # the shared prompt's first line, in no native prompt


def _conv_with_qa(conv, evidence, *, answer="Pilot", category=4):
    qa = replace(conv.qa[0], evidence=tuple(evidence), answer=answer, category=category)
    return replace(conv, qa=(qa,))


def _one_row(method, conv):
    res = evaluate(method, Dataset("t", (conv,)), progress=False)
    assert len(res) == 1 and res[0].error is None, res[0].error
    return res[0]


# -- 4. evidence recall on the units shown to the final reader ------------------------------------------
def R(decision, **payload):
    return {"evidence": ["x"], "gaps": [], "decision": decision, **payload}


def _memr3_25_hits():
    """Four retrieve decisions then the forced answer: 5 batches of 5 = 25 hits, every one read by a router call."""
    replies = [R("retrieve", retrieval_query=q) for q in ("dog name", "new city", "job", "painting")]
    llm = ScriptedLLM(replies + [R("answer", detailed_answer="Pilot"), "Pilot"])
    backend = NaiveRAG(llm=ScriptedLLM([], default="x"), embedder=HashEmbedder(dim=128), chunking="turn")
    return MemR3(llm=llm, embedder=HashEmbedder(dim=128), backend=backend, n_chk=5, n_max=5)


def test_memr3_evidence_recall_is_computed_on_every_batch_its_router_read():
    """MemR3's answer call reads only the evidence E (paper Eq. 6), which the router calls wrote from every batch
    they read; until turn 4 the context was the last batch alone (turn-4 review N4: conv-30's recall 0.102 there,
    0.681 over every batch)."""
    conv = load_sample()[0]
    probe = _memr3_25_hits().ingest(conv).answer(conv.qa[0].question)
    batches = [s.hits for s in probe.steps if s.kind == "retrieve"]
    assert [len(b) for b in batches] == [5] * 5  # 25 hits retrieved, each batch read by the router call after it
    assert [h.unit_id for h in probe.context] == [h.unit_id for b in batches for h in b]
    assert MemR3.last_batch(probe) == batches[-1]
    first_turn = batches[0][0].source_ids[0]  # read in the first batch only, never in the last
    last_turn = batches[-1][0].source_ids[0]
    row = _one_row(_memr3_25_hits(), _conv_with_qa(conv, [first_turn, last_turn]))
    assert row.evidence_recall == 1.0  # was 0.5 when only the last batch counted
    assert row.turns_shown == 25
    assert row.evidence_precision == pytest.approx(2 / 25)
    assert evidence_recall([first_turn, last_turn], [t for h in MemR3.last_batch(probe) for t in h.source_ids]) == 0.5


class _OneUnit(MemoryMethod):
    """Test double: its final reader is shown one unit covering ``span`` turns from the first one."""

    name = "one_unit"

    def __init__(self, *, span: int = 1):
        self.span = span

    def _build(self, conv):
        self.turn_ids_ = [t.id for t in conv.turns]

    def _answer(self, question, *, now):
        return Answer(question, "Pilot", (), (Hit("u0", "text", 1.0, tuple(self.turn_ids_[:self.span])),))

    def _units(self):
        return []


def test_precision_drops_for_a_unit_spanning_twelve_turns():
    conv = load_sample()[0]
    conv = _conv_with_qa(conv, [conv.turns[0].id])
    small, large = _one_row(_OneUnit(span=1), conv), _one_row(_OneUnit(span=12), conv)
    assert small.evidence_recall == large.evidence_recall == 1.0  # a big unit buys the same recall...
    assert (small.turns_shown, large.turns_shown) == (1, 12)
    assert small.evidence_precision == 1.0 and large.evidence_precision == pytest.approx(1 / 12)  # ...not precision
    table = evaluate(_OneUnit(span=12), Dataset("t", (conv,)), progress=False).summary(n_boot=10)
    overall = table[table.category == "overall"].iloc[0]
    assert (overall["turns_shown"], overall["evidence_precision"]) == (12, pytest.approx(1 / 12))


def test_shown_metrics_edge_cases():
    assert turns_shown(["D1:1", "D1:1", "D1:2"]) == 2
    assert evidence_precision([], ["D1:1"]) is None and evidence_precision(["D1:1"], []) is None
    assert evidence_precision(["D1:1", "D9:9"], ["D1:1", "D1:2", "D1:3", "D1:4"]) == 0.25
    assert evidence_recall(["D1:1", "D9:9"], ["D1:1"]) == 0.5


def test_old_answers_without_new_fields_still_load():
    old = {"question": "q", "text": "a", "steps": [], "context": [{"unit_id": "u", "text": "t", "score": 1.0,
                                                                   "source_ids": ["D1:1"], "kind": ""}]}
    assert Answer.from_dict(old).source_ids == ("D1:1",)
    from workbench.eval.harness import QuestionResult

    row = {f: None for f in ("method", "params_hash", "dataset", "conv_id", "qa_id", "category", "category_name",
                             "question", "gold", "prediction")}
    r = QuestionResult.from_dict(row)
    assert r.turns_shown is None and r.evidence_precision is None and r.attribution is None


# -- 3. failure attribution ------------------------------------------------------------------------------
BASE = {"method": "m", "qa_id": "c/q1", "category": 4, "gold": "Pilot", "prediction": "Pilot",
        "scores": {"f1": 1.0}, "judge_label": None, "evidence_recall": 1.0, "error": None, "abstention": False}


def row(**kw):
    scores = kw.pop("scores", None)
    return {**BASE, **kw, "scores": scores if scores is not None else BASE["scores"]}


@pytest.mark.parametrize("case, expected", [
    (row(), "correct"),
    (row(prediction="Pilot, the greyhound", scores={"f1": 0.5}), "correct"),  # F1 threshold 0.5
    (row(prediction="Biscuit", scores={"f1": 0.0}, evidence_recall=0.0), "retrieval_miss"),
    (row(prediction="Biscuit", scores={"f1": 0.0}, evidence_recall=0.5), "reading_miss"),
    (row(prediction="Not mentioned in the conversation", scores={"f1": 0.0}), "abstained"),
    (row(prediction="I don't know", scores={"f1": 0.0}, evidence_recall=0.0), "abstained"),
    (row(category=5, prediction="Not mentioned in the conversation", scores={"adversarial": 1.0}), "correct"),
    (row(category=5, prediction="Priya", scores={"adversarial": 0.0}, evidence_recall=1.0), "reading_miss"),
    (row(qa_id="x_abs", category="temporal-reasoning", abstention=True, prediction="unknown", scores={},
         evidence_recall=None), "correct"),
    (row(prediction="Biscuit", scores={"f1": 0.0}, evidence_recall=None), "unattributed"),
    (row(prediction="Cats", category="single-session-preference", scores={}), "ungraded"),
    (row(prediction="", error="RuntimeError: boom"), "failed"),
])
def test_attribution_cases(case, expected):
    assert attribute(case).label == expected


def test_judge_disagrees_when_a_trusted_judge_contradicts_f1():
    q4 = row(prediction="Biscuit", scores={"f1": 0.0}, judge_label="CORRECT")  # sample-1/q4 in the demo
    assert attribute(q4, judge_trusted=True).label == "judge_disagrees"
    assert attribute(row(scores={"f1": 1.0}, judge_label="WRONG"), judge_trusted=True).label == "judge_disagrees"
    untrusted = attribute(q4)  # F1 decides; the conflict stays visible
    assert untrusted.label == "reading_miss" and untrusted.judge_f1_conflict
    assert not attribute(row(judge_label="CORRECT")).judge_f1_conflict
    table = attribution_table([q4, row()]).set_index("method")
    assert table.loc["m", "judge_f1_conflict"] == 1 and table.loc["m", "judge_disagrees"] == 0


def test_judge_decides_only_when_trusted():
    r = row(prediction="Pilot greyhound dog", scores={"f1": 0.5}, judge_label="WRONG", evidence_recall=0.0)
    assert attribute(r).label == "correct"  # untrusted judge: F1 decides
    assert attribute(r, judge_trusted=True).label == "retrieval_miss"
    failed_judge = row(prediction="Biscuit", scores={"f1": 0.0}, judge_label="CORRECT", judge_error="timeout")
    assert attribute(failed_judge).label == "reading_miss"  # a failed judge call gives no label: F1 decides


def test_attribution_reads_gold_from_the_trace_when_given():
    trace = {"question": "q", "text": "Biscuit", "context": [{"unit_id": "u", "text": "t", "source_ids": ["D3:6"]}]}
    r = row(prediction="Biscuit", scores={"f1": 0.0}, evidence_recall=None, answer=trace)
    assert attribute(r, evidence=["D4:3"]).label == "retrieval_miss"
    assert attribute(r, evidence=["D3:6"]).label == "reading_miss"


def test_attribution_table_counts_per_method():
    rows = [row(method="a"), row(method="a", prediction="Biscuit", scores={"f1": 0.0}, evidence_recall=0.0),
            row(method="b", prediction="Not mentioned", scores={"f1": 0.0})]
    t = attribution_table(rows).set_index("method")
    assert t.loc["a", "n"] == 2 and t.loc["a", "correct"] == 1 and t.loc["a", "retrieval_miss"] == 1
    assert t.loc["b", "abstained"] == 1 and t.loc["b", "abstained_share"] == 1.0
    assert list(t.columns[:len(LABELS) + 1]) == ["n", *LABELS]
    md = attribution_markdown(rows)
    assert "Failure attribution" in md and "retrieval_miss" in md and md.count("\n| a ") == 1


def test_harness_fills_the_attribution_column(tiny_conv):
    llm = ScriptedLLM({"naive_rag.answer": "Not mentioned in the conversation"})
    res = evaluate(NaiveRAG(llm=llm, embedder=HashEmbedder(dim=128)), Dataset("tiny", (tiny_conv,)), progress=False)
    assert len(res) and all(r.attribution in LABELS for r in res)
    assert [r.attribution for r in res] == [attribute(r).label for r in res]
    assert {r.attribution for r in res if str(r.category) != "5"} <= {"abstained", "ungraded"}


# -- 5. fair arena ---------------------------------------------------------------------------------------
def _make(name, llm):
    cls = REGISTRY[name]
    import inspect

    params = inspect.signature(cls.__init__).parameters
    kw = {k: v for k, v in (("llm", llm), ("embedder", HashEmbedder(dim=128))) if k in params}
    return cls, kw


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_fair_mode_uses_the_shared_prompt_for_every_method(name, tiny_conv):
    llm = ScriptedLLM({SHARED_MARK: "SHARED-REPLY"}, default="auto")
    cls, kw = _make(name, llm)
    m = cls(**kw, answer_prompt="shared").ingest(tiny_conv)
    n_before = len(llm.requests)
    ans = m.answer(tiny_conv.qa[0].question)
    prompts = ["\n".join(x["content"] for x in r["messages"]) if isinstance(r["messages"], list) else r["messages"]
               for r in llm.requests[n_before:]]
    assert sum(SHARED_MARK in p for p in prompts) == 1, name
    assert SHARED_MARK in prompts[-1] and ans.text == "SHARED-REPLY"
    assert "Rules:" in prompts[-1] and tiny_conv.qa[0].question in prompts[-1]


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_native_mode_is_the_default_and_never_uses_the_shared_prompt(name, tiny_conv):
    llm = ScriptedLLM({SHARED_MARK: "SHARED-REPLY"}, default="auto")
    cls, kw = _make(name, llm)
    m = cls(**kw)
    assert m.answer_prompt == "native"
    ans = m.ingest(tiny_conv).answer(tiny_conv.qa[0].question)
    prompts = [json.dumps(r["messages"]) for r in llm.requests]
    assert not any(SHARED_MARK in p for p in prompts) and ans.text != "SHARED-REPLY"
    assert all("answer_prompt" not in s.data for s in ans.steps)  # native traces unchanged


def test_unknown_answer_prompt_is_a_clear_error(tiny_conv):
    with pytest.raises(ValueError, match="answer_prompt"):
        NaiveRAG(llm=ScriptedLLM([], default="auto"), embedder=HashEmbedder(dim=128),
                 answer_prompt="fancy").ingest(tiny_conv)


def test_eval_fair_flag_sets_the_shared_prompt(tmp_path, monkeypatch):
    import argparse

    from workbench.eval import cli

    llm = ScriptedLLM({SHARED_MARK: "SHARED-REPLY"}, default="auto")
    monkeypatch.setattr(cli, "_llm", lambda spec, cassette: llm)
    parser = argparse.ArgumentParser()
    cli.add_eval_arguments(parser)
    args = parser.parse_args(["--method", "naive_rag", "--data", "tiny", "--embedder", "hash", "--out",
                              str(tmp_path), "--questions", "1", "--no-progress", "--fair"])
    assert cli.eval_command(args) == 0
    rows = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert rows and all(r["params"]["answer_prompt"] == "shared" and r["prediction"] == "SHARED-REPLY" for r in rows)
