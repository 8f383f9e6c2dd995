"""``workbench reproduce``: the papers' tables as data, the estimate, the refusals, and a whole run over HTTP
against the local fake OpenAI-compatible server (``workbench.testing.fake_openai_server``)."""
from __future__ import annotations

import base64
import json
import re
from dataclasses import replace

import numpy as np
import pytest

from workbench.cli import main
from workbench.data import load_dataset
from workbench.eval.paper_tables import OVERALL, get_table, papers, tables
from workbench.eval.reproduce import question_ids
from workbench.testing.fake_openai_server import FakeOpenAIServer, schema_value

LOCOMO_COUNTS = {1: 282, 2: 321, 3: 96, 4: 841}
LME_COUNTS = {"single-session-user": 70, "single-session-assistant": 56, "single-session-preference": 30,
              "temporal-reasoning": 133, "knowledge-update": 78, "multi-session": 133}


@pytest.fixture
def no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("WORKBENCH_LLM", raising=False)


@pytest.fixture
def server():
    with FakeOpenAIServer() as s:
        yield s


# -- the tables ------------------------------------------------------------------------------------------------

def test_every_paper_has_a_headline_table_with_its_method_rows():
    assert set(papers()) == {"hymem", "ama", "hmem", "recmem", "memr3"}
    for paper in papers():
        t = get_table(paper)
        assert t.dataset == "locomo" and t.categories == (1, 2, 3, 4), paper
        main_rows = t.rows[t.backbones[0]]
        assert OVERALL in main_rows and set(main_rows) >= {1, 2, 3, 4}, paper
        assert all(set(cells) == set(t.metrics) for cells in main_rows.values()), paper


@pytest.mark.parametrize("table", [t for t in tables() if len(next(iter(t.rows.values()))) > 1],
                         ids=lambda t: f"{t.paper}-{t.table}-{t.dataset}")
def test_overall_is_the_question_weighted_mean_of_the_rows(table):
    """Each paper's overall is the micro mean over its questions: weighting the transcribed rows by the full
    datasets' counts per category gives it back, which a figure put under the wrong category would not."""
    counts = dict(LOCOMO_COUNTS if table.dataset == "locomo" else LME_COUNTS)
    if table.dedupe_questions:
        counts[4] = 830  # MemR3 drops eleven repeated single-hop questions
    for backbone, rows in table.rows.items():
        for metric in table.metrics:
            keys = [k for k in rows if k != OVERALL]
            weighted = sum(rows[k][metric] * counts[k] for k in keys) / sum(counts[k] for k in keys)
            # the papers round each cell; AMA's non-GPT-4o-mini rows are off by up to 0.005 in its own table
            assert weighted == pytest.approx(rows[OVERALL][metric], abs=0.0061 * table.scale[metric]), \
                (backbone, metric)


def test_get_table_picks_by_number_and_dataset():
    assert get_table("hymem", 1, "longmemeval").dataset == "longmemeval_s"
    assert get_table("recmem", "3").rows["gpt-4o-mini"][OVERALL]["f1"] == 0.385
    with pytest.raises(ValueError, match="has no headline table 9"):
        get_table("ama", 9)
    with pytest.raises(ValueError, match="no headline table for 'naive_rag'"):
        get_table("naive_rag")


def test_memr3_drops_repeated_questions_keeping_the_first():
    data = load_dataset("tiny")
    conv = data.conversations[0]
    first = conv.qa[0]
    again = replace(first, id=first.id + "-again", question=f"  {first.question.upper()} ")
    data = replace(data, conversations=[replace(conv, qa=[*conv.qa, again])])
    ids = question_ids(data, get_table("memr3"))
    assert first.id in ids and again.id not in ids
    assert len(ids) == sum(1 for q in conv.qa if q.category in (1, 2, 3, 4))
    assert question_ids(data, get_table("hymem"), limit=2) == 2  # no dedupe: the harness takes the limit


def test_memr3_dedupe_on_the_dev_copy(locomo_dev_path):
    """The dev copy's one repeated question is a category-5 copy (the first, kept, is scored): the scored set is
    unchanged, and deduping over every category drops exactly that one."""
    data = load_dataset(f"locomo:{locomo_dev_path}")
    table = get_table("memr3")
    assert len(question_ids(data, table)) == 1035
    assert len(question_ids(data, replace(table, categories=(1, 2, 3, 4, 5)))) == 1346


# -- the fake server -------------------------------------------------------------------------------------------

