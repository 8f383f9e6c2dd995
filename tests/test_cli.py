"""The command line's surface: help text on every option, one spelling per concept (aliases accepted),
``eval``/``report`` listed even when a module they need is missing, ``python -m workbench``."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

import workbench.eval
from workbench import cli
from workbench.data import load_sample

ROOT = Path(__file__).resolve().parents[1]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_every_option_of_every_command_has_help():
    missing = [f"{name} {a.option_strings or a.dest}" for name, sub in _subparsers(cli.build_parser()).items()
               for a in sub._actions if not isinstance(a, argparse._HelpAction) and not a.help]
    assert missing == []


@pytest.mark.parametrize("argv, dest, value", [
    (["build", "--conversation", "1"], "conversation", "1"),
    (["build", "--conversations", "sample-2"], "conversation", "sample-2"),
    (["ask", "q?", "--conversation-id", "conv-26"], "conversation", "conv-26"),
    (["ask", "q?", "--conversations", "1"], "conversation", "1"),
    (["eval", "--conversation", "0-2"], "conversations", "0-2"),
    (["eval", "--conversations", "0,3"], "conversations", "0,3"),
])
def test_conversation_options_accept_both_spellings(argv, dest, value):
    assert getattr(cli.build_parser().parse_args(argv), dest) == value


def test_pick_conversation_by_index_or_id():
    data = load_sample()
    assert cli.pick_conversation(data, "1").id == cli.pick_conversation(data, "sample-2").id == "sample-2"
    assert cli.pick_conversation(data, None).id == "sample-1"
    with pytest.raises(SystemExit, match="no conversation '7'"):
        cli.pick_conversation(data, "7")


def test_eval_and_report_stay_listed_and_say_what_is_missing(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "workbench.eval.cli", None)  # as if a module it needs were absent
    monkeypatch.delattr(workbench.eval, "cli", raising=False)
    subs = _subparsers(cli.build_parser())
    assert {"eval", "report"} <= set(subs)
    assert cli.main(["eval", "--method", "naive_rag"]) == 2
    err = capsys.readouterr().err
    assert "workbench eval: needs the 'workbench.eval.cli' module" in err and "pip install" in err


def test_python_m_workbench_runs_the_cli():
    out = subprocess.run([sys.executable, "-m", "workbench", "--help"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "demo" in out.stdout and "eval" in out.stdout


def test_eval_runs_a_comma_list_of_methods_with_the_default_executor(tmp_path):
    """``--method a,b`` on the thread executor: both methods, one run directory, one results file; a bad
    name in the list fails before any call (issue: real scale, item 5)."""
    import json
    import re

    from workbench.eval import LLMJudge, ResultsStore, evaluate
    from workbench.eval.cli import add_eval_arguments, eval_command
    from workbench.embed import HashEmbedder
    from workbench.llm import CachedLLM, ScriptedLLM
    from workbench.methods import FullContext, NaiveRAG

    def answer(messages):
        return re.search(r"Question: (.*?)\n", messages[-1]["content"]).group(1).rstrip("?").split()[-1]

    llm_script = {"naive_rag.answer": answer, "full_context.answer": answer,
                  "judge.locomo": lambda m: {"reasoning": "r", "label": "WRONG"}}
    cassette = tmp_path / "cassette.jsonl"
    data = load_sample()
    for cls, kw in ((NaiveRAG, {"embedder": HashEmbedder(256), "top_k": 10}), (FullContext, {})):
        llm = CachedLLM(ScriptedLLM(llm_script, model="scripted"), cassette)
        evaluate(cls(llm=llm, **kw), data, judge=LLMJudge(llm), questions=2, progress=False)
    parser = argparse.ArgumentParser()
    add_eval_arguments(parser)
    out = tmp_path / "run"
    common = ["--data", "sample", "--questions", "2", "--llm", "replay", "--cassette", str(cassette),
              "--judge", "same", "--embedder", "hash", "--out", str(out), "--no-progress", "--calibration", "off"]
    assert eval_command(parser.parse_args(["--method", "naive_rag, full_context", *common])) == 0
    rows = list(ResultsStore(out / "results.jsonl"))
    assert len(rows) == 8 and not [r for r in rows if r["error"]]
    assert sorted({r["method"] for r in rows}) == ["full_context", "naive_rag"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["evaluations"]) == 2
    with pytest.raises(SystemExit):
        eval_command(parser.parse_args(["--method", "naive_rag,no_such_method", *common[:-4],
                                        "--out", str(tmp_path / "bad"), "--no-progress"]))
    assert not (tmp_path / "bad" / "results.jsonl").exists()
