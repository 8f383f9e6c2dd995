"""Honest statistics and provenance: judge failures out of the mean, clustered and paired bootstrap,
no interval below n = 5, construction cost per conversation, the judge's audit deciding the headline,
re-judging on resume after a judge change, and manifests."""
from __future__ import annotations

import argparse
import json
import math

import numpy as np
import pandas as pd
import pytest

from workbench.embed import HashEmbedder
from workbench.eval import LLMJudge, ResultsStore, evaluate, results_frame, summary_table
from workbench.eval import judge_prompts
from workbench.eval.report import format_estimate, paired_differences, report_markdown
from workbench.eval.stats import bootstrap_ci, paired_bootstrap
from workbench.llm import ScriptedLLM
from workbench.methods import FullContext, NaiveRAG
from workbench.methods.baselines import simple_prompts as baselines_prompts

RELIABLE = {"false_accept": {"rate": 0.05, "k": 2, "n": 40, "ci": [0.01, 0.17]},
            "false_reject": {"rate": 0.1, "k": 4, "n": 40, "ci": [0.04, 0.23]}, "dataset": "sample", "n_probes": 80}
UNRELIABLE = {"false_accept": {"rate": 0.475, "k": 19, "n": 40, "ci": [0.33, 0.63]},
              "false_reject": {"rate": 0.0, "k": 0, "n": 40, "ci": [0.0, 0.09]}, "dataset": "sample", "n_probes": 80}


def row(method, qa, conv, judge, f1, *, judge_error=None, key="jk", cat=4, ctok=0, qtok=10):
    return {"method": method, "params_hash": method[:3], "dataset": "d", "conv_id": conv, "qa_id": qa,
            "category": cat, "category_name": "single-hop" if cat == 4 else "temporal", "question": "q?", "gold": "g",
            "prediction": "p", "scores": {"judge": judge, "f1": f1}, "judge_label": None if judge is None else
            ("CORRECT" if judge else "WRONG"), "judge_error": judge_error, "judge_key": key, "judge_model": "m",
            "judge_reasoning": "because", "error": None, "query_tokens": qtok, "construction_tokens": ctok,
            "construction_tokens_per_question": 0.0, "evidence_recall": None, "session_recall": None, "params": {}}


# -- statistics -------------------------------------------------------------------------------------
def test_prompt_only_tokens_and_their_full_context_ratio_come_from_each_answers_usage():
    """AMA's Table 4 and HyMem's efficiency figures count input tokens; ``query_tokens`` adds the completions,
    which a multi-agent method writes many of (AMA review §2.8). A row saved without its answer has none."""
    def with_usage(method, qa, prompt, completion):
        r = row(method, qa, "c1", 1.0, 1.0, qtok=prompt + completion)
        r["answer"] = {"usage": {"prompt_tokens": prompt, "completion_tokens": completion, "calls": 1}}
        return r

    rows = [with_usage("full_context", f"q{i}", 1000, 10) for i in range(3)]
    rows += [with_usage("ama", f"q{i}", 150, 250) for i in range(3)]
    rows += [row("old", f"q{i}", "c1", 1.0, 1.0, qtok=99) for i in range(3)]  # saved without the answer
    t = summary_table(results_frame(rows), metric="judge")
    t = t[t["category"] == "overall"].set_index("method")
    assert t.loc["ama", "query_prompt_tokens"] == 150 and t.loc["ama", "fc_prompt_ratio"] == pytest.approx(0.15)
    assert t.loc["ama", "fc_token_ratio"] == pytest.approx(400 / 1010)  # completions counted: 2.6x the prompt ratio
    assert math.isnan(t.loc["old", "query_prompt_tokens"]) and math.isnan(t.loc["old", "fc_prompt_ratio"])
    assert t.loc["old", "fc_token_ratio"] == pytest.approx(99 / 1010)


def test_judge_failures_are_out_of_the_mean_and_counted():
    rows = [row("m", f"q{i}", "c1", 1.0, 1.0) for i in range(6)]
    rows += [row("m", f"e{i}", "c1", None, 0.0, judge_error="ParseError: garbage") for i in range(4)]
    t = summary_table(results_frame(rows), metric="judge").set_index("category").loc["overall"]
    assert t["n"] == 6 and t["accuracy"] == 1.0 and t["judge_errors"] == 4 and t["judge_n"] == 6