def test_fake_server_speaks_the_openai_client(server):
    from workbench.embed import OpenAIEmbedder
    from workbench.llm.openai_chat import OpenAIChat

    schema = {"type": "object", "required": ["label", "items"],
              "properties": {"label": {"enum": ["CORRECT", "WRONG"]}, "items": {"type": "array", "minItems": 2}}}
    reply = OpenAIChat("fake", base_url=server.url).complete("grade this", schema=schema)
    assert reply.parsed["label"] in ("CORRECT", "WRONG") and reply.parsed["items"] == ["unknown", "unknown"]
    labels = {schema_value(schema, f"prompt {i}")["label"] for i in range(20)}
    assert labels == {"CORRECT", "WRONG"}  # the enum follows the prompt's hash, not always the first option
    vectors = OpenAIEmbedder("Qwen/Qwen3-Embedding-0.6B", base_url=server.url)(["apple pie", "apple pie", "car"])
    assert vectors.shape == (3, 256) and np.allclose(vectors[0], vectors[1]) and not np.allclose(vectors[0],
                                                                                                 vectors[2])
    body = server.requests[-1]["body"]
    assert body["model"] == "Qwen/Qwen3-Embedding-0.6B" and body["encoding_format"] == "base64"
    floats = server.embeddings({"input": ["car"], "encoding_format": "float"})["data"][0]["embedding"]
    packed = server.embeddings({"input": ["car"], "encoding_format": "base64"})["data"][0]["embedding"]
    assert np.allclose(np.frombuffer(base64.b64decode(packed), "<f4"), floats)
    ranked = server.rerank({"model": "m", "query": "apple pie", "documents": ["a car", "pie of apple"], "top_n": 1})
    assert [r["index"] for r in ranked["results"]] == [1]


