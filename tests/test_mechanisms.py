"""The mechanism census (``workbench.eval.mechanisms``): counts read back from a run directory.

A tiny run is built with scripted replies chosen so that every count is known in advance (an AMA
Refresher update at ingestion, a Retry and a Refresh verdict at question time; MemR3 gaps opened and
closed and a cassette miss on its answer call; RecMem firings, a merge and refinements), saved the
way ``workbench eval --save-memories`` saves it, and counted from the files alone. Then the same run
with damaged files, the CLI, the report section, the honest ``errors`` column, and the app's line.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from workbench.data import Dataset
from workbench.embed import HashEmbedder
from workbench.eval import evaluate
from workbench.eval.mechanisms import (FILE, census, census_markdown, census_text, headline, read_census,
                                       summary_line, write_census)
from workbench.eval.report import failure_counts, load_results, report_markdown, row_failed, summary_table
from workbench.llm import ScriptedLLM
from workbench.llm.errors import CacheMiss
from workbench.methods import AMA, MemR3, NaiveRAG, RecMem

QUESTIONS = ["tiny-1/q0", "tiny-1/q2"]


# -- scripted replies -----------------------------------------------------------------------------------
def _line(messages, marker: str) -> str:
    return next(ln for ln in messages[0]["content"].splitlines() if ln.startswith(marker))


def _ids_with(messages, word: str) -> list[str]:
    return [m.group(1) for ln in messages[0]["content"].splitlines()
            if word in ln and (m := re.match(r"\[([^\]]+)\]", ln))]


def ama_llm() -> ScriptedLLM:
    """Ingestion: the Judge says Refresh only on "moved to Geneva last week" (conflict: the Lyon
    entries) and the Refresher updates fact:3 -> one UPDATE. Questions: Retry then Pass on the first,
    Refresh on the second (refresh_on_query is off, so nothing is edited at question time)."""
    facts = {"D1:6": ["Noor lives in Lyon"], "D2:1": ["Noor moved to Geneva"]}

    def construct(messages):
        tid = re.match(r"THE TURN \(([^,]+),", _line(messages, "THE TURN (")).group(1)
        return {"facts": [{"content": f, "pattern": "S-V-O"} for f in facts.get(tid, [])], "related_id": [],
                "timestamp": "empty"}

    def judge_ingest(messages):
        if "Geneva last week" in _line(messages, "NEW TURN"):
            return {"Action": "Refresh", "reason": "moved", "confidence": 0.9,
                    "conflict_ids": _ids_with(messages, "Lyon")}
        return {"Action": "Pass", "reason": "consistent", "confidence": 0.9, "conflict_ids": []}

    def plan(messages):
        q = _line(messages, "Input:")[len("Input: "):]
        return {"rewrite_query": q, "intent_vector": {"b_fine": 0, "b_abs": 0, "b_event": 0, "b_atomic": 1},
                "memory_type": "fact", "K_dyn": 3}

    def verdict(action, conflict=()):
        return {"Action": action, "reason": action, "confidence": 0.8, "relevant_ids": [],
                "conflict_ids": list(conflict)}

    return ScriptedLLM({
        "ama.construct": construct, "ama.judge_ingest": judge_ingest,
        "ama.refresh": {"Action": "Update", "memory_type": "fact", "timestamp": "empty", "reason": "Noor moved",
                        "datalist": [{"id": "fact:0", "new_content": "Noor lives in Geneva"}]},
        "ama.trigger": {"T_t": 0, "reason": "same topic", "confidence": 0.7, "topic_summary": ""},
        "ama.episode": {"title": "Catching up", "content": "Sam and Noor caught up.", "timestamp": "empty"},
        "ama.retrieve": plan,
        "ama.judge": [verdict("Retry"), verdict("Pass"), verdict("Refresh", ["fact:1"])],
        "ama.answer": "Geneva"}, default="auto")


def router(decision, evidence=(), gaps=(), **payload):
    return {"evidence": list(evidence), "gaps": list(gaps), "decision": decision, **payload}


def memr3_llm() -> ScriptedLLM:
    """First question: retrieve opening two gaps, then answer with one closed (opened 2, closed 1).
    Second question: answer at once with no gap; its answer call is a cassette miss (fallback)."""
    return ScriptedLLM({
        "memr3.router": [router("retrieve", gaps=["Noor's city", "where the lessons are"], retrieval_query="city"),
                         router("answer", evidence=["Noor moved to Geneva"], gaps=["where the lessons are"],
                                detailed_answer="Geneva"),
                         router("answer", evidence=["Noor lives in Geneva"], detailed_answer="Geneva")],
        "memr3.answer": ["Geneva", CacheMiss("no recorded reply for role='memr3.answer' (scripted)")]},
        default="auto")


def recmem_llm() -> ScriptedLLM:
    """With theta_sim = theta_merge = -1 and theta_count = 2 over tiny-1's six exchanges: u0 buffered,
    u1 fires (episode one), u2 merged into it (the LLM says yes once), u3 buffered, u4 fires (episode
    two), u5 buffered: 5 gate checks, 2 firings, 4 merge checks, 1 merge, 3 refinements."""
    return ScriptedLLM({
        "recmem.consolidate": [{"episodes": ["Episode one"]}, {"episodes": ["Episode two"]}],
        "recmem.merge": [{"should_merge": "yes", "merged_memory": "Episode one, continued"},
                         {"should_merge": "no", "merged_memory": ""}],
        "recmem.refine_merge": {"facts": ["Fact after the merge"]},
        "recmem.refine": [{"facts": ["Fact A"]}, {"facts": ["Fact B"]}],
        "recmem.answer": "Geneva"}, default="auto")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, tiny_conv) -> Path:
    out = tmp_path_factory.mktemp("census") / "run"
    data = Dataset("tiny", (tiny_conv,))
    emb = HashEmbedder(dim=128)
    mllm = memr3_llm()
    methods = [AMA(llm=ama_llm(), embedder=HashEmbedder(dim=256)),
               MemR3(llm=mllm, embedder=emb, backend=NaiveRAG(llm=mllm, embedder=emb, chunking="turn")),
               RecMem(llm=recmem_llm(), embedder=emb, theta_sim=-1.0, theta_count=2, theta_merge=-1.0)]
    for m in methods:
        evaluate(m, data, store=out / "results.jsonl", questions=QUESTIONS, save_memories_dir=out, progress=False)
    return out


@pytest.fixture(scope="module")
def counted(run_dir) -> dict:
    return census(run_dir)


def counts(value, method) -> dict:
    return value["methods"][method]["counts"]


# -- known counts ---------------------------------------------------------------------------------------
def test_ama_counts(counted):
    c = counts(counted, "ama")
    assert c["updates_at_ingestion"] == 1 and c["deletes_at_ingestion"] == 0
    # every turn after the first has stored neighbours to check; only D2:1 is a conflict
    assert c["ingestion_checks"] == 11 and c["ingestion_verdicts"] == {"Pass": 10, "Refresh": 1}
    assert c["ingestion_refresh_actions"] == {"Update": 1}
    assert c["query_verdicts"] == {"Pass": 1, "Refresh": 1, "Retry": 1}
    assert c["retry_verdicts"] == 1 and c["refresh_verdicts"] == 1 and c["retry_expansions"] == 1
    assert c["updates_at_question"] == 0 and c["deletes_at_question"] == 0
    why = counted["methods"]["ama"]["why_zero"]
    assert "refresh_on_query is off" in why["updates_at_question"] and "Refresh 1" in why["updates_at_question"]
    assert "deletes_at_ingestion" in why and "Pass 10" in why["deletes_at_ingestion"]
    assert "updates_at_ingestion" not in why  # it fired: no excuse attached
    assert c["questions"] == 2 and c["row_errors"] == 0 and c["fallback_answers"] == 0


def test_memr3_counts(counted):
    c = counts(counted, "memr3")
    assert c["router_steps"] == 3 and c["gaps_opened"] == 2 and c["gaps_closed"] == 1
    assert c["questions_with_gaps"] == 1 and c["retrievals"] == 1
    assert c["router_choice"] == 3 and c["router_budget"] == 0 and c["router_fallback"] == 0
    assert c["router_actions"] == {"choice": {"answer": 2, "retrieve": 1}}
    # the second answer call was a cassette miss: the draft stood in
    assert c["cassette_misses"] == 1 and c["llm_errors"] == 1 and c["fallback_answers"] == 1
    assert c["row_errors"] == 0 and c["flagged_rows"] == 1


def test_recmem_counts(counted):
    c = counts(counted, "recmem")
    assert c["trigger_checks"] == 5 and c["trigger_firings"] == 2
    assert c["trigger_outcomes"] == {"buffered": 3, "merged": 1, "triggered": 2}
    assert c["consolidations"] == 2 and c["episodes_produced"] == 2 and c["consolidation_failures"] == 0
    assert c["merge_checks"] == 4 and c["merges"] == 1
    assert c["refinements"] == 3 and c["refined_facts"] == 3 and c["refinement_failures"] == 0
    assert c["episodes_repeated"] == 0 and c["refinements_of_repeats"] == 0


def test_recmem_episodes_a_reply_repeats_are_counted_and_listed_as_a_problem(tmp_path, tiny_conv):
    """A small model's consolidation reply can loop on one paragraph (the 0.5B on LoCoMo conv-30 did so in
    19 of 26 replies): RecMem stores each copy and refines it again, as its code does; the census counts
    the copies (same cluster, same text up to case and spacing) and the refinements spent on them."""
    replies = iter([["Episode one", "episode  ONE", "Episode two"]])
    llm = ScriptedLLM({"recmem.consolidate": lambda messages: {"episodes": next(replies, ["Episode one"])},
                       "recmem.merge": {"should_merge": "no", "merged_memory": ""},
                       "recmem.refine": {"facts": ["Fact A"]}, "recmem.answer": "Geneva"}, default="auto")
    method = RecMem(llm=llm, embedder=HashEmbedder(dim=128), theta_sim=-1.0, theta_count=2, theta_merge=1.0)
    out = tmp_path / "run"
    evaluate(method, Dataset("tiny", (tiny_conv,)), store=out / "results.jsonl", questions=QUESTIONS[:1],
             save_memories_dir=out, progress=False)
    value = census(out)
    c = counts(value, "recmem")
    # u1, u3 and u5 fire; the later "Episode one" replies belong to other clusters: not repeats
    assert c["row_errors"] == 0 and c["consolidations"] == 3 and c["episodes_produced"] == 5
    assert c["episodes_repeated"] == 1 and c["refinements"] == 5 and c["refinements_of_repeats"] == 1
    problems = {f["name"]: f["value"] for f in headline(value)[0]["failures"]}
    assert problems == {"episodes_repeated": 1, "refinements_of_repeats": 1}
    assert "episodes repeating another of the same reply word for word: 1" in summary_line(value)


def test_census_is_rows_plus_memories_and_needs_no_llm(run_dir, counted):
    """The same counts from rows and memories handed over in memory; without memories the
    memory-based counts are missing with a reason, never zero."""
    from workbench.eval.store import ResultsStore
    from workbench.rundir import RunDir

    rd = RunDir(run_dir)
    rows = list(ResultsStore(run_dir / "results.jsonl"))
    mems = {m: {"tiny-1": {"events": rd.events(m, "tiny-1"), "structures": rd.structures(m, "tiny-1")}}
            for m in rd.methods()}
    again = census(rows, memories=mems, conversations={"tiny-1": rd.conversation("tiny-1")})
    assert again["methods"] == counted["methods"]
    bare = census(rows)
    assert not any("decisions" in e for e in bare["methods"].values())  # no questions given: nothing checked
    assert bare["methods"]["recmem"]["counts"]["trigger_firings"] is None
    assert "--save-memories" in bare["methods"]["recmem"]["missing"]["trigger_firings"]
    assert bare["methods"]["ama"]["counts"]["retry_verdicts"] == 1  # traces alone still count


def test_zero_mechanisms_say_why_from_the_run(tmp_path, tiny_conv):
    """A RecMem whose trigger cannot fire (theta_count above the number of units): 0 with the
    highest count measured; consolidations and refinements 0 with the reason read from the run."""
    llm = ScriptedLLM({"recmem.answer": "Geneva"}, default="auto")
    evaluate(RecMem(llm=llm, embedder=HashEmbedder(dim=128), theta_count=50), Dataset("tiny", (tiny_conv,)),
             store=tmp_path / "results.jsonl", questions=QUESTIONS[:1], save_memories_dir=tmp_path, progress=False)
    entry = census(tmp_path)["methods"]["recmem"]
    assert entry["counts"]["trigger_firings"] == 0 and entry["counts"]["consolidations"] == 0
    assert re.search(r"highest recurrence count in 6 gate checks was \d+ \(theta_count 50", entry["why_zero"][
        "trigger_firings"])
    assert entry["why_zero"]["consolidations"] == "the trigger never fired"
    line = summary_line(census(tmp_path))
    assert "0 trigger firings (not fired)" in line



def memr3_entry(run, llm, conv) -> dict:
    """MemR3 over a naive backend, scripted by ``llm``, on the first question: its census entry."""
    emb = HashEmbedder(dim=128)
    evaluate(MemR3(llm=llm, embedder=emb, backend=NaiveRAG(llm=llm, embedder=emb, chunking="turn")),
             Dataset("tiny", (conv,)), store=run / "results.jsonl", questions=QUESTIONS[:1], progress=False)
    return census(run)["methods"]["memr3"]


def test_memr3_zero_gaps_say_how_often_the_router_answered_at_once(tmp_path, tiny_conv):
    """No gap written: the reason counts the questions whose first router step chose to answer (a guard's
    answer is not counted), read from the run."""
    emb = HashEmbedder(dim=128)
    llm = ScriptedLLM({"memr3.router": [router("answer", evidence=["Noor lives in Geneva"], detailed_answer="Geneva"),
                                        router("reflect"), router("answer", detailed_answer="Geneva")],
                       "memr3.answer": "Geneva"}, default="auto")
    evaluate(MemR3(llm=llm, embedder=emb, backend=NaiveRAG(llm=llm, embedder=emb, chunking="turn")),
             Dataset("tiny", (tiny_conv,)), store=tmp_path / "results.jsonl", questions=QUESTIONS, progress=False)
    entry = census(tmp_path)["methods"]["memr3"]
    assert entry["counts"]["gaps_opened"] == 0 and entry["counts"]["router_steps"] >= 3
    assert re.fullmatch(r"the router wrote no gap in any of its \d+ steps; in 1 of 2 questions it chose to answer "
                        r"at its first step, so it never had to say what was missing", entry["why_zero"]["gaps_opened"])
    assert entry["counts"]["gaps_only_in_reasoning"] == 0
    # a router that names a gap in its reasoning but returns an empty list: counted apart and quoted
    said = "The gaps are that it never says when Noor moved."
    llm = ScriptedLLM({"memr3.router": [router("reflect", reasoning=f"Noor lives in Geneva. {said}"),
                                        router("answer", detailed_answer="Geneva")],
                       "memr3.answer": "Geneva"}, default="auto")
    entry = memr3_entry(tmp_path / "prose", llm, tiny_conv)
    assert entry["counts"]["gaps_opened"] == 0 and entry["counts"]["gaps_only_in_reasoning"] == 1
    assert f"; in 1 of them its reasoning names one all the same (“{said}”)" in entry["why_zero"]["gaps_opened"]


def test_memr3_placeholders_and_schema_words_in_the_gaps_list_are_not_gaps(tmp_path, tiny_conv):
    """Seen on whole LoCoMo conversations with the 0.5B: "No gaps noted" eight times in one step, and the
    schema's own words ("reasoning", "retrieve") in the gaps list. They are counted apart, not as gaps;
    a real gap beside them still counts, once per step however often it is repeated."""
    emb = HashEmbedder(dim=128)
    junk = ["No gaps noted"] * 3 + ["reasoning", "Retrieve", " none. ", ""]
    llm = ScriptedLLM({"memr3.router": [router("retrieve", gaps=junk + ["Noor's city", "Noor's city"],
                                               retrieval_query="city"),
                                        router("answer", evidence=["Noor moved to Geneva"], gaps=junk,
                                               detailed_answer="Geneva")],
                       "memr3.answer": "Geneva"}, default="auto")
    evaluate(MemR3(llm=llm, embedder=emb, backend=NaiveRAG(llm=llm, embedder=emb, chunking="turn")),
             Dataset("tiny", (tiny_conv,)), store=tmp_path / "results.jsonl", questions=QUESTIONS[:1],
             progress=False)
    counts = census(tmp_path)["methods"]["memr3"]["counts"]
    assert counts["gaps_opened"] == 1 and counts["gaps_closed"] == 1 and counts["questions_with_gaps"] == 1
    assert counts["gap_entries_not_gaps"] == 10  # 5 a step: the method itself drops the blank and " none. "
    only_junk = ScriptedLLM({"memr3.router": [router("answer", gaps=junk, detailed_answer="Geneva")],
                             "memr3.answer": "Geneva"}, default="auto")
    entry = memr3_entry(tmp_path / "junk", only_junk, tiny_conv)
    assert entry["counts"]["gaps_opened"] == 0 and entry["counts"]["gap_entries_not_gaps"] == 5
    assert entry["why_zero"]["gaps_opened"].startswith(
        "the router wrote no gap in any of its 1 steps (5 entries of its gaps lists were placeholders or the schema's")


# -- damaged runs -----------------------------------------------------------------------------------------
def test_damaged_run_is_reported_not_raised(run_dir, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(run_dir, bad)
    rows = (bad / "results.jsonl").read_text().splitlines()
    first = json.loads(rows[0])
    first["answer"] = "not a trace"  # a row whose answer is a string
    first["qa_id"] = "tiny-1/odd"
    (bad / "results.jsonl").write_text("\n".join(rows + ["{not json", json.dumps(first)]) + "\n")
    (bad / "memories" / "recmem" / "tiny-1" / "structures.json").write_text('{"trigger_log": [1, ')
    with open(bad / "memories" / "ama" / "tiny-1" / "events.jsonl", "a") as f:
        f.write('["a list, not an event"]\n{"kind": 5}\n')
    (bad / "manifest.json").write_text("[]")
    value = census(bad)
    problems = "\n".join(value["problems"])
    assert "results.jsonl:" in problems and "invalid JSON" in problems
    assert "field 'answer' is a str" in problems
    assert "structures.json" in problems and "events.jsonl" in problems and "manifest.json" in problems
    rec = value["methods"]["recmem"]
    assert rec["counts"]["trigger_firings"] is None
    assert "structures.json is damaged" in rec["missing"]["trigger_firings"]
    assert rec["counts"]["merges"] == 1  # events still read
    ama = value["methods"]["ama"]["counts"]
    assert ama["updates_at_ingestion"] == 1 and ama["questions"] == 3 and ama["answers_with_trace"] == 2
    text = census_text(value)  # rendering a damaged census works too
    assert "problem:" in text and "missing" in text


def test_read_census_refuses_a_foreign_file(tmp_path):
    (tmp_path / FILE).write_text('{"methods": []}')
    from workbench.jsonl import DamagedFile

    with pytest.raises(DamagedFile, match="mechanisms.json"):
        read_census(tmp_path)
    (tmp_path / "empty").mkdir()
    assert read_census(tmp_path / "empty") is None
    with pytest.raises(FileNotFoundError):
        census(tmp_path / "nowhere")


# -- writing, CLI, report ---------------------------------------------------------------------------------
def test_cli_writes_and_prints(run_dir, tmp_path, capsys):
    from workbench.cli import main

    run = tmp_path / "cli"
    shutil.copytree(run_dir, run)
    (run / FILE).unlink(missing_ok=True)
    assert main(["mechanisms", str(run)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"memr3\s+gaps_opened\s+2", out) and re.search(r"recmem\s+trigger_firings\s+2", out)
    assert read_census(run)["methods"] == census(run)["methods"]
    assert main(["mechanisms", str(run), "--format", "json", "--no-write"]) == 0
    assert json.loads(capsys.readouterr().out)["schema"] == "mechanisms/1"


def test_report_section_and_honest_errors(run_dir):
    value = census(run_dir)
    df = load_results([run_dir / "results.jsonl"])
    text = report_markdown(df, mechanisms=value)
    assert "## Mechanisms fired" in text and "gaps_opened" in text and "not fired" in text
    assert "## Mechanisms fired" not in report_markdown(df)
    table = summary_table(df).set_index(["method", "category"])
    # the MemR3 answer that came from its draft after a cassette miss is an error, not a clean row
    assert table.loc[("memr3", "overall"), "errors"] == 1 and table.loc[("memr3", "overall"), "flagged"] == 1
    assert table.loc[("ama", "overall"), "errors"] == 0
    fc = failure_counts(load_rows_of(run_dir)).set_index("method")
    assert fc.loc["memr3", "errors"] == 1 and fc.loc["memr3", "raised"] == 0
    assert census_markdown(value).count("| memr3") >= 10


def load_rows_of(run):
    from workbench.eval.store import load_rows

    return load_rows([run / "results.jsonl"])


def test_row_failed_rule():
    assert row_failed({"error": "ValueError: x"})
    assert row_failed({"error": None, "failures": [{"kind": "llm_error", "error": "CacheMiss: ..."}]})
    assert not row_failed({"error": None, "failures": [{"kind": "json_retry"}, {"kind": "construction"}]})
    assert not row_failed({"error": float("nan"), "failures": float("nan")})  # a frame's empty cells


def test_eval_command_writes_the_census(tmp_path):
    """``workbench eval`` replaying a cassette that lacks every call of this data: each question is a
    failed row, counted as such in the census it writes beside the results."""
    from workbench.cli import main
    from workbench.demo import DEMO

    out = tmp_path / "eval"
    assert main(["eval", "--method", "naive_rag", "--data", "tiny", "--questions", "2",
                 "--llm", f"replay:{DEMO.cassette}",
                 "--embedder", "hash", "--out", str(out), "--no-progress", "--save-memories"]) == 0
    c = read_census(out)["methods"]["naive_rag"]["counts"]
    assert c["questions"] == 2 and c["row_errors"] == 2 and c["answers_with_trace"] == 0


def test_headline_marks_zeros_and_missing(counted):
    h = {x["method"]: x for x in headline(counted)}
    ama = {i["name"]: i for i in h["ama"]["items"]}
    assert ama["updates_at_ingestion"]["fired"] is True and ama["deletes_at_ingestion"]["fired"] is False
    assert ama["deletes_at_ingestion"]["note"]  # the why-zero text travels with it
    memr3_failures = {f["name"]: f["value"] for f in h["memr3"]["failures"]}
    assert memr3_failures == {"fallback_answers": 1, "cassette_misses": 1, "llm_errors": 1}


def test_headline_labels_say_when_the_count_happened(counted):
    """AMA counts the same verdicts at ingestion and at question time: "0 Refresh verdicts · not fired" read
    as a contradiction of "the ingestion Judge answered ... Refresh 9" beside it. Every AMA label names its
    phase; the other methods count each mechanism in one phase only."""
    h = {x["method"]: x for x in headline(counted)}
    labels = {i["name"]: i["label"] for i in h["ama"]["items"]}
    assert labels["retry_verdicts"] == "question-time Retry verdicts"
    assert labels["refresh_verdicts"] == "question-time Refresh verdicts"
    assert all("ingestion" in lbl or "question" in lbl for lbl in labels.values()), labels
    assert "question-time Refresh verdicts" in summary_line(counted)  # the demo's printed line too


def test_write_census_is_atomic_json(run_dir, tmp_path):
    run = tmp_path / "w"
    shutil.copytree(run_dir, run)
    path = write_census(run)
    assert path.name == FILE and json.loads(path.read_text())["methods"]["ama"]["counts"]["retry_verdicts"] == 1
    assert not list(run.glob(".mechanisms.json.*"))  # no temporary file left behind


# -- the committed demo replay ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """The whole demo, every method and question, replayed from the committed cassette (no model)."""
    from workbench.demo import DEMO, demo_embedder, run_demo

    if not DEMO.cassette.exists():
        pytest.skip("no demo cassette")
    try:
        demo_embedder()(["probe"])
    except (ImportError, FileNotFoundError, OSError) as exc:
        pytest.skip(f"the demo's MiniLM embedder is not installed ({exc})")
    out = tmp_path_factory.mktemp("demo") / "run"
    run_demo(out=out, serve=False, llm_mode="replay")
    return out


def test_demo_replay_census(demo_run):
    """Relations that hold for any recording of the demo (the numbers change when it is re-recorded):
    the file the demo wrote is the census of its run; every AMA ingestion check has a verdict; RecMem's
    gate outcomes partition its units, and every firing either consolidated or failed."""
    value = read_census(demo_run)
    assert value["methods"] == census(demo_run)["methods"]
    assert "## Mechanisms fired" in (demo_run / "report.md").read_text()
    ama = value["methods"]["ama"]
    c = ama["counts"]
    sessions = json.loads((demo_run / "conversations" / "sample-1.json").read_text())["sessions"]
    turns = sum(len(s["turns"]) for s in sessions)
    assert 0 < c["ingestion_checks"] == sum(c["ingestion_verdicts"].values()) < turns  # the first turn: nothing stored
    assert ("updates_at_ingestion" in ama["why_zero"]) == (c["updates_at_ingestion"] == 0)
    from workbench.demo import DEMO

    assert c["questions"] == len(DEMO.questions)
    r = value["methods"]["recmem"]["counts"]
    structures = json.loads((demo_run / "memories" / "recmem" / "sample-1" / "structures.json").read_text())
    outcomes = r["trigger_outcomes"]
    assert sum(outcomes.values()) == len(structures["units"])
    assert r["trigger_checks"] == len(structures["units"]) - outcomes.get("merged", 0)
    assert r["trigger_firings"] == outcomes.get("triggered", 0) + r["consolidation_failures"]
    assert r["consolidations"] == outcomes.get("triggered", 0)
    assert r["merges"] <= r["merge_checks"] and r["refinements"] >= r["consolidations"]


def test_every_papers_mechanism_fired_in_the_recorded_demo(demo_run):
    """Issue 20's floors, counted from the recorded model output of the committed demo: a Refresher edit
    in AMA, questions that went deep in HyMem, H-Mem parents that consolidate two or more children, a
    RecMem consolidation that produced episodes. MemR3's gaps are the documented exception: the 1.5B
    router never wrote one, and the census must then say why from the run (nothing is scripted)."""
    m = read_census(demo_run)["methods"]
    assert not any(v["counts"].get("cassette_misses") for v in m.values())  # all of it recorded output
    ama = m["ama"]["counts"]
    assert ama["updates_at_ingestion"] + ama["deletes_at_ingestion"] + ama["updates_at_question"] \
        + ama["deletes_at_question"] >= 1
    assert m["hymem"]["counts"]["deep_questions"] >= 1
    assert m["hmem"]["counts"]["multi_child_parents"] >= 3
    rec = m["recmem"]["counts"]
    assert rec["consolidations"] >= 1 and rec["episodes_produced"] >= 1
    memr3 = m["memr3"]
    if memr3["counts"]["gaps_opened"] >= 3:
        assert memr3["counts"]["gaps_closed"] >= 1
    else:  # the documented zero (README Status, notebook 05): the reason comes from the run itself
        assert memr3["counts"]["gaps_opened"] == 0
        assert memr3["why_zero"]["gaps_opened"].startswith("the router wrote no gap in any of its ")
    assert "ama[paper-judge]" in m  # the paper's Judge sits beside the probes in the same run


def test_an_unforeseen_value_drops_that_methods_mechanism_counts(run_dir, tmp_path):
    """A CONSOLIDATE event whose ``data.cluster`` is an object (no RecMem writes that): the RecMem
    mechanism counts are left out with the reason, its failure counts and the other methods stay."""
    run = tmp_path / "odd"
    shutil.copytree(run_dir, run)
    with open(run / "memories" / "recmem" / "tiny-1" / "events.jsonl", "a") as f:
        f.write(json.dumps({"kind": "CONSOLIDATE", "unit_id": "x", "data": {"cluster": {"not": "hashable"}}}) + "\n")
    value = census(run)
    rec = value["methods"]["recmem"]
    assert rec["counts"]["mechanisms"] is None and "TypeError" in rec["missing"]["mechanisms"]
    assert "trigger_firings" not in rec["counts"] and rec["counts"]["questions"] == 2
    assert value["methods"]["memr3"]["counts"]["gaps_opened"] == 2
    assert any(p.startswith("recmem: counting stopped") for p in value["problems"])


# -- the app ------------------------------------------------------------------------------------------------
def header_text(app) -> str:
    """The app's HTML panes and link-aware panes (the census block links each method to its page), joined."""
    from widgets.panel_parts import LinkHTML

    panel = app.__panel__()
    return "\n".join(str(p.object) for kind in (pytest.importorskip("panel").pane.HTML, LinkHTML)
                     for p in panel.select(kind))