def test_clustered_bootstrap_is_wider_when_conversations_differ():
    values = [1.0] * 50 + [0.0] * 50
    clusters = ["a"] * 50 + ["b"] * 50
    naive = bootstrap_ci(values, n_boot=2000, seed=1)
    clustered = bootstrap_ci(values, clusters=clusters, n_boot=2000, seed=1)
    assert 0.38 < naive[0] < 0.45 and 0.55 < naive[1] < 0.62
    assert clustered == (0.0, 1.0)  # two conversations: either can be drawn twice
    assert clustered == bootstrap_ci(values, clusters=clusters, n_boot=2000, seed=1)  # seeded
    mixed = ["a", "b"] * 50  # every conversation alike: about the question bootstrap
    lo, hi = bootstrap_ci(values, clusters=mixed, n_boot=2000, seed=1)
    assert abs(lo - naive[0]) < 0.05 and abs(hi - naive[1]) < 0.05
    assert bootstrap_ci([1.0, math.nan, 1.0], clusters=["a", "b", "c"]) == (1.0, 1.0)


def test_paired_bootstrap_of_a_difference():
    rng = np.random.default_rng(0)
    b = rng.random(40)
    r = paired_bootstrap(b + 0.2, b, clusters=[f"c{i % 4}" for i in range(40)])
    assert r["n"] == 40 and r["diff"] == pytest.approx(0.2) and r["ci_low"] == pytest.approx(0.2)
    assert r["ci_high"] == pytest.approx(0.2) and r["p_le_0"] == 0.0
    few = paired_bootstrap([1, 0, 1, math.nan], [0, 0, 0, 1])
    assert few["n"] == 3 and few["diff"] == pytest.approx(2 / 3) and math.isnan(few["ci_low"])
    with pytest.raises(ValueError, match="same length"):
        paired_bootstrap([1, 2], [1])


def test_paired_differences_against_full_context_on_shared_questions():
    rows = []
    for i in range(12):
        conv = f"c{i % 3}"
        rows.append(row("full_context", f"q{i}", conv, 1.0 if i % 2 else 0.0, 0.5))
        rows.append(row("naive_rag", f"q{i}", conv, 1.0, 0.5))
    rows.append(row("naive_rag", "extra", "c0", 0.0, 0.0))  # not answered by Full-Context: not paired
    df = results_frame(rows)
    d = paired_differences(df, metric="judge").set_index("method").loc["naive_rag"]
    assert d["n"] == 12 and d["diff"] == pytest.approx(0.5) and d["ci_low"] <= 0.5 <= d["ci_high"]
    assert paired_differences(df[df.method != "full_context"], metric="judge").empty


def test_no_interval_below_five_questions_only_the_count():
    rows = [row("m", f"q{i}", "c1", float(i < 2), 0.5) for i in range(3)]
    t = summary_table(results_frame(rows), metric="judge").set_index("category").loc["overall"]
    assert t["n"] == 3 and math.isnan(t["ci_low"]) and math.isnan(t["ci_high"])
    assert format_estimate(2 / 3, math.nan, math.nan, 3, binary=True) == "2/3"
    assert format_estimate(0.4, math.nan, math.nan, 3) == "0.400 (n=3)"
    assert format_estimate(0.5, 0.3, 0.7, 12) == "0.500 [0.300, 0.700]"
    five = [row("m", f"q{i}", "c1", float(i < 2), 0.5) for i in range(5)]
    assert not math.isnan(summary_table(results_frame(five), metric="judge")["ci_low"].iloc[0])


def test_construction_cost_is_per_conversation():
    rows = [row("m", f"a{i}", "c1", 1.0, 1.0, ctok=100) for i in range(3)] + [row("m", "b0", "c2", 1.0, 1.0, ctok=300)]
    t = summary_table(results_frame(rows), metric="judge").set_index("category").loc["overall"]
    assert t["construction_tokens"] == 200 and t["conversations"] == 2


# -- the judge's audit decides the headline -----------------------------------------------------------
def test_unaudited_or_unreliable_judge_makes_the_checker_the_headline_with_a_banner():
    rows = [row("m", f"q{i}", f"c{i % 2}", 1.0, 0.0) for i in range(6)]
    df = results_frame(rows)
    assert summary_table(df)["metric"].iloc[0] == "checker"  # no audit known: the verdict that agrees with readers
    t = summary_table(df, audits={"jk": UNRELIABLE})
    assert t["metric"].iloc[0] == "checker" and not t["judge_reliable"].iloc[0]
    assert t["judge_false_accept"].iloc[0] == pytest.approx(0.475) and t["judge_accuracy"].iloc[0] == 1.0
    assert summary_table(df, audits={"jk": RELIABLE})["metric"].iloc[0] == "judge"
    md = report_markdown(df, audits={"jk": UNRELIABLE})
    assert "Judge accuracy is not trustworthy here" in md and "47.5%" in md and "Headline: checker" in md
    assert "judge/F1 disagree" in md and "Judge vs F1: flat disagreements" in md
    assert "Judge accuracy is not trustworthy" not in report_markdown(df, audits={"jk": RELIABLE})


