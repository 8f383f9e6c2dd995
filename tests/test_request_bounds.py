"""Bounded waits for a model server (timeout and attempts as options), failures in words, resume says what it skips."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from workbench.failures import describe_error
from workbench.llm import LLMError

ROOT = Path(__file__).resolve().parents[1]
openai = pytest.importorskip("openai")

from workbench.llm.openai_chat import DEFAULT_ATTEMPTS, DEFAULT_TIMEOUT_S, OpenAIChat  # noqa: E402


@pytest.fixture
def silent_server():
    """A server that accepts connections, reads the request and never answers; counts connections."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def loop():
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            accepted.append(conn)  # kept open, never answered

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    yield sock.getsockname()[1], accepted
    stop.set()
    t.join(timeout=2)
    for c in accepted:
        c.close()
    sock.close()


def test_a_server_that_never_answers_costs_attempts_times_timeout(silent_server):
    port, accepted = silent_server
    llm = OpenAIChat("m", base_url=f"http://127.0.0.1:{port}/v1", timeout_s=0.4, attempts=2)
    start = time.monotonic()
    with pytest.raises(LLMError) as err:
        llm.complete("ping")
    took = time.monotonic() - start
    assert took < 6, took  # 2 x 0.4 s plus the client's short backoff, not 120 s x 5
    assert len(accepted) == 2
    message = str(err.value)
    assert f"127.0.0.1:{port}" in message and "did not answer within 0.4 s (2 attempts" in message
    assert "APITimeoutError" not in message


def test_defaults_bound_a_call_to_minutes_and_old_spelling_still_works():
    llm = OpenAIChat("m", base_url="http://127.0.0.1:9/v1")
    assert (llm.timeout_s, llm.attempts) == (DEFAULT_TIMEOUT_S, DEFAULT_ATTEMPTS)
    assert llm.timeout_s * llm.attempts <= 300
    assert llm.client.max_retries == DEFAULT_ATTEMPTS - 1 and llm.client.timeout == DEFAULT_TIMEOUT_S
    assert OpenAIChat("m", base_url="http://x/v1", max_retries=4).attempts == 5
    with pytest.raises(ValueError, match="disagree"):
        OpenAIChat("m", base_url="http://x/v1", max_retries=1, attempts=5)


@pytest.mark.parametrize("kw,fragment", [({"timeout_s": 0}, "timeout"), ({"timeout_s": -1.0}, "timeout"),
                                         ({"timeout_s": float("inf")}, "timeout"), ({"attempts": 0}, "attempts"),
                                         ({"attempts": 2.5}, "attempts"), ({"attempts": True}, "attempts")])
def test_bad_bounds_are_refused_in_words(kw, fragment):
    with pytest.raises(ValueError, match=fragment):
        OpenAIChat("m", base_url="http://x/v1", **kw)


def test_cli_options_reach_the_backend():
    from workbench.eval.cli import add_eval_arguments
    import argparse

    parser = argparse.ArgumentParser()
    add_eval_arguments(parser)
    args = parser.parse_args(["--llm", "openai:m@http://127.0.0.1:9/v1", "--request-timeout", "7.5",
                              "--attempts", "1"])
    from workbench.eval.cli import _llm, bound_requests
    from workbench.llm import CachedLLM

    llm = bound_requests(_llm(args.llm, None), args)
    assert (llm.timeout_s, llm.attempts) == (7.5, 1)
    assert (llm.client.timeout, llm.client.max_retries) == (7.5, 0)
    wrapped = bound_requests(CachedLLM(OpenAIChat("m", base_url="http://127.0.0.1:9/v1"), None), args)
    assert (wrapped.inner.timeout_s, wrapped.inner.attempts) == (7.5, 1)
    from workbench.eval.executors import CliRecipe

    method, _ = CliRecipe("full_context", {}, args.llm, embedder="hash", request_timeout=2.0, attempts=4)(0)
    assert (method.llm.timeout_s, method.llm.attempts) == (2.0, 4)


