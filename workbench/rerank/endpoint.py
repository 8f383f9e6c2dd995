"""A rerank endpoint over HTTP: the Jina/Cohere request shape that vLLM (``/rerank``, ``/v1/rerank``) and
llama.cpp's server (``--reranking``; ``/rerank``, ``/v1/rerank``) also serve.

``POST {base_url}/rerank`` with ``{"model", "query", "documents", "top_n"}``; the reply's
``{"results": [{"index", "relevance_score"}, ...]}`` (sorted by score, as servers send it) is put back in
input order. This is how the papers' own rerankers run here: Qwen3-Reranker-4B (H-Mem) and
ms-marco-MiniLM-L-12-v2 (MemR3) served by vLLM or llama.cpp on a machine that has them, since no package
installs either offline (docs/rerankers.md).

The reply is untrusted data from another machine: it is read with a size limit, and every index and
score is checked (in range, each document once, a finite number) before a method sees it; anything else is a
``RerankerError`` that names the endpoint and what was wrong, never a silent fallback to no reranking.
"""
from __future__ import annotations

import json
import math
import time
from typing import Sequence
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from ..failures import InWords

#: HTTP statuses worth another try: rate limiting and a server that is (re)starting or overloaded
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


class RerankerError(InWords, RuntimeError):
    """A rerank request failed or its reply could not be used; the message names the endpoint and why."""


def endpoint_words(url: str) -> str:
    """``url`` as it may be shown: scheme, host, port and path only (no user:password, query or fragment,
    where a token could hide)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def check_base_url(base_url: str) -> str:
    """``base_url`` without a trailing slash, or ``ValueError`` unless it is an http(s) URL with a host."""
    url = str(base_url or "").strip()
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        raise ValueError(f"reranker base URL {url!r} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"reranker base URL must be http(s)://host[:port][/path], got {endpoint_words(url)!r}")
    return url.rstrip("/")


def finite_number(value) -> float | None:
    """``value`` as a float when it is a JSON number that is finite as a float, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:  # an integer past float's range
        return None
    return value if math.isfinite(value) else None


