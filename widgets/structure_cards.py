"""Structure cards for the methods without an interactive structure view: AMA's three stores, episode
timeline and ingestion log; MemR3's backend; HyMem's Level-1 -> Level-2 links; what each baseline stores.

Each card is a plain function from a method's saved files (``structures.json``, ``memories.jsonl``
rows, ``params.json``) and the conversation to one HTML string (``box``-wrapped), so the Panel app
(which registers them for its Structures tab) and a notebook (``IPython.display.HTML(stores_log_card(...))``)
show the same thing. No Panel here.

Everything comes from a run directory someone else may have written: every text goes through
``esc``/``clip``, long tables are capped with a count of what is not shown, and a missing or odd field
becomes a visible note in the card rather than an exception or a silent gap. ``memories.jsonl`` is
written by pandas, so an absent field of a row may arrive as ``NaN``; ``_text`` and ``_ids`` read it
as missing.
"""
from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from typing import Any, Callable, Iterable, Mapping, Sequence

from workbench.methods.census_kit import decision_tally
from workbench.words import counted

from .html import box, clip, esc, short, table_html
from .readability import fact_flags_html, method_prompts

#: rows of a table shown before "N more not shown"
ROWS = 40
#: characters of one memory text or turn text inside a table cell
CELL = 300


# -- reading untrusted rows ----------------------------------------------------------------------------
def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _text(v: Any) -> str:
    """A field as text: missing/NaN -> ''."""
    return "" if _missing(v) else (v if isinstance(v, str) else str(v))


def _ids(v: Any) -> list[str]:
    """A list-of-ids field (``source_ids``, ``level1_ids``): anything else -> [] (a scalar id -> [id])."""
    if _missing(v):
        return []
    if isinstance(v, (list, tuple)):
        return [str(i) for i in v if not _missing(i)]
    return [str(v)]


def _rows(memories: Any, notes: list[str]) -> list[dict]:
    """Only the dict rows of ``memories.jsonl``; others are counted in a note."""
    rows = list(memories or [])
    good = [r for r in rows if isinstance(r, Mapping)]
    if len(good) < len(rows):
        notes.append(f"{len(rows) - len(good)} rows of memories.jsonl are not objects and are left out")
    return good


def _params(params: Any, notes: list[str]) -> dict:
    """The ``params`` of a ``params.json`` (``{}`` with a note when absent or odd)."""
    if not params:
        notes.append("params.json is missing: the method's settings are not shown")
        return {}
    inner = params.get("params") if isinstance(params, Mapping) else None
    if not isinstance(inner, Mapping):
        notes.append("params.json has no 'params' object: the method's settings are not shown")
        return {}
    return dict(inner)


def _order(conversation) -> dict[str, int]:
    """``turn id -> position`` in the conversation (empty without one)."""
    return {} if conversation is None else {t.id: i for i, t in enumerate(conversation.turns)}


def _turns(conversation) -> dict:
    return {} if conversation is None else {t.id: t for t in conversation.turns}


def _span(ids: Sequence[str], order: Mapping[str, int]) -> str:
    """``D1:1–D1:5 (5 turns)``: the first and last turn of a unit in conversation order."""
    if not ids:
        return "(no source turns)"
    known = sorted((i for i in ids if i in order), key=order.get) or list(ids)
    n = len(ids)
    return (known[0] if len(known) == 1 and n == 1 else f"{known[0]}–{known[-1]}") + f" ({counted(n, 'turn')})"


def _first(ids: Sequence[str], order: Mapping[str, int]) -> int:
    return min((order[i] for i in ids if i in order), default=len(order))


def turn_lines(ids: Iterable[str], turns: Mapping[str, Any], *, limit: int = 6, chars: int = 200) -> str:
    """The source turns as escaped ``id speaker: text`` lines (``limit`` turns, ``chars`` each);
    an id the conversation lacks is shown as such."""
    ids = list(ids)
    if not turns:  # no conversation read: the ids alone (the card says why in its notes)
        return esc(" ".join(ids[:limit]) + (f" … and {len(ids) - limit} more" if len(ids) > limit else ""))
    out = []
    for i in ids[:limit]:
        t = turns.get(i)
        if t is None:
            out.append(f"<div><b>{esc(i)}</b> <span class='wb-muted'>(not in this conversation)</span></div>")
        else:
            out.append(f"<div><b>{esc(i)}</b> {esc(t.speaker)}: {esc(short(t.content, chars))}</div>")
    if len(ids) > limit:
        out.append(f"<div class='wb-muted'>… and {len(ids) - limit} more turns</div>")
    return "".join(out)