def test_eval_against_a_silent_server_finishes_with_the_failure_in_words(silent_server, tmp_path):
    port, _ = silent_server
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "workbench.cli", "eval", "--method", "full_context", "--data", "tiny",
                          "--questions", "1", "--embedder", "hash", "--no-progress",
                          "--llm", f"openai:m@http://127.0.0.1:{port}/v1", "--request-timeout", "0.3",
                          "--attempts", "1", "--out", str(tmp_path / "run")],
                         env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert rows and all("did not answer within 0.3 s (1 attempt;" in json.dumps(r) for r in rows)
    assert time.monotonic() - start < 200


@pytest.mark.parametrize("exc,words", [
    (IndexError("list index out of range"), "an item the method expected is missing"),
    (KeyError("speaker"), "a field or entry the method expected is missing: 'speaker'"),
    (ZeroDivisionError("division by zero"), "a division by zero"),
    (TypeError("unhashable type: 'list'"), "a value of the wrong type"),
    (ConnectionResetError(104, "reset by peer"), "a connection"),
    (LookupError("odd"), "an unexpected error: odd [LookupError]"),
])
def test_failures_lead_with_words_not_exception_names(exc, words):
    text = describe_error(exc, "answering")
    assert text.startswith("answering failed: ") and words in text
    assert not text.split("failed: ", 1)[1].startswith(type(exc).__name__)
    assert text.endswith(f"[{type(exc).__name__}]")


def test_llm_errors_keep_their_own_words():
    assert describe_error(LLMError("the server at http://x did not answer")) == "the server at http://x did not answer"


def test_a_method_bug_reaches_the_ledger_in_words():
    from workbench.llm.base import BaseLLM

    class Broken(BaseLLM):
        model = "broken"

        def _generate(self, messages, **kw):
            return [][0]

    llm = Broken()
    with pytest.raises(LLMError, match="^the model call failed: an item the method expected is missing"):
        llm.complete("x")
    assert llm.ledger.calls[-1].error.startswith("IndexError: ")  # the ledger records the kind, for counting


def test_resume_says_which_partial_lines_it_skips(tmp_path, capsys):
    from workbench.eval.cli import report_resume

    results = tmp_path / "results.jsonl"
    row = {"method": "m", "params_hash": "h", "dataset": "d", "qa_id": "q1", "conv_id": "c"}
    results.write_text(json.dumps(row) + "\n" + json.dumps({**row, "qa_id": "q2"})[:25] + "\n"
                       + json.dumps({**row, "qa_id": "q3"}) + "\n" + '{"method": "m", "qa_')
    report_resume(results)
    err = capsys.readouterr().err
    assert f"resuming {results}: 2 rows kept; 2 damaged or partial line(s) skipped" in err
    assert f"{results}:2: invalid JSON" in err and f"{results}:4: torn final line" in err
    report_resume(tmp_path / "absent.jsonl")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("spec,fragment", [(1, "index 1 is past the end: the dataset has 1 conversation"),
                                           ("0,7", "index 7 is past the end"), ("conv-99", "no conversation with id"),
                                           (range(2, 4), "index 2 is past the end")])
def test_picking_a_conversation_that_is_not_there_says_so_in_words(spec, fragment):
    from workbench.data import load_dataset
    from workbench.eval.selection import select_conversations

    with pytest.raises(ValueError, match=fragment):
        select_conversations(load_dataset("tiny"), spec)


def test_request_options_on_a_model_that_makes_no_request_say_so(capsys):
    import argparse

    from workbench.eval.cli import add_eval_arguments, bound_requests
    from workbench.llm import ScriptedLLM

    parser = argparse.ArgumentParser()
    add_eval_arguments(parser)
    llm = ScriptedLLM([], default="x")
    assert bound_requests(llm, parser.parse_args(["--attempts", "2"])) is llm
    assert "apply to openai: servers" in capsys.readouterr().err
    assert bound_requests(llm, parser.parse_args([])) is llm and capsys.readouterr().err == ""
