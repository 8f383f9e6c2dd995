"""``CachedLLM``: a content-addressed response cache that doubles as a record/replay cassette.

The key is the sha256 of sorted-key JSON of (model, messages, schema, temperature, seed,
max_tokens) — never credentials or base URLs — so a changed prompt invalidates exactly the calls
it changes. The store is a JSON Lines file (one entry per line: key, role, model, messages,
reply, token counts): plain text, diffable, committable. Appends and rewrites hold an exclusive
lock (``filelock``: a ``<cassette>.lock`` file beside it, on POSIX and Windows alike) and write
whole lines, so several processes or threads may record into one cassette.

Modes: ``auto`` (hit or call the inner model and record), ``replay`` (hit or ``CacheMiss``; no
model needed), ``record`` (always call and overwrite the entry).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Literal

from filelock import FileLock

from .base import BaseLLM, Generation
from .errors import CacheMiss
from .tokens import count_message_tokens, count_tokens


def cache_key(model: str, messages, schema, temperature, seed, max_tokens) -> str:
    payload = {"model": model, "messages": list(messages), "schema": schema, "temperature": float(temperature),
               "seed": seed, "max_tokens": max_tokens}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class Cassette:
    """The on-disk JSONL store (or memory-only when ``path`` is None)."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = Path(path) if path else None
        self._entries: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._loaded_size = 0
        self.reload()

    def reload(self) -> None:
        """Read entries appended since the last load (other writers may have added some)."""
        if not self.path or not self.path.exists():
            return
        with self._lock, open(self.path, "r", encoding="utf-8") as f:
            f.seek(self._loaded_size)
            for line in f:
                if not line.endswith("\n"):
                    break  # a writer is mid-line; read it next time
                self._loaded_size += len(line.encode("utf-8"))
                line = line.strip()
                if line:
                    entry = json.loads(line)
                    self._entries[entry["key"]] = entry

    def get(self, key: str) -> dict | None:
        return self._entries.get(key)

    def put(self, entry: dict) -> None:
        with self._lock:
            self._entries[entry["key"]] = entry
        if not self.path:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        with self._file_lock(), open(self.path, "ab") as f:
            f.write(line)

    def _file_lock(self) -> FileLock:
        """The lock every writer of this cassette file takes (other processes included)."""
        return FileLock(f"{self.path}.lock")

    def __len__(self) -> int:
        return len(self._entries)

    def prune(self, keep: set[str]) -> int:
        """Rewrite the file with only the entries in ``keep`` (e.g. those a run used); returns how many went."""
        with self._file_lock() if self.path else contextlib.nullcontext():  # no append lands in between
            self.reload()  # entries other writers appended
            with self._lock:
                dropped = [k for k in self._entries if k not in keep]
                for k in dropped:
                    del self._entries[k]
                if self.path:
                    tmp = self.path.with_suffix(".tmp")
                    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                        for entry in self._entries.values():
                            f.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
                    tmp.replace(self.path)
                    self._loaded_size = self.path.stat().st_size
        return len(dropped)

    def models(self) -> set[str]:
        return {e["model"] for e in self._entries.values()}


class CachedLLM(BaseLLM):
    """Wrap any client with the cache. Hits return ``cached=True`` with the recorded token counts."""

    def __init__(self, inner: BaseLLM | None, path: str | os.PathLike | None = None, *,
                 mode: Literal["auto", "replay", "record"] = "auto", model: str | None = None):
        super().__init__()
        if mode not in ("auto", "replay", "record"):
            raise ValueError(f"mode must be auto, replay or record, got {mode!r}")
        self.inner = inner
        self.mode = mode
        self.cassette = Cassette(path)
        if model is None:
            if inner is not None:
                model = inner.model
            else:
                models = self.cassette.models()
                if len(models) != 1:
                    raise ValueError(f"replaying {path} needs model=...; the cassette holds {sorted(models) or 'none'}")
                model = models.pop()
        self.model = model
        if inner is None and mode != "replay":
            raise ValueError("CachedLLM without an inner model can only replay (mode='replay')")
        self.hits = 0
        self.misses = 0  # calls that went to the inner model (and were recorded)
        self.replay_misses = 0  # calls a replay-only cassette could not answer (each raised CacheMiss)
        self.used_keys: set[str] = set()  # every key served or recorded by this client

    @classmethod
    def replay(cls, path, *, model: str | None = None) -> "CachedLLM":
        return cls(None, path, mode="replay", model=model)

    def _generate(self, messages, *, schema, temperature, seed, max_tokens, role) -> Generation:
        key = cache_key(self.model, messages, schema, temperature, seed, max_tokens)
        self.used_keys.add(key)
        if self.mode != "record":
            entry = self.cassette.get(key)
            if entry is None and self.cassette.path:
                self.cassette.reload()
                entry = self.cassette.get(key)
            if entry is not None:
                self.hits += 1
                return Generation(entry["reply"], self.model, entry["prompt_tokens"], entry["completion_tokens"], True)
            if self.mode == "replay":
                self.replay_misses += 1
                raise CacheMiss(f"no recorded reply for role={role!r} (model {self.model}) in "
                                f"{self.cassette.path or 'memory'}; the prompt or parameters changed since recording")
        self.misses += 1
        gen = self.inner._generate(messages, schema=schema, temperature=temperature, seed=seed,
                                   max_tokens=max_tokens, role=role)
        pt = gen.prompt_tokens if gen.prompt_tokens is not None else count_message_tokens(messages)
        ct = gen.completion_tokens if gen.completion_tokens is not None else count_tokens(gen.text)
        self.cassette.put({"key": key, "role": role, "model": self.model, "messages": list(messages),
                           "schema": schema, "temperature": temperature, "seed": seed, "max_tokens": max_tokens,
                           "reply": gen.text, "prompt_tokens": pt, "completion_tokens": ct})
        return Generation(gen.text, gen.model, pt, ct, False)
