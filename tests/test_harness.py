"""Harness: rows, failures, resume after an interrupt, record/replay, workers, selection, report, CLI."""
from __future__ import annotations

import argparse
import json
import re

import pandas as pd
import pytest

from workbench.data import load_longmemeval
from workbench.embed import HashEmbedder
from workbench.eval import LLMJudge, ResultsStore, evaluate, results_frame, summary_table
from workbench.eval.cli import add_eval_arguments, add_report_arguments, eval_command, report_command
from workbench.eval.harness import select
from workbench.eval.report import bootstrap_ci, cost_accuracy_frame, to_markdown
from workbench.llm import BaseLLM, CachedLLM, LLMError, ScriptedLLM
from workbench.methods import EagerFacts, FullContext, NaiveRAG

_Q = re.compile(r"Question: (.*?)\n")
_GOLD = re.compile(r"Gold answer: (.*?)\nGenerated answer: (.*?)\n")


def _answer(messages):
    """Deterministic 'model': echoes the question's last word; 'Not mentioned' for questions with 'ever'."""
    q = _Q.search(messages[-1]["content"]).group(1)
    return "Not mentioned in the conversation" if " ever " in q else q.rstrip("?").split()[-1]


def _verdict(messages):
    gold, pred = _GOLD.search(messages[-1]["content"]).groups()
    ok = bool(set(gold.lower().split()) & set(pred.lower().split()))
    return {"reasoning": "overlap" if ok else "none", "label": "CORRECT" if ok else "WRONG"}


def _facts(messages):
    return {"facts": [messages[-1]["content"].split("\n")[2][:60]]}


def method_llm():
    return ScriptedLLM({"naive_rag.answer": _answer, "full_context.answer": _answer, "eager_facts.answer": _answer,
                        "eager_facts.extract": _facts}, model="scripted")


def judge_llm(model="scripted"):
    return ScriptedLLM({"judge.locomo": _verdict, "judge.longmemeval": "yes"}, model=model)


def mixed(dataset, k=1):
    """The first ``k`` questions of every category in every conversation (the files are sorted by category)."""
    out = []
    for conv in dataset:
        for cat in sorted({q.category for q in conv.qa}):
            out += [q.id for q in conv.qa if q.category == cat][:k]
    return out


def rag(llm, dim=64):
    return NaiveRAG(llm=llm, embedder=HashEmbedder(dim), top_k=3)


class Interrupting(BaseLLM):
    """Delegates to ``inner`` and raises KeyboardInterrupt on call number ``after + 1``."""

    def __init__(self, inner, after):
        super().__init__()
        self.model, self.inner, self.after, self.n = inner.model, inner, after, 0

    def _generate(self, messages, **kw):
        self.n += 1
        if self.n > self.after:
            raise KeyboardInterrupt
        return self.inner._generate(messages, **kw)


def test_rows_scores_and_costs(sample_data):
    jl = judge_llm("judge-m")
    res = evaluate(EagerFacts(llm=method_llm(), embedder=HashEmbedder(64)), sample_data, judge=LLMJudge(jl),
                   questions=mixed(sample_data), progress=False)
    assert len(res) == 10 and not res.errors
    row = res[0]
    assert (row.method, row.dataset, row.conv_id, row.category_name) == ("eager_facts", "sample_conversations",
                                                                         "sample-1", "single-hop")
    assert row.construction_tokens > 0 and row.construction_calls > 0
    assert row.construction_tokens_per_question == pytest.approx(row.construction_tokens / 40)  # all 40 QA
    assert row.query_calls == 1 and row.query_tokens > 0 and row.judge_model == "judge-m"
    assert row.answer["text"] == row.prediction and row.params["top_k"] == 10
    adversarial = [r for r in res if r.category == 5]
    assert adversarial and all(r.judge_label is None and "judge" not in r.scores for r in adversarial)
    assert all(r.scores["adversarial"] in (0.0, 1.0) for r in adversarial)
    assert {(c.phase, c.method) for c in jl.ledger.calls} == {("judge", "eager_facts")}
    assert len(adversarial) == 2 and len(jl.ledger.calls) == 8


def test_rows_keep_their_prompt_only_tokens_without_the_answer(sample_data):
    """The papers' "input tokens" are a row field, so a run saved without its answers still has them."""
    res = evaluate(rag(method_llm()), sample_data, questions=mixed(sample_data), progress=False, keep_answers=False)
    rows = [r for r in res if not r.error]
    assert rows and all(r.answer is None for r in rows)
    assert all(0 < r.query_prompt_tokens < r.query_tokens for r in rows)
    frame = results_frame(rows)
    assert list(frame["query_prompt_tokens"]) == [r.query_prompt_tokens for r in rows]