def test_app_header_shows_the_census(run_dir, tmp_path):
    pytest.importorskip("panel")
    from widgets import app as appmod

    run_dir = shutil.copytree(run_dir, tmp_path / "app")
    a = appmod.build_app(run_dir)
    html = header_text(a)
    assert "Mechanisms fired" in html and "gaps opened" in html and "not fired" in html
    assert "computed from the run&#x27;s files" in html or "computed from the run's files" in html  # no file yet
    write_census(run_dir)
    a = appmod.build_app(run_dir)
    html = header_text(a)
    assert "(mechanisms.json)" in html and "1 cassette miss" in html  # one miss, singular


def test_census_html_escapes_what_the_run_holds(counted):
    pytest.importorskip("panel")
    from widgets.mechanisms_census import census_html

    value = json.loads(json.dumps(counted))
    value["methods"]["<script>alert(1)</script>"] = value["methods"]["memr3"]
    value["methods"]["memr3"]["why_zero"]["router_budget"] = '"><img src=x onerror=alert(2)>'
    value["problems"] = ["<b>bad</b> line"]
    html = census_html(value, "<i>src</i>")
    assert "<script>alert" not in html and "<img src=x" not in html and "<b>bad</b>" not in html
    assert "&lt;script&gt;" in html and "<i>src</i>" not in html


