"""``check_method`` complete (issue #65 item 4): every declaration the views read is checked, each broken plugin
fails with one named line saying what to fix, and a census that raises for one method leaves the others' intact."""
from __future__ import annotations

import numpy as np
import pytest

from workbench.methods import MemoryMethod
from workbench.methods.answer_prompt import check_answer_prompt, shared_answer
from workbench.methods.census_kit import CensusSpec
from workbench.methods.explain import HowItWorks, Phase
from workbench.methods.profile import PROFILE
from workbench.methods.store import MemoryUnit
from workbench.testing.check_method import ContractError, check_method, view_vocabulary
from workbench.trace import Answer


class Buckets(MemoryMethod):
    """A correct small plugin: turns in buckets of ``size``, one shared-prompt answer over the last bucket."""

    name = "buckets_ok"

    def __init__(self, *, llm=None, size: int = 4, answer_prompt: str = "native"):
        self.llm = llm
        self.size = size
        self.answer_prompt = answer_prompt
        check_answer_prompt(answer_prompt)

    def _reset(self):
        self.units_ = []

    def _build(self, conv):
        for t in conv.turns:
            self.units_.append(MemoryUnit(t.id, "turn", t.content, (t.id,), t.time))
            self._emit("ADD", t.id, after=t.content, cause="turn", source_ids=(t.id,), time=t.time)

    def _answer(self, question, *, now):
        steps = []
        with self.step(steps, "retrieve", "the last bucket") as s:
            s.hits = [u.hit(1.0) for u in self.units_[-self.size:]]
        with self.step(steps, "answer", "answer") as s:
            text = shared_answer(self, "\n".join(h.text for h in steps[0].hits), question, now)
            s.data["answer"] = text
        return Answer(question, text, tuple(steps), tuple(steps[0].hits))

    def _units(self):
        return [u.row() for u in self.units_]

    def structures(self):
        return {"buckets": [[u.id for u in self.units_[i:i + self.size]] for i in range(0, len(self.units_), 4)]}


def _count(c, rows, traces, memories, params):
    c.put("buckets", sum(len(m.structures.get("buckets", [])) for m in memories.values()), "structures.json")


def _raising_count(c, rows, traces, memories, params):
    c.put("buckets", 1, "structures.json")
    return 1 / 0  # a plugin's bug


def test_the_correct_plugin_passes():
    check_method(type("BucketsCensus", (Buckets,), {"name": "buckets_census",
                                                   "census": CensusSpec(_count, headline=(("buckets", "buckets"),))}))
    check_method(Buckets)


def _broken_profile_table():
    class Profiled(Buckets):
        name = "profiled"
        profiles = {"paper": {"size": 8}, "small": {}}  # small gives no value for size
        profile_notes = {"size": "smaller buckets for a small model"}

        def __init__(self, *, llm=None, size: int = PROFILE, answer_prompt: str = "native", profile: str = "auto"):
            self.llm, self.size, self.answer_prompt, self.profile = llm, size, answer_prompt, profile
            self._apply_profile(profile, llm)

    return Profiled


class NoAnswerPrompt(Buckets):
    name = "no_answer_prompt"

    def __init__(self, *, llm=None, size: int = 4):
        self.llm, self.size, self.answer_prompt = llm, size, "native"


class Accumulates(Buckets):
    name = "accumulates"

    def _reset(self):
        self.units_ = getattr(self, "units_", [])  # forgets to clear: a second ingest doubles the memory