def test_answer_failure_is_a_row_not_a_crash(tiny_conv):
    def flaky(messages):
        if "Question: " + tiny_conv.qa[1].question in messages[-1]["content"]:
            raise LLMError("bad reply")
        return _answer(messages)

    llm = ScriptedLLM({"naive_rag.answer": flaky}, model="scripted")
    res = evaluate(rag(llm), _dataset(tiny_conv), judge=LLMJudge(judge_llm()), progress=False)
    bad = res[1]
    assert "bad reply" in bad.error and bad.prediction == "" and bad.scores["judge"] == 0.0
    assert bad.judge_label == "NOT_JUDGED" and bad.query_calls == 1 and bad.answer is None
    assert [r.error for r in res].count(None) == len(res) - 1
    table = summary_table(res.to_frame())
    assert table.set_index("category").loc["overall", "errors"] == 1


def test_ingest_failure_marks_every_question(tiny_conv):
    class Broken(NaiveRAG):
        def _build(self, conv):
            raise RuntimeError("index exploded")

    res = evaluate(Broken(llm=method_llm(), embedder=HashEmbedder(32)), _dataset(tiny_conv), progress=False)
    expected = "ingest failed: an unexpected error: index exploded [RuntimeError]"
    assert len(res) == len(tiny_conv.qa) and all(r.error == expected for r in res)


def _dataset(*convs):
    from workbench.data import Dataset

    return Dataset("tiny", tuple(convs))


def test_resume_after_interrupt_gives_identical_table(sample_data, tmp_path):
    kw = dict(questions=mixed(sample_data), progress=False)
    clean = evaluate(EagerFacts(llm=method_llm(), embedder=HashEmbedder(64)), sample_data,
                     judge=LLMJudge(judge_llm()), store=tmp_path / "clean.jsonl", **kw)
    probe = EagerFacts(llm=method_llm(), embedder=HashEmbedder(64)).ingest(sample_data[0])
    first_conv_calls = probe.construction_calls_ + 5
    path = tmp_path / "results.jsonl"
    stop = Interrupting(method_llm(), after=first_conv_calls + 30)  # inside conversation 2's ingest
    with pytest.raises(KeyboardInterrupt):
        evaluate(EagerFacts(llm=stop, embedder=HashEmbedder(64)), sample_data, judge=LLMJudge(judge_llm()),
                 store=path, **kw)
    assert len(ResultsStore(path)) == 5  # conversation 1 finished and kept
    stop2 = Interrupting(method_llm(), after=10 ** 6)
    probe2 = EagerFacts(llm=method_llm(), embedder=HashEmbedder(64)).ingest(sample_data[1])
    res = evaluate(EagerFacts(llm=stop2, embedder=HashEmbedder(64)), sample_data, judge=LLMJudge(judge_llm()),
                   store=path, **kw)
    assert stop2.n == probe2.construction_calls_ + 5  # conversation 1 was not re-ingested
    lines = path.read_text().splitlines()
    assert len(lines) == 10 == len({tuple(json.loads(x)[k] for k in ("method", "params_hash", "qa_id"))
                                    for x in lines})
    pd.testing.assert_frame_equal(summary_table(res.to_frame()), summary_table(clean.to_frame()), check_exact=True)
    assert res.manifest["resumed_rows"] == 5
    manifests = (tmp_path / "results.manifests.jsonl").read_text().splitlines()
    assert len(manifests) == 2 and json.loads(manifests[0])["llm_model"] == "scripted"
    # a third run has nothing to do and calls no model at all
    idle = Interrupting(method_llm(), after=0)
    again = evaluate(EagerFacts(llm=idle, embedder=HashEmbedder(64)), sample_data, store=path, **kw)
    assert len(again) == 10 and idle.n == 0


def test_interrupt_mid_question_loses_only_that_question(tiny_conv, tmp_path):
    path = tmp_path / "r.jsonl"
    with pytest.raises(KeyboardInterrupt):
        evaluate(rag(Interrupting(method_llm(), after=3)), _dataset(tiny_conv), store=path, progress=False)
    assert len(ResultsStore(path)) == 3
    res = evaluate(rag(method_llm()), _dataset(tiny_conv), store=path, progress=False)
    assert [r.qa_id for r in res] == [q.id for q in tiny_conv.qa]