#: columns of the cards' tables that hold ids: never wrapped (a narrow column must not show "chunk-" / "0")
ID_COLUMNS = ("chunk", "unit", "turn", "Level-2 event", "#")


def _capped(rows: list[dict], columns: Sequence[str], *, raw: Iterable[str] = (), limit: int = ROWS,
            what: str = "rows") -> str:
    if not rows:
        return f"<p class='wb-muted'>(no {esc(what)})</p>"
    more = (f"<p class='wb-muted'>{len(rows) - limit} more {esc(what)} not shown (first {limit} of "
            f"{len(rows)})</p>") if len(rows) > limit else ""
    return table_html(rows[:limit], columns, raw=raw, ids=[c for c in columns if c in ID_COLUMNS]) + more


def _notes(notes: Sequence[str]) -> str:
    return "".join(f"<p class='wb-forced'>{esc(n)}</p>" for n in notes)


#: what a card's settings do, in words a class can read (review T2c: "trigger=llm · conflict_stores=['fact']" was
#: code); the parameter's own name stays in the row's tooltip for whoever sets it
SETTING_WORDS = {
    # AMA
    "trigger": "what closes an episode", "conflict_check": "how a new turn's conflicts are found",
    "conflict_stores": "stores checked for conflicts", "refresher": "conflicting entries are edited",
    "window_turns": "recent turns the episode trigger sees (W_t)", "episode_max_turns": "longest episode (turns)",
    "episode_at_session_end": "an episode also closes at each session end",
    # HyMem
    "segmentation": "how a session is split into events", "level1_granularity": "one key item per",
    "levels": "levels kept", "top_k": "key sentences the light module reads", "deep_top_n":
    "candidates the deep module weighs", "max_rounds": "most answer rounds (reflection)",
    # Full-Context
    "answer_prompt": "answer prompt",
    # MemR3
    "n_chk": "snippets per retrieval", "n_max": "most router steps", "n_cap": "most reflections in a row",
    "mask": "snippets already seen are not retrieved again", "delta_query": "retrieval uses the refined query",
    "reflect": "the router may reflect without retrieving", "retriever_options": "retriever options",
    # a backend's (MemR3 over Naive RAG)
    "chunk_tokens": "tokens per chunk", "chunking": "how the conversation is cut into chunks", "llm": "model",
    "embedder": "embedder",
}
#: a retrieval backend's settings where a name means another thing than in ``SETTING_WORDS`` (review: a Naive RAG
#: backend's ``top_k`` read "key sentences the light module reads", HyMem's meaning)
BACKEND_WORDS = {**SETTING_WORDS, "top_k": "chunks its own answers would read (the controller asks for its own)"}
#: values in words, per setting (a value not listed is shown as it is)
VALUE_WORDS = {
    "trigger": {"llm": "the LLM decides, turn by turn", "session": "the session's end (no LLM call)"},
    "conflict_check": {"judge": "the Judge LLM call (the paper's)", "probe": "question probes (ours)"},
    "segmentation": {"llm": "the LLM, by topic", "window": "fixed windows of turns", "session": "whole sessions"},
    "level1_granularity": {"sentence": "sentence", "event": "event"},
    "levels": {"both": "key sentences and raw events", "L1": "key sentences only", "L2": "raw events only"},
    "answer_prompt": {"native": "the method's own", "shared": "the shared fair-arena prompt"},
    "chunking": {"window": "fixed windows of tokens", "turn": "one chunk per turn", "session": "one chunk per session"},
}


def _value_words(key: str, value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items()) or "none"
    return VALUE_WORDS.get(key, {}).get(value, str(value)) if isinstance(value, str) else str(value)


def _setting_rows(params: Mapping, keys: Sequence[str], words: Mapping[str, str] = SETTING_WORDS) -> str:
    """Table rows of settings in words (``words``, ``VALUE_WORDS``), the parameter's name and raw value on
    hover; keys ``params`` lacks are skipped."""
    return "".join(f'<tr title="{esc(k)}={esc("none" if params[k] is None else params[k])}">'
                   f"<td>{esc(words.get(k, k))}</td>"
                   f"<td><b>{esc(_value_words(k, params[k]))}</b></td></tr>" for k in keys if k in params)


def _settings(params: Mapping, keys: Sequence[str]) -> str:
    """The card's settings as a small two-column table in words, folded under one line."""
    rows = _setting_rows(params, keys)
    return (f"<details class='wb-settings'><summary><small>settings of this run (hover a row for its parameter)"
            f"</small></summary><table>{rows}</table></details>") if rows else ""


def declared_view(method: str) -> str | None:
    """The structure view kind a registered method declares (``MemoryMethod.structure_view``), else None."""
    from workbench.methods import get_method, method_base

    try:
        return getattr(get_method(method_base(method or "")), "structure_view", None)
    except ValueError:
        return None


