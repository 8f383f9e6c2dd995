"""One path from settings to a built method (issue #39 item 5).

Each path is driven the way a user drives it -- ``workbench eval`` on the thread executor,
``workbench eval --executor ray`` (the driver's copy and the method each worker's recipe builds; no
Ray cluster is started), ``workbench eval --estimate``, ``workbench build``, ``workbench ask``, and for
a demo profile the notebooks' and the demo's ``demo_methods`` -- and the method each builds is
compared with the thread executor's: parameters after dataset preset, calibration, profile and
``--param``/``--fair``, the LLM's output bounds, and the setup record the manifest keeps.

Nothing is ingested or asked: the harness, the Ray executor and the commands stop where the method is built.
"""
from __future__ import annotations


import pytest

from workbench import cli
from workbench.methods import REGISTRY


class _Built(BaseException):
    """Stops ``build``/``ask`` right after the method is configured (not an ``Exception``: ``main`` reports those)."""

    def __init__(self, setup):
        super().__init__("built")
        self.setup = setup


def effective(method) -> dict:
    """What decides a built method's calls: its name and parameters, and the output bounds of its LLM."""
    llm = getattr(method, "llm", None)
    return {"name": method.name, "config": method.config(),
            "bounds": sorted(getattr(llm, "output_bounds", None) or {})}


@pytest.fixture(scope="module")
def cassette(tmp_path_factory):
    """A one-entry cassette (replay needs to know its model); building a method makes no call."""
    from workbench.llm import CachedLLM, ScriptedLLM

    path = tmp_path_factory.mktemp("cassette") / "one.jsonl"
    CachedLLM(ScriptedLLM([], default="x", model="scripted"), path).complete("hello")
    return path


@pytest.fixture
def paths(monkeypatch, tmp_path, cassette):
    """``run(name, args) -> {path: (effective, manifest)}``: method ``name`` built by every command-line path."""
    import workbench.eval.cli as eval_cli
    import workbench.eval.executors as executors
    import workbench.eval.harness as harness

    seen: list = []

    def fake_evaluate(method, dataset, *, executor=None, extra_manifest=None, **kw):
        seen.append((method, extra_manifest, executor))
        return None

    class FakeRayExecutor:
        def __init__(self, recipe, **kw):
            self.recipe = recipe

    class Estimate:
        blocked = False

    monkeypatch.setattr(harness, "evaluate", fake_evaluate)
    monkeypatch.setattr(eval_cli, "_finish", lambda out, res: None)
    monkeypatch.setattr(eval_cli, "_print_estimate",
                        lambda args, method, *a, **k: seen.append((method, None, "estimate")) or Estimate())
    monkeypatch.setattr(executors, "ensure_ray", lambda *a, **k: None)
    monkeypatch.setattr(executors, "RayExecutor", FakeRayExecutor)
    configure = cli.configure_method

    def stop_after_configure(*a, **k):
        raise _Built(configure(*a, **k))

    monkeypatch.setattr(cli, "configure_method", stop_after_configure)

    def run(name: str, args: list[str]) -> dict:
        common = ["--method", name, "--data", "sample", "--llm", "replay", "--cassette", str(cassette), *args]
        out = {}
        for path, extra in (("thread", []), ("ray", ["--executor", "ray"]), ("estimate", ["--estimate"])):
            seen.clear()
            assert cli.main(["eval", *common, "--out", str(tmp_path / path), "--no-progress", *extra]) == 0, path
            (method, manifest, executor), = seen
            out[path] = (effective(method), manifest)
            if path == "ray":  # what each worker builds from the recipe it is sent
                out["ray worker"] = (effective(executor.recipe(0)[0]), manifest)
        for command in ("build", "ask"):
            words = [command, *common, "--out", str(tmp_path / command)] if command == "build" else \
                    [command, "what?", *common]
            with pytest.raises(_Built) as built:
                cli.main(words)
            out[command] = (effective(built.value.setup.method), built.value.setup.manifest())
        return out

    run.seen = seen
    return run


def _same_as_thread(got: dict, *, manifests: bool = True, skip=()) -> None:
    thread_effective, thread_manifest = got.pop("thread")
    for path, (eff, manifest) in got.items():
        if path in skip:
            continue
        assert eff == thread_effective, f"{path} builds another method than the thread executor"
        if manifests and path != "estimate":
            assert manifest == thread_manifest, f"{path} records another setup than the thread executor"


SETTINGS = {"plain": [], "param": ["--param", "top_k=3"], "fair": ["--fair"],
            "bounded": ["--bounded-outputs"]}


@pytest.mark.parametrize("setting", sorted(SETTINGS))
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_command_line_path_builds_the_thread_executors_method(name, setting, paths, cal_file):
    args = ["--embedder", "hash", "--calibration", str(cal_file), *SETTINGS[setting]]
    if setting == "param" and "top_k" not in REGISTRY[name]._defaults():
        pytest.skip(f"{name} has no top_k")
    got = paths(name, args)
    if setting == "fair":
        assert got["thread"][0]["config"]["answer_prompt"] == "shared"
    if setting == "bounded":
        assert got["thread"][0]["bounds"], "--bounded-outputs bounds the method's LLM"
    # the estimate builds no embedder model; with the hash embedder it is the run's configuration
    _same_as_thread(got)