def test_record_then_replay_is_bit_identical(sample_data, tmp_path):
    cassette = tmp_path / "cassette.jsonl"
    kw = dict(questions=mixed(sample_data), progress=False)
    live = evaluate(rag(CachedLLM(method_llm(), cassette)), sample_data,
                    judge=LLMJudge(CachedLLM(judge_llm(), cassette)), store=tmp_path / "live.jsonl", **kw)
    replay = evaluate(rag(CachedLLM.replay(cassette)), sample_data, judge=LLMJudge(CachedLLM.replay(cassette)),
                      store=tmp_path / "replay.jsonl", **kw)
    a, b = summary_table(live.to_frame()), summary_table(replay.to_frame())
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert a.to_csv() == b.to_csv()
    assert all(r.answer["steps"][-1]["calls"][0]["cached"] for r in replay)
    strip = ["latency_s"]
    assert live.to_frame().drop(columns=strip).equals(replay.to_frame().drop(columns=strip))


def test_workers_give_the_same_table(sample_data):
    kw = dict(questions=mixed(sample_data, k=3), judge=LLMJudge(judge_llm()), progress=False)
    one = evaluate(rag(method_llm()), sample_data, workers=1, **kw)
    four = evaluate(rag(method_llm()), sample_data, workers=4, **kw)
    assert [r.qa_id for r in four] == [r.qa_id for r in one]
    pd.testing.assert_frame_equal(summary_table(one.to_frame()), summary_table(four.to_frame()), check_exact=True)


def test_torn_last_line_is_skipped_and_the_store_stays_valid(tmp_path):
    path = tmp_path / "r.jsonl"
    row = {"method": "m", "params_hash": "h", "dataset": "d", "qa_id": "q1", "x": 1}
    path.write_text(json.dumps(row) + "\n" + '{"method": "m", "params_ha')
    store = ResultsStore(path)
    assert len(store) == 1 and store.bad_lines == [2]
    store.append({**row, "qa_id": "q2"})
    store.append({**row, "x": 2})  # same key: last wins, counted as a duplicate
    again = ResultsStore(path)
    assert [r["qa_id"] for r in again] == ["q2", "q1"] and again.get(("m", "h", "d", "q1"))["x"] == 2
    assert again.duplicates == 1 and again.bad_lines == [2]


def test_retry_errors_supersedes_failed_rows(tiny_conv, tmp_path):
    path = tmp_path / "r.jsonl"
    failing = ScriptedLLM({"naive_rag.answer": LLMError("down")}, model="scripted")
    first = evaluate(rag(failing), _dataset(tiny_conv), store=path, progress=False)
    assert all(r.error for r in first)
    assert all(r.error for r in evaluate(rag(method_llm()), _dataset(tiny_conv), store=path, progress=False))
    fixed = evaluate(rag(method_llm()), _dataset(tiny_conv), store=path, progress=False, retry_errors=True)
    assert not fixed.errors and len(fixed) == len(tiny_conv.qa)


def test_selection(sample_data):
    plan = select(sample_data, conversations="1", questions=3, categories=[1, "2"])
    assert [c.id for c, _ in plan] == ["sample-2"] and len(plan[0][1]) == 3
    assert all(q.category in (1, 2) for q in plan[0][1])
    assert [c.id for c, _ in select(sample_data, conversations="0-1")] == ["sample-1", "sample-2"]
    ids = [sample_data[0].qa[4].id, sample_data[1].qa[0].id]
    assert [q.id for _, qs in select(sample_data, questions=ids) for q in qs] == ids
    assert [c.id for c, _ in select(sample_data, conversations=["sample-2"])] == ["sample-2"]


def test_save_memories_for_the_app(tiny_conv, tmp_path):
    evaluate(rag(method_llm()), _dataset(tiny_conv), save_memories_dir=tmp_path, progress=False)
    mem = tmp_path / "memories" / "naive_rag" / "tiny-1"
    assert (mem / "memories.jsonl").exists() and (tmp_path / "conversations" / "tiny-1.json").exists()


LME_ITEMS = [
    {"question_id": "q1", "question_type": "single-session-user", "question": "Which city did I visit?",
     "answer": "Paris", "question_date": "2023/05/28 (Sun) 19:47", "haystack_dates": ["2023/05/20 (Sat) 10:00"],
     "haystack_session_ids": ["answer_a_1"], "answer_session_ids": ["answer_a_1"],
     "haystack_sessions": [[{"role": "user", "content": "I visited Paris last week.", "has_answer": True},
                            {"role": "assistant", "content": "Lovely!", "has_answer": False}]]},
    {"question_id": "q2_abs", "question_type": "temporal-reasoning", "question": "When did I visit Rome?",
     "answer": "Rome was never mentioned", "question_date": "2023/05/28 (Sun) 19:47",
     "haystack_dates": ["2023/05/21 (Sun) 10:00"], "haystack_session_ids": ["answer_b_1"],
     "answer_session_ids": ["answer_b_1"],
     "haystack_sessions": [[{"role": "user", "content": "My cat is called Pilot.", "has_answer": True}]]},
]