#: a card with at least this many sections gets a line of jump links under its lead
JUMP_AFTER_SECTIONS = 3
_SECTION = re.compile(r"<h5>(.*?)</h5>", re.S)


def jump_links(title: str, body: str) -> tuple[str, str]:
    """A long card's sections (its ``<h5>`` headings, e.g. AMA's ingestion log, episodes, facts and raw turns) as
    a "jump to" line, and the body with an ``id`` on each heading (usability review: a card several screens tall
    had no way to reach its last section but scrolling). The links are plain ``#id`` anchors, which a notebook
    follows; the app's ``LinkHTML`` scrolls within its own pane. Fewer sections: no line, the body unchanged."""
    heads = _SECTION.findall(body)
    if len(heads) < JUMP_AFTER_SECTIONS:
        return "", body
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "card"
    ids = iter(f"wb-{slug}-{i}" for i in range(len(heads)))
    body = _SECTION.sub(lambda m: f"<h5 id='{next(ids)}'>{m.group(1)}</h5>", body)
    links = " · ".join(f"<a class='wb-jump' href='#wb-{slug}-{i}' data-jump='wb-{slug}-{i}'>"
                       f"{re.sub(r'<[^>]+>', '', h)}</a>" for i, h in enumerate(heads))
    return f"<p class='wb-jumps'><small>jump to: {links}</small></p>", body


def _card(title: str, lead: str, body: str, notes: Sequence[str]) -> str:
    jumps, body = jump_links(title, body)
    return box(f"<h4>{esc(title)}</h4><p>{lead}</p>{jumps}{_notes(notes)}{body}")


def _no_conversation(conversation, notes: list[str]) -> None:
    if conversation is None:
        notes.append("the conversation could not be read: source turns are shown as ids only")


# -- AMA -------------------------------------------------------------------------------------------------
AMA_STORES = ("raw", "fact", "episode")


def ingestion_log_rows(log: Sequence[Any], order: Mapping[str, int]) -> list[dict]:
    """AMA's ``ingestion_log`` grouped per turn: the Judge's verdicts, conflict candidates, what the
    Refresher did, whether the episode trigger fired and what the episode step decided."""
    per: dict[str, dict] = {}
    for e in log:
        if not isinstance(e, Mapping):
            continue
        tid = _text(e.get("turn_id")) or "(no turn id)"
        r = per.setdefault(tid, {"turn": tid, "judge": [], "candidates": 0, "refresh": [], "changed": 0,
                                 "episode": [], "trigger": "", "errors": []})
        step = e.get("step")
        if step == "judge":
            r["judge"].append(_text(e.get("verdict")) or "(no verdict)")
        elif step == "conflict_check":
            n = e.get("candidates")
            r["candidates"] += n if isinstance(n, int) else 0
        elif step == "refresh":
            edits = [f"{key} {' '.join(_ids(e.get(key)))}" for key in ("updated", "deleted", "retention_deleted")
                     if _ids(e.get(key))]
            r["changed"] += bool(edits)
            parts = [_text(e.get("action")) or "(no action)", *edits]
            if not edits and not _text(e.get("declined")):
                parts.append("changed no unit")
            if _text(e.get("declined")):
                parts.append(f"declined: {_text(e.get('declined'))}")
            r["refresh"].append(", ".join(parts))
        elif step == "trigger":
            r["trigger"] = "fired" if e.get("fired") is True else r["trigger"] or "no"
        elif step == "episode":
            r["episode"].append(("stored" if e.get("stored") is True else "not stored")
                                + (f": {_text(e.get('reason'))}" if _text(e.get("reason")) else ""))
        if _text(e.get("error")):
            r["errors"].append(f"{step}: {_text(e.get('error'))}")
    rows = sorted(per.values(), key=lambda r: order.get(r["turn"], len(order)))
    return rows


