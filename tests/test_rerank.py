"""The rerank stage: the endpoint reranker against a small rerank server on 127.0.0.1 (well-formed and hostile
replies), the lexical stand-in, memoisation, and the spec parser."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from workbench.rerank import (API_KEY_ENV, RERANKER_SPECS, CachedReranker, EndpointReranker, LexicalReranker,
                              Reranker, RerankerError, RerankerUnavailable, local_cross_encoders, offline_reranker,
                              reranker_from_spec)
from workbench.rerank.lexical import words


def _overlap(query: str, doc: str) -> float:
    """The scripted server's relevance: shared words, with a tie-break on length so no two scores are equal."""
    return len(set(words(query)) & set(words(doc))) + 1.0 / (2 + len(doc))


class _RerankHandler(BaseHTTPRequestHandler):
    """``/<mode>/rerank``: ``ok`` answers as vLLM does (results sorted by score); the other modes misbehave."""

    requests: list = []
    flaky_left = {"n": 0}

    def log_message(self, *args):  # keep test output clean
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.loads(raw)
        mode = self.path.strip("/").split("/")[0]
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        docs = body["documents"]
        results = sorted(({"index": i, "relevance_score": _overlap(body["query"], d), "document": {"text": d}}
                          for i, d in enumerate(docs)), key=lambda r: -r["relevance_score"])
        if mode == "flaky" and type(self).flaky_left["n"] > 0:
            type(self).flaky_left["n"] -= 1
            return self._send(503, b'{"error": "warming up"}')
        bad = {
            "notjson": b"<html>gateway</html>",
            "noresults": b'{"data": []}',
            "short": json.dumps({"results": results[:-1]}).encode(),
            "range": json.dumps({"results": [{**r, "index": r["index"] + len(docs)} for r in results]}).encode(),
            "negative": json.dumps({"results": [{**r, "index": -1 - r["index"]} for r in results]}).encode(),
            "dup": json.dumps({"results": [{**results[0]} for _ in results]}).encode(),
            "string": json.dumps({"results": [{**r, "relevance_score": str(r["relevance_score"])}
                                              for r in results]}).encode(),
            "nan": json.dumps({"results": [{**r, "relevance_score": float("nan")} for r in results]}).encode(),
            "bool": json.dumps({"results": [{**r, "index": True} for r in results]}).encode(),
            "huge": json.dumps({"results": results, "pad": "x" * 5000}).encode(),
            "notobject": json.dumps({"results": [1.0 for _ in results]}).encode(),
        }
        if mode == "error":
            return self._send(400, b'{"error": "model Qwen/Other is not served here"}')
        if mode in bad:
            return self._send(200, bad[mode])
        self._send(200, json.dumps({"id": "rerank-1", "model": body["model"], "results": results}).encode())


@pytest.fixture(scope="module")
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _RerankHandler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def seen():
    _RerankHandler.requests.clear()
    return _RerankHandler.requests


QUERY = "When did Caroline go to the LGBTQ support group?"
DOCS = ["Melanie painted a lake sunrise last year.",
        "Caroline went to the LGBTQ support group on 7 May 2023.",
        "Caroline is researching adoption agencies.",
        "",
        "The support group met again in June."]


def test_endpoint_scores_come_back_in_input_order(server, seen):
    rr = EndpointReranker("cross-encoder/ms-marco-MiniLM-L-12-v2", base_url=server + "/ok/v1")
    scores = rr(QUERY, DOCS)
    assert isinstance(rr, Reranker) and rr.name == "cross-encoder/ms-marco-MiniLM-L-12-v2"
    # the server sorts by score; ours are back in the order the documents were given
    assert scores.tolist() == pytest.approx([_overlap(QUERY, d or " ") for d in DOCS])
    assert int(np.argmax(scores)) == 1
    (req,) = seen
    assert req["path"] == "/ok/v1/rerank"
    assert req["body"] == {"model": "cross-encoder/ms-marco-MiniLM-L-12-v2", "query": QUERY,
                           "documents": [d or " " for d in DOCS], "top_n": 5}
    assert req["auth"] is None  # a local server needs no key, and none is invented


def test_endpoint_batches_and_sends_the_key(server, seen):
    rr = EndpointReranker("m", base_url=server + "/ok", api_key="sk-test-123", batch_size=2)
    scores = rr(QUERY, DOCS)
    assert [len(r["body"]["documents"]) for r in seen] == [2, 2, 1]
    assert {r["auth"] for r in seen} == {"Bearer sk-test-123"}
    assert scores.tolist() == pytest.approx([_overlap(QUERY, d or " ") for d in DOCS])
    assert "sk-test" not in repr(rr)
    assert rr(QUERY, []).shape == (0,) and len(seen) == 3  # nothing to rank: no request


