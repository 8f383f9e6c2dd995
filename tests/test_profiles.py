"""The two profiles of a paper method (issue #39 item 1): ``profile="paper"`` / ``"small"`` / ``"auto"``, the
PROFILE placeholder, ``param_notes`` against the paper's configuration, and the per-profile prompt hash."""
from __future__ import annotations

import pickle

import pytest

from workbench.methods.components import parameter_notes

from workbench.llm import ScriptedLLM
from workbench.llm.base import BaseLLM
from workbench.methods.base import MemoryMethod
from workbench.methods.profile import PROFILE, resolve_profile
from workbench.trace import Answer


class Toy(MemoryMethod):
    """A method with two profiles, to test the machinery apart from any real method."""

    name = "toy_profiles"
    profiles = {"paper": {"threshold": 0.4, "bounded": False}, "small": {"threshold": 0.8, "bounded": True}}
    profile_notes = {"threshold": "calibrated for the small embedder", "bounded": "bounded outputs for the 1.5B"}
    value_notes = {"answer_prompt": {"shared": "the fair arena"}}

    def __init__(self, *, llm=None, profile="auto", threshold=PROFILE, bounded=PROFILE, top_k=10,
                 answer_prompt="native"):
        self.llm = llm
        self.profile = profile
        self.threshold = threshold
        self.bounded = bounded
        self.top_k = top_k
        self.answer_prompt = answer_prompt
        self._apply_profile(profile, llm)

    def _build(self, conv):
        pass

    def _answer(self, question, *, now):
        return Answer(question=question, text="")


class Remote(BaseLLM):
    model = "gpt-4.1-mini"


def test_the_placeholder_takes_the_profiles_value_and_explicit_arguments_win():
    paper, small = Toy(profile="paper"), Toy(profile="small")
    assert (paper.threshold, paper.bounded, small.threshold, small.bounded) == (0.4, False, 0.8, True)
    assert Toy(profile="small", threshold=0.5).threshold == 0.5
    assert PROFILE not in Toy(profile="small").get_params().values()
    clone = Toy(profile="small", top_k=3).clone()
    assert clone.get_params() == Toy(profile="small", top_k=3).get_params()
    assert repr(Toy(profile="small")) == "Toy(profile='small')"
    assert repr(Toy(profile="small", threshold=0.5)) == "Toy(profile='small', threshold=0.5)"
    assert pickle.loads(pickle.dumps(PROFILE)) is PROFILE


def test_auto_is_small_for_the_offline_models_and_paper_for_any_other():
    assert Toy(llm=ScriptedLLM([])).profile == "small"  # scripted replies stand in for the offline model
    assert Toy(llm=Remote()).profile == "paper"
    assert Toy().profile == "paper"  # no model named: the paper's method
    assert resolve_profile("auto", Remote()) == "paper"
    with pytest.raises(ValueError, match="profile='big'"):
        Toy(profile="big")


def test_param_notes_are_empty_for_the_paper_and_list_every_aid_of_the_small_profile():
    assert Toy(profile="paper").param_notes == {}
    assert Toy(profile="small").param_notes == {"threshold": "calibrated for the small embedder",
                                                 "bounded": "bounded outputs for the 1.5B"}
    notes = Toy(profile="paper", top_k=3, answer_prompt="shared").param_notes
    assert notes == {"top_k": "the paper profile has 10", "answer_prompt": "the fair arena"}
    # a saved run's parameters (JSON: lists for tuples), read by the app header and the report
    assert Toy.departures({"threshold": 0.8, "top_k": 10, "profile": "small"}) == [
        "threshold = 0.8: calibrated for the small embedder"]


def test_each_profile_hashes_only_the_prompts_it_sends(monkeypatch):
    from workbench.eval.manifest import prompt_modules

    monkeypatch.setattr(Toy, "profile_prompt_modules", {"paper": ("memr3.prompts",)})
    assert prompt_modules(Toy(profile="small")) == [Toy.__module__]
    assert prompt_modules(Toy(profile="paper")) == ["workbench.methods.memr3.prompts"]


def test_the_report_lists_each_configurations_departures_from_its_paper():
    from workbench.eval.report import departures_section, results_frame

    rows = [{"method": "memr3", "params_hash": "a", "dataset": "d", "qa_id": "q1", "category": 1,
             "params": {"answer_prompt": "shared"}, "scores": {}},
            {"method": "naive_rag", "params_hash": "b", "dataset": "d", "qa_id": "q1", "category": 1,
             "params": {}, "scores": {}}]
    lines = departures_section(results_frame(rows))
    assert lines[0] == "## Departures from the papers"
    assert [ln for ln in lines if ln.startswith("- ")] == [
        "- **memr3**: answer_prompt = 'shared': the final answer is written with the workbench's shared answer "
        "prompt (fair arena, answer_prompt\\.py), not the method's own"]  # "\\." keeps a renderer from linking "x.py"
    assert departures_section(results_frame(rows[1:])) == []


