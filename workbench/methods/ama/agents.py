"""AMA's agents as small functions: each builds one prompt, makes one LLM call and normalises the reply.

They take the ``AMA`` instance ``m`` (for ``m.llm`` and the failure log) and return plain dicts, so the
control flow in ``method.py`` stays readable. A bad reply (``LLMError``/``ParseError``) never propagates:
``call_json`` records it in ``m.failures_`` and the caller applies the documented fallback.
Also here: the routing rule f_M, entry formatting, and timestamp / turn-id normalisation.
"""
from __future__ import annotations

import re
from datetime import datetime
from typing import Sequence

from ...data import Turn
from ...llm.errors import LLMError
from ...timehints import mentions_date
from ..common import format_date, format_turn
from ..store import MemoryUnit
from . import paper_prompts as PP
from . import prompts as P

BITS = ("b_fine", "b_abs", "b_event", "b_atomic")
_DIA = re.compile(r"D_?\{?\s*(\d+)\s*[,:]\s*(\d+)")


def prompts_of(m):
    """The prompt set the method sends: ``paper_prompts`` for ``prompts="paper"`` (the paper profile),
    ``prompts`` (the small profile's) otherwise. Both fill the same format fields."""
    return PP if getattr(m, "prompts", "small") == "paper" else P


def call_json(m, prompt: str, schema: dict, role: str, where: str) -> tuple[dict | None, str | None]:
    """One structured call. Returns ``(parsed, None)`` or ``(None, error)`` with the error recorded."""
    try:
        return m.llm.complete(prompt, schema=schema, role=role).parsed, None
    except LLMError as exc:  # recorded here and in the caller's step; the caller falls back
        error = f"{type(exc).__name__}: {exc}"
        m.failures_.append({"where": where, "role": role, "error": error})
        return None, error


# -- formatting ----------------------------------------------------------------------------------
def entry_line(u: MemoryUnit) -> str:
    """``[id] (said <date>; mentions <date>; updated <date>) text`` — what the Judge, Refresher and
    answer prompts see for one memory entry."""
    said = u.meta.get("said_at") or u.time
    notes = [f"said {format_date(said)}" if u.kind != "episode" else format_date(u.time)]
    if u.meta.get("timestamp_source") == "explicit" and u.time:
        notes.append(f"mentions {format_date(u.time)}")
    if u.meta.get("updated_at"):
        notes.append(f"updated {format_date(u.meta['updated_at'])}")
    title = f"{u.meta['title']}: " if u.kind == "episode" and u.meta.get("title") else ""
    return f"[{u.id}] ({'; '.join(notes)}) {title}{u.text}"


def entries_block(units: Sequence[MemoryUnit]) -> str:
    return "\n".join(entry_line(u) for u in units) if units else "(none)"


def turns_block(turns: Sequence[Turn]) -> str:
    return "\n".join(format_turn(t, with_id=True) for t in turns) if turns else "(empty)"


def refs_block(units: Sequence[MemoryUnit]) -> str:
    """Reference memories for the Constructor, labelled by the turn they came from (for related_id)."""
    return "\n".join(f"({u.source_ids[0]}) {u.text}" for u in units if u.source_ids) or "(none)"


# -- normalisation -------------------------------------------------------------------------------
def parse_time(value) -> datetime | None:
    """``YYYY-MM-DD HH:MM`` / ISO / ``"empty"`` -> datetime or None."""
    if not isinstance(value, str) or not value.strip() or value.strip().lower() == "empty":
        return None
    try:
        return datetime.fromisoformat(value.strip().replace("Z", ""))
    except ValueError:
        return None


def explicit_time(value, text: str) -> datetime | None:
    """The model's timestamp, kept only if the text could state one (a digit or a month name).

    [ours]: guards against a small model inventing a date for a turn with no explicit time; the paper's
    rule is the same ("only if an explicit date or time is present"), enforced here in code.
    """
    when = parse_time(value)
    return when if when is not None and mentions_date(text) else None


def norm_turn_ids(raw_ids, known: dict) -> tuple[list[str], list[str]]:
    """Map the model's ``related_id`` strings (``D1:3``, ``<D1,3>``, ``D_{1:3}``) to known turn ids."""
    kept, dropped = [], []
    for rid in raw_ids or []:
        rid = str(rid).strip().strip("<>[]() ")
        cand = rid if rid in known else None
        match = _DIA.search(rid) if cand is None else None
        if match and f"D{match.group(1)}:{match.group(2)}" in known:
            cand = f"D{match.group(1)}:{match.group(2)}"
        if cand is not None and cand not in kept:
            kept.append(cand)
        elif cand is None:
            dropped.append(rid)
    return kept, dropped


