"""Tolerant JSON extraction and a light schema check, shared by every client and method.

Models wrap JSON in prose or code fences, use single quotes or trailing commas. We strip fences,
take the outermost object/array, and try a few conservative repairs before giving up.
"""
from __future__ import annotations

import json
import re
from typing import Any

from .errors import ParseError

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _outermost(text: str) -> str | None:
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    opener = text[start]
    closer = "}" if opener == "{" else "]"
    depth, in_str, esc = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return text[start:]


def extract_json(text: str) -> Any:
    """Parse the JSON value in ``text`` or raise ``ParseError`` carrying the raw text."""
    if text is None:
        raise ParseError("empty reply", "")
    candidates = [text.strip()]
    fenced = _FENCE.search(text)
    if fenced:
        candidates.append(fenced.group(1).strip())
    outer = _outermost(text)
    if outer:
        candidates.append(outer)
    for cand in candidates:
        for variant in (cand, _TRAILING_COMMA.sub(r"\1", cand)):
            try:
                return json.loads(variant, strict=False)
            except (json.JSONDecodeError, ValueError):
                continue
    raise ParseError(f"no JSON value found in reply: {text[:200]!r}", text)


_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int, "number": (int, float)}


def check_schema(value: Any, schema: dict | None, path: str = "$") -> None:
    """Check the parts of a JSON Schema the methods use: type, required, properties, items, enum.

    Raises ``ParseError`` naming the path. (llama.cpp's grammar-constrained decoding already
    guarantees structure for the local model; this catches API models and free-text fallbacks.)
    """
    if not schema:
        return
    typ = schema.get("type")
    if isinstance(typ, str) and typ in _TYPES:
        ok = isinstance(value, _TYPES[typ]) and not (typ in ("integer", "number") and isinstance(value, bool))
        if not ok:
            raise ParseError(f"{path}: expected {typ}, got {type(value).__name__}", json.dumps(value)[:500])
    if "enum" in schema and value not in schema["enum"]:
        raise ParseError(f"{path}: {value!r} not one of {schema['enum']}", json.dumps(value)[:500])
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                raise ParseError(f"{path}: missing required key {key!r}", json.dumps(value)[:500])
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                check_schema(value[key], sub, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            check_schema(item, schema["items"], f"{path}[{i}]")


def parse_json(text: str, schema: dict | None = None) -> Any:
    value = extract_json(text)
    check_schema(value, schema)
    return value
