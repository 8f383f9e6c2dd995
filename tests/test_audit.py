"""Judge audit: probe construction, the rate arithmetic with judges of known behaviour, Wilson
intervals, the cache keyed by (judge spec, prompt hash, probe set), checkpoint resume, the CLI."""
from __future__ import annotations

import json
import re

import pytest

from workbench.eval import audit as A
from workbench.eval import judge_prompts
from workbench.eval.judge import LLMJudge
from workbench.llm import CachedLLM, ScriptedLLM

_PAIR = re.compile(r"Gold answer: (.*?)\nGenerated answer: (.*?)\n\n", re.S)


def always_correct():
    return ScriptedLLM({"judge.locomo": {"reasoning": "fine", "label": "CORRECT"}}, model="yes-judge")


def exact_match_judge():
    """CORRECT iff the generated answer is the gold answer, character for character."""
    def verdict(messages):
        gold, pred = _PAIR.search(messages[-1]["content"]).groups()
        return {"reasoning": "exact", "label": "CORRECT" if gold.strip() == pred.strip() else "WRONG"}
    return ScriptedLLM({"judge.locomo": verdict}, model="exact-judge")


@pytest.fixture(scope="module")
def probes(sample_data):
    return A.build_probes(sample_data)


def test_dates_reformat_and_shift():
    assert A.reformat_date("7 May 2023") == "May 7, 2023"
    assert A.reformat_date("May 7th, 2023") == "7 May 2023"
    assert A.reformat_date("The weekend before 21 May, 2023") == "The weekend before May 21, 2023"
    assert A.reformat_date("September 2023") == "2023-09"
    assert A.shift_date("The weekend before 21 May, 2023") == "The weekend before 28 May 2023"
    assert A.shift_date("29 December 2023") == "5 January 2024"
    assert A.shift_date("December 2023") == "January 2024"
    assert A.reformat_date("Bass") is None and A.shift_date("2022") is None


def test_probe_kinds_and_labels(probes, sample_data):
    kinds = {p.kind for p in probes}
    assert kinds == set(A.POSITIVE_KINDS) | set(A.NEGATIVE_KINDS)
    assert all(p.expected == (p.kind in A.POSITIVE_KINDS) for p in probes)
    assert all(p.category != 5 for p in probes)  # adversarial items have no gold to probe
    assert len({p.id for p in probes}) == len(probes)
    by = {(p.qa_id, p.kind): p for p in probes}
    assert by[("sample-1/q4", "gold")].candidate == "Pilot"
    assert "Pilot" in by[("sample-1/q4", "gold_in_sentence")].candidate
    assert by[("sample-1/q16", "date_reformat")].candidate == "May 13, 2023"
    assert by[("sample-1/q16", "date_shift")].candidate == "20 May 2023"
    assert by[("sample-1/q4", "not_mentioned")].candidate == A.NOT_MENTIONED
    for p in probes:
        if p.kind == "other_gold":  # another question's gold that shares no content word with this gold
            assert not (A._content(p.candidate) & A._content(p.gold))
        if p.kind == "entity_swap":
            conv = next(c for c in sample_data if c.id == p.conv_id)
            assert p.candidate != p.gold and set(A.conversation_entities(conv)) & set(p.candidate.split())


def test_sampling_is_balanced_deterministic_and_hashed(probes):
    a = A.sample_probes(probes, 40, seed=0)
    assert len(a) == 40 and sum(not p.expected for p in a) == 20
    assert {p.kind for p in a if not p.expected} == set(A.NEGATIVE_KINDS)  # round-robin over kinds
    assert a == A.sample_probes(probes, 40, seed=0) and a == sorted(a, key=lambda p: p.id)
    assert A.probe_set_hash(a) == A.probe_set_hash(list(a))
    assert A.probe_set_hash(a) != A.probe_set_hash(A.sample_probes(probes, 40, seed=1))
    assert len(A.sample_probes(probes, None)) == len(probes)


def test_wilson_interval():
    lo, hi = A.wilson(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-3) and hi == pytest.approx(0.7634, abs=1e-3)
    assert A.wilson(0, 20)[0] == 0.0 and 0.15 < A.wilson(0, 20)[1] < 0.17
    assert A.wilson(20, 20)[1] == 1.0
    assert all(v != v for v in A.wilson(0, 0))  # nan