def norm_unit_id(raw) -> str:
    return str(raw).strip().strip("[]<>() ")


def route(intent: dict) -> str:
    """The paper's f_M(B), §3.2: raw if b_fine; else episode if b_abs or b_event; else fact."""
    if intent.get("b_fine"):
        return "raw"
    if intent.get("b_abs") or intent.get("b_event"):
        return "episode"
    return "fact"


# -- agents --------------------------------------------------------------------------------------
def construct(m, turn: Turn, window: Sequence[Turn], refs: Sequence[MemoryUnit], known: dict) -> dict:
    """Constructor, P_con (§3.1): atomic facts, related turn ids R_t and an explicit timestamp."""
    Q = prompts_of(m)
    prompt = Q.CONSTRUCT.format(window=turns_block(window), memories=refs_block(refs), turn_id=turn.id,
                                date=format_date(turn.time), speaker=turn.speaker, text=turn.content)
    parsed, error = call_json(m, prompt, Q.CONSTRUCT_SCHEMA, "ama.construct", turn.id)
    parsed = parsed or {}  # fallback: no facts, no relations, the session time
    facts = [(str(f.get("content", "")).strip(), f.get("pattern", ""))
             for f in parsed.get("facts", []) if str(f.get("content", "")).strip()]
    related, dropped = norm_turn_ids(parsed.get("related_id"), known)
    when = explicit_time(parsed.get("timestamp"), turn.content)
    return {"facts": facts, "related_ids": related, "dropped_ids": dropped,
            "timestamp": parsed.get("timestamp"), "time": when or turn.time,
            "time_source": "explicit" if when else ("session" if turn.time else "none"), "error": error}


def trigger(m, buffer: Sequence[Turn], turn: Turn, window_turns: int) -> dict:
    """Episode gate, P_tri (§3.1). History = the episode buffer or W_t (``m.trigger_history``), its last
    ``window_turns`` turns."""
    Q = prompts_of(m)
    history = list(buffer)[-window_turns:] if window_turns else []
    prompt = Q.TRIGGER.format(history=turns_block(history), new=format_turn(turn, with_id=True))
    parsed, error = call_json(m, prompt, Q.TRIGGER_SCHEMA, "ama.trigger", turn.id)
    if parsed is None:  # fallback: no boundary (saturation still closes the episode later)
        return {"T_t": 0, "reason": "trigger call failed", "confidence": 0.0, "topic_summary": "", "error": error}
    return {"T_t": int(parsed.get("T_t") == 1), "reason": str(parsed.get("reason", "")),
            "confidence": float(parsed.get("confidence", 0.0)), "topic_summary": str(parsed.get("topic_summary", ""))}


def synthesize(m, buffer: Sequence[Turn], reason: str) -> tuple[dict | None, str | None]:
    """Episode synthesis, P_epi (§3.1), over the buffered turns."""
    Q = prompts_of(m)
    lines = "\n".join(f"[{format_date(t.time)}] {format_turn(t, with_id=True)}" for t in buffer)
    prompt = Q.EPISODE.format(conversation=lines, boundary_reason=reason or "(none)")
    return call_json(m, prompt, Q.EPISODE_SCHEMA, "ama.episode", buffer[-1].id if buffer else "")


def plan(m, text: str, window: Sequence[Turn], where: str) -> dict:
    """Retriever, P_ret (§3.2): rewrite u'_t, intent vector B, the LLM's memory_type and K_dyn."""
    Q = prompts_of(m)
    prompt = Q.RETRIEVE.format(window=turns_block(window), user_input=text)
    parsed, error = call_json(m, prompt, Q.RETRIEVE_SCHEMA, "ama.retrieve", where)
    if parsed is None:  # fallback: the input as query, B = 0 (routes to facts), K = K_m
        return {"rewrite": text, "intent": dict.fromkeys(BITS, 0), "llm_memory_type": None, "K_dyn": 0,
                "error": error}
    vec = parsed.get("intent_vector") or {}
    rewrite = str(parsed.get("rewrite_query", "")).strip()
    k_dyn = parsed.get("K_dyn")
    return {"rewrite": rewrite or text, "intent": {b: int(vec.get(b) == 1) for b in BITS},
            "llm_memory_type": parsed.get("memory_type"),
            "K_dyn": k_dyn if isinstance(k_dyn, int) and not isinstance(k_dyn, bool) else 0}


