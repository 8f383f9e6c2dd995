"""The components a paper ran its method with: the embedder and, where the paper has one, the reranker.

A paper's algorithm on other components is not the paper's method: its thresholds were set for its embedder,
and H-Mem's Table 8 measures what dropping its reranker costs (-1.9 F1). Each method declares its paper's
components (``MemoryMethod.components``); ``--embedder auto`` and ``--reranker auto`` use them where they can
be reached (an OpenAI-compatible endpoint), and whenever the embedder or reranker in use is not the paper's,
``component_departures`` says so in the same words as any other departure (``param_notes``, the app header,
the report, the manifest).
"""
from __future__ import annotations

import re
from dataclasses import dataclass


#: the ``param_notes`` / departure keys of components (the rest are the method's own parameters)
COMPONENT_KEYS = ("embedder", "reranker")


def parameter_notes(notes: dict) -> dict:
    """``notes`` without the components' entries: what the profile's parameters alone depart on."""
    return {k: v for k, v in notes.items() if k not in COMPONENT_KEYS}


@dataclass(frozen=True)
class PaperComponents:
    """``embedder``: the embedding model as the paper names it; ``embedder_served``: the name an
    OpenAI-compatible ``/embeddings`` endpoint serves it under (OpenAI's own name for text-embedding-3-*, the
    Hugging Face id for an open model served by vLLM or llama.cpp); ``embedder_on_openai``: True when OpenAI's
    own API serves it (then the LLM's endpoint is enough), False when it needs ``--embedder-url``.
    ``reranker`` / ``reranker_served``: the same for the reranker (None: the paper reranks nothing).
    ``source``: where the paper says so; ``note``: anything a reader should know (e.g. the authors' code
    uses another embedder than the paper's text)."""

    embedder: str
    embedder_served: str
    embedder_on_openai: bool
    source: str
    reranker: str | None = None
    reranker_served: str | None = None
    note: str = ""


def _key(name: str | None) -> str:
    """A model name compared loosely: no organisation prefix, case, punctuation or quantisation suffix
    (``Qwen/Qwen3-Embedding-4B`` = ``qwen3-embedding-4b``; ``all-MiniLM-L6-v2-int8`` = ``all-minilm-l6-v2``)."""
    if not name:
        return ""
    name = name.split(":", 1)[-1].rsplit("/", 1)[-1].lower()
    name = re.sub(r"[-_.](int8|q8_0|q4_k_m|f16|fp16|gguf|onnx)$", "", name)
    return re.sub(r"[^a-z0-9]", "", name)


def same_model(a: str | None, b: str | None) -> bool:
    """True when ``a`` and ``b`` name the same model (``_key``)."""
    return bool(a) and bool(b) and _key(a) == _key(b)


def component_departures(components: PaperComponents | None, *, embedder: str | None,
                         reranker: str | None = None) -> dict[str, tuple[str, str]]:
    """``"embedder"`` / ``"reranker"`` -> (the one in use, note) for each component that is not the paper's.

    ``embedder``: the name of the embedder in use (``Embedder.name``; None: a method not given its services
    yet, whose components are not judged at all); ``reranker``: the reranker's name, or None when none runs."""
    if components is None or embedder is None:
        return {}
    out: dict[str, tuple[str, str]] = {}
    if embedder is not None and not same_model(embedder, components.embedder) \
            and not same_model(embedder, components.embedder_served):
        out["embedder"] = (embedder, f"the paper embeds with {components.embedder} ({components.source}); "
                                     "its thresholds belong to that encoder")
    if components.reranker and not (same_model(reranker, components.reranker)
                                    or same_model(reranker, components.reranker_served)):
        used = reranker or "none"
        out["reranker"] = (used, f"the paper reranks with {components.reranker} ({components.source})")
    return out