def _ingestion_log_html(structures: Mapping, order: Mapping[str, int], notes: list[str]) -> str:
    log = structures.get("ingestion_log") if isinstance(structures, Mapping) else None
    if log is None:
        notes.append("structures.json has no ingestion_log: the Judge and Refresher decisions are not shown")
        return ""
    if not isinstance(log, list):
        notes.append(f"ingestion_log in structures.json is a {type(log).__name__}, not a list: not shown")
        return ""
    rows = ingestion_log_rows(log, order)
    verdicts = Counter(v for r in rows for v in r["judge"])
    refreshes = sum(len(r["refresh"]) for r in rows)
    errors = sum(len(r["errors"]) for r in rows)
    n_judged = sum(verdicts.values())
    if n_judged and set(verdicts) == {"Pass"}:
        summary = (f"Every one of the {n_judged} Judge verdicts was <b>Pass</b>: no new fact was judged to "
                   f"conflict with a stored one, so the Refresher {'never ran' if not refreshes else 'still ran'}.")
    elif n_judged:
        summary = "Judge verdicts: " + ", ".join(f"{esc(v)} {n}" for v, n in verdicts.most_common()) + "."
    else:
        summary = "The Judge gave no verdict during ingestion (conflict checking off, or no fact had neighbours)."
    changed = sum(r["changed"] for r in rows)
    # a decision that changed no unit is no edit: Events and the census count edits (the review saw 9 here, 7 there)
    summary += f" Refresher decisions: {refreshes}"
    if refreshes:
        summary += f", {changed} of them changed a unit (the edits in Events; {refreshes - changed} changed none)"
    summary += ". Whether each edit was right is in the Events tab." if changed else "."
    summary += f" Episode trigger fired at {sum(r['trigger'] == 'fired' for r in rows)}"
    summary += f" of {len(rows)} turns. Errors recorded: {errors}."
    # the table keeps the turns where something other than a plain Pass happened
    busy = [r for r in rows if r["refresh"] or r["episode"] or r["errors"] or r["trigger"] == "fired"
            or any(v != "Pass" for v in r["judge"])]
    table = [{"turn": r["turn"], "Judge": " ".join(r["judge"]) or "—", "conflict candidates": r["candidates"],
              "Refresher": "; ".join(r["refresh"]) or "—", "episode trigger": r["trigger"] or "—",
              "episode step": "; ".join(r["episode"]) or "—",
              "errors": "<br>".join(clip(x, limit=CELL) for x in r["errors"]) or "—"} for r in busy]
    quiet = len(rows) - len(busy)
    return (f"<h5>Ingestion log: the Judge and the Refresher, per turn</h5><p>{summary}</p>"
            + _capped(table, ["turn", "Judge", "conflict candidates", "Refresher", "episode trigger",
                              "episode step", "errors"], raw=["errors"], what="turns")
            + (f"<p class='wb-muted'>The other {quiet} turns: Judge Pass (or not checked), no Refresher action, "
               "no episode decision.</p>" if quiet else ""))


def stores_log_card(structures: Mapping, conversation=None, *, memories=(), params=None, method=None, **_) -> str:
    """AMA: the raw / fact / episode stores (counts and capped tables with source-turn text), the episode
    timeline in conversation order, and the ingestion log of Judge verdicts and Refresher actions."""
    notes: list[str] = []
    _no_conversation(conversation, notes)
    rows, p = _rows(memories, notes), _params(params, notes)
    order, turns = _order(conversation), _turns(conversation)
    by = {k: [r for r in rows if r.get("kind") == k] for k in AMA_STORES}
    other = len(rows) - sum(len(v) for v in by.values())
    if other:
        notes.append(f"{other} rows of memories.jsonl have a kind other than raw/fact/episode and are not shown")
    enabled = [k for k in AMA_STORES if p.get(f"use_{k}", True)]
    n_turns = len(order)
    lead = (" · ".join(f"<b>{len(by[k])}</b> {k}" + ("" if k in enabled else " (store off)") for k in AMA_STORES)
            + f" units, from {n_turns} turns" if conversation is not None else
            " · ".join(f"<b>{len(by[k])}</b> {k}" for k in AMA_STORES) + " units")
    body = _settings(p, ("trigger", "conflict_check", "conflict_stores", "refresher", "window_turns",
                         "episode_max_turns", "episode_at_session_end"))

    # episode timeline
    eps = sorted(by["episode"], key=lambda r: (_first(_ids(r.get("source_ids")), order), _text(r.get("id"))))
    timeline = [{"#": n, "episode": _text(r.get("title")) or _text(r.get("id")),
                 "turns covered": _span(_ids(r.get("source_ids")), order),
                 "session": _text(r.get("session_id")),
                 "what it says": clip(short(_text(r.get("text")), CELL)),
                 "the turns": f"<details><summary>show the turns</summary>"
                              f"{turn_lines(_ids(r.get('source_ids')), turns, limit=20)}</details>"}
                for n, r in enumerate(eps, start=1)]
    covered = {i for r in eps for i in _ids(r.get("source_ids"))}
    body += (f"<h5>Episode timeline ({len(eps)} episodes, in conversation order)</h5>"
             + (f"<p><small>{len(covered & set(order))} of {n_turns} turns fall in an episode.</small></p>"
                if order else "")
             + _capped(timeline, ["#", "episode", "turns covered", "session", "what it says", "the turns"],
                       raw=["what it says", "the turns"], what="episodes"))

    # fact store
    facts = sorted(by["fact"], key=lambda r: (_first(_ids(r.get("source_ids")), order), _text(r.get("id"))))
    cells, flagged = _fact_cells(facts, turns, method_prompts(method))
    body += (f"<h5>Fact store ({len(facts)} facts)</h5>" + flagged
             + _capped([{"fact": cell, FORM: _text(r.get("pattern")),
                         "source turn": turn_lines(_ids(r.get("source_ids")), turns, limit=3)
                         or esc(" ".join(_ids(r.get("source_ids"))))} for r, cell in zip(facts, cells)],
                       ["fact", FORM, "source turn"], raw=["fact", "source turn"], what="facts"))

    # raw store: one unit per turn; listing all 53 verbatim would repeat the Conversations tab
    raw_ids = {i for r in by["raw"] for i in _ids(r.get("source_ids"))}
    missing = [t for t in order if t not in raw_ids]
    body += (f"<h5>Raw store ({len(by['raw'])} units)</h5><p>One unit per ingested turn, its text verbatim"
             + (f"; {len(missing)} turns of the conversation have no raw unit ({esc(' '.join(missing[:10]))}"
                f"{' …' if len(missing) > 10 else ''})" if missing and order else
                ("; every turn of the conversation has one" if order else ""))
             + ". The first few:</p>"
             + _capped([{"unit": _text(r.get("id")), "text": clip(short(_text(r.get("text")), CELL))}
                        for r in by["raw"]], ["unit", "text"], raw=["text"], limit=5, what="raw units"))
    body += _ingestion_log_html(structures, order, notes)
    return _card("Raw, fact and episode stores", lead, body, notes)