@pytest.mark.parametrize("mode, words_", [
    ("notjson", "not JSON"),
    ("noresults", 'no "results" list'),
    ("short", "4 results for 5 documents"),
    ("range", "not a whole number from 0 to 4"),
    ("negative", "not a whole number from 0 to 4"),
    ("bool", "has index True"),
    ("dup", "scored twice"),
    ("string", "not a finite number"),
    ("nan", "not a finite number"),
    ("notobject", "is not an object"),
    ("error", "answered HTTP 400"),
])
def test_endpoint_refuses_a_malformed_reply_naming_the_endpoint(server, mode, words_):
    rr = EndpointReranker("m", base_url=f"{server}/{mode}/v1", attempts=1)
    with pytest.raises(RerankerError) as err:
        rr(QUERY, DOCS)
    assert words_ in str(err.value)
    assert f"{server}/{mode}/v1/rerank" in str(err.value)


def test_endpoint_http_error_shows_the_servers_words(server):
    with pytest.raises(RerankerError, match="is not served here"):
        EndpointReranker("m", base_url=server + "/error", attempts=3)(QUERY, DOCS)  # a 400 is not retried


def test_endpoint_refuses_a_reply_past_its_size_limit(server):
    rr = EndpointReranker("m", base_url=server + "/huge", max_reply_bytes=4096)
    with pytest.raises(RerankerError, match="longer than 4,096 bytes"):
        rr(QUERY, DOCS)
    assert EndpointReranker("m", base_url=server + "/huge")(QUERY, DOCS).shape == (5,)  # the default limit


def test_endpoint_retries_a_server_that_is_starting(server, seen):
    _RerankHandler.flaky_left["n"] = 1
    scores = EndpointReranker("m", base_url=server + "/flaky", attempts=2)(QUERY, DOCS)
    assert len(seen) == 2 and int(np.argmax(scores)) == 1
    _RerankHandler.flaky_left["n"] = 5
    with pytest.raises(RerankerError, match=r"answered HTTP 503.*after 2 tries"):
        EndpointReranker("m", base_url=server + "/flaky", attempts=2)(QUERY, DOCS)


def test_endpoint_that_is_not_there_is_named():
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rr = EndpointReranker("m", base_url=f"http://user:secret@127.0.0.1:{port}/v1", attempts=1, timeout_s=5)
    with pytest.raises(RerankerError) as err:
        rr(QUERY, DOCS)
    assert f"http://127.0.0.1:{port}/v1/rerank" in str(err.value) and "could not be reached" in str(err.value)
    assert "secret" not in str(err.value) and "secret" not in repr(rr)


@pytest.mark.parametrize("kwargs, words_", [
    ({"model": "", "base_url": "http://127.0.0.1:1"}, "needs the model name"),
    ({"model": "m", "base_url": "ftp://127.0.0.1/v1"}, "must be http"),
    ({"model": "m", "base_url": "http://127.0.0.1:notaport"}, "is not a URL"),
    ({"model": "m", "base_url": "http://127.0.0.1:1", "batch_size": 0}, "batch_size"),
    ({"model": "m", "base_url": "http://127.0.0.1:1", "timeout_s": 0}, "timeout_s"),
])
def test_endpoint_refuses_bad_settings(kwargs, words_):
    with pytest.raises(ValueError, match=words_):
        EndpointReranker(**kwargs)


def test_endpoint_refuses_documents_that_are_not_text():
    with pytest.raises(TypeError, match="document 1"):
        EndpointReranker("m", base_url="http://127.0.0.1:1")(QUERY, ["a", 3])


def test_lexical_puts_the_relevant_passage_first():
    rr = LexicalReranker()
    assert isinstance(rr, Reranker) and rr.name == "lexical-bm25" and not rr.pointwise
    cases = [
        (QUERY, DOCS, 1),
        ("What instrument does Melanie play?",
         ["Caroline likes hiking.", "Melanie plays the clarinet in a band.", "What a nice day, Melanie!"], 1),
        ("What has Caroline been researching?", ["Melanie read a book about research.",
                                                 "Caroline went to a support group.",
                                                 "Caroline is researching adoption agencies."], 2),
    ]
    for query, docs, best in cases:
        scores = rr(query, docs)
        assert int(np.argmax(scores)) == best, (query, scores)
    assert rr(QUERY, DOCS).tolist() == rr(QUERY, DOCS).tolist()  # deterministic
    assert rr(QUERY, DOCS[::-1]).tolist() == rr(QUERY, DOCS).tolist()[::-1]  # order-free
    assert rr(QUERY, []).shape == (0,)
    assert rr("the of and", DOCS).tolist() == [0.0] * 5  # function words alone match nothing