def judge_query(m, units: Sequence[MemoryUnit], question: str) -> dict:
    """Judge, P_jud (§3.3), on the candidates for a question: Pass / Retry / Refresh."""
    Q = prompts_of(m)
    prompt = Q.JUDGE.format(information=entries_block(units), user_input=question)
    parsed, error = call_json(m, prompt, Q.JUDGE_SCHEMA, "ama.judge", "question")
    if parsed is None:  # fallback (digest §10.20): Pass with everything
        return {"Action": "Pass", "reason": "judge call failed", "confidence": 0.0, "relevant_ids": [],
                "conflict_ids": [], "error": error}
    return _judge_out(parsed)


def judge_ingest(m, units: Sequence[MemoryUnit], turn: Turn, facts: Sequence[str],
                 window: Sequence[Turn] = ()) -> dict:
    """Judge on a new dialogue turn (§3.3): Pass / Retry / Refresh with H_r and C_err under the paper prompt, which
    shows W_t; the small prompt is the conflict check only (Pass / Refresh, digest §10.2), with the turn's facts and
    no W_t (a field a prompt does not show is unused)."""
    Q = prompts_of(m)
    prompt = Q.JUDGE_INGEST.format(information=entries_block(units), date=format_date(turn.time),
                                   speaker=turn.speaker, text=turn.content, window=turns_block(window),
                                   facts="; ".join(facts) if facts else "(none)")
    parsed, error = call_json(m, prompt, Q.JUDGE_INGEST_SCHEMA, "ama.judge_ingest", turn.id)
    if parsed is None:
        return {"Action": "Pass", "reason": "judge call failed", "confidence": 0.0, "relevant_ids": [],
                "conflict_ids": [], "error": error}
    return _judge_out(parsed)


_NO_ANSWER = re.compile(r"^(not mentioned|not stated|not said|unknown|none|n/?a|no answer|-)?$")
_STOP = frozenset("a an the is are was were be to of in on at for and or he she it they his her its their "
                  "him them this that now still".split())


def _answer_words(text: str) -> frozenset:
    return frozenset(re.findall(r"[a-z0-9]+", text.lower())) - _STOP


MAX_ANSWER_WORDS = 5  # [ours] the probe asks for "a few words"; longer replies were copied sentences


def _no_answer(text: str) -> bool:
    t = text.strip().strip(".").strip().lower()
    return bool(_NO_ANSWER.match(t)) or "not mentioned" in t


def _grounded(answer: frozenset, source: str) -> bool:
    """At least half of the answer's content words occur in ``source`` (the answer was read, not made up)."""
    return len(answer & _answer_words(source)) * 2 >= len(answer)


def probe_conflict(parsed: dict, memory_text: str, turn_text: str) -> tuple[bool, str]:
    """[ours] Do a probe's two answers disagree? Decided in code, so the small model only has to answer.

    A conflict needs both answers to be real short answers (no question mark, at most
    ``MAX_ANSWER_WORDS`` content words) read from their source (half their content words occur
    in the stored entry and in the new turn respectively; a small model otherwise answers from the wrong
    text or names the speaker) and to share no content word: "Lyon" vs "Geneva" or "Biscuit" vs "Pilot"
    disagree, "moved to Geneva" vs "enjoy Geneva" do not. The rule prefers a missed update to a wrong
    edit: in the recorded 1.5B runs most false alarms were generic questions answered from both texts.
    """
    new, old = str(parsed.get("new_answer", "")), str(parsed.get("memory_answer", ""))
    if _no_answer(new) or _no_answer(old) or "?" in new + old:
        return False, "one of the two texts does not answer the question"
    a, b = _answer_words(old), _answer_words(new)
    if not a or not b:
        return False, "an answer has no content words"
    if max(len(a), len(b)) > MAX_ANSWER_WORDS:
        return False, "an answer is a copied sentence, not a short answer"
    if not _grounded(a, memory_text) or not _grounded(b, turn_text):
        return False, "an answer is not taken from its text"
    if a & b:
        return False, "the answers agree"
    return True, f"{parsed.get('question', '')!s}: stored {old.strip()!r}, now {new.strip()!r}"