def test_a_missing_events_file_is_missing_not_zero(run_dir, tmp_path):
    run = shutil.copytree(run_dir, tmp_path / "noevents")
    (run / "memories" / "ama" / "tiny-1" / "events.jsonl").unlink()
    (run / "memories" / "recmem" / "tiny-1" / "events.jsonl").unlink()
    value = census(run)
    ama, rec = value["methods"]["ama"], value["methods"]["recmem"]
    assert ama["counts"]["updates_at_ingestion"] is None and "events.jsonl is missing" in ama["missing"][
        "updates_at_ingestion"]
    assert ama["counts"]["ingestion_checks"] == 11  # the structures are still there
    assert rec["counts"]["merges"] is None and rec["counts"]["consolidations"] is None
    assert rec["counts"]["trigger_firings"] == 2 and rec["counts"]["refinements"] == 3


def test_a_labelled_variant_sits_beside_its_method_and_is_counted_as_it(tmp_path, tiny_conv, run_dir, counted):
    """``ama[paper-judge]`` beside ``ama`` in one run directory (as the demo keeps AMA's two conflict checks):
    its own rows, memory folder and census entry, counted by AMA's rules, shown by AMA's structure card,
    and loadable by its name."""
    from workbench.methods import method_base
    from workbench.rundir import RunDir
    from widgets.app import STRUCTURE_VIEWS, RunStore, StructuresView

    out = tmp_path / "run"
    shutil.copytree(run_dir, out)
    data = Dataset("tiny", (tiny_conv,))
    variant = AMA(llm=ama_llm(), embedder=HashEmbedder(dim=256)).labelled("paper-judge")
    assert variant.name == "ama[paper-judge]" and variant.clone().name == variant.name  # the harness clones it
    assert method_base(variant.name) == "ama" and AMA.name == "ama"  # the class keeps its name
    evaluate(variant, data, store=out / "results.jsonl", questions=QUESTIONS, save_memories_dir=out, progress=False)
    value = census(out)
    assert set(value["methods"]) == set(counted["methods"]) | {"ama[paper-judge]"}
    assert counts(value, "ama[paper-judge]") == counts(counted, "ama")  # same replies: same counts, AMA's rules
    assert counts(value, "ama") == counts(counted, "ama")  # the original is not mixed with its variant
    shown = next(h for h in headline(value) if h["method"] == "ama[paper-judge]")
    assert "updates_at_ingestion" in {i["name"] for i in shown["items"]}  # the app header's AMA items
    loaded = RunDir(out).load_method("ama[paper-judge]", tiny_conv.id, llm=ama_llm(),
                                     embedder=HashEmbedder(dim=256), trust=True)
    original = RunDir(out).load_method("ama", tiny_conv.id, llm=ama_llm(), embedder=HashEmbedder(dim=256), trust=True)
    assert loaded.name == "ama[paper-judge]" and original.name == "ama"
    assert loaded.memories()["text"].tolist() == original.memories()["text"].tolist()  # same replies, same memory
    store = RunStore(out)
    assert "ama[paper-judge]" in store.methods and "stores_and_log" in STRUCTURE_VIEWS
    section = StructuresView(store).section("ama[paper-judge]")
    assert "no structure view" not in str(section[0].object)
    from widgets.event_timeline import ordered_methods

    assert ordered_methods(["memr3", "ama[paper-judge]", "ama"]) == ["ama", "ama[paper-judge]", "memr3"]  # lanes
    with pytest.raises(ValueError, match="variant label"):
        AMA(llm=ama_llm(), embedder=HashEmbedder(dim=256)).labelled("Paper Judge!")


