"""Tolerant JSON extraction and a schema check (``jsonschema``), shared by every client and method.

Models wrap JSON in prose or code fences, use single quotes or trailing commas. We strip fences,
take the outermost object/array, and try a few conservative repairs before giving up.
"""
from __future__ import annotations

import json
import re
from typing import Any

from jsonschema import Draft202012Validator, validators

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


# The keywords replies are checked against: those the methods' schemas rely on for structure.
# Bounds (maxItems, minimum, ...) stay hints for the model (llama.cpp's grammar enforces them
# locally); a reply over a bound is trimmed by the method, not sent back for repair.
# "oneOf"/"anyOf": a reply must take one of the allowed shapes (MemR3's paper schema: the chosen action's text
# is required), else an API model could skip the payload without being asked to repair it.
CHECKED_KEYWORDS = ("type", "enum", "required", "properties", "items", "oneOf", "anyOf")
# JSON's "integer" is an int, never 1.0 or a bool (jsonschema's default accepts 1.0).
_TYPE_CHECKER = Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, v: isinstance(v, int) and not isinstance(v, bool))
_Validator = validators.create(
    meta_schema=Draft202012Validator.META_SCHEMA, type_checker=_TYPE_CHECKER,
    validators={k: Draft202012Validator.VALIDATORS[k] for k in CHECKED_KEYWORDS})
_RANK = {"type": 0, "enum": 1, "required": 2}


def _order(error, schema: dict) -> list:
    """Where ``error`` sits in a depth-first walk of the schema: a node's type, enum and required
    before its properties (in schema order) and items (in index order); the first error is reported."""
    key, sub = [], schema
    for step in error.absolute_path:
        if isinstance(step, int):
            key.append((1, step))
            sub = sub.get("items") or {}
        else:
            props = list(sub.get("properties") or {})
            key.append((1, props.index(step) if step in props else len(props)))
            sub = (sub.get("properties") or {}).get(step) or {}
    return key + [(0, _RANK.get(error.validator, 3))]


def _message(error) -> str:
    path, value, expected = error.json_path, error.instance, error.validator_value
    if error.validator == "type":
        return f"{path}: expected {expected}, got {type(value).__name__}"
    if error.validator == "enum":
        return f"{path}: {value!r} not one of {expected}"
    if error.validator == "required":
        missing = next(k for k in expected if k not in value)
        return f"{path}: missing required key {missing!r}"
    if error.validator in ("oneOf", "anyOf"):
        reasons = sorted({_message(e) for e in error.context or ()})
        why = f" ({'; '.join(reasons[:3])})" if reasons else ""
        return f"{path}: matches none of the {len(expected)} allowed shapes{why}"
    return f"{path}: {error.message}"


def check_schema(value: Any, schema: dict | None) -> None:
    """Validate ``value`` against ``schema`` (``CHECKED_KEYWORDS`` only) with ``jsonschema``.

    Raises ``ParseError`` naming the path of the first failure, e.g. ``$.facts[0]: missing required
    key 'content'``. The message goes into the repair prompt, so its wording is part of the cache key
    of a repair call: keep it stable. (llama.cpp's grammar-constrained decoding already guarantees
    structure for the local model; this catches API models and free-text fallbacks.)
    """
    if not schema:
        return
    errors = list(_Validator(schema).iter_errors(value))
    if errors:
        first = min(errors, key=lambda e: _order(e, schema))
        raise ParseError(_message(first), json.dumps(value)[:500])


def parse_json(text: str, schema: dict | None = None) -> Any:
    value = extract_json(text)
    check_schema(value, schema)
    return value