def judge_probe(m, units: Sequence[MemoryUnit], turn: Turn) -> dict:
    """[ours] Conflict check by question probes (``conflict_check="probe"``): one call per stored entry,
    a verdict in the Judge's shape (Refresh with the disagreeing entries as conflict_ids)."""
    probes, conflicts, errors = [], [], []
    for u in units:
        prompt = P.CONFLICT_PROBE.format(memory_date=format_date(u.meta.get("said_at") or u.time), memory=u.text,
                                         date=format_date(turn.time), speaker=turn.speaker, text=turn.content)
        parsed, error = call_json(m, prompt, P.CONFLICT_PROBE_SCHEMA, "ama.conflict_probe", turn.id)
        if parsed is None:
            errors.append(error)
            probes.append({"id": u.id, "error": error})
            continue
        conflict, why = probe_conflict(parsed, u.text, turn.content)
        probes.append({"id": u.id, "question": parsed.get("question"), "memory_answer": parsed.get("memory_answer"),
                       "new_answer": parsed.get("new_answer"), "conflict": conflict, "why": why})
        if conflict:
            conflicts.append((u.id, why))
    return {"Action": "Refresh" if conflicts else "Pass",
            "reason": "; ".join(w for _, w in conflicts) or "no probe found a changed answer",
            "confidence": round(1 - len(errors) / len(probes), 3) if probes else 0.0,  # share of probes answered
            "relevant_ids": [],
            "conflict_ids": [i for i, _ in conflicts], "probes": probes,
            "error": "; ".join(errors) if errors else None}


def _judge_out(parsed: dict) -> dict:
    return {"Action": parsed.get("Action", "Pass"), "reason": str(parsed.get("reason", "")),
            "confidence": float(parsed.get("confidence", 0.0)),
            "relevant_ids": [norm_unit_id(i) for i in parsed.get("relevant_ids", [])],
            "conflict_ids": [norm_unit_id(i) for i in parsed.get("conflict_ids", [])]}


def refresh(m, units: Sequence[MemoryUnit], user_input: str, input_kind: str, where: str,
            retrieved: Sequence[MemoryUnit] = ()) -> tuple[dict, str | None]:
    """Refresher, P_ref (§3.4): Update / Delete / No-Op over the conflict set ``units`` (C_err). The paper prompt also
    shows ``retrieved``, the rest of H_t (Refresher(C_err, H_t || P_ref)); the small prompt shows C_err only."""
    Q = prompts_of(m)
    prompt = Q.REFRESH.format(memory_entries=entries_block(units), retrieved=entries_block(retrieved),
                              input_kind=input_kind, user_input=user_input)
    parsed, error = call_json(m, prompt, Q.REFRESH_SCHEMA, "ama.refresh", where)
    if parsed is None:  # fallback (digest §10.20): No-Op
        return {"Action": "No-Op", "memory_type": None, "datalist": [], "timestamp": "empty",
                "reason": "refresher call failed"}, error
    return parsed, None


# -- Refresher: applying its decision to the stores (paper §3.4) -----------------------------------
def run_refresher(m, c_err: list[MemoryUnit], user_input: str, input_kind: str, steps: list, *,
                  cause: str, trigger_turn: Turn | None, now, h_t: Sequence[MemoryUnit] = ()) -> dict:
    """Retention rule in code, then P_ref on the rest of C_err, shown beside the rest of H_t (``h_t``: the entries
    the Judge saw; only the paper prompt shows them); the edits are applied to ``m.stores_``."""
    with m.step(steps, "refresh", f"Refresher on {len(c_err)} conflicting entries") as s:
        expired = [u for u in c_err if is_expired(m, u, now)]
        for u in expired:
            delete_unit(m, u, cause, "retention limit exceeded", "retention", "", trigger_turn)
        rest = [u for u in c_err if u not in expired]
        named = {u.id for u in c_err}
        retrieved = [u for u in h_t if u.id not in named]
        out, error = (refresh(m, rest, user_input, input_kind, cause, retrieved) if rest
                      else ({"Action": "No-Op", "datalist": [], "reason": "nothing left after the retention rule"},
                            None))
        applied = apply_refresh(m, out, rest, input_kind, cause, trigger_turn, now=now)
        applied["deleted"] = [u.id for u in expired] + applied["deleted"]
        s.data.update(action=out.get("Action"), memory_type=out.get("memory_type"), reason=out.get("reason"),
                      timestamp=out.get("timestamp"), conflict_set=[brief(u) for u in c_err],
                      retrieved_ids=[u.id for u in retrieved],
                      retention_deleted=[u.id for u in expired], error=error, cause=cause, **applied)
    return applied


