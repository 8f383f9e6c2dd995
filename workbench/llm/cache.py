"""``CachedLLM``: a content-addressed response cache that doubles as a record/replay cassette.

The key is the sha256 of sorted-key JSON of (model, messages, schema, temperature, seed,
max_tokens) — never credentials or base URLs — so a changed prompt invalidates exactly the calls
it changes. The store is a JSON Lines file (one entry per line: key, role, model, messages,
reply, token counts): plain text, diffable, committable. Appends take an exclusive file lock and
write whole lines, so several processes or threads may record into one cassette.

Modes: ``auto`` (hit or call the inner model and record), ``replay`` (hit or ``CacheMiss``; no
model needed), ``record`` (always call and overwrite the entry). A reply that cannot be recorded (a
full or read-only disk) raises ``CassetteWriteFailed``, which stops the run rather than becoming a
failure of the method that asked (``failures.EnvironmentFailure``).
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Literal

from ..jsonl import BadLine, append_line, read_jsonl, write_text_atomic
from .base import BaseLLM, Generation
from .errors import CacheMiss, CassetteWriteFailed
from .tokens import count_message_tokens, count_tokens


def cache_key(model: str, messages, schema, temperature, seed, max_tokens) -> str:
    payload = {"model": model, "messages": list(messages), "schema": schema, "temperature": float(temperature),
               "seed": seed, "max_tokens": max_tokens}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


#: bounds no real call reaches: a cassette line past them was written by hand (or by an attacker)
MAX_CALL_TOKENS = 10_000_000
MAX_CALL_SECONDS = 86_400


def check_entry(row: dict) -> str | None:
    """Why a cassette line cannot be used (None when it can): the fields replay needs, typed."""
    for name, kind in (("key", str), ("model", str), ("reply", str)):
        if not isinstance(row.get(name), kind):
            return f"field '{name}' missing or not a {kind.__name__}"
    for name in ("prompt_tokens", "completion_tokens"):
        v = row.get(name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            return f"field '{name}' missing or not a non-negative integer"
        if v > MAX_CALL_TOKENS:
            return f"field '{name}' is {v}, more than any one call can use ({MAX_CALL_TOKENS:,})"
    latency = row.get("latency_s")
    if latency is not None and (isinstance(latency, bool) or not isinstance(latency, (int, float))
                                or not 0 <= latency <= MAX_CALL_SECONDS):
        return f"field 'latency_s' is {latency!r}, not a call time in seconds (0 to {MAX_CALL_SECONDS})"
    return None


class Cassette:
    """The on-disk JSONL store (or memory-only when ``path`` is None).

    Loading is tolerant (``workbench.jsonl.read_jsonl``): a garbage, torn or non-UTF-8 line is
    skipped and listed in ``bad_lines`` as ``file:line: reason``; every other entry still replays.
    ``workbench cassette check|repair FILE`` reports such lines and rewrites the file without them.
    """

    def __init__(self, path: str | os.PathLike | None):
        self.path = Path(path) if path else None
        self._entries: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._loaded_size = 0
        self._next_line = 1
        self.bad_lines: list[BadLine] = []
        self._reported: set[int] = set()
        self.reload()

    def reload(self) -> None:
        """Read entries appended since the last load (other writers may have added some)."""
        if not self.path or not self.path.exists():
            return
        with self._lock:
            got = read_jsonl(self.path, check=check_entry, offset=self._loaded_size, first_line=self._next_line)
            for entry in got.rows:
                self._entries[entry["key"]] = entry
            # A torn final line stays unconsumed (the next append puts a newline after it, and it is
            # then read as a complete bad line): each line number is reported once.
            new = [b for b in got.bad if b.line not in self._reported]
            self._reported.update(b.line for b in new)
            self.bad_lines.extend(new)
            self._loaded_size, self._next_line = got.end_offset, got.next_line
        if new:
            warnings.warn(f"cassette: skipped {len(new)} unusable line(s), first {new[0]}; "
                          f"see `workbench cassette check {self.path}`", stacklevel=3)

    def get(self, key: str) -> dict | None:
        return self._entries.get(key)

    def put(self, entry: dict) -> None:
        with self._lock:
            self._entries[entry["key"]] = entry
        if not self.path:
            return
        append_line(self.path, json.dumps(entry, ensure_ascii=False, sort_keys=True))

    def __len__(self) -> int:
        return len(self._entries)

    def prune(self, keep: set[str]) -> int:
        """Rewrite the file with only the entries in ``keep`` (e.g. those a run used); returns how many went."""
        self.reload()  # entries other writers appended
        with self._lock:
            dropped = [k for k in self._entries if k not in keep]
            for k in dropped:
                del self._entries[k]
            if self.path:
                self._rewrite()
        return len(dropped)

    def _rewrite(self) -> None:
        write_text_atomic(self.path, "".join(json.dumps(e, ensure_ascii=False, sort_keys=True) + "\n"
                                             for e in self._entries.values()))
        self._loaded_size = self.path.stat().st_size
        self._next_line = len(self._entries) + 1
        self.bad_lines, self._reported = [], set()

    def models(self) -> set[str]:
        return {e["model"] for e in self._entries.values()}


def check_cassette(path: str | os.PathLike) -> dict:
    """A cassette's health: entries, distinct keys and every bad line (``file:line: reason``)."""
    got = read_jsonl(path, check=check_entry)
    return {"file": str(path), "entries": len(got.rows), "keys": len({r["key"] for r in got.rows}),
            "bad_lines": [str(b) for b in got.bad], "torn_tail": got.torn_tail}