def test_the_demo_census_says_which_firings_were_right(demo_run):
    """Checked against the planted phenomena of sample-1 (issue: mechanism truth), from the replayed demo:
    AMA's seven ingestion edits all corrupted a fact and the greyhound's renaming, two other updates and the
    "please forget" turn were missed; HyMem went deep only on questions that need one turn; H-Mem's
    multi-child parents all mix topics; MemR3 wrote no gap: over five chunks its first batch held the multi-hop
    question's turns, over one (memr3[one-chunk]) it lacked D4:3 and no gap asked for it (missed)."""
    m = read_census(demo_run)["methods"]
    ama = m["ama"]["checked"]
    assert (ama["edits_right"], ama["edits_wrong"]) == (0, m["ama"]["counts"]["updates_at_ingestion"]) == (0, 7)
    assert (ama["missed_updates"], ama["missed_forgets"]) == (3, 1)
    assert {x["planted"] for x in ama["missed"]} == {"greyhound-name", "priya-city", "priya-job", "half-marathon"}
    assert any(x["turn"] == "D4:7" and "May 2023" in x["after"] for x in ama["wrong"])  # the half marathon's date
    assert m["ama[paper-judge]"]["checked"]["edits_wrong"] == 0
    hy = m["hymem"]["checked"]
    assert hy["deep_on_multi_hop"] + hy["deep_elsewhere"] == m["hymem"]["counts"]["deep_questions"]
    assert (hy["deep_on_multi_hop"], hy["multi_hop_not_escalated"]) == (0, 1)
    hm = m["hmem"]["checked"]
    assert hm["coherent_parents"] + hm["mixed_parents"] == m["hmem"]["counts"]["multi_child_parents"]
    assert hm["coherent_parents"] == 0
    rec = m["recmem"]["checked"]
    assert rec["on_planted_recurrence"] + rec["mixed_planted_recurrence"] + rec["off_planted_recurrence"] \
        + rec["repeated_episodes"] == m["recmem"]["counts"]["episodes_produced"]
    assert rec["repeated_episodes"] == m["recmem"]["counts"]["episodes_repeated"]  # a copy is judged, as counted
    every = rec["on"] + rec["mixed"] + rec["off"]  # the share is over the exchanges each episode was made of
    assert all(x["parts"] < x["turns"] for x in every), every
    r3, one = m["memr3"]["checked"], m["memr3[one-chunk]"]["checked"]  # the multi-hop question sample-1/q25
    assert r3["multi_hop_complete_at_first"] == 1 and r3["gap_cycles_right"] == r3["multi_hop_gaps_missed"] == 0
    assert one["multi_hop_gaps_missed"] == 1 and one["missed"][0]["lacking"] == ["D4:3"]  # no gap asked for it
    assert "0 of 7 edits match a planted update" in summary_line(read_census(demo_run))


def test_a_run_without_annotations_is_not_checkable_rather_than_silent():
    rows = [{"method": "ama", "qa_id": "conv-30/q0", "conv_id": "conv-30", "answer": None}]
    mems = {"ama": {"conv-30": {"events": [{"kind": "UPDATE", "cause": "D1:2", "before": "a", "after": "b"}],
                                "structures": {}}}}
    checked = census(rows, memories=mems)["methods"]["ama"]["checked"]
    assert checked["checkable"] is False and "for conv-30" in checked["why"]


def test_the_not_checkable_reason_names_the_annotated_conversations_it_read():
    from workbench.eval.annotations import ConversationAnnotations, not_checkable

    ann = {"conv-99": ConversationAnnotations("conv-99", origin="annotated"),
           "s1": ConversationAnnotations("s1", origin="planted")}
    why = not_checkable(["conv-7"], ann)["why"]
    assert "for conv-7" in why and "annotated: conv-99" in why and "planted: s1" in why
    assert "could not be read" in not_checkable(["conv-7"])["why"]
    assert "no conversation carries any" in not_checkable(["conv-7"], {})["why"]