def test_always_correct_judge_accepts_every_wrong_answer(probes):
    sample = A.sample_probes(probes, 60)
    audit = A.audit_judge(LLMJudge(always_correct()), sample, dataset="sample", progress=False)
    assert audit["false_accept"]["rate"] == 1.0 and audit["false_accept"]["n"] == 30
    assert audit["false_reject"]["rate"] == 0.0 and audit["judge_errors"] == 0
    assert not audit["reliable"] and not A.is_reliable(A.compact(audit))
    assert all(r["false_accept"]["rate"] in (1.0, None) for r in audit["per_category"].values())
    assert "above the 20% limit" in A.reliability_note(audit)


def test_exact_match_judge_never_accepts_a_wrong_answer(probes):
    sample = A.sample_probes(probes, 60)
    audit = A.audit_judge(LLMJudge(exact_match_judge()), sample, dataset="sample", progress=False)
    assert audit["false_accept"]["rate"] == 0.0 and audit["reliable"]
    positives = [p for p in sample if p.expected]
    verbatim = sum(p.candidate == p.gold for p in positives)
    assert audit["false_reject"]["k"] == len(positives) - verbatim  # every reworded positive is rejected
    assert audit["per_kind"]["gold"]["false_reject"]["rate"] == 0.0
    assert audit["per_kind"]["gold_in_sentence"]["false_reject"]["rate"] == 1.0


def test_unreadable_verdicts_are_judge_errors_outside_the_rates(probes):
    sample = A.sample_probes(probes, 10)
    audit = A.audit_judge(LLMJudge(ScriptedLLM({"judge.locomo": "no idea"})), sample, progress=False)
    assert audit["judge_errors"] == 10 and audit["false_accept"]["n"] == 0 and audit["false_accept"]["rate"] is None
    assert not A.is_reliable(audit) and "too small" in A.reliability_note(audit)


def test_cache_reuses_by_judge_spec_prompt_and_probe_set(probes, tmp_path, monkeypatch):
    sample = A.sample_probes(probes, 20)
    cache = tmp_path / "audits.json"
    llm = always_correct()
    first = A.audit_judge(LLMJudge(llm), sample, cache=cache, progress=False)
    calls = len(llm.requests)
    again = A.audit_judge(LLMJudge(llm), sample, cache=cache, progress=False)
    assert len(llm.requests) == calls and again == json.loads(cache.read_text())["audits"][first["key"]]
    A.audit_judge(LLMJudge(llm), A.sample_probes(probes, 20, seed=5), cache=cache, progress=False)
    assert len(llm.requests) > calls  # another probe set
    calls = len(llm.requests)
    A.audit_judge(LLMJudge(llm, temperature=0.5), sample, cache=cache, progress=False)
    assert len(llm.requests) > calls  # another judge spec
    calls = len(llm.requests)
    monkeypatch.setattr(judge_prompts, "LOCOMO_JUDGE", judge_prompts.LOCOMO_JUDGE + "\nBe strict.")
    A.audit_judge(LLMJudge(llm), sample, cache=cache, progress=False)
    assert len(llm.requests) > calls  # another prompt
    assert len(A.AuditCache(cache)) == 4
    found = A.AuditCache(cache).find(first["judge_key"])
    assert found is not None and found["judge"]["model"] == "yes-judge"
    assert "verdicts" not in A.compact(found) and all("question" not in v for v in found["verdicts"])


def test_interrupted_audit_resumes_from_its_checkpoint(probes, tmp_path):
    sample = A.sample_probes(probes, 12)
    cache = A.AuditCache(tmp_path / "audits.json")
    n = {"calls": 0}

    def flaky(messages):
        n["calls"] += 1
        if n["calls"] == 6:
            raise KeyboardInterrupt
        return {"reasoning": "x", "label": "WRONG"}

    with pytest.raises(KeyboardInterrupt):
        A.audit_judge(LLMJudge(ScriptedLLM({"judge.locomo": flaky})), sample, cache=cache, progress=False)
    key = A.audit_key(LLMJudge(ScriptedLLM([])).spec, A.probe_set_hash(sample))
    assert len(cache.checkpoint(key).read_text().splitlines()) == 5
    llm = ScriptedLLM({"judge.locomo": {"reasoning": "x", "label": "WRONG"}})
    audit = A.audit_judge(LLMJudge(llm), sample, cache=cache, progress=False)
    assert len(llm.requests) == 7 and audit["n_probes"] == 12 and not cache.checkpoint(key).exists()
    assert audit["false_accept"]["rate"] == 0.0 and audit["false_reject"]["rate"] == 1.0