def test_longmemeval_by_question_type(tmp_path):
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(LME_ITEMS))
    data = load_longmemeval(path)
    jl = judge_llm()
    res = evaluate(FullContext(llm=method_llm()), data, judge=LLMJudge(jl), progress=False)
    assert [r.category_name for r in res] == ["single-session-user", "temporal-reasoning"]
    assert res[0].evidence_recall == 1.0 and res[0].session_recall == 1.0 and res[0].scores["judge"] == 1.0
    assert res[1].abstention and res[1].scores["f1"] is None
    assert "unanswerable" in jl.requests[1]["messages"][0]["content"]
    table = summary_table(res.to_frame(), metric="judge").set_index("category")
    assert list(table.index) == ["single-session-user", "temporal-reasoning", "overall"]
    assert table.loc["overall", "n"] == 2
    # an unaudited judge is not the headline: F1 scores only the question with a short gold answer
    unaudited = summary_table(res.to_frame()).set_index("category")
    assert unaudited.loc["overall", "metric"] == "f1" and unaudited.loc["overall", "n"] == 1


def test_report_table(sample_data):
    kw = dict(questions=mixed(sample_data, k=2), judge=LLMJudge(judge_llm()), progress=False)
    rows = (list(evaluate(rag(method_llm()), sample_data, **kw))
            + list(evaluate(rag(method_llm()).set_params(top_k=5), sample_data, **kw))
            + list(evaluate(FullContext(llm=method_llm()), sample_data, **kw)))
    df = results_frame(rows)
    table = summary_table(df)
    per_run = len(rows) // 3
    assert set(table["method"]) == {"full_context", f"naive_rag[{rows[0].params_hash[:6]}]",
                                    f"naive_rag[{rows[per_run].params_hash[:6]}]"}
    fc = table[table.method == "full_context"].set_index("category")
    assert fc.loc["overall", "fc_token_ratio"] == 1.0
    assert list(fc.index)[-2:] == ["overall", "adversarial"]
    assert fc.loc["overall", "n"] == per_run - 4 and fc.loc["adversarial", "n"] == 4  # 5 kept out of the headline
    r = table[table.method.str.startswith("naive_rag")].set_index(["method", "category"])
    mine = df[(df.method == "naive_rag") & (df.params_hash == rows[0].params_hash) & (df.category != 5)]
    theirs = df[(df.method == "full_context") & (df.category != 5)]
    expected = mine.query_tokens.mean() / theirs.query_tokens.mean()
    assert r.loc[(f"naive_rag[{rows[0].params_hash[:6]}]", "overall"), "fc_token_ratio"] == pytest.approx(expected)
    big, small = table[table.n >= 5], table[table.n < 5]
    assert len(big) and all(big.ci_low <= big.accuracy) and all(big.accuracy <= big.ci_high)
    assert len(small) and small.ci_low.isna().all() and small.ci_high.isna().all()  # n < 5: no interval
    cost = cost_accuracy_frame(df)
    assert list(cost.columns) == ["dataset", "method", "category", "accuracy", "ci_low", "ci_high", "query_tokens",
                                  "construction_tokens", "n", "params", "metric", "judge_accuracy",
                                  "judge_false_accept", "judge_reliable"]


def test_bootstrap_is_seeded_and_sane():
    vals = [1.0] * 30 + [0.0] * 70
    assert bootstrap_ci(vals, seed=3) == bootstrap_ci(vals, seed=3)
    lo, hi = bootstrap_ci(vals)
    assert 0.19 < lo < 0.3 < hi < 0.41
    assert bootstrap_ci([1.0, 1.0]) == (1.0, 1.0)


def test_to_markdown_without_tabulate():
    df = pd.DataFrame({"method": ["a|b", "c"], "acc": [0.5, float("nan")], "n": [3, 10]})
    assert to_markdown(df).splitlines() == [
        "| method |   acc |  n |",
        "|--------|------:|---:|",
        "| a\\|b   | 0.500 |  3 |",
        "| c      |       | 10 |",
    ]