def test_locomo_conversations_26_and_41_carry_annotated_phenomena_and_conv_30_none():
    """Real-scale runs are checkable where a LoCoMo conversation is annotated (read, not planted: the line says
    so); conv-30 stays unannotated, kept apart for the verdicts."""
    from workbench.eval.annotations import (LOCOMO_ANNOTATIONS, check_run, checked_text, checked_verdict,
                                            load_annotations, shipped_annotations)

    ann = shipped_annotations()
    assert ann["conv-26"].origin == ann["conv-41"].origin == "annotated" and "conv-30" not in ann
    assert ann["sample-1"].origin == "planted"
    assert load_annotations(LOCOMO_ANNOTATIONS).keys() == {"conv-26", "conv-41"}
    multi = [m["qa_id"] for m in ann["conv-26"].multi_hop]
    single = "conv-26/q3"  # one turn answers it: the annotators dropped it from the dataset's multi-hop set
    assert len(multi) >= 20 and single not in multi
    conv_of = {q: "conv-26" for q in (*multi[:3], single)}
    deep = {multi[0]: True, multi[1]: True, multi[2]: False, single: True}
    checked = check_run("escalations", deep, ann, convs={"conv-26"}, conv_of=conv_of, entry={})
    assert (checked["deep_on_multi_hop"], checked["deep_elsewhere"], checked["multi_hop_not_escalated"]) == (2, 1, 1)
    assert checked["phenomena"] == "annotated" and "annotated multi-hop questions" in checked_text(checked)
    assert checked_verdict(checked)[0] == "partly right"
    episodes = {"conv-26": [{"id": "e1", "source_ids": list(ann["conv-26"].recurring[0]["turns"][:1])
                             + [t for t in ann["conv-26"].recurring[0]["turns"] if not t.startswith(
                                 ann["conv-26"].recurring[0]["turns"][0].split(":")[0] + ":")][:1]}]}
    rec = check_run("recurrence", episodes, ann, convs={"conv-26"}, conv_of={}, entry={})
    assert rec["on_planted_recurrence"] == 1 and "an annotated recurrence" in checked_text(rec)
    # the same two turns among two others of no recurring topic: 50 % is under the 60 % an episode needs
    topical = {t for r in ann["conv-26"].recurring for t in r["turns"]}
    others = [f"D1:{i}" for i in range(1, 40) if f"D1:{i}" not in topical][:2]
    diluted = {"conv-26": [{"id": "e2", "source_ids": episodes["conv-26"][0]["source_ids"] + others}]}
    mixed = check_run("recurrence", diluted, ann, convs={"conv-26"}, conv_of={}, entry={})
    assert (mixed["on_planted_recurrence"], mixed["mixed_planted_recurrence"], mixed["off_planted_recurrence"]) \
        == (0, 1, 0) and mixed["mixed"][0]["share"] == 0.5
    assert "1 mixed (in fewer)" in checked_text(mixed) and checked_verdict(mixed)[0] == "wrong"
    # as two exchanges (each a topic turn and its reply), the same four turns are wholly on the topic
    pairs = [[t, o] for t, o in zip(episodes["conv-26"][0]["source_ids"], others)]
    exchanges = check_run("recurrence", {"conv-26": [{**diluted["conv-26"][0], "parts": pairs}]}, ann,
                          convs={"conv-26"}, conv_of={}, entry={})
    assert exchanges["on_planted_recurrence"] == 1 and exchanges["on"][0]["share"] == 1.0
    # a topic's turns from one session are no recurrence, and a turn in no exchange is a part of its own
    first = ann["conv-26"].recurring[0]["turns"]
    one_session = [t for t in first if t.split(":")[0] == first[0].split(":")[0]][:2]
    alone = check_run("recurrence", {"conv-26": [{"id": "e3", "source_ids": one_session}]}, ann,
                      convs={"conv-26"}, conv_of={}, entry={})
    assert alone["off"][0]["why"] == "its recurring topic's turns are from one session"
    loose = check_run("recurrence", {"conv-26": [{**diluted["conv-26"][0], "parts": pairs[:1]}]}, ann,
                      convs={"conv-26"}, conv_of={}, entry={})
    assert loose["on"][0]["parts"] == 3 and loose["on"][0]["parts_on_topic"] == 2  # 2 of 3: on
    # a word-for-word copy of another episode of its consolidation is a repeat, wrong whatever its topic
    copied = check_run("recurrence", {"conv-26": [*episodes["conv-26"], {**episodes["conv-26"][0], "id": "e9",
                                                                         "copy_of": "e1"}]},
                       ann, convs={"conv-26"}, conv_of={}, entry={})
    assert (copied["on_planted_recurrence"], copied["repeated_episodes"]) == (1, 1)
    assert checked_verdict(copied)[0] == "partly right" and "1 more is a word-for-word copy" in checked_text(copied)
    off = check_run("escalations", {"conv-30/q0": True}, ann, convs={"conv-30"}, conv_of={"conv-30/q0": "conv-30"},
                    entry={})
    assert off["checkable"] is False and "for conv-30 (" in off["why"] and "conv-30 is kept apart" in off["why"]
    # a run over an annotated and an unannotated conversation: the latter's firings are left out, and named
    held = {"conv-30/q0": "conv-30", "conv-30/q1": "conv-30"}
    both = check_run("escalations", {**deep, **dict.fromkeys(held, True)}, ann, convs={"conv-26", "conv-30"},
                     conv_of={**conv_of, **held}, entry={})
    assert (both["deep_on_multi_hop"], both["deep_elsewhere"]) == (2, 1) and both["unchecked"] == ["conv-30"]
    assert checked_text(both).endswith("(not checked: conv-30, no phenomena annotated)")
    assert "unchecked" not in checked


def test_the_locomo_annotations_point_at_turns_and_questions_that_exist(locomo_dev_path):
    from workbench.data import load_locomo
    from workbench.eval.annotations import LOCOMO_ANNOTATIONS, load_annotations

    load_annotations(LOCOMO_ANNOTATIONS, dataset=load_locomo(locomo_dev_path))  # raises naming the entry otherwise


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d["conversations"]["sample-1"]["updates"][0].pop("new"), "updates[0]"),
    (lambda d: d["conversations"]["sample-1"]["forgets"][0].update(keywords=[]), "forgets[0]"),
    (lambda d: d["conversations"]["sample-1"]["relative_times"][0].update(date="11/03/2023"), "relative_times[0]"),
    (lambda d: d["conversations"]["sample-1"]["groups"][0].update(by="mood"), "groups[0]"),
    (lambda d: d["conversations"]["sample-1"].update(rumours=[]), "sample-1"),
    (lambda d: d["conversations"]["sample-1"]["updates"].append(dict(d["conversations"]["sample-1"]["updates"][0])),
     "updates"),
    (lambda d: d["conversations"]["sample-1"]["multi_hop"][0].update(turns=["D99:1"]), "multi_hop[0]"),
])
def test_the_annotation_loader_rejects_a_malformed_entry_naming_it(tmp_path, mutate, where):
    from workbench.data import DatasetError, load_sample
    from workbench.eval.annotations import ANNOTATIONS, load_annotations

    data = json.loads(ANNOTATIONS.read_text())
    load_annotations(ANNOTATIONS, dataset=load_sample())  # the shipped file is sound against the conversations
    mutate(data)
    bad = tmp_path / "annotations.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(DatasetError, match=rf"annotations.json: .*{re.escape(where)}"):
        load_annotations(bad, dataset=load_sample())


# -- before/after guard for issue #37 (the census moves into the method folders) ------------------------------
GOLDEN = Path(__file__).parent / "golden"


def test_demo_replay_census_is_unchanged(demo_run):
    """The census and its Markdown over the replayed demo equal what they were before the census moved into the
    method folders (#37). Recorded from the commit before the move; when the demo cassette is re-recorded on
    purpose, regenerate both files from the new run (they are plain census() and census_markdown() output)."""
    value = census(demo_run)
    expected = json.loads((GOLDEN / "demo_census.json").read_text(encoding="utf-8"))
    assert json.loads(json.dumps(value, sort_keys=True)) == expected
    assert census_markdown(value) == (GOLDEN / "demo_census.md").read_text(encoding="utf-8")


def test_the_census_names_the_probe_not_the_judge_when_probes_checked_the_conflicts(demo_run):
    """Review §2.5 (AMA): the demo's AMA checks conflicts with question probes; its census said "the ingestion
    Judge answered", attributing the probes' verdicts to the paper's agent. The paper-Judge run beside it keeps
    the Judge's name."""
    methods = census(demo_run)["methods"]
    probe = methods["ama"]["why_zero"]["deletes_at_ingestion"]
    judge = methods["ama[paper-judge]"]["why_zero"]["deletes_at_ingestion"]
    assert probe.startswith("the question probes (conflict_check='probe'") and "ingestion Judge" not in probe
    assert judge.startswith("the ingestion Judge answered")


def test_a_failed_construction_step_is_listed_and_a_count_of_one_is_singular():
    """RecMem over conv-26 recorded one failed refinement while building its memory; the census counted it
    (``construction_method_failures``) but the headline left it out, and "1 judge errors" read badly."""
    from workbench.eval.mechanisms import headline, summary_line

    value = {"methods": {"recmem": {"counts": {"questions": 152, "construction_method_failures": 1, "judge_errors": 1,
                                               "fallback_answers": 2}}}}
    (h,) = headline(value)
    assert [f["name"] for f in h["failures"]] == ["fallback_answers", "construction_method_failures", "judge_errors"]
    line = summary_line(value)
    assert "2 fallback answers" in line and "1 failed construction step" in line and "1 judge error" in line
    assert "1 judge errors" not in line and "steps" not in line


def test_the_escalation_check_says_how_many_answers_of_each_group_were_right():
    """A multi-hop question the light path answered alone is a missed escalation, but if its answer was right
    anyway the reader should see that (HyMem over conv-26: 29 of 30 not escalated, some of them right)."""
    from workbench.eval.annotations import check_run, checked_text, shipped_annotations

    ann = shipped_annotations()
    multi = [m["qa_id"] for m in ann["conv-26"].multi_hop][:3]
    single = "conv-26/q3"
    conv_of = dict.fromkeys((*multi, single), "conv-26")
    deep = {multi[0]: True, multi[1]: False, multi[2]: False, single: True}
    right_of = {multi[0]: 0.0, multi[1]: 1.0, multi[2]: None, single: 1.0}
    checked = check_run("escalations", deep, ann, convs={"conv-26"}, conv_of=conv_of, entry={}, right_of=right_of)
    assert checked["answers"] == {"deep_on_multi_hop": {"right": 0, "decided": 1},
                                  "deep_elsewhere": {"right": 1, "decided": 1},
                                  "multi_hop_not_escalated": {"right": 1, "decided": 1}}
    text = checked_text(checked)
    assert "1 deep escalation on annotated multi-hop questions (0 answered right)" in text
    assert "1 elsewhere (1 answered right)" in text
    assert "2 of 3 multi-hop questions not escalated (1 of 1 with a verdict answered right by the light" in text
    plain = check_run("escalations", deep, ann, convs={"conv-26"}, conv_of=conv_of, entry={})
    assert "answers" not in plain and "answered right" not in checked_text(plain)


