"""The two profiles of a paper method (issue #39 item 1): ``profile="paper"`` / ``"small"`` / ``"auto"``, the
PROFILE placeholder, ``param_notes`` against the paper's configuration, and the per-profile prompt hash."""
from __future__ import annotations

import pickle

import pytest

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
                 answer_prompt="own"):
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