def test_judge_f1_disagreement_flag_per_row():
    df = results_frame([row("m", "a", "c", 1.0, 0.0), row("m", "b", "c", 0.0, 1.0), row("m", "c", "c", 1.0, 0.5)])
    assert df.set_index("qa_id")["judge_f1_disagree"].to_dict() == {"a": True, "b": True, "c": False}


# -- resume re-judges after a judge change ---------------------------------------------------------
def _answer(messages):
    return "Lisbon"


def _judge_reply(label):
    return lambda messages: {"reasoning": "scripted", "label": label}


def test_resume_rejudges_after_a_judge_change_without_reanswering(tiny_conv, tmp_path):
    from workbench.data import Dataset

    data = Dataset("tiny", (tiny_conv,))
    path = tmp_path / "results.jsonl"
    method_llm = ScriptedLLM({"naive_rag.answer": _answer}, model="reader")
    rag = lambda: NaiveRAG(llm=method_llm, embedder=HashEmbedder(32), top_k=3)  # noqa: E731
    judge_a = ScriptedLLM({"judge.locomo": _judge_reply("CORRECT")}, model="judge-a")
    first = evaluate(rag(), data, judge=LLMJudge(judge_a), store=path, progress=False)
    judged = [r for r in first if r.category != 5]
    assert judged and all(r.judge_label == "CORRECT" and r.judge_key for r in judged)
    answered = len(method_llm.requests)

    judge_b = ScriptedLLM({"judge.locomo": _judge_reply("WRONG")}, model="judge-b")
    second = evaluate(rag(), data, judge=LLMJudge(judge_b), store=path, progress=False)
    assert len(method_llm.requests) == answered  # nothing re-answered
    assert len(judge_b.requests) == len(judged)
    assert all(r.judge_label == "WRONG" and r.judge_model == "judge-b" for r in second if r.category != 5)
    assert [r.prediction for r in second] == [r.prediction for r in first]
    assert second.manifest["rejudged_rows"] == len(first)

    evaluate(rag(), data, judge=LLMJudge(judge_b), store=path, progress=False)
    assert len(judge_b.requests) == len(judged)  # same judge again: nothing to do

    original = judge_prompts.LOCOMO_JUDGE
    try:
        judge_prompts.LOCOMO_JUDGE = original + "\nBe strict about dates."
        evaluate(rag(), data, judge=LLMJudge(judge_b), store=path, progress=False)
    finally:
        judge_prompts.LOCOMO_JUDGE = original
    assert len(judge_b.requests) == 2 * len(judged)  # a reworded judge prompt is another judge
    assert len(ResultsStore(path)) == len(first)


def test_resume_reanswers_after_a_method_prompt_change(tiny_conv, tmp_path, monkeypatch):
    from workbench.data import Dataset

    data = Dataset("tiny", (tiny_conv,))
    path = tmp_path / "results.jsonl"
    llm = ScriptedLLM({"naive_rag.answer": _answer}, model="reader")
    evaluate(NaiveRAG(llm=llm, embedder=HashEmbedder(32)), data, store=path, progress=False)
    n = len(llm.requests)
    evaluate(NaiveRAG(llm=llm, embedder=HashEmbedder(32)), data, store=path, progress=False)
    assert len(llm.requests) == n
    name = next(k for k, v in vars(baselines_prompts).items() if k.isupper() and isinstance(v, str))
    monkeypatch.setattr(baselines_prompts, name, getattr(baselines_prompts, name) + " ")
    evaluate(NaiveRAG(llm=llm, embedder=HashEmbedder(32)), data, store=path, progress=False)
    assert len(llm.requests) == 2 * n


def test_rows_from_before_judge_keys_are_kept_for_the_same_judge_model(tiny_conv, tmp_path):
    from workbench.data import Dataset

    data = Dataset("tiny", (tiny_conv,))
    path = tmp_path / "results.jsonl"
    judge = ScriptedLLM({"judge.locomo": _judge_reply("CORRECT")}, model="judge-a")
    llm = ScriptedLLM({"naive_rag.answer": _answer}, model="reader")
    evaluate(NaiveRAG(llm=llm, embedder=HashEmbedder(32)), data, judge=LLMJudge(judge), store=path, progress=False)
    legacy = [json.loads(x) for x in path.read_text().splitlines()]
    for r in legacy:
        r.pop("judge_key"), r.pop("prompt_hash")
    path.write_text("".join(json.dumps(r) + "\n" for r in legacy))
    n = len(judge.requests)
    evaluate(NaiveRAG(llm=llm, embedder=HashEmbedder(32)), data, judge=LLMJudge(judge), store=path, progress=False)
    assert len(judge.requests) == n
    other = ScriptedLLM({"judge.locomo": _judge_reply("WRONG")}, model="judge-z")
    evaluate(NaiveRAG(llm=llm, embedder=HashEmbedder(32)), data, judge=LLMJudge(other), store=path, progress=False)
    assert len(other.requests) == n


