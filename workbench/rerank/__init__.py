"""Rerankers: ``reranker(query, documents) -> np.ndarray`` of one relevance score per document (higher is more
relevant; only the order within one call is meaningful). The paper methods that rerank (H-Mem, MemR3) take one
as the service parameter ``reranker=`` (None: no reranking, a departure from those papers).

- ``EndpointReranker``: a rerank endpoint (vLLM, llama.cpp's server, or a Jina/Cohere-style service), the way
  to run a paper's own reranker (Qwen3-Reranker-4B for H-Mem, ms-marco-MiniLM-L-12-v2 for MemR3);
- ``LexicalReranker``: BM25 word overlap, deterministic and instant, for tests and offline runs; no paper's;
- ``CachedReranker``: memoises a pointwise reranker by (query, document), optionally on disk.

No local cross-encoder: none of the papers' rerankers, nor any other cross-encoder, is installed offline by a
package registry here (each package that offers one downloads the weights from a model hub on first use, which
this workbench never does). ``local_cross_encoders()`` is therefore empty and ``crossencoder[:<model>]`` raises
``RerankerUnavailable`` saying so; docs/rerankers.md lists what was searched.
"""
from __future__ import annotations

import os
from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from .cache import CachedReranker
from .endpoint import EndpointReranker, RerankerError
from .lexical import LexicalReranker


@runtime_checkable
class Reranker(Protocol):
    name: str

    def __call__(self, query: str, documents: Sequence[str]) -> np.ndarray: ...


class RerankerUnavailable(RuntimeError):
    """The reranker asked for cannot run here (offline); the message says why and what to use instead."""


#: The environment variable ``reranker_from_spec`` reads a rerank endpoint's key from (when no ``api_key`` is
#: given). Not OPENAI_API_KEY: OpenAI's API has no rerank endpoint, so that key would only be sent to another
#: host, which should not receive it.
API_KEY_ENV = "WORKBENCH_RERANKER_API_KEY"

RERANKER_SPECS = ("none | lexical | endpoint:<model>@<base_url> (or openai:<model>@<base_url>; "
                  "@<base_url> may be left out when a base URL is given separately) | crossencoder[:<model>]")


def local_cross_encoders() -> tuple[str, ...]:
    """The cross-encoder models that run here offline, from an installed package: none (see the module)."""
    return ()


def _no_cross_encoder(model: str) -> RerankerUnavailable:
    wanted = f" {model}" if model else ""
    return RerankerUnavailable(
        f"no local cross-encoder{wanted} can run here: no package installs cross-encoder weights offline (the ones "
        "that offer one download them from a model hub on first use). Serve the model with vLLM or llama.cpp's "
        "server and use endpoint:<model>@<base_url> (e.g. endpoint:cross-encoder/ms-marco-MiniLM-L-12-v2@"
        "http://127.0.0.1:8000/v1), or lexical for a word-overlap stand-in that is no paper's reranker")


def reranker_from_spec(spec: str, *, base_url: str | None = None, api_key: str | None = None):
    """The reranker a command-line spec names (``RERANKER_SPECS``), or None for ``none``.

    ``endpoint:<model>@<base_url>`` posts to ``<base_url>/rerank`` (e.g. ``http://127.0.0.1:8000/v1`` for vLLM);
    ``base_url`` stands in for a spec without ``@<base_url>``; ``api_key`` is sent as a Bearer token, else the
    ``WORKBENCH_RERANKER_API_KEY`` environment variable when set (a local server needs none). Endpoint rerankers
    come memoised (``CachedReranker``). A bad spec is a ``ValueError`` that lists the valid ones; a
    cross-encoder, which cannot run here, is ``RerankerUnavailable``."""
    spec = str(spec if spec is not None else "").strip()
    if spec == "none":
        return None
    if spec == "lexical":
        return LexicalReranker()
    kind, colon, rest = spec.partition(":")
    if kind == "crossencoder":
        raise _no_cross_encoder(rest.strip())
    if kind in ("endpoint", "openai") and colon:
        model, at, url = rest.partition("@")
        model, url = model.strip(), url.strip()
        if not model:
            raise ValueError(f"reranker {spec!r} names no model: use {RERANKER_SPECS}")
        if at and base_url and url.rstrip("/") != str(base_url).strip().rstrip("/"):
            raise ValueError(f"reranker {spec!r} names a base URL and another one was given separately; give one")
        url = url or (base_url or "").strip()
        if not url:
            raise ValueError(f"reranker {spec!r} needs the endpoint's base URL (OpenAI's own API serves no "
                             f"rerank): {kind}:{model}@<base_url>, e.g. {kind}:{model}@http://127.0.0.1:8000/v1")
        key = api_key if api_key is not None else (os.environ.get(API_KEY_ENV) or None)
        return CachedReranker(EndpointReranker(model, base_url=url, api_key=key))
    raise ValueError(f"unknown reranker {spec!r}: use {RERANKER_SPECS}")


def offline_reranker(name: str):
    """Rebuild, with no network, the reranker a run manifest names by its ``name``: only ``lexical-bm25``.

    Anything else raises ``RerankerUnavailable`` rather than standing in another model, since other scores
    would reorder what the run's method saw (an endpoint's scores can come back from a ``CachedReranker`` file)."""
    name = str(name or "").strip()
    if name == LexicalReranker.name:
        return LexicalReranker()
    if not name:
        raise RerankerUnavailable("the run does not record which reranker it used")
    raise RerankerUnavailable(f"{name} is not a reranker this package can rebuild offline (it was served by an "
                              "endpoint: that endpoint, or a CachedReranker file of its scores, is needed to "
                              "rerank as the run did)")


__all__ = ["Reranker", "EndpointReranker", "LexicalReranker", "CachedReranker", "RerankerError",
           "RerankerUnavailable", "API_KEY_ENV", "RERANKER_SPECS", "reranker_from_spec", "local_cross_encoders",
           "offline_reranker"]
