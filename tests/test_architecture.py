"""Architecture: imports run one way (the import-linter contracts in pyproject.toml), and the CLI
reaches the app and the benchmarks by name, with a clear message when they are not installed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import cli, extras

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    """``lint-imports`` over workbench, widgets and benchmarks: layers, a core free of widgets/Panel/
    benchmarks, and no import cycles among sibling modules."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "BROKEN" not in out.stdout and "KEPT" in out.stdout


def test_a_missing_optional_part_names_what_to_install():
    with pytest.raises(extras.MissingExtra, match=r"needs the 'no_such_module_h23' module: pip install "
                                                  r"'memory-workbench\[ui\]'"):
        extras.require("no_such_module_h23", extra="ui", purpose="the app")


def test_bench_outside_a_checkout_says_where_to_run_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(extras, "__file__", str(tmp_path / "site-packages" / "workbench" / "extras.py"))
    assert extras.checkout_root() is None
    assert cli.main(["bench"]) == 2
    assert "source checkout" in capsys.readouterr().err


def test_checkout_root_finds_the_benchmarks_beside_the_package():
    assert extras.checkout_root(ROOT) == ROOT


def test_cli_turns_a_bad_spec_into_a_usage_error():
    with pytest.raises(SystemExit, match="unknown embedder 'nope'"):
        cli.make_embedder("nope")
    with pytest.raises(SystemExit, match="--param expects key=value"):
        cli.parse_params(["top_k"])
    with pytest.raises(SystemExit, match="unknown method 'nope'"):
        cli.configure_method(cli.build_parser().parse_args(["build", "--method", "nope"]), None, None)
    with pytest.raises(SystemExit, match="needs --cassette"):
        cli.make_llm("replay", None)


def test_methods_llms_and_embedders_build_from_specs_in_the_library(tmp_path):
    from workbench.embed import HashEmbedder, embedder_from_spec
    from workbench.llm import CachedLLM, ScriptedLLM, llm_from_options
    from workbench.methods.spec import build_method, parse_params

    assert parse_params(["top_k=3", "chunking=session", "note=[1, 2]"]) == {"top_k": 3, "chunking": "session",
                                                                             "note": [1, 2]}
    assert isinstance(embedder_from_spec("hash"), HashEmbedder)
    fc = build_method("full_context", ScriptedLLM([]), HashEmbedder(), {})  # takes no embedder
    assert fc.name == "full_context"
    rag = build_method("naive_rag", ScriptedLLM([]), HashEmbedder(), {"top_k": 3})
    assert rag.top_k == 3
    cassette = tmp_path / "c.jsonl"
    cassette.write_text(json.dumps({"key": "k", "role": "t", "model": "m", "messages": [], "reply": "r",
                                    "prompt_tokens": 1, "completion_tokens": 1}) + "\n")
    assert llm_from_options("replay", str(cassette)).mode == "replay"
    assert llm_from_options(f"replay:{cassette}").mode == "replay"
    assert llm_from_options("replay:", str(cassette)).mode == "replay"
    live = "openai:some-model@http://127.0.0.1:9/v1"  # building the client sends nothing
    recording = llm_from_options(live, str(tmp_path / "rec.jsonl"))
    assert isinstance(recording, CachedLLM) and recording.mode != "replay" and recording.inner.model == "some-model"
    assert not isinstance(llm_from_options(live), CachedLLM)


def test_ruff_is_clean():
    """``ruff check`` with the configuration in pyproject.toml (the coordinator's CI runs the test suite)."""
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
