"""Issue 22: the estimate before a run, ingest progress during it, estimate vs spent after it."""
from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest

from workbench.data import QA, Conversation, Dataset, Session, Turn
from workbench.embed import HashEmbedder
from workbench.eval import evaluate
from workbench.demo_profiles import fit_profiles
from workbench.eval.estimate import estimate_run, load_profiles, structure
from workbench.eval.harness import select
from workbench.llm import ScriptedLLM
from workbench.llm.latency import LatencyModel
from workbench.methods import get_method
from workbench.methods.progress import show_ingest_progress

WORDS = ("allotment", "greyhound", "Bristol", "marathon", "violin", "sourdough", "Lisbon", "kayak", "thesis", "garden")


def synthetic_conversation(turns: int = 300, per_session: int = 20, words_per_turn: int = 40) -> Conversation:
    """A LoCoMo-sized two-speaker conversation (300 turns in 15 sessions by default)."""
    t0 = datetime(2023, 1, 1, 10, 0)
    sessions = []
    for s in range(turns // per_session):
        when = t0 + timedelta(days=7 * s)
        sid = str(s + 1)
        body = [Turn(f"D{s + 1}:{i + 1}", ("Ann", "Bob")[i % 2],
                     " ".join(WORDS[(s + i + k) % len(WORDS)] for k in range(words_per_turn)), sid, when)
                for i in range(per_session)]
        sessions.append(Session(sid, when, tuple(body)))
    qa = (QA("syn/q0", "Where did Ann move?", "Bristol", 1, ("D1:1",)),)
    return Conversation("syn-1", ("Ann", "Bob"), tuple(sessions), qa)


def _demo_replay_counts(methods, questions=None):
    """Calls and tokens per (method, phase) of a replayed demo run (the cassette's own figures)."""
    prof = fit_profiles(methods=methods, questions=questions)
    out = {}
    for name, p in prof["methods"].items():
        for r in p["roles"]:
            c = out.setdefault((name, r["phase"]), [0, 0])
            c[0] += r["calls"]
            c[1] += r["prompt_tokens"] + r["completion_tokens"]
    return prof, out


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("onnxruntime")
    from workbench.demo import DEMO

    if not DEMO.cassette.exists():
        pytest.skip("demo cassette absent")


def _demo_estimates(profiles, methods, questions):
    from workbench.demo import demo_dataset, demo_methods
    from workbench.eval import LLMJudge

    llm = ScriptedLLM([], model="qwen2.5-coder-0.5b")
    plan = select(demo_dataset(), questions=list(questions))
    return {name: estimate_run(m, plan, llm=llm, judge=LLMJudge(llm), profiles=profiles)
            for name, m in demo_methods(llm, None, methods).items()}


def test_committed_profiles_predict_the_demo_replay_within_25_percent(minilm):
    """The committed cost profiles against a fresh replay of the demo slice from its cassette."""
    from workbench.demo import DEMO

    methods = ["full_context", "eager_facts", "hymem", "memr3"]
    _, replay = _demo_replay_counts(methods)
    estimates = _demo_estimates(load_profiles(), methods, DEMO.questions)
    for (name, phase), (calls, tokens) in replay.items():
        p = estimates[name].phases[phase]
        assert p.calls == pytest.approx(calls, rel=0.25), (name, phase)
        assert p.tokens == pytest.approx(tokens, rel=0.25), (name, phase)


def test_profiles_fitted_on_half_the_questions_predict_the_other_half(minilm):
    """Held out: fit on three demo questions, predict the query and judge phases of the other three."""
    from workbench.demo import DEMO

    methods = ["naive_rag", "eager_facts", "full_context"]
    fitted, _ = _demo_replay_counts(methods, DEMO.questions[:3])
    _, held_out = _demo_replay_counts(methods, DEMO.questions[3:])
    estimates = _demo_estimates(fitted, methods, DEMO.questions[3:])
    for (name, phase), (calls, tokens) in held_out.items():
        if phase == "construct":
            continue
        p = estimates[name].phases[phase]
        assert p.calls == pytest.approx(calls, rel=0.25), (name, phase)
        assert p.tokens == pytest.approx(tokens, rel=0.25), (name, phase)


def test_too_long_full_context_prompt_is_flagged_before_any_call(tmp_path):
    from workbench.llm.llamacpp import LlamaCpp

    conv = synthetic_conversation(300, words_per_turn=80)  # ~24k counted tokens
    llm = LlamaCpp(tmp_path / "absent.gguf", n_ctx=16384)  # lazy: nothing loads until the first call
    method = get_method("full_context")(llm=llm)
    plan = select(Dataset("syn", (conv,)), questions=1)
    est = estimate_run(method, plan, llm=llm, judge=None)
    assert est.blocked and any("Whole-conversation prompt for syn-1" in f and "16,384" in f for f in est.flags)
    assert est.phases["query"].calls == 0  # refused questions cost nothing
    assert llm._llama is None and len(llm.ledger) == 0


def test_eval_estimate_cli_flags_a_missing_model_and_makes_no_call(tmp_path, capsys):
    from workbench.cli import main

    rc = main(["eval", "--estimate", "--method", "naive_rag", "--data", "sample", "--conversations", "0",
               "--questions", "3", "--llm", f"gguf:{tmp_path / 'absent.gguf'}", "--judge", "same",
               "--out", str(tmp_path / "run"), "--prices", "0.15,0.6"])
    out = capsys.readouterr().out
    assert rc == 2
    assert "model file not found" in out and "naive_rag" in out and "cost: $" in out
    assert "query" in out and "judge" in out
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_ingest_progress_advances_during_a_locomo_sized_ingest():
    conv = synthetic_conversation(300)
    llm = ScriptedLLM([], default="auto")
    seen = []
    with show_ingest_progress(on_update=lambda p: seen.append((p.turns, p.calls, p.tokens))):
        get_method("eager_facts")(llm=llm, embedder=HashEmbedder(dim=64)).ingest(conv)
    turns = [t for t, _, _ in seen]
    assert turns == sorted(turns) and turns[-1] == 300
    assert len(set(turns)) >= 100  # per exchange, not one jump at the end
    calls = [c for _, c, _ in seen]
    assert calls[-1] == len(llm.ledger) == 150 and len(set(calls)) > 100
    # the counts run with the turns: halfway through the turns, about half the calls are made
    mid = next(c for t, c, _ in seen if t >= 150)
    assert 60 <= mid <= 90


def test_no_ingest_progress_unless_switched_on():
    seen = []
    llm = ScriptedLLM([], default="auto")
    with show_ingest_progress(False, on_update=seen.append):
        get_method("eager_facts")(llm=llm, embedder=HashEmbedder(dim=64)).ingest(synthetic_conversation(40))
    get_method("eager_facts")(llm=llm, embedder=HashEmbedder(dim=64)).ingest(synthetic_conversation(40))
    assert seen == []


def test_manifest_records_estimate_beside_spent(tmp_path):
    conv = synthetic_conversation(60)
    llm = ScriptedLLM([], default="auto")
    method = get_method("eager_facts")(llm=llm, embedder=HashEmbedder(dim=64))
    res = evaluate(method, Dataset("syn", (conv,)), store=tmp_path / "results.jsonl", progress=False)
    m = res.manifest
    assert m["estimate"]["phases"]["construct"]["calls"] == pytest.approx(0.528 * 60, rel=0.05)
    assert m["spent"]["phases"]["construct"]["calls"] == 30 and m["spent"]["phases"]["query"]["calls"] == 1
    assert set(m["estimate_vs_spent"]) >= {"construct", "query"}
    assert m["spent"]["live_calls"] == len(m["spent"]["live_call_samples"]) == 31
    first = json.loads((tmp_path / "results.manifests.jsonl").read_text().splitlines()[0])
    assert "estimate" in first  # written before the run starts
    costs = [json.loads(line) for line in (tmp_path / "results.costs.jsonl").read_text().splitlines()]
    assert len(costs) == 1 and costs[0]["spent"] == m["spent"] and costs[0]["estimate"] == m["estimate"]


def test_latency_model_refits_from_manifest_samples(tmp_path):
    truth = LatencyModel(0.2, 200.0, 20.0, "truth")
    samples = [[p, c, round(truth(p, c), 4)] for p in range(100, 3100, 100) for c in (10, 50, 200)]
    path = tmp_path / "results.manifests.jsonl"
    path.write_text(json.dumps({"llm_model": "m", "spent": {"live_call_samples": samples}}) + "\nnot json\n")
    fit = LatencyModel.from_manifests([path], model="m")
    assert fit.calls == len(samples) and "1 unreadable" in fit.source
    assert fit.prompt_tok_s == pytest.approx(200, rel=0.05) and fit.gen_tok_s == pytest.approx(20, rel=0.05)
    assert LatencyModel.from_manifests([path], model="other") is None


def test_structure_counts_units():
    conv = synthetic_conversation(60)
    units = structure(select(Dataset("syn", (conv,))))
    assert units == {"conversations": 1, "sessions": 3, "turns": 60, "questions": 1, "judged": 1}


def test_eval_prints_the_estimate_before_running_and_records_it(tmp_path, capsys, monkeypatch):
    import workbench.cli as cli
    import workbench.eval.cli as eval_cli

    llm = ScriptedLLM([], default="auto")
    monkeypatch.setattr(eval_cli, "_llm", lambda spec, cassette=None: llm)
    rc = cli.main(["eval", "--method", "eager_facts", "--data", "tiny", "--questions", "2", "--embedder", "hash",
                   "--llm", "scripted", "--out", str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 0 and "estimate for eager_facts" in err and "construct" in err
    run = json.loads((tmp_path / "manifest.json").read_text())["evaluations"][-1]
    assert run["estimate"]["questions"] == 2 and run["spent"]["phases"]["construct"]["calls"] == len(
        [c for c in llm.ledger.calls if c.phase == "construct"])
    # a rerun resumes: nothing left to do, so nothing is estimated
    cli.main(["eval", "--method", "eager_facts", "--data", "tiny", "--questions", "2", "--embedder", "hash",
              "--llm", "scripted", "--out", str(tmp_path), "--no-progress"])
    assert "0 questions" in capsys.readouterr().err


def test_malformed_profile_file_is_a_clear_error(tmp_path):
    path = tmp_path / "profiles.json"
    path.write_text(json.dumps({"methods": {"naive_rag": {"params": {}, "roles": [{"phase": "query"}]}}}))
    with pytest.raises(ValueError, match=r"naive_rag\.roles\[0\].*calls_per_unit"):
        load_profiles(path)
    assert load_profiles(tmp_path / "absent.json") == {}
    assert load_profiles()["methods"]  # the committed file passes the same checks


def test_an_interrupted_run_still_records_what_it_spent(tmp_path):
    conv = synthetic_conversation(40)

    def stop(messages):
        raise KeyboardInterrupt

    llm = ScriptedLLM({"eager_facts.extract": [{"facts": ["a"]}] * 5 + [stop]}, default="auto")
    method = get_method("eager_facts")(llm=llm, embedder=HashEmbedder(dim=64))
    with pytest.raises(KeyboardInterrupt):
        evaluate(method, Dataset("syn", (conv,)), store=tmp_path / "results.jsonl", progress=False)
    costs = json.loads((tmp_path / "results.costs.jsonl").read_text())
    assert costs["interrupted"] is True and costs["spent"]["phases"]["construct"]["calls"] == 5


def test_demo_estimate_prices_every_method_without_a_call(minilm):
    from workbench.demo import estimate_demo

    ests = estimate_demo(methods=["naive_rag", "ama"], questions=2)
    assert [e.method for e in ests] == ["naive_rag", "ama"]
    assert ests[0].phases["query"].calls == 2 and ests[1].phases["construct"].calls > 100
    assert not any(e.flags for e in ests)


def test_prices_from_a_pair_or_a_table(tmp_path):
    from workbench.eval.estimate import parse_prices

    assert parse_prices("0.15,0.6") == (0.15, 0.6) and parse_prices(None) is None
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"gpt-4.1-mini": [0.4, 1.6]}))
    assert parse_prices(str(table), "gpt-4.1-mini") == (0.4, 1.6)
    with pytest.raises(ValueError, match="no entry for model 'other'"):
        parse_prices(str(table), "other")
    with pytest.raises(ValueError, match="IN,OUT"):
        parse_prices("cheap")


