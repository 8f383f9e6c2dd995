"""Tolerant JSON extraction, local repair (``json_repair``) and a schema check (``jsonschema``), shared by every
client and method.

Models wrap JSON in prose or code fences, use single quotes or trailing commas. ``extract_json`` strips fences,
takes the outermost object/array and drops trailing commas: the strict reading. ``read_json`` adds the local
repair the papers' own code applies (RecMem's and MemR3's clients call ``json_repair`` before anything else): a
reply the strict reading cannot parse (cut at the token cap, an unclosed string, a missing bracket) is repaired
here, without a model call, and the repaired value must still pass the schema, or the strict error stands.
"""
from __future__ import annotations

import json
import re
from typing import Any

import json_repair
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


#: ``read_json``'s second value when the reply needed ``json_repair`` (the trace and the ledger say so)
LOCAL_REPAIR = "local"


def repair_locally(text: str) -> tuple[Any, list[str]]:
    """``json_repair``'s reading of ``text``: (value, what it repaired, one line each). A reply with no JSON in
    it comes back as ``""``, which no object or array schema accepts."""
    value, log = json_repair.loads(text or "", logging=True)
    return value, [str(entry.get("text", entry)) if isinstance(entry, dict) else str(entry) for entry in log]


def read_json(text: str, schema: dict | None = None, *, local_repair: bool = False) -> tuple[Any, str]:
    """(value, how it was read): ``""`` when the strict reading (``extract_json``) parsed it, ``LOCAL_REPAIR`` when
    only ``json_repair`` could (with ``local_repair``). Either way the value passes ``check_schema(schema)``.

    Local repair is tried only where the strict reading found no JSON: a reply that parses but breaks the schema
    is a wrong answer, not malformed text, and goes back to the model as before. When the repaired value breaks
    the schema too, the strict reading's ``ParseError`` is raised unchanged (its message is part of the repair
    call's cache key: a run with local repair replays the repair calls of a recording made without it), with
    ``local_repair`` set to why the repaired value was refused. Without a ``schema`` nothing could refuse a
    repaired value (a reply with no JSON at all repairs to ``""``), so there is no local repair."""
    try:
        value = extract_json(text)
    except ParseError as strict:
        if not local_repair or not schema:
            raise
        value, _log = repair_locally(text)
        try:
            check_schema(value, schema)
        except ParseError as refused:
            strict.local_repair = f"json_repair's value refused: {refused}"
            raise strict from None
        return value, LOCAL_REPAIR
    check_schema(value, schema)
    return value, ""
