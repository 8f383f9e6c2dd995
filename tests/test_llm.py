"""LLM boundary: scripted fake, JSON repair, cache/cassette, ledger tags, retries against a real HTTP server."""
import json
import multiprocessing
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from workbench.llm import (CachedLLM, CacheMiss, LLMError, OpenAIChat, ParseError, ScriptedLLM, cache_key,
                           extract_json, llm_tags, track)
from workbench.llm.default import NO_MODEL_HELP, default_llm, llm_from_spec
from workbench.llm.errors import NoModelError

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


# -- JSON extraction and repair ---------------------------------------------------------------------
@pytest.mark.parametrize("text,expected", [
    ('{"a": 1}', {"a": 1}),
    ('Sure! ```json\n{"a": [1, 2,]}\n``` done', {"a": [1, 2]}),
    ('prefix {"a": "b}"} suffix', {"a": "b}"}),
    ('[{"x": 1}]', [{"x": 1}]),
])
def test_extract_json_tolerates_wrappers(text, expected):
    assert extract_json(text) == expected


def test_extract_json_failure_carries_raw():
    with pytest.raises(ParseError) as err:
        extract_json("no json here")
    assert err.value.raw == "no json here"


def test_repair_attempt_fixes_bad_json():
    llm = ScriptedLLM(["not json", '{"answer": "ok"}'])
    out = llm.complete("q", schema=SCHEMA, role="t.x")
    assert out.parsed == {"answer": "ok"}
    assert llm.roles() == ["t.x", "t.x.repair"]
    assert out.usage.calls == 2  # the repair call is paid for and counted


def test_bounded_retry_then_parse_error_with_raw():
    llm = ScriptedLLM(["bad 1", "bad 2", '{"wrong": 1}'])
    with pytest.raises(ParseError) as err:
        llm.complete("q", schema=SCHEMA, role="t.x")
    assert llm.roles() == ["t.x", "t.x.repair", "t.x.retry"]
    assert "wrong" in err.value.raw
    assert len(llm.ledger) == 3


def test_scripted_match_mode_and_exhaustion():
    llm = ScriptedLLM({"a.role": ["one", "two"], "needle": "found"})
    assert llm.complete("x", role="a.role").text == "one"
    assert llm.complete("x", role="a.role").text == "two"
    assert llm.complete("x", role="a.role").text == "two"  # last reply repeats
    assert llm.complete("has a needle in it", role="other").text == "found"
    with pytest.raises(LLMError):
        llm.complete("nothing matches", role="other")
    with pytest.raises(LLMError, match="exhausted"):
        ScriptedLLM([]).complete("x")


# -- ledger -----------------------------------------------------------------------------------------
def test_ledger_tags_and_tracking():
    llm = ScriptedLLM([], default="fine")
    with llm_tags(method="m1", phase="construct"):
        llm.complete("a", role="m1.build")
    with llm_tags(method="m1", phase="query"), track() as calls:
        llm.complete("b", role="m1.answer")
        with track() as inner:
            llm.complete("c", role="m1.answer")
    assert [c.role for c in calls] == ["m1.answer", "m1.answer"] and len(inner) == 1
    frame = llm.ledger.frame()
    assert list(frame.phase) == ["construct", "query", "query"]
    summary = llm.ledger.summary()
    assert summary.set_index("phase").loc["query", "calls"] == 2
    assert llm.ledger.usage(phase="construct").calls == 1
    with pytest.raises(ValueError):
        with llm_tags(phase="bogus"):
            pass


def test_complete_many_keeps_order_and_failures():
    llm = ScriptedLLM({"ok": "yes", "bad": LLMError("nope")})
    out = llm.complete_many([{"messages": "ok 1"}, {"messages": "bad"}, {"messages": "ok 2"}], workers=3)
    assert out[0].text == "yes" and isinstance(out[1], LLMError) and out[2].text == "yes"


# -- cache / cassette -------------------------------------------------------------------------------
def test_cache_hit_miss_and_invalidation(tmp_path):
    inner = ScriptedLLM([], default="reply")
    llm = CachedLLM(inner, tmp_path / "c.jsonl")
    a = llm.complete("hello", role="r")
    b = llm.complete("hello", role="r")
    assert not a.cached and b.cached and a.text == b.text
    assert len(inner.requests) == 1
    assert b.usage.prompt_tokens == a.usage.prompt_tokens  # replay reports the recorded cost
    llm.complete("hello, changed", role="r")
    llm.complete("hello", role="r", temperature=0.5)
    llm.complete("hello", role="r", seed=3)
    assert len(inner.requests) == 4  # prompt, temperature and seed are all part of the key
    lines = (tmp_path / "c.jsonl").read_text().splitlines()
    assert len(lines) == 4 and all("api_key" not in line for line in lines)


def test_replay_without_model(tmp_path):
    rec = CachedLLM(ScriptedLLM([], default="42", model="m-x"), tmp_path / "c.jsonl")
    rec.complete("q?", role="r")
    replay = CachedLLM.replay(tmp_path / "c.jsonl")
    assert replay.model == "m-x" and replay.complete("q?", role="r").text == "42"
    with pytest.raises(CacheMiss):
        replay.complete("a different question", role="r")
    assert (replay.hits, replay.misses, replay.replay_misses) == (1, 0, 1)  # a replay miss is not a live call


