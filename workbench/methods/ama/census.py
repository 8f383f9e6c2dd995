"""AMA's census: edits at ingestion (events and the ingestion log) and at question time, Judge verdicts, the
episode trigger, and the Constructor's facts read against their turns (repeats, copies of the turn, the first
person, relations the turn never states). (``CensusSpec``, run by the generic census ``workbench.eval.mechanisms``.)"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache

from .. import census_kit as K
from . import prompts as P

#: a reason sharing a run of this many words with its prompt is read as pasted from it (review turn 4, N5: conv-30's
#: 368 reasons paste the prompt's conflict definition, with a word changed here and there)
echo_run_words = 6


def _data(event: dict) -> dict:
    return event.get("data") if isinstance(event.get("data"), dict) else {}


def fact_pairs(mem: K.Memory) -> list[tuple[str, str | list[str] | None]]:
    """(fact, what its turn said or None) for each fact the Constructor stored, in order; the turn's words are the
    raw entry AMA stored for it ("Speaker: words", the speaker left out), else the run's saved conversation
    (``Memory.turns``, by the event's source turns); None when neither has it."""
    turns = {K.text(e.get("cause")): K.text(e.get("after")).split(": ", 1)[-1] for e in mem.events
             if e.get("kind") == "ADD" and _data(e).get("store") == "raw"}
    turns.pop("", None)  # an event without a turn id (a damaged file) lends its text to no fact
    return [(K.text(e.get("after")), turns.get(K.text(e.get("cause")) or None) or K.source_turns(e, mem.turns))
            for e in mem.events if e.get("kind") == "ADD" and _data(e).get("store") == "fact"]


def _word_runs(value, n: int) -> set[str]:
    words = K.plain_words(value).split()
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def echoes_example(entry: dict, prompts: str) -> bool | None:
    """Is this ingestion Judge reply (an ``ingestion_log`` judge entry) its prompt's own example rather than a
    judgement? The small ``JUDGE_INGEST`` ends with a filled-in example (``"Action": "Pass"``, ``"confidence": 0.0 to
    1.0``, ``"conflict_ids": []``, reason ``"..."``): a reply with those three values whose reason is ``"..."``, empty
    or pasted from the prompt (a run of ``echo_run_words`` words) echoes it. The paper prompt has placeholders
    instead: a reply whose reason is the reason's placeholder echoes it. (``conflict_ids`` in the log are C_err,
    the named ids among the candidates.) None when the entry predates the
    log's ``reason`` and ``confidence`` (nothing to read); False for a question probe's verdict (code, no reply)."""
    if entry.get("check") == "probe":
        return False
    if "reason" not in entry or "confidence" not in entry:
        return None
    reason, ids = K.text(entry.get("reason")), K.as_list(entry.get("conflict_ids"))
    if prompts == "paper":
        return K.plain_words(reason) == "short justification"
    conf = entry.get("confidence")
    pasted = not K.plain_words(reason) or bool(_word_runs(reason, echo_run_words) & _small_judge_runs())
    return (entry.get("verdict") == "Pass" and not ids and isinstance(conf, (int, float))
            and not isinstance(conf, bool) and float(conf) == 0.0 and pasted)


@lru_cache(maxsize=1)
def _small_judge_runs() -> frozenset[str]:
    return frozenset(_word_runs(P.JUDGE_INGEST, echo_run_words))


def _echo_text(echoes: int, judged: int, prompts: str) -> str:
    example = ("its placeholders" if prompts == "paper" else
               "Pass, no conflict ids, confidence 0.0 and a reason pasted from the prompt")
    return (f"{echoes} of the {judged} replies {'is' if echoes == 1 else 'are'} the prompt's own example "
            f"({example}): a template echo, not a judgement")


def _facts(c: K.Counts, mems, params) -> None:
    """What the Constructor wrote, read against each fact's own turn (``census_kit.fact_quality``)."""
    if K.events_lacking(c, mems, ("facts_written", *K.FACT_COUNTS)):
        return
    q = K.fact_quality([pair for mem in mems.values() for pair in fact_pairs(mem)], K.prompts_of(mems))
    src = "events.jsonl (ADD to the fact store)"
    c.put("facts_written", q["written"], src, "use_fact=False in the run's parameters: no fact store"
          if params.get("use_fact") is False else "the Constructor returned no fact for any turn")
    K.put_fact_quality(c, q, src, "neither a raw entry of their turn in the memory (use_raw=False) nor the run's "
                                  "saved conversation has it")


def _episodes(c: K.Counts, log: list[dict] | None, mems, absent: str = "") -> None:
    """The episode trigger's decisions (the ingestion log; ``None`` when a memory has none: ``absent`` says why) and
    the episodes written (events, whether or not the log is there)."""
    closed = [x for x in log or () if x.get("step") == "episode"]
    if log is None:
        for n in ("trigger_checks", "trigger_firings", "episodes_unstored"):
            c.lack(n, absent)
    else:
        triggers = [x for x in log if x.get("step") == "trigger"]
        by_source = Counter(str(x.get("source")) for x in triggers)
        fired = Counter(str(x.get("source")) for x in triggers if x.get("fired") is True)
        src = "structures.json (ingestion_log)"
        c.put("trigger_checks", dict(sorted(by_source.items())), src)
        c.put("trigger_firings", dict(sorted(fired.items())), src,
              f"the trigger answered 0 on all {by_source['llm']} model checks" if by_source["llm"] else
              "no trigger call ran (trigger='session', or every episode buffer was empty)")
        c.put("episodes_unstored", sum(x.get("stored") is False for x in closed), src)
    if not K.events_lacking(c, mems, ("episodes_written",)):
        ends = Counter("session end" if str(x.get("reason")) in ("end of session", "end of conversation")
                       else "trigger" for x in closed)
        episodes = [(K.text(e.get("after")), K.source_turns(e, m.turns)) for m in mems.values() for e in m.events
                    if e.get("kind") == "ADD" and _data(e).get("store") == "episode"]
        src = "events.jsonl (ADD to the episode store)"
        c.put("episodes_written", len(episodes), src,
              f"{len(closed)} episodes closed ({K.fmt_counter(dict(ends))}); none was stored" if closed
              else "no episode was closed" if log is not None else None)
        # the episode prompt asks for no length; its bounded reply stops at 800 characters (workbench.llm.bounds)
        K.put_summary_quality(c, "episodes", episodes, src, "the run saved no conversation (conversations/<id>.json)",
                              count=False, words=False)


def count(c: K.Counts, rows, traces, mems, params) -> None:
    """This method's counts (``CensusSpec.count``)."""
    names_ev = ("updates_at_ingestion", "deletes_at_ingestion")
    log_names = ("ingestion_checks", "ingestion_verdicts", "ingestion_refresh_actions",
                 "ingestion_replies_echoing_example")
    if K.need_memory(c, mems, names_ev + log_names, "ama"):
        kinds: Counter = Counter()
        for mem in mems.values():
            for e in mem.events:
                if not K.text(e.get("cause")).startswith("question:"):
                    kinds[e["kind"]] += 1
        log, absent = [], []
        for conv, mem in mems.items():
            entries = mem.structures.get("ingestion_log") if isinstance(mem.structures, dict) else None
            if isinstance(entries, list):
                log += [x for x in entries if isinstance(x, dict)]
            else:
                absent.append(mem.structures_problem or f"memories/ama/{conv}/structures.json has no ingestion_log "
                                                        "(saved before AMA wrote it)")
        judges = [x for x in log if x.get("step") == "judge"]
        verdicts = Counter(str(x.get("verdict")) for x in judges)
        refreshes = Counter(str(x.get("action")) for x in log if x.get("step") == "refresh")
        prompts = "paper" if params.get("prompts") == "paper" else "small"  # runs saved before the profiles: small
        replies = [x for x in judges if x.get("check") != "probe"]
        echo = [echoes_example(x, prompts) for x in replies]
        echoes = None if None in echo else sum(echo)
        why = None
        if params.get("refresher") is False and not judges:
            why = "refresher=False in the run's parameters: no conflict check at ingestion"
        elif params.get("refresher") is False:  # the paper order runs its Judge without the Refresher (turn 4, N6)
            why = (f"refresher=False in the run's parameters: the ingestion Judge answered "
                   f"{K.fmt_counter(dict(verdicts))} on {len(judges)} checks, and no Refresher edits memory")
        elif not absent:
            # with question probes standing in for the paper's Judge (conflict_check="probe"), the verdicts are the
            # probes' (review §2.5: naming the Judge attributed them to the paper's agent)
            checker = ("the question probes (conflict_check='probe', in place of the paper's Judge)"
                       if params.get("conflict_check") == "probe" else "the ingestion Judge")
            why = (f"{checker} answered {K.fmt_counter(dict(verdicts))} on {len(judges)} checks"
                   + (f"; {_echo_text(echoes, len(replies), prompts)}" if echoes else "")
                   + (f"; Refresher: {K.fmt_counter(dict(refreshes))}" if refreshes else ""))
        if not K.events_lacking(c, mems, names_ev):
            c.put("updates_at_ingestion", kinds["UPDATE"], "events.jsonl", why)
            c.put("deletes_at_ingestion", kinds["DELETE"], "events.jsonl", why)
        if absent:
            gone = "; ".join(absent[:3]) + ("; ..." if len(absent) > 3 else "")
            for n in log_names:
                c.lack(n, gone)
            _episodes(c, None, mems, gone)
        else:
            c.put("ingestion_checks", len(judges), "structures.json (ingestion_log)",
                  "no stored entry was near enough to a new turn to be checked" if not judges else None)
            c.put("ingestion_verdicts", dict(sorted(verdicts.items())), "structures.json (ingestion_log)")
            c.put("ingestion_refresh_actions", dict(sorted(refreshes.items())), "structures.json (ingestion_log)")
            if echoes is None:
                c.lack("ingestion_replies_echoing_example", "the ingestion_log was saved before it kept the Judge's "
                                                            "reason and confidence (nothing to compare)")
            else:
                c.put("ingestion_replies_echoing_example", echoes, "structures.json (ingestion_log: verdict, reason, "
                      "confidence, conflict_ids)", "the question probes decided every check (code compares two "
                      "answers: no reply to echo)" if judges and not replies else None)
            _episodes(c, log, mems)
        _facts(c, mems, params)
    names_q = ("updates_at_question", "deletes_at_question", "query_verdicts", "retry_verdicts", "refresh_verdicts",
               "retry_expansions")
    if not K.traced(c, traces, names_q):
        return
    verdicts, updated, deleted, expansions = Counter(), 0, 0, 0
    for t in traces:
        if t is None:
            continue
        for kind, d in t.steps:
            if kind == "judge" and d.get("phase", "query") == "query":
                verdicts[str(d.get("verdict"))] += 1
            elif kind == "refresh":
                updated += len(K.as_list(d.get("updated")))
                deleted += len(K.as_list(d.get("deleted")))
            elif kind == "expand":
                expansions += 1
    dist = f"question-time Judge verdicts: {K.fmt_counter(dict(sorted(verdicts.items())))}"
    if params.get("refresh_on_query") is not True:
        edit_why = ("refresh_on_query is off in the run's parameters (a question-time Refresh only reorders); "
                    + dist)
    else:
        edit_why = dist
    c.put("updates_at_question", updated, "traces (refresh steps)", edit_why)
    c.put("deletes_at_question", deleted, "traces (refresh steps)", edit_why)
    c.put("query_verdicts", dict(sorted(verdicts.items())), "traces (judge steps)")
    why_k = " (k_r=1: one round, no Retry)" if params.get("k_r") == 1 else ""
    c.put("retry_verdicts", verdicts["Retry"], "traces (judge steps)", dist + why_k)
    c.put("refresh_verdicts", verdicts["Refresh"], "traces (judge steps)", dist)
    c.put("retry_expansions", expansions, "traces (expand steps)", dist + why_k)


CENSUS = K.CensusSpec(
    count,
    headline=(("updates_at_ingestion", "updates at ingestion"), ("deletes_at_ingestion", "deletes at ingestion"),
            ("updates_at_question", "updates at question time"), ("deletes_at_question", "deletes at question time"),
            ("retry_verdicts", "question-time Retry verdicts"),
            ("refresh_verdicts", "question-time Refresh verdicts")),
    problems=(("ingestion_replies_echoing_example", "ingestion Judge replies that are its prompt's own example (a "
                                                    "template echo, not a judgement):"),
              ("facts_copying_prompt", "facts copied from its own prompt (an instruction or example, nothing said):"),
              ("facts_unstated_relation", "facts stating a relation their turn never names:"),
              ("facts_copying_turn", "facts that copy their turn word for word:"),
              ("facts_first_person", "facts in the first person:"),
              ("episodes_unstored", "episodes closed but not stored:"),
              ("episodes_cut", "episodes cut off mid-sentence (the length cap):"),
              ("episodes_looping", "episodes repeating a run of words (the model looped):"),
              ("episodes_foreign_script", "episodes in a script their turns never use:")),
    check=("edits", lambda rows, traces, mems: {cid: m.events for cid, m in mems.items()}),
    check_off=lambda params: "the Refresher was switched off (refresher=False)" if params.get("refresher") is False
    else None,
)