# -- HyMem -----------------------------------------------------------------------------------------------
def _num(unit_id: str) -> tuple:
    m = re.search(r"(\d+)$", unit_id)
    return (int(m.group(1)) if m else math.inf, unit_id)


#: what HyMem's ``segment`` field of a Level-2 event means (``workbench.methods.hymem.segment``)
LEVEL2_ORIGINS = {"llm": "a topic span the segmenting LLM proposed",
                 "gap": "turns no proposed span covered, kept as their own event so nothing is lost",
                 "window": "a fixed window of turns (no LLM)", "session": "one whole session (no LLM)"}


def level_links_card(structures: Mapping, conversation=None, *, memories=(), params=None, **_) -> str:
    """HyMem: each Level-2 event (a raw topic segment of the conversation) with the Level-1
    key-information sentences linked to it, in conversation order; Level-1 units whose summary call
    failed (and hold the raw event text instead) are marked."""
    notes: list[str] = []
    _no_conversation(conversation, notes)
    rows, p = _rows(memories, notes), _params(params, notes)
    order, turns = _order(conversation), _turns(conversation)
    l2 = {_text(r.get("id")): r for r in rows if r.get("kind") == "L2"}
    l1 = [r for r in rows if r.get("kind") == "L1"]
    children: dict[str, list[dict]] = {k: [] for k in l2}
    orphans = []
    for r in sorted(l1, key=lambda r: _num(_text(r.get("id")))):
        ev = _text(r.get("event_id"))
        (children[ev] if ev in children else orphans).append(r)
    failed = [r for r in l1 if _text(r.get("fallback"))]
    lead = (f"<b>{len(l2)}</b> Level-2 events (raw topic segments) · <b>{len(l1)}</b> Level-1 units "
            f"(key-information sentences, each linked to one event)")
    if failed:
        lead += (f" · <b class='wb-forced'>{len(failed)}</b> Level-1 units hold their event's raw text because the "
                 "summary call failed")
    body = _settings(p, ("segmentation", "level1_granularity", "levels", "top_k", "deep_top_n", "max_rounds"))
    events = sorted(l2.values(), key=lambda r: (_first(_ids(r.get("source_ids")), order), _num(_text(r.get("id")))))
    table = []
    for r in events:
        eid, kids = _text(r.get("id")), children.get(_text(r.get("id")), [])
        items = []
        first_of: dict[str, str] = {}  # an item's words -> the first item of this event that says them
        for k in kids:
            first_of.setdefault(" ".join(_text(k.get("text")).lower().split()), _text(k.get("id")))
        for k in kids[:8]:
            flag = (" <span class='wb-forced' title='summary call failed'>(raw text: summary failed)</span>"
                    if _text(k.get("fallback")) else "")
            same = first_of.get(" ".join(_text(k.get("text")).lower().split()))
            if same and same != _text(k.get("id")):  # the model wrote the same item again (review: 5 alike)
                flag += (f" <span style='color:#a04a00;font-weight:600' title='the same words as {esc(same)}'>"
                         f"= {esc(same)}</span>")
            items.append(f"<li><b>{esc(k.get('id'))}</b> {clip(short(_text(k.get('text')), 200))}{flag}</li>")
        if len(kids) > 8:
            items.append(f"<li class='wb-muted'>… {len(kids) - 8} more</li>")
        repeats = len(kids) - len(first_of)
        if repeats:
            items.insert(0, f"<li class='wb-forced'>⚠ {repeats} of its {len(kids)} items "
                            f"{'repeats' if repeats == 1 else 'repeat'} another word for word</li>")
        listed = set(_ids(r.get("level1_ids")))
        if listed and listed != {_text(k.get("id")) for k in kids}:
            items.append("<li class='wb-forced'>the event's level1_ids and the Level-1 units' event_id disagree"
                         f" (event lists {esc(' '.join(sorted(listed)))})</li>")
        ids = _ids(r.get("source_ids"))
        table.append({"Level-2 event": eid, "topic": _text(r.get("topic")) or "—", "turns": _span(ids, order),
                      "segmented by": _text(r.get("segment")) or "—",
                      "Level-1 units linked to it": f"<ul>{''.join(items)}</ul>" if items else
                      "<span class='wb-muted'>(none)</span>",
                      "event text": f"<details><summary>show the turns</summary>"
                                    f"{turn_lines(ids, turns, limit=20) or clip(_text(r.get('text')))}</details>"})
    origins = {_text(r.get("segment")) for r in events}
    legend = [f"<i>{k}</i>: {v}" for k, v in LEVEL2_ORIGINS.items() if k in origins]
    if legend:
        overlap = p.get("overlap_turns")
        legend.append(f"LLM and gap events are widened by {esc(overlap)} turns each side, so neighbours overlap"
                      if "llm" in origins and overlap else "")
        body += f"<p><small>segmented by: {' · '.join(x for x in legend if x)}</small></p>"
    body += ("<h5>Level-1 → Level-2 links, events in conversation order</h5>"
             + _capped(table, ["Level-2 event", "topic", "turns", "segmented by", "Level-1 units linked to it",
                               "event text"], raw=["Level-1 units linked to it", "event text"], limit=30,
                       what="events"))
    if orphans:
        notes.append(f"{len(orphans)} Level-1 units name an event that is not stored: "
                     + " ".join(_text(r.get("id")) for r in orphans[:10]))
    if not rows:
        notes.append("memories.jsonl holds no Level-1 or Level-2 units for this conversation")
    return _card("Level-1 items → Level-2 events", lead, body, notes)