def test_the_estimate_prices_the_calibrated_configuration(paths):
    """``eval --estimate`` with the default embedder: the calibrated thresholds the run would use
    (MiniLM builds no model until it embeds), not the uncalibrated ones."""
    got = paths("hmem", ["--embedder", "minilm"])
    assert got["thread"][0]["config"]["alphas"] != REGISTRY["hmem"]._defaults()["alphas"], \
        "the shipped MiniLM calibration sets H-Mem's alphas"
    _same_as_thread(got)


def _demo_names(profile):
    from workbench.demo import demo_methods

    return list(demo_methods(None, None, profile=profile))


def _profile_cases():
    from workbench.demo import DEMO_PROFILES

    for pname, profile in sorted(DEMO_PROFILES.items()):
        for cal in ("auto", "off"):
            for name in _demo_names(profile):
                yield pytest.param(pname, cal, name, id=f"{pname}-{cal}-{name}")


@pytest.mark.parametrize("profile,calibration,name", list(_profile_cases()))
def test_a_demo_profile_builds_in_every_path_what_the_notebooks_build(profile, calibration, name, paths, cassette):
    """``--profile`` on eval (both executors), build and ask: the profile's overrides and variants, the
    calibration its cassette was recorded with (``auto``) or its hand-set thresholds (``off``), and its
    output bounds -- the methods ``demo_methods`` gives the notebooks, the demo and the benchmarks."""
    from workbench.demo import DEMO_PROFILES, demo_embedder, demo_llm, demo_methods

    p = DEMO_PROFILES[profile]
    llm = demo_llm(mode="replay", cassette=cassette, profile=p)
    notebook = demo_methods(llm, demo_embedder(), [name], profile=p,
                            calibration="recorded" if calibration == "auto" else None)[name]
    got = paths(name, ["--embedder", "minilm", "--profile", profile, "--calibration", calibration])
    assert got["thread"][0] == effective(notebook), "the thread executor builds another method than the notebooks"
    _same_as_thread(got)


def test_the_profile_reaches_the_method_the_llm_and_the_manifest(paths):
    """Not only equal across paths: the 1.5B profile's overrides, variant, calibration and bounds are there."""
    from workbench.demo import DEMO_15B

    got = paths("ama[paper-judge]", ["--embedder", "minilm", "--profile", "1.5b"])
    eff, manifest = got["thread"]
    assert eff["name"] == "ama[paper-judge]" and eff["config"]["conflict_stores"] == ["fact"]
    assert {k: eff["config"][k] for k in DEMO_15B.variants["ama[paper-judge]"]} == \
        {k: v for k, v in DEMO_15B.variants["ama[paper-judge]"].items()}
    assert eff["bounds"] == sorted(DEMO_15B.bounds) and manifest["output_bounds"] == sorted(DEMO_15B.bounds)
    assert manifest["profile"] == "1.5b"
    hmem, manifest = paths("hmem", ["--embedder", "minilm", "--profile", "1.5b"])["ray worker"]
    assert manifest["calibration"]["embedder"] == "all-MiniLM-L6-v2-int8"
    assert hmem["config"]["alphas"] == list(manifest["calibration"]["applied"]["alphas"])


def test_a_comma_list_with_a_profile_builds_each_method_as_the_demo_does(paths, cassette, tmp_path):
    """``--method a,b`` on the default executor: each method of the list through the same path."""
    from workbench.demo import DEMO_15B, demo_embedder, demo_llm, demo_methods

    names = ["hmem", "ama[paper-judge]", "memr3[one-chunk]"]
    paths.seen.clear()
    assert cli.main(["eval", "--method", ",".join(names), "--data", "sample", "--llm", "replay", "--cassette",
                     str(cassette), "--profile", "1.5b", "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    notebook = demo_methods(demo_llm(mode="replay", cassette=cassette, profile=DEMO_15B), demo_embedder(), names,
                            profile=DEMO_15B)
    assert [effective(m) for m, _, _ in paths.seen] == [effective(notebook[n]) for n in names]


def test_an_unknown_profile_or_variant_is_a_usage_error(paths, capsys, cassette):
    replay = ["--embedder", "hash", "--llm", "replay", "--cassette", str(cassette)]
    assert cli.main(["build", "--method", "ama", "--profile", "9b", *replay]) == 2
    assert "unknown profile '9b'" in capsys.readouterr().err
    assert cli.main(["eval", "--method", "ama[nope]", "--profile", "1.5b", *replay, "--no-progress"]) == 2
    assert "unknown variant 'ama[nope]'" in capsys.readouterr().err


def test_the_method_profile_is_named_by_a_demo_profile_and_chosen_by_the_model_otherwise(paths):
    """Issue #39 item 1: the recorded demo profiles name ``small``; without one, ``auto`` picks ``paper`` for a
    model that is not an offline one (this cassette's model is "scripted"), and ``--param profile=...`` moves
    every profile parameter (through ``set_params``) in every path alike."""
    from workbench.methods import REGISTRY

    eff, manifest = paths("ama", ["--embedder", "minilm", "--profile", "1.5b"])["thread"]
    assert eff["config"]["profile"] == "small" and eff["config"]["prompts"] == "small"
    got = paths("ama", [])
    assert got["thread"][0]["config"]["profile"] == "paper"
    _same_as_thread(got)
    got = paths("ama", ["--param", 'profile="small"'])
    small = {k: list(v) if isinstance(v, tuple) else v for k, v in REGISTRY["ama"].profiles["small"].items()}
    assert {k: got["thread"][0]["config"][k] for k in small} == small
    _same_as_thread(got)