def test_recmem_episodes_with_odd_saved_values_are_read_without_a_crash():
    """structures.json is untrusted: ids that are no ids, member lists that are no lists, a dict for a cluster."""
    from workbench.methods.recmem.census import written_copies
    from workbench.methods.recmem.structures import episodes_with_parts

    odd = {"units": [{"id": {"x": 1}, "source_ids": "D1:1"}, {"id": "u1", "source_ids": ["D1:1", {"t": 2}]}],
           "episodes": [{"id": ["e"], "text": "a"}, {"id": "e1", "member_ids": 7, "text": "a", "cluster": {"c": 1}},
                        {"id": "e2", "member_ids": ["u1", {"u": 2}], "text": " A ", "cluster": {"c": 1}}, "junk"]}
    eps = episodes_with_parts(odd)
    assert [e["id"] for e in eps] == ["e1", "e2"] and eps[1]["parts"] == [["D1:1"]] and eps[1]["copy_of"] == "e1"
    events = [{"kind": "CONSOLIDATE", "unit_id": "e1", "after": "a", "data": {"cluster": {"c": 1}}},
              {"kind": "CONSOLIDATE", "unit_id": ["e2"], "after": "a", "data": {"cluster": {"c": 1}}}]
    assert written_copies(events) == {}  # the second id is no id: nothing named


def test_the_header_line_says_checked_results_whole_by_title_and_leaves_empty_checks_to_the_table():
    """Usability review: the one line over the census was cut mid-sentence, used code names and showed
    "ama[paper-judge]: 0 of 0 edits match", which reads as a score. Now whole entries, by title, first clause only,
    a check with nothing to check left out, and a count of what the table holds besides."""
    from widgets.mechanisms_census import RIGHT_LINE_CHARS, _right_line

    heads = [{"method": "ama", "checked": "0 of 7 edits match a planted update or forget request; missed 3"},
             {"method": "ama[paper-judge]", "checked": "0 of 0 edits match a planted update or forget request"},
             {"method": "full_context", "checked": "not checkable here"},
             *({"method": f"hmem[v{i}]", "checked": f"{i} of 9 merges keep one entity"} for i in range(9))]
    line = _right_line(heads)
    assert "right? AMA: 0 of 7 edits match a planted update or forget request · H-Mem (v0): 0 of 9" in line
    assert "missed 3" not in line and "paper judge" not in line and "Full-Context" not in line
    shown = line.split("right? ")[1].split(" more in the table")[0]
    assert len(shown) < RIGHT_LINE_CHARS + 30 and line.endswith("more in the table</small>")
    assert _right_line(heads[1:3]) == ""


def test_a_checked_line_agrees_in_number_with_its_counts():
    """Review (explorer, session 26): "1 are mixed", "1 forget request(s)": each noun and verb follows its count."""
    from workbench.eval.annotations import checked_text

    edits = {"checkable": True, "edits_right": 0, "edits_wrong": 1, "missed_updates": 1, "missed_forgets": 2}
    assert checked_text(edits) == ("0 of 1 edit matches a planted update or forget request; missed 1 planted "
                                   "update and 2 forget requests")
    one = {"checkable": True, "coherent_parents": 1, "mixed_parents": 1}
    assert checked_text(one) == ("1 multi-child parent holds one planted topic or group (>= 60 % of its turns), "
                                 "1 is mixed")
    many = {"checkable": True, "coherent_parents": 0, "mixed_parents": 9}
    assert checked_text(many).endswith("parents hold one planted topic or group (>= 60 % of their turns), 9 are mixed")


@pytest.mark.parametrize("method, params, why", [
    ("ama", {"refresher": False}, "the Refresher was switched off (refresher=False)"),
    ("hymem", {"deep": False}, "there is no deep module to escalate to (deep=False)"),
    ("hymem", {"light": False}, "every round goes deep, so no escalation is decided (light=False)"),
    ("hmem", {"use_tree": False}, "no tree is built (use_tree=False)"),
    ("hmem", {"use_long_memory": False}, "no level above the leaves is built (use_long_memory=False)")])
def test_an_ablation_that_switches_the_checked_mechanism_off_is_not_checkable_never_missed(method, params, why):
    """Paper ablations (AMA without its Refresher, HyMem without its deep module or light tier, H-Mem without its
    tree) leave the checked mechanism nothing to do: the census says so rather than "missed" or "did not fire"."""
    from workbench.eval.annotations import checked_verdict

    def entry(p):
        rows = [{"method": method, "qa_id": "sample-1/q1", "conv_id": "sample-1", "params": p,
                 "answer": {"question": "q", "text": "x", "steps": []}}]
        mems = {method: {"sample-1": {"events": [], "structures": {}}}}
        return census(rows, memories=mems)["methods"][method]

    off = entry(params)
    assert off["checked"] == {"checkable": False, "why": why}
    assert checked_verdict(off["checked"]) == ("not checkable", f"not checkable: {why}")
    assert entry({k: not v for k, v in params.items()})["checked"]["checkable"] is True


def test_a_name_holding_two_configurations_is_switched_off_only_when_every_row_says_so():
    """``MemoryMethod.ablation`` adds no label, so a full AMA and its Refresher-less row can share the name "ama":
    one row's parameters must not make the other's edits "not checkable"."""
    rows = [{"method": "ama", "qa_id": f"sample-1/q{i}", "conv_id": "sample-1", "params": {"refresher": on},
             "answer": {"question": "q", "text": "x", "steps": []}} for i, on in enumerate((False, True))]
    mems = {"ama": {"sample-1": {"events": [], "structures": {}}}}
    assert census(rows, memories=mems)["methods"]["ama"]["checked"]["checkable"] is True
    assert census(rows[:1], memories=mems)["methods"]["ama"]["checked"]["checkable"] is False


# -- AMA's Constructor read against its turns (real scale, conv-30: 102 of 368 facts were the prompt's apposition
# example, "Jon is Gina's friend", in turns that name no friend) ----------------------------------------------
def test_fact_quality_reads_each_fact_against_its_own_turn():
    from workbench.methods import census_kit as K

    turn = "Classic kitten. I found a new violin teacher here, Ines. [shares an image: a violin]"
    assert K.copies_turn("classic kitten - I found a new violin teacher here, Ines", turn)  # marks, caption aside
    assert not K.copies_turn("Noor found a new violin teacher", turn) and not K.copies_turn("", turn)
    assert not K.copies_turn("Jon agreed!", "Agreed!")  # the speaker's name is not part of what was said
    assert K.copies_turn("[14 March 2023] Noor: Classic kitten. I found a new violin teacher here, Ines.", turn)
    assert K.first_person("I found a teacher") and K.first_person("My teacher is Ines")
    assert not K.first_person("Noor said \"I found a teacher\"") and not K.first_person("Ines is Noor's teacher")
    assert not K.first_person("Sam sent mementos to Noor")  # "me" inside a word is not the pronoun
    assert K.unstated_relation("Ines is Noor's teacher", turn) is None
    assert K.unstated_relation("Ines is Noor's teachers", turn) is None  # a plural of the turn's word
    assert K.unstated_relation("Sam is Noor's friend", turn) == "friend"
    assert K.unstated_relation("Noor found a violin teacher", turn) is None  # not an apposition
    q = K.fact_quality([("Sam is Noor's friend", turn), ("Sam is Noor's  friend.", "hi"),
                        ("I found a teacher", None), ("Ines is Noor's teacher", turn)])
    assert {k: q[k] for k in ("written", "repeated", "first_person", "turn_known", "copying_turn",
                              "unstated_relation")} == {"written": 4, "repeated": 1, "first_person": 1,
                                                        "turn_known": 3, "copying_turn": 0, "unstated_relation": 2}
    assert q["repeated_top"] == [("Sam is Noor's friend", 2)]
    assert q["unstated_relation_words"] == {"friend": 2}
    # a review's cases: numerals and nouns are not the first person; single-quoted speech is quoted
    assert not any(K.first_person(f) for f in ("World War I ended", "Episode I aired", "a gold mine",
                                                "Gina said 'I love it'"))
    assert K.first_person("I'm starting a studio 'cause I'm into dance") and K.first_person("Gina, I agree")
    assert not K.first_person("Jon said, 'I'm feeling better today.'")  # an apostrophe inside the quoted speech
    assert K.first_person("Loved the '90s, I'm at my friends' place")  # an elided year and a plural possessive
    assert K.first_person("'Cause I'm sure I saw my parents' car.")
    assert not K.first_person("Gina read Me Before You")  # a title's capitalised word inside a sentence
    assert all(K.first_person(f) for f in ("My sister visited", "Gina said: My sister", "[2 May 2023] My radiator",
                                           "Gina met me"))
    assert K.unstated_relation("Dr. Okafor is Priya's neighbour", "Dr. Okafor came by") == "neighbour"  # honorific
    assert K.unstated_relation("Mr. Okafor is Priya's neighbour", "my neighbour Mr. Okafor") is None
    # both sides must be names (or "a <noun>"): the Mem0-style reference's "Jon is proud of Gina's efforts" at real
    # scale is no apposition, AMA's "Jon is a dancer's friend" is
    assert K.unstated_relation("Jon is proud of Gina's efforts.", "Thanks!") is None
    assert K.unstated_relation("Jon is excited to see Gina's words motivating him.", "Thanks!") is None
    assert K.unstated_relation("Jon is a dancer's friend.", "Thanks!") == "friend"
    assert K.unstated_relation("[2 May 2023] Jon is Gina's friend", "Thanks!") == "friend"  # a dated fact
    assert K.unstated_relation("Mary Ann is Jon Smith's violin teacher", "Thanks!") == "teacher"
    assert K.unstated_relation("Ana is Jon's sister-in-law", "My sister-in-law Ana came") is None
    assert K.unstated_relation("Ana is Jon's wife", "our wives met") is None  # an irregular plural
    assert K.unstated_relation("Ana is Jon's best friend", "Ana came") == "friend"  # a qualified relation
    assert K.unstated_relation("Jon is Gina's friend", "Hi! [shares an image: friends]") == "friend"  # a caption
    assert K.unstated_relation("Gina is dancing, it's like air.", "Dancing is awesome") is None  # not an apposition
    assert K.fact_quality([("", None), (None, None), ("", None)])["repeated"] == 0  # empty facts repeat nothing
    assert K.plain_words("Café") == "café"
    # a fact taken from several turns (an exchange, a RecMem cluster): a copy of any one, a relation none of them says
    two = ["Hi Noor! I adopted a kitten on Saturday.", "Aww! Is Ines your teacher?"]
    q = K.fact_quality([("Sam: Aww! Is Ines your teacher?", two), ("Ines is Noor's teacher", two),
                        ("Ines is Noor's friend", two), ("x", []), ("y", [None, ""])])
    assert (q["turn_known"], q["copying_turn"], q["unstated_relation"]) == (3, 1, 1)  # empty lists: turns unknown
    assert K.source_turns({"source_ids": ["D1:1", "D9:9"]}, {"D1:1": "Hi"}) == ["Hi"]
    assert K.source_turns({"source_ids": ["D9:9"]}, {"D1:1": "Hi"}) is None
    assert K.source_turns({"source_ids": "D1:1"}, {"D1:1": "Hi"}) is None  # not a list: read as unknown
    assert K.source_turns({"source_ids": ["D1:1"]}, {}) is None
    # a fact that is a piece of its method's own prompt (RecMem over conv-26 stored 6 such lines as facts)
    from widgets.readability import method_prompts

    prompts = K.class_prompt_words(RecMem)
    assert any("anchor times to the message timestamps" in p for p in prompts)
    assert K.copies_prompt("Anchor times to the message timestamps (", prompts)
    assert not K.copies_prompt("Anchor times", prompts)  # fewer than PROMPT_COPY_WORDS words: never a copy
    assert not K.copies_prompt("Caroline went to the pride parade", prompts)
    assert method_prompts("no_such_method") == () and method_prompts("recmem[x]") == prompts
    assert K.fact_quality([("Anchor times to the message timestamps", None), ("x y z w", None)],
                          prompts)["copying_prompt"] == 1