def test_a_labelled_variant_is_priced_by_its_methods_profile():
    from workbench.data import load_sample
    from workbench.methods import AMA

    conv = load_sample()[0].head(2)
    plan = select(Dataset("s", (conv,)), questions=[q.id for q in conv.qa][:2])
    plain = estimate_run(AMA(llm=ScriptedLLM([]), embedder=None), plan)
    variant = estimate_run(AMA(llm=ScriptedLLM([]), embedder=None).labelled("paper-judge"), plan)
    assert variant.method == "ama[paper-judge]" and plain.total.calls > 0
    assert variant.total == plain.total and not any("no cost profile" in n for n in variant.notes)


def test_a_construction_variant_is_fitted_from_a_partial_recording_and_used_when_params_match(tmp_path):
    """H-Mem's committed profile comes from 4-turn windows; a recording with the paper's one-message
    fragments (stopped midway) gives the variant the estimate uses when a method has those parameters."""
    from workbench.data import load_sample
    from workbench.demo_profiles import fit_construction_variant
    from workbench.llm import CachedLLM
    from workbench.methods import HMem

    conv = load_sample()[0].head(2)
    long_turns = [t for t in conv.turns if len(t.text) >= 20]
    cassette = tmp_path / "hmem.jsonl"
    llm = CachedLLM(ScriptedLLM({"hmem.extract": '{"events": []}', "hmem.consolidate": '{"summary": "s"}',
                                 "hmem.profile": '{"profiles": []}'}, model="m"), cassette)
    covered = conv.turns.index(long_turns[9]) + 1  # the recording stopped after this turn
    for t in conv.turns[:covered]:
        llm.complete(f"Turn this into memory records.\n\n{t.speaker}: {t.text}", role="hmem.extract")
        llm.complete(f"Summarize the notes under {t.id}: a, b", role="hmem.consolidate")
        llm.complete(f"Summarize the notes under {t.id} again: a, b", role="hmem.consolidate")
    llm.complete("profile of Priya", role="hmem.profile")
    base = load_profiles()["methods"]["hmem"]
    variant = fit_construction_variant(cassette, conv, "hmem", {"fragment": "turn"}, base=base)
    rates = {r["role"]: (r["unit"], r["calls_per_unit"]) for r in variant["roles"]}
    assert variant["fitted_on"]["turns_covered"] == covered and variant["fitted_on"]["calls"] == 3 * covered + 1
    assert rates["hmem.extract"] == ("turns", 1.0) and rates["hmem.consolidate"] == ("turns", 2.0)
    assert rates["hmem.profile"][0] == "sessions"

    profiles = load_profiles()
    profiles["methods"]["hmem"]["variants"] = [variant]
    plan = select(Dataset("s", (conv,)), questions=[q.id for q in conv.qa][:1])
    turn = estimate_run(HMem(llm=ScriptedLLM([]), embedder=None, fragment="turn"), plan, profiles=profiles)
    window = estimate_run(HMem(llm=ScriptedLLM([]), embedder=None, fragment="window"), plan, profiles=profiles)
    assert turn.phases["construct"].calls >= 3 * len(conv.turns) > window.phases["construct"].calls
    assert any("construction priced from a recording with fragment=turn" in n for n in turn.notes)
    assert not any("fragment" in n for n in window.notes) and turn.phases["query"] == window.phases["query"]