# -- manifests ----------------------------------------------------------------------------------------
def test_eval_writes_a_manifest_with_services_hashes_and_audit(sample_data, tmp_path):
    from workbench.eval.audit import AuditCache, audit_judge, build_probes, sample_probes
    from workbench.eval.cli import add_eval_arguments, eval_command
    from workbench.eval.manifest import run_summary
    from workbench.llm import CachedLLM

    cassette = tmp_path / "c.jsonl"
    reader = CachedLLM(ScriptedLLM({"naive_rag.answer": _answer}, model="scripted"), cassette)
    judge = CachedLLM(ScriptedLLM({"judge.locomo": _judge_reply("WRONG")}, model="scripted"), cassette)
    evaluate(NaiveRAG(llm=reader, embedder=HashEmbedder(256), top_k=3), sample_data, questions=3, conversations="0",
             judge=LLMJudge(judge), progress=False)
    p = argparse.ArgumentParser()
    add_eval_arguments(p)
    out = tmp_path / "run"
    args = p.parse_args(["--method", "naive_rag", "--param", "top_k=3", "--data", "sample", "--conversations", "0",
                         "--questions", "3", "--llm", "replay:", "--judge", "replay", "--embedder", "hash",
                         "--cassette", str(cassette), "--out", str(out), "--no-progress"])
    assert eval_command(args) == 0
    m = json.loads((out / "manifest.json").read_text())
    ev = m["evaluations"][0]
    assert ev["llm"]["model"] == "scripted" and ev["llm"]["cassette"] == "c.jsonl" and ev["llm"]["cassette_sha256"]
    assert ev["dataset_info"]["files"] == ["sample_conversations.json"] and len(ev["dataset_info"]["sha256"]) == 64
    assert ev["prompt_hash"] and "baselines_prompts" in ev["prompt_hashes"]
    assert ev["judge"]["key"] and ev["judge"]["prompt_hash"] and ev["judge"]["audit"] is None
    assert ev["git_commit"] is None or len(ev["git_commit"]) == 40
    s = run_summary(m)
    assert s["llm"] == "scripted" and s["embedder"].startswith("hash") and s["judge"] == "scripted"
    assert s["dataset"] == "sample_conversations" and "not recorded" not in s.values()
    rows = ResultsStore(out / "results.jsonl").rows()
    assert {r["judge_key"] for r in rows} == {ev["judge"]["key"]}
    # an audit in the cache is found by the judge key and recorded in the next manifest
    cache = AuditCache(tmp_path / "audits.json")
    audit_judge(LLMJudge(CachedLLM(ScriptedLLM({"judge.locomo": _judge_reply("WRONG")}, model="scripted"),
                                   tmp_path / "a.jsonl")),
                sample_probes(build_probes(sample_data), 40), dataset="sample_conversations", cache=cache,
                progress=False)
    from workbench.eval.manifest import find_judge_audit

    found = find_judge_audit(LLMJudge(judge), "sample_conversations", cache=cache)
    assert found is not None and found["false_accept"]["rate"] == 0.0 and found["judge_key"] == ev["judge"]["key"]


def test_report_reads_the_audit_from_the_manifest(sample_data, tmp_path, capsys):
    from workbench.eval.cli import add_report_arguments, report_command
    from workbench.eval.manifest import update_run_manifest

    out = tmp_path / "run"
    llm = ScriptedLLM({"naive_rag.answer": _answer, "full_context.answer": _answer}, model="reader")
    judge = LLMJudge(ScriptedLLM({"judge.locomo": _judge_reply("CORRECT")}, model="judge-a"))
    for m in (NaiveRAG(llm=llm, embedder=HashEmbedder(32)), FullContext(llm=llm)):
        res = evaluate(m, sample_data, judge=judge, store=out / "results.jsonl", questions=4, progress=False)
        manifest = dict(res.manifest)
        manifest["judge"] = {**manifest["judge"], "audit": UNRELIABLE}
        update_run_manifest(out, manifest)
    r = argparse.ArgumentParser()
    add_report_arguments(r)
    assert report_command(r.parse_args([str(out), "--audits", str(tmp_path / "none.json")])) == 0
    md = capsys.readouterr().out
    assert "47.5% (19/40)" in md and "Judge accuracy is not trustworthy here" in md
    assert "## Paired differences against full_context" in md and "| naive_rag" in md
    assert "clustered by conversation" in md
    assert report_command(r.parse_args([str(out), "--format", "csv", "--audits", str(tmp_path / "none.json")])) == 0
    table = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert set(table["metric"]) == {"checker"} and "judge_false_accept" in table.columns
