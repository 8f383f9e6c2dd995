"""Bounded outputs: per-role ``max_tokens`` and schema limits so a small model stops before the cap.

A 0.5B model asked for "the facts" under a plain ``{"type": "array", "items": {"type": "string"}}``
schema often writes until ``max_tokens`` (512) cuts the JSON, and the repair and retry calls that
follow cost more than the reply (48 % of RecMem's construction tokens on the demo slice). A bound
tells the grammar-constrained decoder where to stop: arrays get ``maxItems``, strings
``maxLength``, and the call a smaller ``max_tokens`` that a bounded reply always fits.

Opt-in (``llm.output_bounds = BOUNDED_OUTPUTS`` or ``workbench eval --bounded-outputs``): the
bounded schema and ``max_tokens`` are part of the cassette key, so turning bounds on makes every
bounded role a new call (a new recording), while runs without bounds replay exactly as before.
Replies are still validated against the method's own schema, so a backend that ignores the bound
(a server without grammar support) is never penalised for it.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass


@dataclass(frozen=True)
class Bound:
    """Limits for one role: items per array, characters per string, tokens per reply."""

    max_items: int | None = None
    max_length: int | None = None
    max_tokens: int | None = None


# Roles whose replies ran into the 512-token cap in benchmarks/results/construction.json (RecMem
# consolidation and refinement, EagerFacts extraction on LoCoMo). The limits are chosen so a reply
# at the bound fits max_tokens: 8 items x 200 chars ~ 8 x 45 tokens + JSON ~ 400 tokens.
BOUNDED_OUTPUTS: dict[str, Bound] = {
    "recmem.consolidate": Bound(max_items=8, max_length=300, max_tokens=448),
    "recmem.refine": Bound(max_items=8, max_length=200, max_tokens=400),
    "recmem.refine_merge": Bound(max_items=8, max_length=200, max_tokens=400),
    "recmem.refine_direct": Bound(max_items=8, max_length=200, max_tokens=400),
    "eager_facts.extract": Bound(max_items=8, max_length=200, max_tokens=400),
    "eager_floor.extract": Bound(max_items=8, max_length=200, max_tokens=400),  # the same method, renamed
    # The Mem0-style reference's extraction: on LoCoMo conv-30 the 0.5B repeated "Gina is a great dancer." to the
    # cap in 2 of its first 17 extraction calls (the reply and its repair; the retry closed at 30 tokens)
    "mem0_style.extract": Bound(max_items=8, max_length=200, max_tokens=400),
    # MemR3's router: on LoCoMo conv-30 the 0.5B model ran every router reply, its repair and its retry into
    # the 512-token cap (6 of 6 calls, about 35 s each on 2 cores), and the 1.5B repeated an evidence bullet
    # to the cap in the demo recording; the same bound as the 1.5B demo profile's (workbench.demo)
    "memr3.router": Bound(max_items=8, max_length=240, max_tokens=448),
    # Seen running into the cap with the 1.5B in the demo recording (the evidence is in
    # ``workbench.demo._demo_bounds``); the same bounds, so the demo's cassette keys do not change
    "hmem.consolidate": Bound(max_length=640, max_tokens=256),  # the prompt asks for <= 80 words
    "hmem.extract": Bound(max_items=8, max_length=300, max_tokens=768),
    "hmem.profile": Bound(max_length=480, max_tokens=288),  # two strings of a few sentences
    "hmem.plan": Bound(max_items=4, max_length=200, max_tokens=320),
    "hymem.summarize": Bound(max_items=10, max_length=200, max_tokens=448),
    "ama.episode": Bound(max_length=800, max_tokens=320),  # a title, a paragraph, a timestamp
    # HyMem's topic split: on LoCoMo conv-30 the 0.5B ran 7 of its first 23 segment calls (repairs and
    # retries included) into the 512-token cap, numbering events far past the session's last turn
    # ("start": 85 in a 20-turn session) or repeating one topic; a session rarely holds more than a dozen
    # topics, and the method clamps spans and turns uncovered turns into events of their own
    "hymem.segment": Bound(max_items=12, max_length=80, max_tokens=448),
}


def base_role(role: str) -> str:
    """``recmem.refine.repair`` -> ``recmem.refine`` (repairs and retries share their call's bound)."""
    return role.split(".repair")[0].split(".retry")[0]


def bound_schema(schema: dict | None, bound: Bound) -> dict | None:
    """A copy of ``schema`` with ``maxItems`` on every array and ``maxLength`` on every free string
    (no enum, no existing limit); the input is not changed."""
    if schema is None:
        return None
    out = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            kind = node.get("type")
            if kind == "array" and bound.max_items is not None and "maxItems" not in node:
                node["maxItems"] = bound.max_items
            if kind == "string" and bound.max_length is not None and "maxLength" not in node and "enum" not in node:
                node["maxLength"] = bound.max_length
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(out)
    return out


def apply_bounds(bounds: dict[str, Bound] | None, role: str, schema: dict | None,
                 max_tokens: int | None) -> tuple[dict | None, int | None]:
    """(schema, max_tokens) for this call: unchanged when the role has no bound; an explicit
    ``max_tokens`` from the method is kept when it is already smaller."""
    bound = (bounds or {}).get(base_role(role))
    if bound is None:
        return schema, max_tokens
    if bound.max_tokens is not None:
        max_tokens = bound.max_tokens if max_tokens is None else min(max_tokens, bound.max_tokens)
    return bound_schema(schema, bound), max_tokens


def bounded(llm, on: bool):
    """``llm`` with the per-role output bounds above switched on when ``on`` (``--bounded-outputs``)."""
    if on:
        llm.output_bounds = BOUNDED_OUTPUTS
    return llm
