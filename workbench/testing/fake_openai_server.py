"""A local fake of an OpenAI-compatible server, for end-to-end tests of commands that talk to one.

``FakeOpenAIServer`` listens on 127.0.0.1 (a free port) in a background thread and serves the three endpoints a
paper-grade run uses, so ``workbench reproduce`` and ``workbench eval`` can be driven over real HTTP through the
``openai`` client, exactly as against OpenAI, vLLM or llama.cpp, with no network and no model:

- ``POST /v1/chat/completions``: the reply comes from a reply function ``reply(body) -> str`` (the request's JSON
  body: ``model``, ``messages``, ``response_format``...). The default, ``schema_reply``, answers a request that
  carries a JSON Schema (``response_format`` of type ``json_schema`` or ``json_object`` with ``schema``, the two
  forms ``workbench.llm.openai_chat`` sends) with a value built from that schema, and a free-text request with a
  fixed word. It reads nothing but the schema and a hash of the prompt: it is test plumbing that lets every role
  of every method get a well-formed reply, not a model and not a store of answers.
- ``POST /v1/embeddings``: ``HashEmbedder`` vectors (deterministic, lexical), as floats or as base64 float32,
  whichever ``encoding_format`` asks for (the ``openai`` client asks for base64 by default).
- ``POST /v1/rerank`` (also ``/rerank``): the vLLM / Jina / Cohere form, ``{model, query, documents, top_n}`` ->
  ``{results: [{index, relevance_score, document}]}``, best first; the score is the hash embedder's cosine.

Every request is kept in ``requests`` (path and body) so a test can check what was asked for, e.g. which
embedding model a run named. Usage tokens are counted with the workbench's offline counter.

    with FakeOpenAIServer() as server:
        run(["reproduce", "hymem", "--llm", f"openai:fake@{server.url}", "--embedder-url", server.url])
"""
from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

import numpy as np

from ..embed import HashEmbedder
from ..llm.tokens import count_tokens

FREE_TEXT_REPLY = "unknown"


def request_schema(body: dict) -> dict | None:
    """The JSON Schema a chat request asks its reply to follow, in either form ``openai_chat`` sends, or None."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema")
    if fmt.get("type") == "json_object":
        return fmt.get("schema")
    return None


def _prompt(body: dict) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if isinstance(m, dict))


def schema_value(schema: dict, seed: str):
    """A value that satisfies ``schema``: required keys only, arrays at their ``minItems``, numbers at their
    ``minimum``, strings a fixed word; an ``enum`` takes the option a hash of ``seed`` picks (so that, say, a
    judge schema's CORRECT/WRONG is not the same on every question, yet the same on every run)."""
    if "enum" in schema and schema["enum"]:
        options = schema["enum"]
        return options[int(hashlib.sha256(seed.encode()).hexdigest(), 16) % len(options)]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return schema_value(schema[key][0], seed)
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "null")
    if typ == "object":
        props = schema.get("properties", {})
        return {k: schema_value(props.get(k, {"type": "string"}), f"{seed}/{k}") for k in schema.get("required", [])}
    if typ == "array":
        item = schema.get("items", {"type": "string"})
        return [schema_value(item, f"{seed}/{i}") for i in range(int(schema.get("minItems", 0)))]
    if typ == "boolean":
        return False
    if typ in ("integer", "number"):
        return schema.get("minimum", 0)
    if typ == "null":
        return None
    return FREE_TEXT_REPLY


def schema_reply(body: dict) -> str:
    """The default reply function (see the module docstring)."""
    schema = request_schema(body)
    if schema is None:
        return FREE_TEXT_REPLY
    return json.dumps(schema_value(schema, _prompt(body)))


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"

    def log_message(self, format, *args):  # noqa: A002 -- the base class's name; tests stay quiet
        pass

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 -- http.server's naming
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            return self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
        self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self):  # noqa: N802
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        except ValueError as exc:
            return self._send(400, {"error": {"message": f"request body is not JSON: {exc}"}})
        path = self.path.split("?", 1)[0].rstrip("/")
        fake = self.server.fake
        with fake.lock:
            fake.requests.append({"path": path, "body": body})
        routes = {"/v1/chat/completions": fake.chat, "/chat/completions": fake.chat,
                  "/v1/embeddings": fake.embeddings, "/embeddings": fake.embeddings,
                  "/v1/rerank": fake.rerank, "/rerank": fake.rerank}
        if path not in routes:
            return self._send(404, {"error": {"message": f"no route {path}"}})
        try:
            self._send(200, routes[path](body))
        except (KeyError, TypeError, ValueError) as exc:  # a malformed request: the client is told, as a server would
            self._send(400, {"error": {"message": f"{type(exc).__name__}: {exc}"}})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: "FakeOpenAIServer"


class FakeOpenAIServer:
    """See the module docstring. ``reply``: ``body -> str`` for chat completions (default ``schema_reply``);
    ``dim``: the embedding width."""

    def __init__(self, reply: Callable[[dict], str] = schema_reply, *, dim: int = 256):
        self.reply = reply
        self.embedder = HashEmbedder(dim=dim)
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> "FakeOpenAIServer":
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL an ``openai`` client takes (``http://127.0.0.1:PORT/v1``)."""
        if self._server is None:
            raise RuntimeError("the fake server is not running (use it as a context manager, or call start())")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def paths(self) -> list[str]:
        with self.lock:
            return [r["path"] for r in self.requests]

    # -- endpoints -------------------------------------------------------------------------------
    def chat(self, body: dict) -> dict:
        if not isinstance(body.get("messages"), list) or not body.get("model"):
            raise ValueError("a chat completion needs 'model' and a 'messages' list")
        text = self.reply(body)
        prompt_tokens = count_tokens(_prompt(body))
        return {"id": f"chatcmpl-fake-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": count_tokens(text),
                          "total_tokens": prompt_tokens + count_tokens(text)}}

    def embeddings(self, body: dict) -> dict:
        texts = body["input"]
        texts = [texts] if isinstance(texts, str) else list(texts)
        if not all(isinstance(t, str) for t in texts):
            raise ValueError("this fake embeds text inputs only, not token arrays")
        vectors = self.embedder(texts)
        as_base64 = body.get("encoding_format") == "base64"
        data = [{"object": "embedding", "index": i,
                 "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode() if as_base64 else v.tolist()}
                for i, v in enumerate(vectors)]
        tokens = sum(count_tokens(t) for t in texts)
        return {"object": "list", "model": body.get("model", ""), "data": data,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    def rerank(self, body: dict) -> dict:
        docs = [d if isinstance(d, str) else d["text"] for d in body["documents"]]
        if not docs:
            return {"model": body.get("model", ""), "results": []}
        q = self.embedder([str(body["query"])])[0]
        scores = self.embedder(docs) @ q
        order = np.argsort(-scores, kind="stable")
        top = int(body.get("top_n") or len(docs))
        return {"id": f"rerank-fake-{len(self.requests)}", "model": body.get("model", ""),
                "results": [{"index": int(i), "relevance_score": float(scores[i]), "document": {"text": docs[i]}}
                            for i in order[:top]],
                "usage": {"total_tokens": sum(count_tokens(d) for d in docs)}}