class EndpointReranker:
    """Scores by a rerank endpoint (see the module docstring).

    ``model``: the name the server serves the model under (``name`` is the same, so a run's departures compare
    it with the paper's); ``base_url``: up to but without ``/rerank`` (``http://host:8000/v1`` for vLLM's
    ``/v1/rerank``); ``api_key``: sent as a Bearer token, given by the caller (this class reads no environment
    variable); ``batch_size``: documents per request (servers cap a request's size); ``timeout_s`` per request;
    ``attempts``: tries per request when the server cannot be reached, times out or answers 408/429/5xx;
    ``max_reply_bytes``: a longer reply is refused; ``client``: an ``httpx.Client`` to use instead of our own.

    ``pointwise``: a cross-encoder (or Qwen3-Reranker) scores each (query, document) pair on its own, so a
    score does not depend on the batch it was sent in and may be memoised (``CachedReranker``)."""

    pointwise = True

    def __init__(self, model: str, *, base_url: str, api_key: str | None = None, batch_size: int = 64,
                 timeout_s: float = 60.0, attempts: int = 3, max_reply_bytes: int = 8 << 20, client=None):
        if not isinstance(model, str) or not model.strip():
            raise ValueError("a rerank endpoint needs the model name the server serves (e.g. "
                             "Qwen/Qwen3-Reranker-4B), got none")
        for field, value, low in (("batch_size", batch_size, 1), ("attempts", attempts, 1),
                                  ("max_reply_bytes", max_reply_bytes, 1024)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{field} must be a whole number of at least {low}, got {value!r}")
        if not 0 < timeout_s <= 3600:
            raise ValueError(f"timeout_s must be between 0 and 3600 seconds, got {timeout_s!r}")
        self.name = model
        self.base_url = check_base_url(base_url)
        parts = urlsplit(self.base_url)  # a query string (a token parameter) stays after the path
        self.url = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/rerank"))
        self.where = endpoint_words(self.url)
        self.batch_size = batch_size
        self.timeout_s = float(timeout_s)
        self.attempts = attempts
        self.max_reply_bytes = max_reply_bytes
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        if client is None:
            import httpx  # installed with openai, which the workbench depends on

            client = httpx.Client(timeout=self.timeout_s)
        self.client = client

    def __call__(self, query: str, documents: Sequence[str]) -> np.ndarray:
        if not isinstance(query, str):
            raise TypeError(f"the rerank query must be text, got {type(query).__name__}")
        docs = list(documents)
        bad = next((i for i, d in enumerate(docs) if not isinstance(d, str)), None)
        if bad is not None:
            raise TypeError(f"document {bad} to rerank must be text, got {type(docs[bad]).__name__}")
        out = np.empty(len(docs), dtype=np.float64)
        for start in range(0, len(docs), self.batch_size):
            # an empty document is sent as one space: llama.cpp's server refuses an empty string
            batch = [d or " " for d in docs[start:start + self.batch_size]]
            out[start:start + len(batch)] = self._scores(self._post(query, batch), len(batch))
        return out

    def _post(self, query: str, batch: list[str]):
        import httpx

        body = {"model": self.name, "query": query, "documents": batch, "top_n": len(batch)}
        problem = ""
        for attempt in range(1, self.attempts + 1):
            try:
                with self.client.stream("POST", self.url, json=body, headers=self._headers,
                                        timeout=self.timeout_s) as resp:
                    if resp.status_code < 400:
                        return self._read_json(resp)
                    snippet = " ".join(self._read_some(resp, 300).split())
                    problem = f"answered HTTP {resp.status_code}" + (f": {snippet!r}" if snippet else "")
                    if resp.status_code not in RETRY_STATUSES:
                        break
            except httpx.TimeoutException:
                problem = f"did not answer within {self.timeout_s:g} s"
            except httpx.TransportError as exc:
                problem = f"could not be reached ({type(exc).__name__}: {exc})"
            if attempt < self.attempts:
                time.sleep(min(0.5 * 2 ** (attempt - 1), 8.0))
        tries = f" after {self.attempts} tries" if self.attempts > 1 and attempt == self.attempts else ""
        raise RerankerError(f"the rerank endpoint {self.where} ({self.name}) {problem}{tries}")

    def _read_some(self, resp, limit: int) -> str:
        data = b""
        for chunk in resp.iter_bytes():
            data += chunk
            if len(data) >= limit:
                break
        return data[:limit].decode("utf-8", "replace")

    def _read_json(self, resp):
        data = bytearray()
        for chunk in resp.iter_bytes():
            data += chunk
            if len(data) > self.max_reply_bytes:
                raise RerankerError(f"the rerank endpoint {self.where} sent a reply longer than "
                                    f"{self.max_reply_bytes:,} bytes; refused")
        try:
            return json.loads(bytes(data))
        except (ValueError, RecursionError) as exc:
            raise RerankerError(f"the rerank endpoint {self.where} sent a reply that is not JSON "
                                f"({type(exc).__name__}: {str(exc)[:120]})") from None

    def _scores(self, reply, n: int) -> np.ndarray:
        """The scores of a batch of ``n`` documents in input order, from the reply (checked, see the module)."""
        def bad(why: str) -> RerankerError:
            return RerankerError(f"the rerank endpoint {self.where} sent an unusable reply: {why}")

        results = reply.get("results") if isinstance(reply, dict) else None
        if not isinstance(results, list):
            raise bad('no "results" list')
        if len(results) != n:
            raise bad(f"{len(results)} results for {n} documents (top_n={n} was asked for)")
        out = np.full(n, np.nan, dtype=np.float64)
        for k, item in enumerate(results):
            if not isinstance(item, dict):
                raise bad(f"result {k} is not an object")
            index, score = item.get("index"), item.get("relevance_score")
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
                raise bad(f"result {k} has index {index!r}, not a whole number from 0 to {n - 1}")
            value = finite_number(score)
            if value is None:
                raise bad(f"result {k} has relevance_score {str(score)[:40]!r}, not a finite number")
            if not np.isnan(out[index]):
                raise bad(f"document {index} is scored twice")
            out[index] = value
        return out

    def close(self) -> None:
        self.client.close()

    def __repr__(self) -> str:
        return f"EndpointReranker({self.name!r}, base_url={endpoint_words(self.base_url)!r})"