def test_the_recmem_census_reads_its_refined_facts_against_the_clusters_turns(tiny_conv):
    """RecMem's refinement writes facts from a cluster of turns (seen in the demo: "Tomasz is considering adopting a
    new dog for his training"); the census reads each against the cluster's source turns from the saved
    conversation, and says the turn-based counts are missing when the run saved no conversation."""
    events = [{"kind": "ADD", "unit_id": f"fact:{i}", "after": text, "source_ids": ["D1:1", "D1:2", "D1:3"],
               "data": {"mode": "new_episode"}} for i, text in enumerate((
                   "Miso. She's grey with white paws.", "Noor is Sam's friend", "Noor is Sam's friend",
                   "I adopted a kitten on Saturday.", "Sam adopted a grey kitten named Miso.",
                   "Anchor times to the message timestamps (on 8 May 2023"))]
    events.append({"kind": "BUFFER", "unit_id": "u1", "after": "Noor is Sam's friend", "source_ids": ["D1:1"]})
    mems = {"recmem": {"tiny-1": {"events": events, "structures": {}}}}
    rows = [{"method": "recmem", "qa_id": "tiny-1/q0", "conv_id": "tiny-1",
             "answer": {"question": "q", "text": "x", "steps": []}}]
    entry = census(rows, memories=mems, conversations={"tiny-1": tiny_conv})["methods"]["recmem"]
    c = entry["counts"]
    assert (c["facts_copying_turn"], c["facts_unstated_relation"], c["facts_first_person"], c["facts_repeated"]) == (
        1, 2, 1, 1)  # the BUFFER unit is no refined fact
    assert c["facts_copying_prompt"] == 1  # a line of its own refinement prompt
    assert c["facts_written_most"] == {"“Noor is Sam's friend”": 2}
    assert "source turns" in entry["sources"]["facts_copying_turn"]
    bare = census(rows, memories=mems)["methods"]["recmem"]  # no conversation: read from the facts alone
    assert bare["counts"]["facts_first_person"] == 1 and bare["counts"]["facts_copying_turn"] is None
    assert "did not save their conversation" in bare["missing"]["facts_copying_turn"]


def test_the_ama_census_counts_the_constructors_facts_against_their_turns_and_the_trigger(tmp_path, tiny_conv):
    """Scripted Constructor: D1:1 copies its turn, D1:3 writes an apposition the turn never states (twice over two
    turns), D1:4 speaks as "I"; the trigger fires once by its model call. Each is counted and listed as a problem,
    and a run without the raw store says the facts cannot be read against their turns."""
    from workbench.eval.mechanisms import headline

    facts = {"D1:1": ["Hi Noor! I adopted a kitten on Saturday."], "D1:3": ["Sam is Noor's friend"],
             "D1:5": ["Sam is Noor's friend"], "D1:4": ["I just started violin lessons"],
             "D2:5": ["Ines is Noor's violin teacher"]}

    def construct(messages):
        tid = re.match(r"THE TURN \(([^,]+),", _line(messages, "THE TURN (")).group(1)
        return {"facts": [{"content": f, "pattern": "S-V-O"} for f in facts.get(tid, [])], "related_id": [],
                "timestamp": "empty"}

    def run(name, **params):
        llm = ScriptedLLM({"ama.construct": construct,
                           "ama.trigger": [{"T_t": 1, "reason": "new topic", "confidence": 0.9, "topic_summary": "x"}]
                           + [{"T_t": 0, "reason": "same", "confidence": 0.9, "topic_summary": ""}] * 20},
                          default="auto")
        out = tmp_path / name
        evaluate(AMA(llm=llm, embedder=HashEmbedder(dim=64), **params), Dataset("tiny", (tiny_conv,)),
                 store=out / "results.jsonl", questions=QUESTIONS[:1], save_memories_dir=out, progress=False)
        return census(out)

    value = run("facts")
    c = counts(value, "ama")
    assert c["facts_written"] == 5 and c["facts_repeated"] == 1 and c["facts_written_most"] == {
        "“Sam is Noor's friend”": 2}
    assert c["facts_copying_turn"] == 1 and c["facts_first_person"] == 2  # the copied turn says "I adopted"
    assert c["facts_unstated_relation"] == 2  # "teacher" is in D2:5, "friend" in neither D1:3 nor D1:5
    assert c["trigger_firings"] == {"llm": 1} and c["trigger_checks"]["llm"] >= 2
    assert c["episodes_written"] >= 2 and c["episodes_unstored"] == 0  # the firing and the session ends
    (h,) = headline(value)
    problems = {f["name"]: f["value"] for f in h["failures"]}
    assert problems == {"facts_unstated_relation": 2, "facts_copying_turn": 1, "facts_first_person": 2}
    assert c["facts_unstated_relation_words"] == {"friend": 2}
    gone = tmp_path / "facts" / "memories" / "ama" / "tiny-1" / "structures.json"
    gone.unlink()  # a memory saved before AMA wrote its ingestion log: the trigger counts are missing, not absent
    no_log = census(tmp_path / "facts")["methods"]["ama"]
    assert all(no_log["counts"][n] is None and "no ingestion_log" in no_log["missing"][n]
               for n in ("trigger_checks", "trigger_firings", "episodes_unstored"))
    assert no_log["counts"]["episodes_written"] == c["episodes_written"]  # read from the events either way
    no_raw = run("no-raw", use_raw=False)  # without the raw store the facts are read against the saved conversation
    assert counts(no_raw, "ama")["facts_copying_turn"] == 1 and counts(no_raw, "ama")["facts_unstated_relation"] == 2
    for f in (tmp_path / "no-raw" / "conversations").iterdir():
        f.unlink()
    missing = census(tmp_path / "no-raw")["methods"]["ama"]["missing"]
    assert "use_raw=False" in missing["facts_copying_turn"] and "saved conversation" in missing["facts_copying_turn"]
    assert counts(census(tmp_path / "no-raw"), "ama")["facts_first_person"] == 2  # read from the fact alone


# -- H-Mem's written memory read against its turns (real scale, conv-30: 131 of 132 relations labelled with the
# prompt's own examples, "Jon lives in Google", "Jon sister of Gina", in turns that never say "live" or "sister";
# summaries cut at the 640-character bound, looping, in Chinese; profiles echoing "| recent:") -------------------
def _hmem_entry(tiny_conv, structures, params=None, conversations=True):
    rows = [{"method": "hmem", "qa_id": "tiny-1/q0", "conv_id": "tiny-1", "params": params or {"summary_words": 12},
             "answer": {"question": "q", "text": "x", "steps": []}}]
    # one LINK event per relation the model extracted, with its fragment's turns (as HMem._add_graph emits them)
    events = [{"kind": "LINK", "unit_id": f"{e['source']}->{e['target']}", "after": e["relation"],
               "source_ids": e["source_ids"], "data": {"source": e["source"], "target": e["target"],
                                                       "relation": e["relation"]}}
              for e in structures["graph"]["edges"]]
    events.append({"kind": "LINK", "unit_id": "noor", "after": "Noor", "source_ids": ["D1:5"],
                   "data": {"surface": "Noor", "how": "new"}})  # an entity's link: no relation
    mems = {"hmem": {"tiny-1": {"events": events, "structures": structures}}}
    return census(rows, memories=mems, conversations={"tiny-1": tiny_conv} if conversations else None)