# -- baselines ---------------------------------------------------------------------------------------------
def _n_chars(conversation) -> int:
    return sum(len(t.content or "") for t in conversation.turns) if conversation is not None else 0


def whole_conversation_card(structures: Mapping, conversation=None, *, memories=(), params=None, **_) -> str:
    """Full-Context builds no memory: what each question is shown is the whole conversation."""
    notes: list[str] = []
    _no_conversation(conversation, notes)
    rows = _rows(memories, notes)
    if conversation is not None:
        n, s = len(conversation.turns), len(conversation.sessions)
        lead = (f"Nothing is stored: every question sees all <b>{n}</b> turns ({s} sessions, "
                f"{_n_chars(conversation):,} characters) in one prompt.")
    else:
        lead = f"Nothing is stored: every question sees the whole conversation ({len(rows)} turns listed)."
    if rows and conversation is not None and len(rows) != len(conversation.turns):
        notes.append(f"memories.jsonl lists {len(rows)} turns, the conversation has {len(conversation.turns)}")
    return _card("The whole conversation in every prompt", lead, _settings(_params(params, []), ("answer_prompt",)),
                 notes)


def chunks_html(rows: Sequence[Mapping], order: Mapping[str, int], *, limit: int = 10) -> str:
    """Chunk sizes (turns per chunk, characters) and the first ``limit`` chunks with the turns they cover."""
    if not rows:
        return "<p class='wb-muted'>(no chunks stored)</p>"
    per = [len(_ids(r.get("source_ids"))) for r in rows]
    chars = [len(_text(r.get("text"))) for r in rows]
    stats = (f"<p>turns per chunk: min {min(per)}, median {statistics.median(per):g}, max {max(per)} · "
             f"characters per chunk: min {min(chars):,}, median {statistics.median(chars):,.0f}, "
             f"max {max(chars):,}</p>")
    table = [{"chunk": _text(r.get("id")), "turns": _span(_ids(r.get("source_ids")), order),
              "text": clip(short(_text(r.get("text")), CELL))} for r in rows]
    return stats + _capped(table, ["chunk", "turns", "text"], raw=["text"], limit=limit, what="chunks")