def test_cache_memoises_pairs_and_persists(server, seen, tmp_path):
    path = tmp_path / "rerank_scores.json"
    cached = CachedReranker(EndpointReranker("m", base_url=server + "/ok"), path=path)
    first = cached(QUERY, DOCS[:3])
    again = cached(QUERY, [DOCS[2], DOCS[0], DOCS[4]])  # two known pairs, one new
    assert len(seen) == 2 and seen[1]["body"]["documents"] == [DOCS[4]]
    assert again.tolist() == [first[2], first[0], pytest.approx(_overlap(QUERY, DOCS[4]))]
    assert (cached.hits, cached.misses) == (2, 4)
    cached.save()
    # a replay where the endpoint is not running: the saved scores are enough
    replay = CachedReranker(EndpointReranker("m", base_url="http://127.0.0.1:1", attempts=1), path=path)
    assert replay(QUERY, [DOCS[4], DOCS[0]]).tolist() == [again[2], first[0]]
    with pytest.raises(RerankerError):
        replay(QUERY, ["a document never scored"])
    with pytest.raises(ValueError, match="holds scores of 'm', not of 'other'"):
        CachedReranker(EndpointReranker("other", base_url=server), path=path)


def test_cache_refuses_damaged_files_and_a_reranker_that_is_not_pointwise(tmp_path):
    with pytest.raises(ValueError, match="not pointwise"):
        CachedReranker(LexicalReranker())
    inner = EndpointReranker("m", base_url="http://127.0.0.1:1")
    for text, words_ in [("{not json", "cannot be read"), ('{"reranker": "m"}', 'no "scores" list'),
                         ('{"reranker": "m", "scores": [["q", "d", NaN]]}', r"scores\[0\]"),
                         ('{"reranker": "m", "scores": [["q", 1, 0.5]]}', r"scores\[0\]")]:
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(ValueError, match=words_) as err:
            CachedReranker(inner, path=bad)
        assert str(bad) in str(err.value)


def test_specs(monkeypatch):
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    assert reranker_from_spec("none") is None
    assert isinstance(reranker_from_spec("lexical"), LexicalReranker)
    for spec in ("endpoint:Qwen/Qwen3-Reranker-4B@http://127.0.0.1:8000/v1",
                 "openai:Qwen/Qwen3-Reranker-4B@http://127.0.0.1:8000/v1"):
        rr = reranker_from_spec(spec)  # built without contacting the server
        assert isinstance(rr, CachedReranker) and rr.name == "Qwen/Qwen3-Reranker-4B"
        assert rr.inner.url == "http://127.0.0.1:8000/v1/rerank" and "Authorization" not in rr.inner._headers
    rr = reranker_from_spec("endpoint:m", base_url="http://127.0.0.1:9/v1", api_key="k1")
    assert rr.inner.url == "http://127.0.0.1:9/v1/rerank" and rr.inner._headers["Authorization"] == "Bearer k1"
    monkeypatch.setenv(API_KEY_ENV, "k-env")
    assert reranker_from_spec("endpoint:m@http://127.0.0.1:9").inner._headers["Authorization"] == "Bearer k-env"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")  # never sent to a rerank host
    monkeypatch.delenv(API_KEY_ENV)
    assert "Authorization" not in reranker_from_spec("endpoint:m@http://127.0.0.1:9").inner._headers


@pytest.mark.parametrize("spec, words_", [
    ("bogus", "unknown reranker 'bogus'"),
    ("", "unknown reranker ''"),
    ("auto", "unknown reranker 'auto'"),
    ("endpoint", "unknown reranker"),
    ("endpoint:@http://127.0.0.1:8000", "names no model"),
    ("openai:", "names no model"),
    ("endpoint:m", "needs the endpoint's base URL"),
    ("endpoint:m@ftp://host", "must be http"),
])
def test_bad_specs_say_what_is_valid(spec, words_):
    with pytest.raises(ValueError, match=words_) as err:
        reranker_from_spec(spec)
    if "unknown" in words_ or "no model" in words_:
        assert RERANKER_SPECS in str(err.value)


def test_spec_url_given_twice_is_refused():
    with pytest.raises(ValueError, match="give one"):
        reranker_from_spec("endpoint:m@http://a:1/v1", base_url="http://b:2/v1")
    assert reranker_from_spec("endpoint:m@http://a:1/v1/", base_url="http://a:1/v1").inner.url == \
        "http://a:1/v1/rerank"


def test_no_cross_encoder_runs_here_and_the_error_says_what_to_do():
    assert local_cross_encoders() == ()
    for spec in ("crossencoder", "crossencoder:ms-marco-MiniLM-L-12-v2"):
        with pytest.raises(RerankerUnavailable, match="endpoint:<model>@<base_url>"):
            reranker_from_spec(spec)


def test_offline_rebuild_by_name():
    assert isinstance(offline_reranker("lexical-bm25"), LexicalReranker)
    with pytest.raises(RerankerUnavailable, match="served by an endpoint"):
        offline_reranker("Qwen/Qwen3-Reranker-4B")
    with pytest.raises(RerankerUnavailable, match="does not record"):
        offline_reranker("")
