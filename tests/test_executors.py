"""Ray executor: rows streamed into the driver's store, resume, a killed worker, a lost task, the CLI.

A local Ray instance with 2 CPUs and the scripted LLM. Outside CI the module skips when Ray is not installed
or cannot start here; in CI (``CI`` or ``WORKBENCH_REQUIRE_RAY`` set, ``ray_required``) both are failures, so a
loaded CI machine never passes with the distributed path untested.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from workbench.data import load_sample
from workbench.embed import HashEmbedder
from workbench.eval import LLMJudge, ResultsStore, evaluate
from workbench.eval.cli import add_eval_arguments, eval_command
from workbench.eval.executors import RayExecutor, split_endpoints
from workbench.llm import CachedLLM, ScriptedLLM
from workbench.methods import FullContext, NaiveRAG



def ray_required() -> bool:
    """Whether a Ray that is missing or cannot start fails the tests instead of skipping them: in CI (``CI``, set by
    CI services and ``.ci/run``) or when ``WORKBENCH_REQUIRE_RAY`` is set to anything but 0/empty."""
    return any(os.environ.get(name, "").strip() not in ("", "0", "false") for name in ("CI", "WORKBENCH_REQUIRE_RAY"))


try:
    import ray
except ImportError as _missing:
    if ray_required():
        raise ImportError(f"the Ray tests must run here (CI / WORKBENCH_REQUIRE_RAY is set) but Ray is not installed: "
                          f"{_missing}; pip install -e '.[ray]'") from _missing
    pytest.skip(f"Ray is not installed ({_missing})", allow_module_level=True)

_Q = re.compile(r"Question: (.*?)\n")
_GOLD = re.compile(r"Gold answer: (.*?)\nGenerated answer: (.*?)\n")


def _answer(messages):
    return _Q.search(messages[-1]["content"]).group(1).rstrip("?").split()[-1]


def _verdict(messages):
    gold, pred = _GOLD.search(messages[-1]["content"]).groups()
    ok = bool(set(gold.lower().split()) & set(pred.lower().split()))
    return {"reasoning": "overlap" if ok else "none", "label": "CORRECT" if ok else "WRONG"}


def scripted():
    return ScriptedLLM({"naive_rag.answer": _answer, "full_context.answer": _answer, "judge.locomo": _verdict},
                       model="scripted")


@dataclass(frozen=True)
class Recipe:
    """NaiveRAG over the scripted LLM. ``crash_marker``: the first worker to reach its second answer
    creates the file and dies (a killed worker); ``always_crash``: every attempt dies."""

    crash_marker: str | None = None
    always_crash: bool = False

    def __call__(self, index):
        llm = scripted()
        answered = []

        def answer(messages):
            answered.append(1)
            if len(answered) == 2 and (self.always_crash
                                       or (self.crash_marker and not os.path.exists(self.crash_marker))):
                if self.crash_marker:
                    Path(self.crash_marker).write_text("crashed")
                os._exit(1)
            return _answer(messages)

        llm._map["naive_rag.answer"] = answer
        return NaiveRAG(llm=llm, embedder=HashEmbedder(64), top_k=3), LLMJudge(scripted())


def _patient_get_node(get_node, wait_s: float = 240.0):
    """Ray gives a starting node 30 s (a constant in ray._private.node); on a loaded 2-core machine its
    Python agents take longer. This wrapper keeps asking the GCS for up to ``wait_s`` instead."""
    def patient(*args, **kw):
        deadline = time.monotonic() + wait_s
        while True:
            try:
                return get_node(*args, **kw)
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    return patient


#: bytes of the test instance's object store (Ray's minimum is 75 MiB)
RAY_OBJECT_STORE = 100 * 1024 * 1024


@pytest.fixture(scope="module")
def local_ray():
    import ray._private.services as services

    mp = pytest.MonkeyPatch()
    mp.setenv("RAY_raylet_start_wait_time_s", "300")  # the raylet's own wait for its agents (same reason)
    mp.setattr(services, "get_node", _patient_get_node(services.get_node))
    try:
        # a small object store: the tests move a few rows, and a large one is reserved in /dev/shm up front
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=RAY_OBJECT_STORE)
    except Exception as exc:  # Ray did not come up (on a loaded machine its raylet can give up on its agents)
        ray.shutdown()  # stop whatever part of the local instance did start
        mp.undo()
        why = f"Ray cannot start here: {type(exc).__name__}: {exc} (logs: /tmp/ray/session_latest/logs/raylet.out)"
        if ray_required():
            pytest.fail(f"{why}; CI requires the distributed path to be tested, so this fails instead of skipping")
        pytest.skip(why)
    mp.undo()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the recipe lives in this test module
    yield ray
    ray.shutdown()


def _local_rows(tmp_path, questions=3):
    method, judge = Recipe()(0)
    res = evaluate(method, load_sample(), judge=judge, store=tmp_path / "local.jsonl", questions=questions,
                   progress=False)
    return {r.qa_id: r for r in res}


def _keys_in_file(path):
    return [json.loads(line)["qa_id"] for line in Path(path).read_text().splitlines() if line.strip()]


def test_ray_is_required_in_ci_only(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("WORKBENCH_REQUIRE_RAY", raising=False)
    assert not ray_required()
    monkeypatch.setenv("CI", "true")
    assert ray_required()
    monkeypatch.setenv("CI", "0")
    assert not ray_required()
    monkeypatch.setenv("WORKBENCH_REQUIRE_RAY", "1")
    assert ray_required()


def test_split_endpoints():
    assert split_endpoints("openai:m@http://a/v1,http://b/v1") == ["openai:m@http://a/v1", "openai:m@http://b/v1"]
    assert split_endpoints("openai:m@http://a/v1") == ["openai:m@http://a/v1"]
    assert split_endpoints("local") == ["local"] and split_endpoints(None) == [None]


def test_ray_rows_match_local_run_and_resume(local_ray, tmp_path):
    method, judge = Recipe()(0)
    store = tmp_path / "ray.jsonl"
    res = evaluate(method, load_sample(), judge=judge, store=store, questions=2, progress=False,
                   executor=RayExecutor(Recipe()))
    assert len(res) == 4 and not res.errors
    assert res.manifest["executor"] == "ray(local)"
    local = _local_rows(tmp_path)
    for row in res:
        ref = local[row.qa_id]
        assert (row.prediction, row.scores, row.judge_label, row.evidence_recall) == \
               (ref.prediction, ref.scores, ref.judge_label, ref.evidence_recall)
    # resume: one more question per conversation; the four stored rows are not run again
    res2 = evaluate(method, load_sample(), judge=judge, store=store, questions=3, progress=False,
                    executor=RayExecutor(Recipe()))
    assert len(res2) == 6 and res2.manifest["resumed_rows"] == 4
    keys = _keys_in_file(store)
    assert len(keys) == len(set(keys)) == 6


def test_killed_worker_is_retried_without_duplicate_rows(local_ray, tmp_path):
    marker = tmp_path / "crashed"
    method, judge = Recipe()(0)
    store = tmp_path / "ray.jsonl"
    res = evaluate(method, load_sample(), judge=judge, store=store, questions=3, progress=False,
                   executor=RayExecutor(Recipe(crash_marker=str(marker)), max_retries=2))
    assert marker.exists(), "no worker was killed: the test did not exercise the retry"
    assert len(res) == 6 and not res.errors
    keys = _keys_in_file(store)
    assert len(keys) == len(set(keys)) == 6
    local = _local_rows(tmp_path)
    assert {r.qa_id: r.prediction for r in res} == {k: r.prediction for k, r in local.items()}


def test_task_that_keeps_dying_gives_failure_rows(local_ray, tmp_path):
    method, judge = Recipe()(0)
    res = evaluate(method, load_sample(), judge=judge, store=tmp_path / "ray.jsonl", questions=3,
                   conversations="0", progress=False,
                   executor=RayExecutor(Recipe(always_crash=True), max_retries=1))
    assert len(res) == 3
    # the first answer may or may not reach the driver before the worker dies; the others cannot
    failed = [r for r in res if r.error]
    assert len(failed) in (2, 3) and all(r.error.startswith("ray task failed") for r in failed)
    assert all(r.judge_label == "NOT_JUDGED" and r.scores["judge"] == 0.0 for r in failed)  # as harness failures
    # --retry-errors reruns exactly the failures
    res2 = evaluate(method, load_sample(), judge=judge, store=tmp_path / "ray.jsonl", questions=3,
                    conversations="0", progress=False, retry_errors=True, executor=RayExecutor(Recipe()))
    assert not res2.errors and res2.manifest["resumed_rows"] == 3 - len(failed)


def test_cli_ray_runs_method_by_conversation_tasks_from_a_cassette(local_ray, tmp_path):
    """Record in thread mode, then replay two methods over both conversations as Ray tasks."""
    cassette = tmp_path / "cassette.jsonl"
    data = load_sample()
    for cls, kw in ((NaiveRAG, {"embedder": HashEmbedder(256), "top_k": 10}), (FullContext, {})):
        llm = CachedLLM(scripted(), cassette)
        evaluate(cls(llm=llm, **kw), data, judge=LLMJudge(llm), questions=2, progress=False)
    parser = argparse.ArgumentParser()
    add_eval_arguments(parser)
    out = tmp_path / "run"
    args = parser.parse_args(["--method", "naive_rag,full_context", "--data", "sample", "--questions", "2",
                              "--llm", "replay", "--cassette", str(cassette), "--judge", "same",
                              "--embedder", "hash", "--out", str(out), "--executor", "ray", "--no-progress"])
    assert eval_command(args) == 0
    rows = ResultsStore(out / "results.jsonl")
    assert len(rows) == 8 and rows.duplicates == 0
    assert not [r for r in rows if r["error"]]
    assert {r["method"] for r in rows} == {"naive_rag", "full_context"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert [e["executor"] for e in manifest["evaluations"]] == ["ray(local)", "ray(local)"]
