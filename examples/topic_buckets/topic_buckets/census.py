"""TopicBuckets' own census: buckets, summaries, one-turn buckets, and the planted-recurrence check over its
buckets (``workbench.methods.census_kit``: the same kit the paper methods' censuses use)."""
from __future__ import annotations

from workbench.methods.census_kit import CensusSpec, need_memory


def _buckets(mem) -> list[dict]:
    value = (mem.structures or {}).get("buckets") if mem is not None else None
    return [b for b in value if isinstance(b, dict)] if isinstance(value, list) else []


def count(c, rows, traces, memories, params) -> None:
    if not need_memory(c, memories, ("buckets", "summaries", "one_turn_buckets"), "topic_buckets"):
        return
    buckets = [b for mem in memories.values() for b in _buckets(mem)]
    c.put("buckets", len(buckets), "structures.json", "no bucket was opened")
    c.put("summaries", sum(int(b.get("summaries_written") or 0) for b in buckets), "structures.json",
          "no summary was written")
    c.put("one_turn_buckets", sum(1 for b in buckets if len(b.get("source_ids") or ()) == 1), "structures.json")


def pick_buckets(rows, traces, memories) -> dict:
    """Each conversation's buckets as episodes of the recurrence check (their member turns)."""
    return {cid: [{"id": b.get("id"), "source_ids": list(b.get("source_ids") or ())} for b in _buckets(mem)]
            for cid, mem in memories.items()}


CENSUS = CensusSpec(count, headline=(("buckets", "buckets"), ("summaries", "summaries"),
                                     ("one_turn_buckets", "one-turn buckets")),
                    check=("recurrence", pick_buckets))