def test_the_hmem_census_reads_leaves_summaries_relations_and_profiles_against_their_turns(tiny_conv):
    loop = "Noor went to Geneva for a new job at the museum. " * 3
    tree = [{"id": "e1", "level": 1, "summary": "I moved to Geneva last week.", "source_ids": ["D2:1"]},
            {"id": "e2", "level": 1, "summary": "Noor moved to Geneva.", "source_ids": ["D2:1"]},
            {"id": "e3", "level": 1, "summary": "Sam: Wow! For work?", "source_ids": ["D2:2"]},
            {"id": "s1", "level": 2, "summary": "Noor moved to Geneva and works at a museum there.",
             "source_ids": ["D2:1", "D2:3"]},
            {"id": "s2", "level": 2, "summary": "Noor moved to Geneva for work last week and then she started to look "
                                                "for",
             "source_ids": ["D2:1"]},  # cut off mid-sentence
            {"id": "s3", "level": 3, "summary": loop.strip(), "source_ids": ["D2:1", "D2:3"]},  # looping, 33 words
            {"id": "s4", "level": 3, "summary": "Noor moved to Geneva 跳舞.", "source_ids": ["D2:1"]},
            {"id": "s5", "level": 4, "summary": "Noor moved to Geneva.", "source_ids": ["D2:1"], "copy_of_child": True}]
    graph = {"nodes": [{"id": "noor", "name": "Noor", "profile": {"persistent": "Noor is a violinist. | recent: x",
                                                                   "recent": "Noor moved."}},
                       {"id": "sam", "name": "Sam", "profile": {"persistent": "Sam has a kitten.", "recent": ""}},
                       {"id": "lyon", "name": "Lyon", "profile": None}, {"id": "miso", "name": "Miso"}],
             "edges": [{"source": "noor", "target": "lyon", "relation": "lives in", "kind": "relation",
                        "source_ids": ["D1:5", "D1:6"]},  # "living" in D1:5: said
                       {"source": "sam", "target": "miso", "relation": "lives in", "kind": "relation",
                        "source_ids": ["D1:1"]},  # never said
                       {"source": "sam", "target": "noor", "relation": "sister of", "kind": "relation",
                        "source_ids": ["D1:1"]},
                       {"source": "sam", "target": "miso", "relation": "adopted", "kind": "relation",
                        "source_ids": ["D1:1"]},  # not the prompt's example: not read
                       {"source": "noor", "target": "lyon", "relation": "overlap", "kind": "overlap",
                        "source_ids": ["D1:1"]}]}
    value = _hmem_entry(tiny_conv, {"tree": tree, "graph": graph})
    c = value["methods"]["hmem"]["counts"]
    assert (c["facts_first_person"], c["facts_copying_turn"], c["facts_repeated"]) == (1, 1, 0)
    assert (c["summaries"], c["summaries_cut"], c["summaries_looping"], c["summaries_foreign_script"]) == (4, 1, 1, 1)
    assert c["summaries_over_words"] == 2  # the looping one (33 words) and the cut one (16) over summary_words=12
    assert (c["relations"], c["relation_extractions"], c["relations_prompt_example"],
            c["relations_prompt_example_unsaid"]) == (4, 4, 3, 2)
    assert c["relations_prompt_example_words"] == {"lives in": 1, "sister of": 1}
    assert (c["profiles"], c["profiles_echoing_prompt"]) == (2, 1)
    problems = {f["name"]: f["value"] for f in headline(value)[0]["failures"]}
    assert {k: problems.get(k) for k in ("relations_prompt_example_unsaid", "summaries_cut", "profiles_echoing_prompt",
                                         "facts_copying_turn")} == {"relations_prompt_example_unsaid": 2,
                                                                    "summaries_cut": 1, "profiles_echoing_prompt": 1,
                                                                    "facts_copying_turn": 1}
    # no conversation saved: what needs the turns is missing, never counted as 0
    bare = _hmem_entry(tiny_conv, {"tree": tree, "graph": graph}, conversations=False)["methods"]["hmem"]
    for name in ("summaries_looping", "summaries_foreign_script", "relations_prompt_example_unsaid",
                 "facts_copying_turn"):
        assert bare["counts"][name] is None and bare["missing"][name]
    assert bare["counts"]["summaries_cut"] == 1
    # the paper profile sets no word limit: not a count of 0
    nolimit = _hmem_entry(tiny_conv, {"tree": tree, "graph": graph}, params={"summary_words": None})["methods"]["hmem"]
    assert nolimit["counts"]["summaries_over_words"] is None and "no word limit" in nolimit["missing"][
        "summaries_over_words"]
    # a saved memory without its tree: what the model wrote cannot be read either, so it is missing, not 0
    gone = _hmem_entry(tiny_conv, {"graph": graph})["methods"]["hmem"]
    assert gone["counts"]["summaries"] is None and gone["counts"]["facts_first_person"] is None
    assert "has no tree" in gone["missing"]["relation_extractions"]
    # the paper profile's extraction prompt gives no example label: its "lives in" is not the prompt's example
    paper = _hmem_entry(tiny_conv, {"tree": tree, "graph": graph}, params={"prompts": "paper", "summary_words": None})
    paper = paper["methods"]["hmem"]
    assert paper["counts"]["relation_extractions"] == 4 and paper["counts"]["relations_prompt_example_unsaid"] is None
    assert "prompts='paper'" in paper["missing"]["relations_prompt_example"]


def test_text_rules_for_loops_scripts_and_cut_offs():
    from workbench.methods import census_kit as K

    assert K.looping_run("Gina, " * 30) == ("gina gina gina gina gina gina gina gina", 23)
    said = "We sing the song that goes la la la la la la la la la la la la la la la la la la la la la la la la"
    assert K.looping_run(said, said) is None  # the people's own repeat
    assert K.looping_run("Jon and Gina are a great team and they do amazing things. " * 2) is None  # twice only
    said = "alpha beta gamma delta epsilon zeta eta theta " * 3  # a loop beside a run the source repeats as often
    assert K.looping_run(said + "one two three four five six seven eight " * 3, said)[1] == 3
    assert K.foreign_scripts("Jon's财务", "Jon talked money") == {"CJK": ["财", "务"]}
    assert K.foreign_scripts("可爱", "可爱!") == {} and K.foreign_scripts("Zürich", "") == {}
    long = "Jon lost his job as a banker and started his own dance studio in town and"
    assert K.ends_mid_sentence(long) and K.ends_mid_sentence(long[:-4] + ",")
    assert not any(K.ends_mid_sentence(long[:-4] + end) for end in (".", ' "go!"', "?)", "…"))
    assert not K.ends_mid_sentence("Episode one") and not K.ends_mid_sentence("")  # a terse note is not cut off
    from widgets.readability import unreadable_marks

    assert [f for f, _ in unreadable_marks("Gina, " * 30)] == ["repeats itself"]  # a run no sentence ends


#: a plugin method's prompt, kept in its own module (the test below): read for prompt copies like any method's
PLUGIN_PROMPT = "List every fact the speakers state about themselves, one per line."


def test_a_method_naming_no_prompt_modules_is_read_for_prompt_copies_in_its_own_module():
    """The run manifest hashes a class's own module as its prompts when it names no ``prompt_modules`` (a plugin
    method); the census's prompt-copy check reads the same module, so a plugin's copied instruction is flagged."""
    from workbench.methods import census_kit as K

    class Plugin:
        pass

    words = K.class_prompt_words(Plugin)
    assert K.copies_prompt("List every fact the speakers state", words)
    assert not K.copies_prompt("Noor moved to Geneva last week", words)


def test_ama_and_recmem_episodes_are_read_for_cut_offs_loops_and_other_scripts(tiny_conv):
    """Real scale, conv-30: 42 of AMA's 121 episodes stop mid-sentence at their 800-character bound and 35 loop ("She
    is looking for a new business, but she also lost her job at Door Dash this month." again and again); 13 of
    RecMem's 158 stop at 300 characters and 3 end in Chinese. Both censuses count them (``put_summary_quality``),
    read against the episode's own turns, and say so as problems; without the conversation the turn-based two are
    missing."""
    loop = "Noor moved to Geneva for a new job at the museum there. " * 3
    texts = ["Noor moved to Geneva for a job at a museum.",
             "Noor moved to Geneva last week for a new job at the museum there and she", loop.strip(),
             "Sam adopted Miso 跳舞."]
    rows = lambda m: [{"method": m, "qa_id": "tiny-1/q0", "conv_id": "tiny-1",  # noqa: E731
                       "answer": {"question": "q", "text": "x", "steps": []}}]
    ids = ["D2:1", "D2:3"]
    ama_events = [{"kind": "ADD", "unit_id": f"episode:{i}", "after": t, "source_ids": ids,
                   "data": {"store": "episode"}} for i, t in enumerate(texts)]
    recmem = {"episodes": [{"id": f"epi-{i}", "text": t, "source_ids": ids} for i, t in enumerate(texts)]}
    for method, mem in (("ama", {"events": ama_events, "structures": {}}),
                        ("recmem", {"events": [], "structures": recmem})):
        value = census(rows(method), memories={method: {"tiny-1": mem}}, conversations={"tiny-1": tiny_conv})
        c = value["methods"][method]["counts"]
        assert (c["episodes_cut"], c["episodes_looping"], c["episodes_foreign_script"]) == (1, 1, 1), method
        assert "episodes_over_words" not in c  # neither prompt asks for a length
        problems = {f["name"] for f in headline(value)[0]["failures"]}
        assert {"episodes_cut", "episodes_looping", "episodes_foreign_script"} <= problems
        bare = census(rows(method), memories={method: {"tiny-1": mem}})["methods"][method]
        assert bare["counts"]["episodes_cut"] == 1 and bare["counts"]["episodes_looping"] is None