def chunks_card(structures: Mapping, conversation=None, *, memories=(), params=None, **_) -> str:
    """NaiveRAG: how the conversation was cut into chunks (count, size) and what a question retrieves."""
    notes: list[str] = []
    _no_conversation(conversation, notes)
    rows, p = _rows(memories, notes), _params(params, notes)
    chunking = _text(p.get("chunking")) or "?"
    how = {"turn": "one chunk per turn", "session": "one chunk per session",
           "window": f"windows of about {esc(p.get('chunk_tokens', '?'))} tokens that never split a message"}
    lead = (f"<b>{len(rows)}</b> chunks of the conversation are stored ({how.get(chunking, esc(chunking))}), "
            f"embedded; each question retrieves the top {esc(p.get('top_k', '?'))} by cosine. No LLM at ingestion.")
    return _card("Chunks, retrieved by cosine", lead, chunks_html(rows, _order(conversation)), notes)


def _fact_cells(rows: Sequence[Mapping], turns: Mapping, prompts: Sequence[str] = ()) -> tuple[list[str], str]:
    """Each unit's text for a card cell, a fact unit's with its flags against its own turns and its method's
    ``prompts`` (the Memories table's "against its turns", ``readability.fact_marks``), and the line counting the
    flagged facts ("" when none is)."""
    said = {i: getattr(t, "text", "") for i, t in turns.items()}
    cells, flagged, facts = [], 0, 0
    for r in rows:
        cell = clip(short(_text(r.get("text")), CELL))
        if r.get("kind") == "fact":
            facts += 1
            flags = fact_flags_html(_text(r.get("text")), list(_ids(r.get("source_ids"))), said, prompts)
            flagged += bool(flags)
            cell += flags
        cells.append(cell)
    line = (f"<p><small>{flagged} of {facts} facts are flagged against their own turns (⚠, why on hover): a copy "
            "of the turn or of the method's own prompt, a relation the turn never names, or the first person."
            "</small></p>") if flagged else ""
    return cells, line


def _facts_html(rows: Sequence[Mapping], turns: Mapping, order: Mapping[str, int], *, extra: str = "",
                prompts: Sequence[str] = ()) -> str:
    rows = sorted(rows, key=lambda r: (_first(_ids(r.get("source_ids")), order), _num(_text(r.get("id")))))
    cells, flagged = _fact_cells(rows, turns, prompts)
    table = [{"memory": cell, **({extra: _text(r.get(extra))} if extra else {}),
              "source turns": turn_lines(_ids(r.get("source_ids")), turns, limit=2, chars=120)
              or esc(" ".join(_ids(r.get("source_ids"))))} for r, cell in zip(rows, cells)]
    return flagged + _capped(table, ["memory", *([extra] if extra else []), "source turns"],
                             raw=["memory", "source turns"], what="memories")


def fact_list_card(structures: Mapping, conversation=None, *, memories=(), params=None, method=None, **_) -> str:
    """EagerFloor: the facts one extraction call per exchange wrote (append-only), with their turns."""
    notes: list[str] = []
    _no_conversation(conversation, notes)
    rows, p = _rows(memories, notes), _params(params, notes)
    exchanges = len({tuple(_ids(r.get("source_ids"))) for r in rows})
    lead = (f"<b>{len(rows)}</b> facts are stored, extracted by one LLM call per exchange and never updated "
            f"or deleted ({exchanges} exchanges yielded at least one fact); each question retrieves the top "
            f"{esc(p.get('top_k', '?'))} by cosine.")
    return _card("Facts, one extraction call per exchange", lead,
                 _facts_html(rows, _turns(conversation), _order(conversation), prompts=method_prompts(method)), notes)


def decisions_sentence(structures: Mapping) -> str:
    """What the decision call did with the extracted facts, from the saved decisions (one entry per speaker and
    exchange with facts: its facts, the memories shown, the actions), counted as the census counts them
    (``census_kit.decision_tally``): the actions applied, how many NONEs had nothing stored to compare against,
    how many facts no action named, how many actions were skipped. "" when none were saved."""
    decided = structures.get("decisions") if isinstance(structures, Mapping) else None
    if not isinstance(decided, list) or not decided:
        return ""
    t = decision_tally(decided)
    chosen = ", ".join(f"{esc(k)} {n:,}" for k, n in t["applied"].items())
    return (f" Of the <b>{t['facts']:,}</b> facts extracted, the decision call applied {chosen or 'nothing'}"
            + (f" ({t['none_with_nothing_shown']:,} of the NONEs with nothing stored yet to compare against)"
               if t["none_with_nothing_shown"] else "")
            + (f", skipped {t['skipped']:,} actions naming an unknown id or event" if t["skipped"] else "")
            + (f" and named <b>{t['unanswered']:,}</b> facts in no action at all (dropped)" if t["unanswered"] else "")
            + ".")


