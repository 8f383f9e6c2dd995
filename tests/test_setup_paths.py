"""One path from settings to a built method (issue #39): the thread executor, the Ray executor's
recipe, ``workbench build`` and ``workbench ask`` apply the dataset preset and the calibration the
same way (``settings.build_method``), so each builds the same configuration from one command line
(``test_method_settings.py`` adds profiles, ``--fair``, ``--bounded-outputs``, the estimate and the demo).

No Ray cluster: the Ray path is the recipe's own method construction, as each worker runs it.
"""
from __future__ import annotations

import argparse
import json

import pytest

from workbench import cli
from workbench.eval import cli as eval_cli
from workbench.methods import REGISTRY


@pytest.fixture
def cassette(tmp_path):
    """A one-entry cassette (replay needs to know its model); building a method makes no call."""
    from workbench.llm import CachedLLM, ScriptedLLM

    path = tmp_path / "one.jsonl"
    CachedLLM(ScriptedLLM([], default="x", model="scripted"), path).complete("hello")
    return path


def _eval_args(common: list[str], *extra: str):
    parser = argparse.ArgumentParser()
    eval_cli.add_eval_arguments(parser)
    return parser.parse_args([*common, *extra])


def _configurations(name: str, data: str, cal: str, cassette, extra=()) -> dict:
    """``{path: (config, manifest)}`` of method ``name`` built by each of the four paths."""
    common = ["--method", name, "--data", data, "--calibration", cal, "--embedder", "hash", "--llm", "replay",
              "--cassette", str(cassette), *extra]
    out = {}
    args = _eval_args(common)
    llm, embedder = eval_cli._llm(args.llm, args.cassette), cli.make_embedder(args.embedder)
    s = eval_cli.thread_setup(args, name, llm, embedder, eval_cli.run_params(args))
    out["thread"] = (s.method.config(), s.manifest())
    recipe = eval_cli.ray_recipes(_eval_args(common, "--executor", "ray"), [name])[0]
    s, _ = recipe.setup(0)
    worker_method, _ = recipe(0)
    assert worker_method.config() == s.method.config()
    out["ray"] = (s.method.config(), s.manifest())
    for command in ("build", "ask"):
        words = [command, *common] + (["what?"] if command == "ask" else [])
        a = cli.build_parser().parse_args([w for w in words if w != "--executor"])
        s = cli.configure_method(a, cli.make_llm(a.llm, a.cassette), cli.make_embedder(a.embedder))
        out[command] = (s.method.config(), s.manifest())
    return out


@pytest.mark.parametrize("name", sorted(REGISTRY))
@pytest.mark.parametrize("data", ["longmemeval:x.json", "sample"])
def test_every_path_builds_the_same_configuration(name, data, cal_file, cassette):
    got = _configurations(name, data, str(cal_file), cassette)
    thread = got.pop("thread")
    for path, config in got.items():
        assert config == thread, f"{name} on {data}: {path} differs from the thread executor"


def test_the_preset_and_the_calibration_reach_every_path(cal_file, cassette):
    """RecMem on LongMemEval: its preset (0.6/4, free answers) and the calibrated theta_sim, everywhere."""
    cal = json.loads(cal_file.read_text())
    want = cal["methods"]["recmem"]["presets"]["longmemeval"]["theta_sim"]
    for path, (config, manifest) in _configurations("recmem", "longmemeval:x.json", str(cal_file),
                                                    cassette).items():
        assert (config["theta_count"], config["answer_length"], config["theta_sim"]) == (4, "free", want), path
        assert manifest["dataset_preset"]["kind"] == "longmemeval", path
        assert manifest["calibration"]["applied"]["theta_sim"] == want, path


def test_explicit_params_win_and_fair_reaches_the_ray_recipe(cal_file, cassette):
    got = _configurations("recmem", "longmemeval:x.json", str(cal_file), cassette,
                          ["--param", "theta_sim=0.42"])
    assert {c["theta_sim"] for c, _ in got.values()} == {0.42}
    common = ["--method", "recmem", "--embedder", "hash", "--llm", "replay", "--cassette", str(cassette), "--fair"]
    recipe = eval_cli.ray_recipes(_eval_args(common, "--executor", "ray"), ["recmem"])[0]
    assert recipe(0)[0].answer_prompt == "shared"


def test_the_ray_recipe_builds_the_checker_judge(cassette):
    from workbench.eval.judge import CheckerJudge

    recipe = eval_cli.ray_recipes(_eval_args(["--embedder", "hash", "--llm", "replay", "--cassette", str(cassette),
                                              "--judge", "checker", "--executor", "ray"]), ["naive_rag"])[0]
    assert isinstance(recipe(0)[1], CheckerJudge)