def test_cli_replays_a_recorded_run_and_reports(sample_data, tmp_path, capsys):
    cassette = tmp_path / "c.jsonl"
    evaluate(rag(CachedLLM(method_llm(), cassette), dim=256), sample_data, questions=3, conversations="0",
             judge=LLMJudge(CachedLLM(judge_llm(), cassette)), progress=False)
    p = argparse.ArgumentParser()
    add_eval_arguments(p)
    out = tmp_path / "run"
    args = p.parse_args(["--method", "naive_rag", "--param", "top_k=3", "--data", "sample", "--conversations", "0",
                         "--questions", "3", "--llm", "replay:", "--judge", "replay", "--embedder", "hash",
                         "--cassette", str(cassette), "--out", str(out), "--no-progress"])
    assert eval_command(args) == 0
    assert "| overall" in capsys.readouterr().out
    rows = ResultsStore(out / "results.jsonl").rows()
    assert len(rows) == 3 and all(r["judge_label"] in ("CORRECT", "WRONG") for r in rows)
    assert json.loads((out / "manifest.json").read_text())["evaluations"][0]["judge_model"] == "scripted"
    r = argparse.ArgumentParser()
    add_report_arguments(r)
    assert report_command(r.parse_args([str(out), "--format", "csv", "--output", str(tmp_path / "t.csv")])) == 0
    table = pd.read_csv(tmp_path / "t.csv")
    assert list(table.category) == ["single-hop", "overall"] and list(table.n) == [3, 3]
    assert report_command(r.parse_args([str(out / "results.jsonl"), "--cost", "--format", "json"])) == 0
    assert json.loads(capsys.readouterr().out)[0]["method"] == "naive_rag"


def test_row_errors_say_in_words_what_failed_and_keep_the_type_name(tiny_conv):
    """Issue #41: a row's error leads with what failed ("answering failed: a field or entry ... is
    missing") rather than ``KeyError: 'x'``, and keeps the type name, also for ``InWords`` errors
    (a cassette miss is found by "CacheMiss" in the census and the question view)."""
    from workbench.llm import CacheMiss
    from widgets.question import _is_miss

    raising = {tiny_conv.qa[1].question: KeyError("speaker"),
               tiny_conv.qa[2].question: CacheMiss("no recorded reply for role='naive_rag.answer'")}

    class Flaky(NaiveRAG):
        def answer(self, question, now=None):
            if question in raising:
                raise raising[question]
            return super().answer(question, now=now)

    res = evaluate(Flaky(llm=method_llm(), embedder=HashEmbedder(32)), _dataset(tiny_conv), progress=False)
    assert res[1].error == "answering failed: a field or entry the method expected is missing: 'speaker' [KeyError]"
    assert res[2].error == "answering failed: no recorded reply for role='naive_rag.answer' [CacheMiss]"
    assert _is_miss(res[2].error) and not _is_miss(res[1].error)


def test_a_crashing_judge_is_a_recorded_judge_error(tiny_conv, capsys):
    class Buggy(LLMJudge):
        def judge(self, qa, prediction, *, method=""):
            raise RuntimeError("judge bug")

    res = evaluate(rag(method_llm()), _dataset(tiny_conv), judge=Buggy(judge_llm()), progress=True)
    judged = [r for r in res if r.category != 5]
    expected = "judging failed: an unexpected error: judge bug [RuntimeError]"
    assert judged and all(r.judge_error == expected and r.scores["judge"] is None for r in judged)
    assert summary_table(res.to_frame()).set_index("category").loc["overall", "judge_errors"] == len(judged)


def test_report_appends_method_statistics_from_traces(tiny_conv, tmp_path, capsys):
    from workbench.eval.report import method_stats
    from workbench.methods import AMA

    store = tmp_path / "results.jsonl"
    ama = AMA(llm=ScriptedLLM([], default="auto"), embedder=HashEmbedder(64))
    res = evaluate(ama, _dataset(tiny_conv), store=store, progress=False)
    evaluate(rag(ScriptedLLM([], default="auto")), _dataset(tiny_conv), store=store, progress=False)
    stats = method_stats(ResultsStore(store))
    assert set(stats) == {"ama"}  # NaiveRAG has no summary_stats of its own
    assert stats["ama"]["questions"] == len(res)
    assert sum(stats["ama"]["verdicts"].values()) >= len(res)  # one Judge verdict per round at least
    r = argparse.ArgumentParser()
    add_report_arguments(r)
    assert report_command(r.parse_args([str(store)])) == 0
    out = capsys.readouterr().out
    assert "## Method statistics from traces" in out and f"- **ama**: questions: {len(res)}" in out