def test_unreadable_cache_is_a_clear_error(tmp_path):
    bad = tmp_path / "audits.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a judge-audit cache"):
        A.AuditCache(bad)


def test_cli_prints_the_rates_from_a_replayed_judge(tmp_path, capsys):
    from workbench.cli import main
    from workbench.data import load_sample

    cassette = tmp_path / "judge.jsonl"
    probes = A.sample_probes(A.build_probes(load_sample()), 30)
    A.audit_judge(LLMJudge(CachedLLM(exact_match_judge(), cassette)), probes, progress=False)
    cache = tmp_path / "audits.json"
    argv = ["judge-audit", "--data", "sample", "--judge", "replay", "--cassette", str(cassette), "--n", "30",
            "--cache", str(cache), "--no-progress", "--real", "-1"]  # probes only: the cassette holds no more
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Judge audit: exact-judge" in out and "false-accept 0.0% (0/15)" in out and "per probe kind" in out
    record = next(iter(json.loads(cache.read_text())["audits"].values()))
    assert record["dataset"] == "sample_conversations" and record["data_sha256"]
    assert main(argv + ["--json"]) == 0
    assert next(iter(json.loads(capsys.readouterr().out).values()))["false_accept"]["k"] == 0


def test_a_judge_is_audited_on_labelled_real_answers_first(tmp_path):
    """The real-answer audit: each labelled answer is a probe whose expected verdict is the reader's; an
    exact-match judge rejects every right answer that is not the gold word for word, and the audit says so per
    kind of wrong answer; once cached it outranks the same judge's probe audit for its rows."""
    from workbench.eval.label_audit import shipped_labels

    labels = list(shipped_labels())
    probes = A.label_probes(labels, 40, seed=1)
    assert len(probes) == 40 and sum(not p.expected for p in probes) == 20
    cache = A.AuditCache(tmp_path / "audits.json")
    judge = LLMJudge(exact_match_judge())
    real = A.audit_judge(judge, probes, dataset=A.REAL_ANSWERS, cache=cache, progress=False)
    expected_fr = sum(1 for p in probes if p.expected and p.candidate.strip() != p.gold.strip())
    assert real["false_reject"]["k"] == expected_fr and real["false_accept"]["n"] == 20
    assert real["false_accept"]["k"] == sum(1 for p in probes
                                            if not p.expected and p.candidate.strip() == p.gold.strip())
    assert "right" in real["per_kind"] and "false-reject" in A.format_audit(real)
    rows = [{"judge_key": real["judge_key"], "judge_model": "exact-judge", "dataset": "sample"}]
    assert A.audits_for_rows(rows, cache)[real["judge_key"]]["dataset"] == A.REAL_ANSWERS


def test_rows_get_the_audit_of_their_own_dataset(tmp_path):
    """The demo's rows (dataset ``sample``) take the audit run with ``--data sample`` (recorded under the
    file's name), not a larger or newer audit of the same judge on other data."""
    from workbench.data import same_dataset

    cache = A.AuditCache(tmp_path / "audits.json")
    base = {"judge_key": "jk", "judge": {"model": "m"}, "n_probes": 40}
    cache.put({**base, "key": "a", "dataset": "sample_conversations", "date": "2026-01-01",
               "false_accept": {"rate": 0.7}})
    cache.put({**base, "key": "b", "dataset": "locomo10_dev", "date": "2026-02-01", "n_probes": 80,
               "false_accept": {"rate": 0.4}})
    rows = [{"judge_key": "jk", "dataset": "sample"}]
    assert A.audits_for_rows(rows, cache)["jk"]["key"] == "a"
    assert A.audits_for_rows([{"judge_key": "jk"}], cache, dataset="locomo10_dev")["jk"]["key"] == "b"
    assert A.audits_for_rows([{"judge_key": "jk", "dataset": "other"}], cache)["jk"]["key"] == "b"  # most probes
    assert same_dataset("sample", "sample_conversations") and not same_dataset("sample", "tiny")
