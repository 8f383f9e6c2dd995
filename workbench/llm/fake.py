"""``ScriptedLLM``: a deterministic fake for tests, in queue or match mode.

Queue mode: ``ScriptedLLM(["first reply", {"answer": "x"}])`` returns replies in order.
Match mode: ``ScriptedLLM({"hymem.light": [...], "Caroline": "..."})`` picks the first key equal to
the call's ``role`` (or a prefix of it before a dot-suffix), else the first key found as a
substring of the prompt; a list value is consumed in order. Values may be strings, JSON-able
objects (dumped), exceptions (raised) or callables ``f(messages) -> reply``.
``default="auto"`` answers any unmatched call with a minimal value that satisfies its schema
(or ``"unknown"`` for free text), which lets contract tests run any method without a script.
Every request is kept in ``requests`` for assertions.
"""
from __future__ import annotations

import json
import threading
from collections import deque

from .base import BaseLLM, Generation
from .errors import LLMError


class ScriptedLLM(BaseLLM):
    #: scripted replies stand in for the offline models in tests, so a method built with ``profile="auto"``
    #: takes its ``small`` profile over them (set False, or pass ``profile="paper"``, to test the paper one)
    small_model = True

    def __init__(self, responses, *, model: str = "scripted", default=None):
        super().__init__()
        self.model = model
        self.default = default
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        if isinstance(responses, dict):
            self._queue = None
            self._map = {k: deque(v) if isinstance(v, list) else v for k, v in responses.items()}
        else:
            self._queue = deque(responses)
            self._map = None

    def _pick(self, messages, role):
        if self._queue is not None:
            if not self._queue:
                if self.default is not None:
                    return self.default
                raise LLMError(f"ScriptedLLM script exhausted (role={role!r})")
            return self._queue.popleft()
        base_role = role.split(".repair")[0].split(".retry")[0]
        prompt = "\n".join(m["content"] for m in messages)
        key = next((k for k in self._map if k == role or k == base_role), None)
        if key is None:
            key = next((k for k in self._map if k in prompt), None)
        if key is None:
            if self.default is not None:
                return self.default
            raise LLMError(f"ScriptedLLM has no reply for role={role!r}; prompt starts {prompt[:120]!r}")
        value = self._map[key]
        if isinstance(value, deque):
            if not value:
                raise LLMError(f"ScriptedLLM replies for {key!r} exhausted")
            return value.popleft() if len(value) > 1 else value[0]
        return value

    def _generate(self, messages, *, schema, temperature, seed, max_tokens, role) -> Generation:
        with self._lock:
            self.requests.append({"messages": messages, "role": role, "schema": schema, "seed": seed})
            reply = self._pick(messages, role)
        if isinstance(reply, str) and reply == "auto" and self.default == "auto":
            reply = auto_reply(schema) if schema is not None else "unknown"
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(messages)
        if not isinstance(reply, str):
            reply = json.dumps(reply)
        return Generation(reply, self.model)

    def roles(self) -> list[str]:
        return [r.get("role", "") for r in self.requests]


def auto_reply(schema: dict):
    """The smallest value that satisfies ``schema`` (enums take their first option)."""
    if "enum" in schema:
        return schema["enum"][0]
    typ = schema.get("type")
    if typ == "object":
        props = schema.get("properties", {})
        return {k: auto_reply(props.get(k, {"type": "string"})) for k in schema.get("required", [])}
    if typ == "array":
        return []
    if typ == "boolean":
        return True
    if typ in ("integer", "number"):
        return schema.get("minimum", 0)
    return "unknown"
