"""EagerFloor's census: the facts its one extraction call per exchange wrote, read against the turns of that exchange
(repeats, copies of a turn, the first person, relations no turn states; ``census_kit.fact_quality``). Seen in the
demo replay: a fact that is its turn behind a date, "[14 March 2023] Priya: Tomatoes first, ...", where nothing was
extracted."""
from __future__ import annotations

from .. import census_kit as K


def fact_pairs(mem: K.Memory) -> list[tuple[str, list[str] | None]]:
    """(fact, what its exchange's turns said or None) for each fact written, in order (``Memory.turns``)."""
    return [(K.text(e.get("after")), K.source_turns(e, mem.turns)) for e in mem.events if e.get("kind") == "ADD"]


def count(c: K.Counts, rows, traces, mems, params) -> None:
    """This method's counts (``CensusSpec.count``)."""
    names = ("facts_written", *K.FACT_COUNTS)
    if not K.need_memory(c, mems, names, "eager_floor") or K.events_lacking(c, mems, names):
        return
    pairs = [pair for mem in mems.values() for pair in fact_pairs(mem)]
    q = K.fact_quality(pairs, K.prompts_of(mems))
    src = "events.jsonl (ADD)"
    c.put("facts_written", q["written"], src, "the extraction returned no fact for any exchange")
    K.put_fact_quality(c, q, src, "the run did not save their conversation (conversations/*.json)")


CENSUS = K.CensusSpec(
    count,
    headline=(("facts_written", "facts written"),),
    problems=(("facts_copying_prompt", "facts copied from its own prompt (an instruction or example, nothing said):"),
              ("facts_copying_turn", "facts that copy a turn word for word:"),
              ("facts_unstated_relation", "facts stating a relation their turns never name:"),
              ("facts_first_person", "facts in the first person:")),
)