def apply_refresh(m, out: dict, units: list[MemoryUnit], input_kind: str, cause: str,
                  trigger_turn: Turn | None, now=None) -> dict:
    """Update / Delete the listed entries; ids outside C_err are ignored (the prompt's scope rule)."""
    allowed = {u.id: u for u in units}
    items = [(norm_unit_id(d.get("id", "")), str(d.get("new_content", "")).strip()) for d in out.get("datalist", [])]
    applied = {"updated": [], "deleted": [], "ignored_ids": [i for i, _ in items if i not in allowed],
               "declined": None}
    action, reason = out.get("Action"), str(out.get("reason", ""))
    if action == "Delete" and input_kind == "question":  # [ours]: a question cannot ask to forget
        applied["declined"] = "a question cannot ask to forget; Delete ignored"
        return applied
    stamp = explicit_time(out.get("timestamp"), trigger_turn.content if trigger_turn else "")
    for uid, new in items:
        if uid not in allowed or uid in applied["updated"] + applied["deleted"]:
            continue
        if action == "Delete":
            delete_unit(m, allowed[uid], cause, "explicit request to forget", "explicit_request", reason,
                        trigger_turn)
            applied["deleted"].append(uid)
        elif action == "Update" and new and new != allowed[uid].text:
            update_unit(m, allowed[uid], new, stamp, cause, reason, trigger_turn, now=now)
            applied["updated"].append(uid)
    return applied


def _with_trigger(u: MemoryUnit, trigger_turn: Turn | None) -> tuple[str, ...]:
    """Provenance after an edit: the entry's turns plus the turn that caused the edit."""
    extra = (trigger_turn.id,) if trigger_turn is not None and trigger_turn.id not in u.source_ids else ()
    return u.source_ids + extra


def update_unit(m, u: MemoryUnit, new_text: str, stamp: datetime | None, cause: str, reason: str,
                trigger_turn: Turn | None, now=None) -> None:
    """m_i <- U(m_i, u_t): new text (re-embedded), version + 1, the original text kept (digest §10.12).
    ``updated_at`` is the trigger turn's time, or at question time the question's date (``now``), so that later
    recency ordering sees the edit (reviews/ama.md §2.7)."""
    src = _with_trigger(u, trigger_turn)
    when = trigger_turn.time if trigger_turn else now
    meta = {**u.meta, "version": u.meta.get("version", 1) + 1, "original_text": u.meta.get("original_text", u.text),
            "updated_at": iso(when) if when else u.meta.get("updated_at"), "updated_by": cause}
    new = m.stores_[u.kind].update(u.id, text=new_text, source_ids=src, meta=meta, time=iso(stamp) if stamp else u.time)
    m._emit("UPDATE", u.id, before=u.text, after=new.text, cause=cause, source_ids=src, time=new.time, store=u.kind,
            why=reason or "conflict with newer information", rule="update", version=meta["version"])


def delete_unit(m, u: MemoryUnit, cause: str, why: str, rule: str, reason: str, trigger_turn: Turn | None) -> None:
    m.stores_[u.kind].delete(u.id)
    m._emit("DELETE", u.id, before=u.text, cause=cause, source_ids=_with_trigger(u, trigger_turn), time=u.time,
            store=u.kind, why=why, rule=rule, reason=reason)


def is_expired(m, u: MemoryUnit, now) -> bool:
    """Paper §3.4 Delete rule 2: the entry's lifespan exceeds the maximum retention limit."""
    born = parse_time(u.meta.get("said_at") or u.time)
    if m.max_retention_days is None or now is None or born is None:
        return False
    return (now - born).total_seconds() > m.max_retention_days * 86400


def iso(when) -> str | None:
    return when.isoformat() if hasattr(when, "isoformat") else when


def brief(u: MemoryUnit) -> dict:
    """A conflict-set entry as shown in traces: id, kind, text and times."""
    return {"id": u.id, "kind": u.kind, "text": u.text, "time": u.time, "said_at": u.meta.get("said_at")}