def test_committed_hmem_profile_prices_one_message_fragments_from_the_real_scale_recording():
    variants = load_profiles()["methods"]["hmem"].get("variants", [])
    assert [v["when"] for v in variants] == [{"fragment": "turn"}]
    assert variants[0]["fitted_on"]["conversation"] == "conv-30" and variants[0]["fitted_on"]["turns_covered"] > 100


def test_a_malformed_profile_variant_is_a_clear_error(tmp_path):
    data = load_profiles()
    data["methods"]["hmem"]["variants"] = [{"when": {"fragment": "turn"}, "roles": [{"phase": "construct"}]}]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"methods\.hmem\.variants\[0\]\.roles\[0\]"):
        load_profiles(path)
    data["methods"]["hmem"]["variants"] = {"when": "x"}
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="variants must be a list"):
        load_profiles(path)


def test_a_refit_keeps_the_variants_fitted_on_other_recordings(tmp_path):
    """``--refit`` rewrites the profiles from the demo cassette; a construction variant added with
    ``--variant`` from a LoCoMo recording cannot be refitted from it and must survive the rewrite."""
    from workbench.demo_profiles import _keep_variants

    old = tmp_path / "profiles.json"
    variant = {"when": {"fragment": "turn"}, "roles": [], "fitted_on": {"cassette": "hmem-conv-30.jsonl"}}
    old.write_text(json.dumps({"methods": {"hmem": {"roles": [], "variants": [variant]}, "gone": {"variants": [{}]}}}))
    prof = {"methods": {"hmem": {"roles": [{"role": "hmem.extract"}]}, "naive_rag": {"roles": []}}}
    _keep_variants(prof, old)
    assert prof["methods"]["hmem"] == {"roles": [{"role": "hmem.extract"}], "variants": [variant]}
    assert "variants" not in prof["methods"]["naive_rag"] and "gone" not in prof["methods"]
    _keep_variants(prof, tmp_path / "absent.json")  # a first fit: nothing to keep