def speaker_memories_card(structures: Mapping, conversation=None, *, memories=(), params=None, method=None, **_) -> str:
    """Mem0Style: the memories left after the per-fact ADD/UPDATE/DELETE decisions, per speaker."""
    notes: list[str] = []
    _no_conversation(conversation, notes)
    rows, p = _rows(memories, notes), _params(params, notes)
    speakers = Counter(_text(r.get("speaker")) or "(no speaker)" for r in rows)
    lead = (f"<b>{len(rows)}</b> memories are stored ("
            + ", ".join(f"{esc(s)}: {n}" for s, n in speakers.most_common())
            + "), what is left after each new fact was added, merged into, or deleted one stored for that "
              f"speaker; each question retrieves the top {esc(p.get('top_k', '?'))} per speaker."
            + decisions_sentence(structures))
    return _card("Memories per speaker, after add / update / delete decisions", lead,
                 _facts_html(rows, _turns(conversation), _order(conversation), extra="speaker",
                             prompts=method_prompts(method)), notes)


# -- MemR3 -------------------------------------------------------------------------------------------------
#: the fact store's sentence-pattern column, its letters spelled out (review: "S-V-O" was unexplained)
FORM = "sentence form (S subject, V verb, O object, C complement, L place)"


def controller_backend_card(structures: Mapping, conversation=None, *, memories=(), params=None, backend_params=None,
               views: Iterable[str] = (), **_) -> str:
    """MemR3 is a retrieval controller: its memory is its backend's. Shows the backend (name, settings,
    unit count), the controller's settings, and where the backend's own structure card is."""
    notes: list[str] = []
    _no_conversation(conversation, notes)
    rows, p = _rows(memories, notes), _params(params, notes)
    if backend_params:
        b_name = _text(backend_params.get("method")) if isinstance(backend_params, Mapping) else ""
        b_class = _text(backend_params.get("class")) if isinstance(backend_params, Mapping) else ""
        bp = _params(backend_params, notes)
    else:
        b_name, b_class, bp = "", "", {}
        notes.append("backend/params.json is missing: the backend's settings are not shown")
    b_name = b_name or "(unknown backend)"
    kinds = Counter(_text(r.get("kind")) or "?" for r in rows)
    from workbench.methods import display_name  # lazily, as declared_view: this module keeps no model imports

    shown = display_name(b_name) if b_name != "(unknown backend)" else b_name
    lead = (f"This controller builds no memory of its own: it drives a retrieval loop over its backend, "
            f"<b>{esc(shown)}</b>{f' <small>({esc(b_name)}, class {esc(b_class)})</small>' if b_class else ''}, "
            f"which holds <b>{len(rows)}</b> units ("
            + ", ".join(f"{n} {esc(k)}{'' if n == 1 or k.endswith('s') else 's'}" for k, n in kinds.most_common())
            + ").")
    if p.get("backend") is None and p:
        lead += " The run named no backend, so this is the default one: chunks over token windows (paper §4.1)."
    body = _settings(p, ("n_chk", "n_max", "n_cap", "mask", "delta_query", "reflect", "retriever_options"))
    if bp:
        words = BACKEND_WORDS if declared_view(b_name) == "chunks" else SETTING_WORDS  # top_k: chunks, or its own
        body += f"<h5>Backend settings</h5><table>{_setting_rows(bp, sorted(bp), words)}</table>"
    order = _order(conversation)
    if b_name in views:
        body += (f"<p>{esc(shown)} has its own structure card in this tab when the run built it as a method of "
                 "its own. That card shows that separate build (its own settings, which may differ from the ones "
                 "above); this backend's units are summarised here.</p>")
    if declared_view(b_name) == "chunks" or set(kinds) == {"chunk"}:
        body += "<h5>Backend chunks</h5>" + chunks_html(rows, order)
    else:
        body += "<h5>Backend units</h5>" + _facts_html(rows, _turns(conversation), order, extra="kind")
    return _card("A retrieval controller over a backend", lead, body, notes)


#: structure card kinds (``MemoryMethod.structure_view`` names one) -> card function; the app registers each in its
#: Structures tab under its kind
CARDS: dict[str, Callable[..., str]] = {
    "stores_and_log": stores_log_card, "level_links": level_links_card, "controller_backend": controller_backend_card,
    "whole_conversation": whole_conversation_card, "chunks": chunks_card, "fact_list": fact_list_card,
    "speaker_memories": speaker_memories_card,
}