BROKEN = {
    "structures() with a numpy array": (
        type("NumpyStructures", (Buckets,), {"name": "numpy_structures",
                                             "structures": lambda self: {"centroids": np.zeros((2, 3))}}),
        "check_structures_json", ["structures()['centroids']", "numpy.ndarray", ".tolist()"]),
    "a census that raises": (
        type("RaisingCensus", (Buckets,), {"name": "raising_census", "census": CensusSpec(_raising_count)}),
        "check_census_runs", ["RaisingCensus.census.count raised ZeroDivisionError", "counts.lack"]),
    "a headline naming no count": (
        type("BadHeadline", (Buckets,), {"name": "bad_headline",
                                         "census": CensusSpec(_count, headline=(("bukets", "buckets"),))}),
        "check_census_runs", ["BadHeadline.census.headline names ['bukets']", "name a count it puts"]),
    "an unknown card kind": (
        type("UnknownCard", (Buckets,), {"name": "unknown_card", "step_cards": {"answer": "bucket_card"}}),
        "check_declarations", ["UnknownCard.step_cards names unknown card kind(s) {'answer': 'bucket_card'}",
                               "CARD_KINDS"]),
    "an unknown structure view": (
        type("UnknownView", (Buckets,), {"name": "unknown_view", "structure_view": "bucket_view"}),
        "check_declarations", ["UnknownView.structure_view = 'bucket_view' is no structure view kind",
                               "or None for the generic view"]),
    "an unknown gallery id": (
        type("UnknownGallery", (Buckets,), {"name": "unknown_gallery", "how_it_works": HowItWorks(
            "Turns go into buckets. The last bucket answers.", (Phase("build", (("bucket", "four turns"),)),),
            gallery="gallery-buckets", right_outcome="the bucket holds the answer")}),
        "check_declarations", ["UnknownGallery.how_it_works.gallery = 'gallery-buckets' is no conversation of "
                               "--data gallery", "gallery-recmem"]),
    "no answer_prompt parameter": (
        NoAnswerPrompt, "check_declarations", ["NoAnswerPrompt.__init__ takes no answer_prompt, so --fair cannot "
                                               "run it", "shared_answer"]),
    "a profile table missing a parameter": (
        _broken_profile_table(), "check_declarations", ["Profiled.profiles['small'] must give exactly the PROFILE "
                                                        "parameters ['size']; missing ['size']"]),
    "a second ingest that accumulates": (
        Accumulates, "check_reingest_resets_state", ["Accumulates: a second ingest holds", "_reset must clear"]),
    "a prompt module that does not import": (
        type("BadPrompts", (Buckets,), {"name": "bad_prompts", "prompt_modules": ("buckets.prompts",)}),
        "check_declarations", ["BadPrompts.prompt_modules names 'buckets.prompts'", "relative to workbench.methods"]),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_broken_plugin_fails_with_one_named_line(case):
    cls, check, words = BROKEN[case]
    if "structure view" in case or "card kind" in case:
        cards, views = view_vocabulary()
        if (cards if "card" in case else views) is None:
            pytest.skip("the views are not installed here: nothing to check kinds against")
    with pytest.raises(ContractError) as err:
        check_method(cls)
    failures = err.value.failures
    assert [f[0] for f in failures] == [check], (case, failures)
    what = failures[0][2]
    assert "\n" not in what and what.strip() not in ("AssertionError", "") and what.strip() == what, what
    for w in words:
        assert w in what, (case, w, what)


def test_a_class_that_cannot_be_built_is_reported_once():
    """A bad profile table used to fail every check with the same TypeError (14 lines); now the declarations
    name it once and the checks that need an instance are listed as not run."""
    with pytest.raises(ContractError) as err:
        check_method(_broken_profile_table())
    assert len(err.value.failures) == 1 and len(err.value.not_run) == 15
    assert str(err.value).count("profiles['small']") == 1


def test_a_construct_failure_without_a_declared_cause_is_one_line():
    class Crashes(Buckets):
        name = "crashes"

        def __init__(self, *, llm=None, size: int = 4, answer_prompt: str = "native"):
            raise RuntimeError("no GPU here")

    with pytest.raises(ContractError) as err:
        check_method(Crashes)
    names = [f[0] for f in err.value.failures]
    assert names.count("check_construct") == 1 and len(names) <= 2, names
    construct = next(f for f in err.value.failures if f[0] == "check_construct")[2]
    assert "RuntimeError: no GPU here" in construct and "test_check_method_complete.py:" in construct


def test_view_vocabulary_is_read_without_importing_panel():
    import subprocess
    import sys

    code = ("import sys; from workbench.testing.check_method import view_vocabulary; c, v = view_vocabulary(); "
            "assert 'panel' not in sys.modules and 'widgets' not in sys.modules, sorted(m for m in sys.modules "
            "if m.startswith(('panel', 'widgets'))); print(sorted(c)[:3], sorted(v)[:3], 'evidence_gaps' in c, "
            "'clusters' in v, 'fact_list' in v)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("True True True"), out.stdout


def test_a_census_that_raises_for_one_method_leaves_the_others_intact():
    """In-process census of a run holding two methods: one plugin's census raises (ZeroDivisionError, not one of
    the shapes the readers foresaw), the other's counts are all there and the problem names the plugin."""
    from workbench.eval.mechanisms import census
    from workbench.methods import REGISTRY, register

    good = type("GoodCensus", (Buckets,), {"name": "good_census", "census": CensusSpec(_count)})
    bad = type("BadCensus", (Buckets,), {"name": "bad_census", "census": CensusSpec(_raising_count)})
    register(good)
    register(bad)
    try:
        rows = [{"method": m, "qa_id": "q1", "conv_id": "c1", "params": {}, "answer": {"steps": [], "text": "x"}}
                for m in ("good_census", "bad_census")]
        memories = {m: {"c1": {"events": [], "structures": {"buckets": [["t1"], ["t2"]]}}}
                    for m in ("good_census", "bad_census")}
        result = census(rows, memories=memories)
    finally:
        REGISTRY.unregister("good_census")
        REGISTRY.unregister("bad_census")
    assert result["methods"]["good_census"]["counts"]["buckets"] == 2
    assert "buckets" not in result["methods"]["bad_census"]["counts"]
    assert result["methods"]["bad_census"]["counts"]["questions"] == 1  # the generic counts stay
    assert any(p.startswith("bad_census:") and "ZeroDivisionError" in p for p in result["problems"])