# -- the command -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("paper", ["hymem", "ama", "hmem", "recmem", "memr3"])
def test_estimate_prices_each_paper_before_anything_runs(paper, no_key, capsys, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": [0.15, 0.6], "gpt-4.1-mini": [0.4, 1.6], "gpt-4.1": [2, 8]}))
    assert main(["reproduce", paper, "--estimate", "--prices", str(prices)]) == 0
    out = capsys.readouterr().out
    table = get_table(paper)
    assert f"{paper} Table {table.table} (locomo)" in out
    scaled = re.search(r"the paper's slice \(10 conversations, 5882 turns, (\d+) questions; scaled from this data\): "
                       r"~([\d,]+) calls, ~([\d,]+) tokens, \$([\d,.]+), ~([\d.]+) hours", out)
    assert scaled, out
    assert int(scaled.group(1)) == table.size["questions"]
    assert int(scaled.group(2).replace(",", "")) > 0 and float(scaled.group(4).replace(",", "")) > 0
    assert "a real run would stop here: API key" in out  # said, but the estimate needs no key


def test_reproduce_hymem_against_the_fake_server(server, no_key, capsys, tmp_path):
    out_dir = tmp_path / "run"
    rc = main(["reproduce", "hymem", "--llm", f"openai:fake@{server.url}", "--embedder-url", server.url,
               "--data", "tiny", "--out", str(out_dir), "--no-progress"])
    assert rc == 0
    printed = capsys.readouterr().out
    # the paper's embedder was asked for by its served name, at the URL given; the judge is the paper's model
    bodies = [r["body"] for r in server.requests]
    assert {b["model"] for b in bodies if "input" in b} == {"Qwen/Qwen3-Embedding-0.6B"}
    chat_models = {b["model"] for b in bodies if "messages" in b}
    assert chat_models == {"fake", "gpt-4.1-mini"}
    assert "embedder:  paper: Qwen3-Embedding-0.6B | this run: Qwen/Qwen3-Embedding-0.6B" in printed
    assert "compared with the paper's gpt-4.1-mini row" in printed
    assert "NOT the paper's slice" in printed
    # every row of the paper's table is printed beside this run's figure, computed from the stored rows
    rows = [json.loads(line) for line in (out_dir / "results.jsonl").read_text().splitlines()]
    judged = [r for r in rows if r.get("judge_label") in ("CORRECT", "WRONG")]
    assert len(rows) == 4 and len(judged) == 4
    overall = 100 * sum(r["judge_label"] == "CORRECT" for r in judged) / len(judged)
    line = next(ln for ln in printed.splitlines() if ln.startswith("| overall"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[2:5] == ["89.55", f"{overall:.2f}", "4"] and float(cells[5]) == pytest.approx(overall - 89.55)
    for label, figure in [("1 multi-hop (paper: Single Hop)", "85.15"), ("2 temporal (paper: Multi Hop)", "88.16"),
                          ("3 open-domain", "77.08"), ("4 single-hop (paper: Temporal)", "92.98")]:
        assert re.search(rf"\| {re.escape(label)} +\| LLM-judge accuracy \(%\) \| +{figure} \|", printed), label
    saved = json.loads((out_dir / "reproduce.json").read_text())
    assert saved["header"]["embedder"]["run"] == "Qwen/Qwen3-Embedding-0.6B" and len(saved["rows"]) == 5
    manifest = json.loads((out_dir / "manifest.json").read_text())
    assert manifest["evaluations"][-1]["reproduce"]["table"] == "1"


def test_reproduce_on_a_slice_of_the_dev_copy(server, no_key, capsys, tmp_path, locomo_dev_path):
    rc = main(["reproduce", "hymem", "--llm", f"openai:fake@{server.url}", "--embedder-url", server.url,
               "--data", f"locomo:{locomo_dev_path}", "--conversations", "conv-26", "--limit-questions", "2",
               "--out", str(tmp_path / "run"), "--no-progress"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "this run: locomo10_dev: 1 conversation(s), 2 questions" in printed
    assert re.search(r"\| overall +\| LLM-judge accuracy \(%\) \| +89\.55 \| +[\d.]+ \| 2 \|", printed)


def test_another_embedder_given_explicitly_runs_as_a_departure(server, no_key, capsys, tmp_path):
    rc = main(["reproduce", "hymem", "--llm", f"openai:fake@{server.url}", "--embedder", "hash", "--data", "tiny",
               "--limit-questions", "1", "--out", str(tmp_path / "run"), "--no-progress"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "this run: hash-256" in printed
    assert re.search(r"departure embedder: .*Qwen3-Embedding-0\.6B", printed)
    assert not any(r["path"].endswith("/embeddings") for r in server.requests)


@pytest.mark.parametrize("argv, words", [
    (["hymem", "--data", "tiny", "--llm", "openai:fake@{url}"], ["Qwen3-Embedding-0.6B", "--embedder-url"]),
    (["ama", "--data", "tiny"], ["OPENAI_API_KEY", "openai:gpt-4o-mini"]),
    (["hmem", "--data", "tiny", "--llm", "openai:fake@{url}", "--embedder-url", "{url}"],
     ["Qwen3-Reranker-4B", "--reranker none"]),
    (["recmem", "--llm", "openai:fake@{url}"], ["--data locomo:<path>", "snap-research/locomo"]),
    (["recmem", "--table", "2", "--data", "tiny", "--llm", "openai:fake@{url}"], ["longmemeval_s"]),
], ids=["embedder", "api-key", "reranker", "no-data", "wrong-data"])
def test_refusals_name_the_missing_part(argv, words, server, no_key, capsys, tmp_path):
    argv = [a.replace("{url}", server.url) for a in argv]
    assert main(["reproduce", *argv, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "cannot run" in err or "not" in err
    for word in words:
        assert word in err, (word, err)
    assert server.requests == []  # refused before any call
    assert not (tmp_path / "run").exists()


def test_memr3_reranks_through_the_rerank_endpoint(server, no_key, capsys, tmp_path):
    rc = main(["reproduce", "memr3", "--llm", f"openai:fake@{server.url}", "--reranker-url", server.url,
               "--data", "tiny", "--out", str(tmp_path / "run"), "--no-progress"])
    assert rc == 0
    printed = capsys.readouterr().out
    reranked = [r["body"] for r in server.requests if r["path"] == "/v1/rerank"]
    assert reranked and {b["model"] for b in reranked} == {"cross-encoder/ms-marco-MiniLM-L-12-v2"}
    assert "reranker:  paper: ms-marco-MiniLM-L-12-v2 | this run: cross-encoder/ms-marco-MiniLM-L-12-v2" in printed
    assert "judge:     paper: gpt-4.1 | this run: gpt-4.1" in printed  # the paper's judge, on the --llm endpoint
    assert re.search(r"\| overall +\| LLM-judge accuracy \(%\) \| +81\.55 \| +[\d.]+ \| 4 \|", printed)


def test_a_longmemeval_table_is_compared_by_question_type(no_key, capsys, tmp_path, lme_dev_path):
    from workbench.testing.fake_openai_server import schema_reply

    def reply(body):  # the test's own judge: every LongMemEval verdict is "yes"; the method's calls as usual
        last = str(body["messages"][-1]["content"])
        return "yes" if last.rstrip().endswith("Answer yes or no only.") else schema_reply(body)

    with FakeOpenAIServer(reply) as server:
        rc = main(["reproduce", "recmem", "--table", "2", "--llm", f"openai:fake@{server.url}",
                   "--data", f"longmemeval:{lme_dev_path}", "--conversations", "0-1", "--out", str(tmp_path / "r"),
                   "--no-progress"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "NOT the paper's slice" in printed
    assert re.search(r"\| overall +\| LLM-judge accuracy \(%\) \| +76\.80 \| +100\.00 \| 2 \| +23\.20 \|", printed)
