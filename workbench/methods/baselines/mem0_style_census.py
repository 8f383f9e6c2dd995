"""Mem0Style's census: what its extraction kept and what its decision call did with each fact, read from the
decisions it saved (``structures.json``: one entry per speaker and exchange with facts), and the facts extracted
read against the exchange's turns (``census_kit.fact_quality``). Seen at real scale
(conv-30, Qwen2.5-Coder-0.5B, the census of the replayed recording in ``benchmarks/bench_real_scale.py``): for 1,365
facts extracted, the decision call returned 643 actions, 587 of them naming no fact, and applied NONE 617 times (420
with nothing stored to compare against), ADD 13 and UPDATE 5; so the reference kept 13 memories over 369 turns and
its decision prompts never grew: its construction-token count is a floor of what a working Mem0-like pipeline
spends."""
from __future__ import annotations

from .. import census_kit as K


def count(c: K.Counts, rows, traces, mems, params) -> None:
    """This method's counts (``CensusSpec.count``)."""
    names = ("facts_extracted", "decisions", "facts_without_action", "actions_naming_no_fact",
             "none_with_nothing_stored", "actions_skipped", *K.FACT_COUNTS)
    if not K.need_memory(c, mems, names, "mem0_style"):
        return
    decided, absent, pairs = [], [], []
    for conv, mem in mems.items():
        st = mem.structures if isinstance(mem.structures, dict) else {}
        if isinstance(st.get("decisions"), list):
            decided += [d for d in st["decisions"] if isinstance(d, dict)]
            pairs += [(K.text(f), K.source_turns(d, mem.turns)) for d in st["decisions"] if isinstance(d, dict)
                      for f in K.as_list(d.get("facts"))]
        else:
            absent.append(mem.structures_problem or f"memories/mem0_style/{conv}/structures.json has no decisions "
                                                     "(saved before Mem0Style wrote them)")
    if absent:
        for n in names:
            c.lack(n, "; ".join(absent[:3]))
        return
    src = "structures.json (decisions)"
    t = K.decision_tally(decided)
    c.put("facts_extracted", t["facts"], src, "the extraction returned no fact for any exchange")
    c.put("decisions", t["applied"], src + ": the actions applied")
    c.put("facts_without_action", t["unanswered"], src + ": facts no action named")
    c.put("actions_naming_no_fact", t["naming_no_fact"], src + f": of {t['actions']} actions")
    c.put("none_with_nothing_stored", t["none_with_nothing_shown"], src + ": NONE while no memory was shown")
    c.put("actions_skipped", t["skipped"], src)
    K.put_fact_quality(c, K.fact_quality(pairs, K.prompts_of(mems)), src + ": the facts extracted",
                       "the run did not save their conversation (conversations/*.json)")


CENSUS = K.CensusSpec(
    count,
    headline=(("facts_extracted", "facts extracted"),),
    problems=(("facts_without_action", "facts no action of the decision reply named:"),
              ("actions_naming_no_fact", "actions naming no fact (no or a wrong fact number):"),
              ("none_with_nothing_stored", "facts dropped (NONE) while nothing was stored to compare them with:"),
              ("actions_skipped", "decided actions skipped (an unknown id or event):"),
              ("facts_copying_prompt", "facts extracted that copy its own prompt (an instruction or example):"),
              ("facts_copying_turn", "facts extracted that copy a turn word for word:"),
              ("facts_unstated_relation", "facts extracted stating a relation their turns never name:")),
)