def test_the_paper_gallery_runs_without_the_small_models_configuration():
    """Issue #39 item 6: the paper profile's gallery example gets no demo overrides, no output bounds, no
    calibration, and its own cassette beside the small profile's."""
    from workbench.gallery import cassette, eval_argv, gallery_methods, subdir

    for name, cls in gallery_methods().items():
        small, paper = eval_argv(name, "out", replay=True), eval_argv(name, "out", replay=True, profile="paper")
        assert "--bounded-outputs" in small and "--bounded-outputs" not in paper
        assert paper[paper.index("--calibration") + 1] == "off"
        assert f"replay:{cassette(name, 'paper')}" in paper and cassette(name, "paper").name == f"{name}.paper.jsonl"
        if "profile" in cls._param_names():
            assert 'profile="paper"' in " ".join(paper) and 'profile="small"' in " ".join(small)
    ama_small, ama_paper = (" ".join(eval_argv("ama", "out", replay=True, profile=p)) for p in ("small", "paper"))
    assert 'conflict_check="probe"' in ama_small and "conflict_check" not in ama_paper  # a 1.5B demo override
    assert (subdir("small"), subdir("paper")) == ("gallery", "gallery-paper")
    with pytest.raises(ValueError, match="gallery profile"):
        subdir("large")


def test_changing_the_profile_moves_the_parameters_still_at_the_old_profiles_values():
    """``--param profile="paper"`` on the offline model goes through ``set_params`` after the constructor:
    the profile's values must follow, while a parameter set by hand stays (found by the HyMem helper)."""
    m = Toy(llm=ScriptedLLM([]))
    assert (m.profile, m.threshold) == ("small", 0.8)
    m.set_params(profile="paper")
    assert (m.profile, m.threshold, m.bounded) == ("paper", 0.4, False)
    hand = Toy(profile="small", threshold=0.5).set_params(profile="paper")
    assert (hand.threshold, hand.bounded) == (0.5, False)
    assert Toy(profile="small").clone(profile="paper").get_params() == Toy(profile="paper").get_params()
    assert Toy(profile="small").clone(profile="paper", bounded=True).bounded is True
    assert Toy(profile="paper").set_params(profile="auto", llm=ScriptedLLM([])).threshold == 0.8


def test_a_memory_saved_before_profiles_loads_with_the_small_profile(tmp_path):
    """Every run saved before the profiles existed ran today's defaults, the small profile's: loading one without
    an LLM (the app's views) must not give it the paper profile's values."""
    import json

    from workbench.data import load_dataset

    conv = load_dataset("tiny")[0]
    Toy(llm=ScriptedLLM([]), profile="small", top_k=3).ingest(conv).save(tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "params.json").read_text())
    assert meta["params"]["profile"] == "small"
    loaded = Toy.load(tmp_path / "m")
    assert (loaded.profile, loaded.threshold, loaded.top_k) == ("small", 0.8, 3)
    del meta["params"]["profile"], meta["params"]["threshold"], meta["params"]["bounded"]  # as saved before profiles
    (tmp_path / "m" / "params.json").write_text(json.dumps(meta))
    old = Toy.load(tmp_path / "m")
    assert (old.profile, old.threshold, old.bounded) == ("small", 0.8, True)


def test_auto_calibration_maps_only_the_paper_profiles_own_thresholds():
    """Calibrated thresholds are a small-model aid, so ``--calibration auto`` (the default) applies none of them to
    a paper-profile build; what it does carry over is a mapping of the paper's own thresholds onto the embedder in
    use (issue #63: H-Mem's alphas, fitted to Table 7's join shares on the paper profile's own build), with its
    record, and the note says so. The small profile gets the shipped MiniLM calibration as before."""
    from workbench.embed import MiniLMEmbedder
    from workbench.eval.presets import prepare_method
    from workbench.methods import REGISTRY

    emb = MiniLMEmbedder()
    paper = prepare_method("hmem", Remote(), emb, data="sample", warn=False)
    small = prepare_method("hmem", ScriptedLLM([]), emb, data="sample", warn=False)
    assert paper.method.profile == "paper" and paper.method.alphas != REGISTRY["hmem"].paper_params()["alphas"]
    assert paper.method.alpha_mapping["paper_alphas"] == [0.8, 0.7, 0.6]
    assert tuple(paper.method.alpha_mapping["alphas"]) == paper.method.alphas
    assert set(parameter_notes(paper.method.param_notes)) == {"alphas"}  # the mapping, said as a departure
    assert "Table 7" in paper.method.param_notes["alphas"] or "mapped" in paper.method.param_notes["alphas"]
    assert set(paper.method.param_notes) == {"alphas", "embedder", "reranker"}
    assert small.method.profile == "small" and small.method.alphas != paper.method.alphas
    recmem = prepare_method("recmem", Remote(), emb, data="sample", warn=False)  # maps nothing for its paper profile
    assert recmem.method.theta_sim == REGISTRY["recmem"].paper_params()["theta_sim"]