def cassette_costs(path: str | os.PathLike) -> dict:
    """What recording a cassette cost, per role family (the role's first part: a method's own prefix,
    e.g. ``ama`` for ``ama.construct.retry``, or ``judge``): calls, prompt and completion tokens, and
    the seconds the live calls took (``latency_s``, written by ``CachedLLM`` when it records; entries
    recorded before that field existed are counted in ``calls_without_latency``). Summed call time,
    so a recording stopped and resumed over several sessions still adds up; time outside the model
    (embedding, the harness) is not in it, and a process's first live call also holds the model's
    load when the backend loads lazily (llama.cpp does)."""
    got = read_jsonl(path, check=check_entry)
    entries: dict[str, dict] = {}
    for row in got.rows:  # the last entry per key, as replay sees it
        entries.pop(row["key"], None)
        entries[row["key"]] = row
    out: dict[str, dict] = {}
    for e in entries.values():
        family = str(e.get("role") or "unknown").split(".", 1)[0]
        agg = out.setdefault(family, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0,
                                      "calls_without_latency": 0})
        agg["calls"] += 1
        agg["prompt_tokens"] += e["prompt_tokens"]
        agg["completion_tokens"] += e["completion_tokens"]
        latency = e.get("latency_s")
        if isinstance(latency, (int, float)) and not isinstance(latency, bool) and latency >= 0:
            agg["seconds"] = round(agg["seconds"] + float(latency), 3)
        else:
            agg["calls_without_latency"] += 1
    return {"file": str(path), "models": sorted({str(e.get("model")) for e in entries.values()}),
            "bad_lines": [str(b) for b in got.bad], "by_role": dict(sorted(out.items()))}


def repair_cassette(path: str | os.PathLike) -> dict:
    """Rewrite a cassette atomically with only its good entries (the last one per key, in file
    order). Returns ``check_cassette``'s report of the file as it was, plus ``kept``."""
    report = check_cassette(path)
    got = read_jsonl(path, check=check_entry)
    entries: dict[str, dict] = {}
    for row in got.rows:
        entries.pop(row["key"], None)
        entries[row["key"]] = row
    write_text_atomic(path, "".join(json.dumps(e, ensure_ascii=False, sort_keys=True) + "\n"
                                    for e in entries.values()))
    return {**report, "kept": len(entries)}


class CachedLLM(BaseLLM):
    """Wrap any client with the cache. Hits return ``cached=True`` with the recorded token counts."""

    @property
    def small_model(self) -> bool:
        """The wrapped model's answer; a replay without one answers by the recorded model's name."""
        return self.inner.small_model if self.inner is not None else BaseLLM.small_model.fget(self)

    def __init__(self, inner: BaseLLM | None, path: str | os.PathLike | None = None, *,
                 mode: Literal["auto", "replay", "record"] = "auto", model: str | None = None):
        super().__init__()
        if mode not in ("auto", "replay", "record"):
            raise ValueError(f"mode must be auto, replay or record, got {mode!r}")
        if mode == "replay" and path and not Path(path).is_file():
            raise FileNotFoundError(f"cassette not found: {path}")
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
        start = time.perf_counter()
        gen = self.inner._generate(messages, schema=schema, temperature=temperature, seed=seed,
                                   max_tokens=max_tokens, role=role)
        latency = time.perf_counter() - start
        pt = gen.prompt_tokens if gen.prompt_tokens is not None else count_message_tokens(messages)
        ct = gen.completion_tokens if gen.completion_tokens is not None else count_tokens(gen.text)
        entry = {"key": key, "role": role, "model": self.model, "messages": list(messages), "schema": schema,
                 "temperature": temperature, "seed": seed, "max_tokens": max_tokens, "reply": gen.text,
                 "prompt_tokens": pt, "completion_tokens": ct,
                 "latency_s": round(latency, 3)}  # what recording it cost (``cassette_costs``)
        try:
            self.cassette.put(entry)
        except OSError as exc:  # the machine's failure, not the method's: it stops the run (``EnvironmentFailure``)
            raise CassetteWriteFailed(self.cassette.path, exc) from exc
        return Generation(gen.text, gen.model, pt, ct, False)