def test_key_ignores_credentials_and_is_content_addressed():
    k1 = cache_key("m", [{"role": "user", "content": "x"}], None, 0.0, None, None)
    assert k1 == cache_key("m", [{"role": "user", "content": "x"}], None, 0, None, None)
    assert k1 != cache_key("m2", [{"role": "user", "content": "x"}], None, 0.0, None, None)


def _writer(path, start):
    llm = CachedLLM(ScriptedLLM([], default="r"), path)
    for i in range(start, start + 40):
        llm.complete(f"prompt {i} " + "x" * 500, role="w")


def test_concurrent_writers_from_processes(tmp_path):
    path = tmp_path / "shared.jsonl"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(path, 40 * i)) for i in range(4)]
    for p in procs:
        p.start()
    threads = [threading.Thread(target=_writer, args=(path, 1000 + 40 * i)) for i in range(2)]
    for t in threads:
        t.start()
    for p in procs:
        p.join()
    for t in threads:
        t.join()
    lines = path.read_text().splitlines()
    keys = {json.loads(line)["key"] for line in lines}  # every line is whole, valid JSON
    assert len(keys) == 240
    assert len(CachedLLM.replay(path).cassette) == 240


# -- default_llm ------------------------------------------------------------------------------------
def test_default_llm_order(monkeypatch, tmp_path):
    explicit = ScriptedLLM([])
    assert default_llm(explicit) is explicit
    rec = CachedLLM(ScriptedLLM([], default="x", model="mm"), tmp_path / "c.jsonl")
    rec.complete("a")
    monkeypatch.setenv("WORKBENCH_LLM", f"replay:{tmp_path / 'c.jsonl'}")
    assert default_llm().model == "mm"
    assert llm_from_spec("openai:some-model@http://127.0.0.1:9/v1").model == "some-model"
    with pytest.raises(ValueError):
        llm_from_spec("nonsense:x")


def test_no_model_error_lists_the_ways(monkeypatch, tmp_path):
    from workbench.runtime import models

    monkeypatch.delenv("WORKBENCH_LLM", raising=False)
    monkeypatch.setattr(models, "find_installed", lambda: None)
    with pytest.raises(NoModelError) as err:
        default_llm()
    assert "OPENAI_API_KEY" in str(err.value) and "make demo" in str(err.value)
    assert NO_MODEL_HELP.count("\n  ") == 3


# -- OpenAIChat retries against a real local HTTP server ----------------------------------------------
class _FlakyHandler(BaseHTTPRequestHandler):
    script: list = []
    seen: list = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        status = type(self).script.pop(0) if type(self).script else 200
        if status != 200:
            msg = b'{"error": {"message": "injected", "type": "server_error"}}'
            if status == 400:
                msg = b'{"error": {"message": "unsupported response_format json_schema", "type": "invalid_request"}}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("retry-after-ms", "5")  # the openai client waits what the server asks
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)
            return
        reply = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": '{"answer": "pong"}'}}],
                 "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def flaky_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FlakyHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FlakyHandler.seen = []
    yield server, _FlakyHandler
    server.shutdown()


def test_openai_retries_429_and_500(flaky_server):
    server, handler = flaky_server
    handler.script = [429, 500, 200]
    llm = OpenAIChat("m", base_url=f"http://127.0.0.1:{server.server_port}/v1")
    out = llm.complete("ping", schema=SCHEMA, role="t")
    assert out.parsed == {"answer": "pong"} and len(handler.seen) == 3
    assert out.usage.prompt_tokens == 11  # server-reported usage wins over counting


def test_openai_gives_up_after_max_retries(flaky_server):
    server, handler = flaky_server
    handler.script = [503] * 10
    llm = OpenAIChat("m", base_url=f"http://127.0.0.1:{server.server_port}/v1", max_retries=2)
    with pytest.raises(LLMError, match="status 503"):
        llm.complete("ping")
    assert len(handler.seen) == 3
    assert llm.ledger.calls[-1].error  # the failed call is in the ledger


def test_openai_structured_fallback_to_json_object(flaky_server):
    server, handler = flaky_server
    handler.script = [400, 200]
    llm = OpenAIChat("m", base_url=f"http://127.0.0.1:{server.server_port}/v1")
    llm.complete("ping", schema=SCHEMA)
    assert handler.seen[0]["response_format"]["type"] == "json_schema"
    assert handler.seen[1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    llm.complete("again", schema=SCHEMA)
    assert handler.seen[2]["response_format"]["type"] == "json_object"  # remembered


def test_prune_keeps_only_used_calls_including_other_writers(tmp_path):
    path = tmp_path / "c.jsonl"
    a = CachedLLM(ScriptedLLM([], default="x"), path)
    b = CachedLLM(ScriptedLLM([], default="y"), path)  # a second writer on the same file
    a.complete("stale")
    fresh = CachedLLM(ScriptedLLM([], default="x"), path)
    fresh.complete("used by a")
    b.complete("used by b")
    dropped = fresh.cassette.prune(fresh.used_keys | b.used_keys)
    assert dropped == 1
    replay = CachedLLM.replay(path, model="scripted")
    assert replay.complete("used by a").text == "x" and replay.complete("used by b").text == "y"
    with pytest.raises(CacheMiss):
        replay.complete("stale")
