"""The mechanism census: how often each method's distinctive mechanism actually fired in a recorded run.

A method can score well or badly without its own mechanism ever running (AMA's Refresher never
editing anything, MemR3's router never opening a gap, RecMem's trigger never firing). The census
counts, per method, what the run *recorded* — nothing is re-run, no LLM is called, no count is
typed in by hand:

- result rows (``results.jsonl``) and each row's frozen trace (``answer.steps``): question-time
  decisions (AMA Judge verdicts and Refresher edits, MemR3 router actions and gaps, HyMem tiers and
  reflection rounds, H-Mem planner scopes) and every row's failures;
- each saved memory (``memories/<method>/<conv>/events.jsonl`` and ``structures.json``):
  construction-time decisions (AMA's ingestion Judge and Refresher, H-Mem's tree shape, RecMem's
  trigger log, merges, consolidations and refinements);
- the run manifest, only to say whether the run itself was scripted.

``census(run_dir)`` (or ``census(rows, memories=...)``) returns, per method,
``{"counts": {name: int | dict | None}, "why_zero": {name: text}, "missing": {name: reason},
"sources": {name: where it was read}}``. A count the run cannot support is None with its reason in
``missing`` (e.g. a run saved without ``--save-memories``, or one saved before a method wrote the
log a count needs); it is never guessed. ``why_zero`` explains a zero only with figures read from
the same run (the verdict distribution, the highest recurrence count, the run's own parameters).

A MemR3 gap entry that says there is none ("No gaps noted", "none") or is one of the router schema's own
field or action names ("reasoning", "retrieve") is not counted as a gap; such entries are counted in
``gap_entries_not_gaps`` instead. Duplicate entries within one router step count once. Gap text the model
copied from the snippets is still counted: telling it apart from a real gap needs reading, which the
trace stepper is for.

Every method also gets its failure counts: rows where the method raised (``row_errors``), answers
that came from a fallback path (``fallback_answers``: a failed answer call, a generator failure, an
empty reply), failed LLM calls while answering (``llm_errors``, of which ``cassette_misses`` were
replay-cassette misses), construction failures, and judge errors.

Where the run's conversations are saved (``conversations/*.json``, or given as ``conversations=``), each
method's steps' own decisions are also checked against the question's gold (``decisions``: per step kind, right,
wrong, by verdict, and how many could not be checked and why; ``workbench.eval.decisions``), and each saved memory
is lent its conversation's turns (``Memory.turns``), so a method's census reads the facts it wrote against the turns
they came from (``census_kit.fact_quality``).

Everything read from a run directory is untrusted: bad JSONL lines, damaged JSON files and
unexpected shapes become entries of ``problems`` (``file: what``) and the counts that needed them
become missing; the census itself never raises on a damaged run. ``write_census(run_dir)`` writes
``mechanisms.json`` atomically; ``census_markdown`` / ``census_text`` render it;
``headline(census)`` gives the few counts per method that the app header shows.
"""
from __future__ import annotations

import errno
import json
import os
import sys
from collections import Counter
from pathlib import Path

from ..jsonl import (DamagedFile, LeadsOutside, confined, escape_undecodable, escape_undecodable_all, read_json,
                     read_jsonl_capped, write_json_atomic)
from ..methods.base import method_base
from ..methods.census_kit import CensusSpec
from ..methods.census_kit import Counts as _Counts
from ..methods.census_kit import Memory as _Memory
from ..methods.census_kit import Trace as _Trace
from ..methods.census_kit import as_int as _int
from ..methods.census_kit import as_list as _list
from ..methods.census_kit import is_zero as _is_zero
from ..methods.census_kit import open_gaps, router_cause, step_cause  # noqa: F401 - re-exported (views, notebooks)
from ..methods.census_kit import text as _text
from ..rundir import id_from_name
from ..trace import ANSWER_WRITER_KINDS
from ..untrusted import markdown_text, terminal_json, terminal_text
from .checker import row_score
from ..words import counted, one_line
from .decisions import tally_text
from .markdown import markdown_table
from .store import ResultsStore

SCHEMA = "mechanisms/1"
FILE = "mechanisms.json"


def method_census(name: str) -> CensusSpec | None:
    """The census a method declares (``MemoryMethod.census``), found through the registry by the run's method
    name (a labelled variant ``ama[probe]`` counts as its method); None for a method that declares none or that
    this installation does not have (its rows still get every generic count)."""
    from ..methods import get_method

    try:
        spec = getattr(get_method(method_base(name)), "census", None)
    except ValueError:
        return None
    return spec if isinstance(spec, CensusSpec) else None
# ================================================================================================
# Reading (every shape checked; problems recorded, never raised)
# ================================================================================================
def _trace(row: dict, where: str, problems: list[str]) -> _Trace | None:
    """The row's trace, or None when it has none (a failed row, ``keep_answers=False``) or a bad one."""
    ans = row.get("answer")
    if ans is None:
        return None
    if not isinstance(ans, dict):
        problems.append(f"{where}: field 'answer' is a {type(ans).__name__}, not an object; trace not counted")
        return None
    raw = ans.get("steps", [])
    if not isinstance(raw, list):
        problems.append(f"{where}: field 'answer.steps' is a {type(raw).__name__}, not a list; trace not counted")
        return None
    steps, bad = [], 0
    for s in raw:
        if isinstance(s, dict) and isinstance(s.get("kind"), str) and isinstance(s.get("data", {}), dict):
            steps.append((s["kind"], s.get("data", {})))
        else:
            bad += 1
    if bad:
        problems.append(f"{where}: {bad} step(s) without a string 'kind' and an object 'data' were skipped")
    return _Trace(steps, ans.get("error"), ans.get("text"))


def _read_memories(run: Path, problems: list[str]) -> dict[str, dict[str, _Memory]]:
    """``{method: {conv_id: _Memory}}`` for every folder under ``<run>/memories``."""
    out: dict[str, dict[str, _Memory]] = {}
    root = run / "memories"
    if not root.is_dir():
        return out
    for mdir in sorted(p for p in root.iterdir() if p.is_dir()):
        method = id_from_name(mdir.name)
        for cdir in sorted(p for p in mdir.iterdir() if p.is_dir()):
            mem = _Memory()
            ev = cdir / "events.jsonl"
            try:
                confined(ev, run)  # never read through a link out of the run directory
            except LeadsOutside as exc:
                problems.append(str(exc))
                mem.events_problem = str(exc)
            else:
                _read_events(ev, mem, problems)
            st = cdir / "structures.json"
            if st.is_file():
                try:
                    mem.structures = read_json(confined(st, run))
                except DamagedFile as exc:  # LeadsOutside included
                    problems.append(str(exc))
                    mem.structures_problem = f"{st} is damaged ({exc.reason})"
            out.setdefault(method, {})[id_from_name(cdir.name)] = mem
    return out


def _read_events(ev: Path, mem: "_Memory", problems: list[str]) -> None:
    """One memory's ``events.jsonl`` into ``mem`` (its bad lines and event-less rows into ``problems``)."""
    if not ev.is_file():
        mem.events_problem = f"{ev} is missing"
        return
    got = read_jsonl_capped(ev)  # a huge log is counted up to the display limit, and that is said
    problems.extend(str(b) for b in got.bad)
    if got.capped is not None:
        problems.append(f"{got.capped}; its counts cover those events only")
    mem.events = [r for r in got.rows if isinstance(r.get("kind"), str)]
    if len(mem.events) < len(got.rows):
        problems.append(f"{ev}: {len(got.rows) - len(mem.events)} event(s) without a string 'kind' skipped")


def _memories_from(value) -> dict[str, dict[str, _Memory]]:
    """``memories=`` given by a caller: ``{method: {conv_id: {"events": [...], "structures": {...}}}}``
    (events as dicts or ``MemoryEvent``)."""
    out: dict[str, dict[str, _Memory]] = {}
    for method, convs in (value or {}).items():
        for conv_id, mem in convs.items():
            events = [e.to_dict() if hasattr(e, "to_dict") else dict(e) for e in mem.get("events", ())]
            out.setdefault(method, {})[conv_id] = _Memory(events, dict(mem.get("structures") or {}))
    return out


# ================================================================================================
# Counting
# ================================================================================================
def _params(rows: list[dict]) -> dict:
    """The method's parameters as the run recorded them (the first row that has them)."""
    for r in rows:
        if isinstance(r.get("params"), dict):
            return r["params"]
    return {}


def _fallback_answer(t: _Trace) -> bool:
    """Did the text returned come from a fallback path rather than the method's answer call?"""
    if t.error:
        return True
    writers = [(k, d) for k, d in t.steps if k in ANSWER_WRITER_KINDS]
    if not writers:
        return False
    kind, data = writers[-1]
    if data.get("fallback") or data.get("error") or data.get("fallback_answer"):
        return True
    if kind == "final" and data.get("tier") == "deep_failed":  # HyMem: the deep generator failed
        return True
    if kind == "synthesize" and data.get("skipped"):  # H-Mem, one sub-query: its sub-answer is the answer
        subs = t.of("subanswer")
        return bool(subs and subs[-1].get("error"))
    return False


def _common(c: _Counts, rows: list[dict], traces: list[_Trace | None]) -> None:
    """Questions and failures, for every method."""
    src = "results.jsonl"
    c.put("questions", len(rows), src)
    c.put("answers_with_trace", sum(t is not None for t in traces), src)
    c.put("row_errors", sum(bool(r.get("error")) for r in rows), src)
    kinds: Counter = Counter()
    llm_errors = misses = 0
    construction: dict[str, dict] = {}
    for r in rows:
        for f in _list(r.get("failures")):
            if not isinstance(f, dict):
                continue
            kind = str(f.get("kind", "?"))
            kinds[kind] += 1
            if kind == "llm_error":
                llm_errors += 1
                misses += _text(f.get("error")).startswith("CacheMiss")
            elif kind == "construction":
                construction[str(r.get("conv_id"))] = f  # one entry per conversation, copied on each row
    c.put("flagged_rows", sum(bool(_list(r.get("failures"))) for r in rows), src)
    c.put("llm_errors", llm_errors, src)
    c.put("cassette_misses", misses, src)
    c.put("fallback_answers", sum(t is not None and _fallback_answer(t) for t in traces), src + " (traces)")
    c.put("construction_llm_errors", sum(_int(f.get("llm_errors")) for f in construction.values()), src)
    c.put("construction_method_failures", sum(_int(f.get("method_failures")) for f in construction.values()), src)
    c.put("failure_kinds", dict(sorted(kinds.items())), src)
    c.put("judge_errors", sum(bool(r.get("judge_error")) for r in rows), src)


def _checked(spec: CensusSpec | None, rows, traces, mems: dict, entry: dict, problems: list[str],
             method: str | None = None) -> dict | None:
    """Which firings of a method's mechanism were right, against the planted (or annotated) phenomena of the
    conversations (``workbench.eval.annotations.check_run``, the generic check the method's census names);
    ``{"checkable": False, ...}`` where a run's data carries none; None for a method with no check."""
    from .annotations import check_run, method_annotations, not_checkable, shipped_annotations

    if spec is None or spec.check is None:
        return None
    # an ablation without the mechanism: nothing to judge, and nothing it could have done is "missed"; only when
    # every row of the method says so (one name can hold two configurations: ``configurations`` in the entry)
    offs = {spec.switched_off(r.get("params")) for r in rows if isinstance(r.get("params"), dict)}
    if len(offs) == 1 and None not in offs:
        return {"checkable": False, "why": offs.pop()}
    try:  # a plugin's own planted phenomena (its resources) beside the shipped ones
        ann = method_annotations(method) if method else shipped_annotations()
    except ValueError as exc:  # a damaged annotations file: say so, count nothing against it
        problems.append(f"phenomena annotations unreadable: {exc}")
        return not_checkable([])
    convs = {str(r.get("conv_id")) for r in rows} | set(mems)
    kind, pick = spec.check
    conv_of = {str(r.get("qa_id")): str(r.get("conv_id")) for r in rows}
    right_of = {str(r.get("qa_id")): row_score(r) for r in rows}
    try:
        return check_run(kind, pick(rows, traces, mems), ann, convs=convs, conv_of=conv_of, entry=entry,
                         right_of=right_of)
    except Exception as exc:  # a shape the check did not foresee, or a bug in the method's pick
        problems.append(f"the {kind} check stopped at an unexpected value in the run ({type(exc).__name__}: {exc}); "
                        "nothing was checked")
        return {"checkable": False, "why": f"the saved memory holds a value the {kind} check cannot read "
                                           f"({type(exc).__name__})"}


def _read_conversations(run: Path, rows: list[dict], problems: list[str], given=(), saved=()) -> dict:
    """The run's saved conversations of ``rows`` and of the ``saved`` memories (their questions check the methods'
    decisions, their turns the facts a memory wrote). Each is looked up by its own id (a hash-shortened file name
    included); one that is unreadable, or missing while a method with checkable decisions answered it, is a problem,
    and those decisions go unchecked."""
    from ..rundir import RunDir
    from .decisions import CHECKS, declared_cards

    checked = {m for m in {str(r.get("method")) for r in rows} if set(declared_cards(m).values()) & set(CHECKS)}
    out, rd, missing = {}, RunDir(run), []
    wanted = {str(r.get("conv_id")) for r in rows if r.get("conv_id") not in (None, "")} | set(saved)
    for cid in sorted(wanted - set(given)):
        try:
            out[cid] = rd.conversation(cid)  # under its safe name (``rundir.safe_name``)
        except FileNotFoundError:
            if any(str(r.get("method")) in checked for r in rows if str(r.get("conv_id")) == cid):
                missing.append(cid)
        except (DamagedFile, ValueError) as exc:  # LeadsOutside included
            problems.append(f"conversation {cid!r} unreadable, its decisions are not checked: {exc}")
    if missing:
        problems.append(f"{counted(len(missing), 'conversation')} not saved in the run "
                        f"({', '.join(map(repr, missing[:5]))}{', …' if len(missing) > 5 else ''}): "
                        "the decisions made on their questions are not checked")
    return out


def _lend_turns(mems: dict[str, dict[str, _Memory]], conversations: dict) -> None:
    """Give each saved memory what its conversation's turns said (``Memory.turns``), so a method's census can read
    the facts it wrote against their source turns; a memory whose conversation the run lacks gets none."""
    for convs in mems.values():
        for cid, mem in convs.items():
            conv = conversations.get(cid)
            turns = getattr(conv, "turns", None)
            if turns:
                mem.turns = {str(t.id): str(t.text) for t in turns}


def _lend_prompts(name: str, mems: dict[str, _Memory]) -> None:
    """Give each saved memory of a method the prompts that method sends (``Memory.prompts``), so its census can find
    a fact copied from them; none for a method this installation does not have."""
    from ..methods import get_method
    from ..methods.census_kit import class_prompt_words

    try:
        prompts = class_prompt_words(get_method(method_base(name)))
    except ValueError:
        return
    for mem in mems.values():
        mem.prompts = prompts


def _decisions(rows: list[dict], conversations: dict, problems: list[str]) -> dict:
    """Per method, its steps' own decisions checked against the gold (``workbench.eval.decisions.tally``)."""
    from .decisions import tally

    qa_of = {q.id: q for c in conversations.values() for q in getattr(c, "qa", ())}
    try:
        return tally(rows, qa_of, conversations)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a trace shape the checks did not foresee
        problems.append(f"checking the steps' decisions stopped at an unexpected value ({type(exc).__name__}: {exc})")
        return {}


# ================================================================================================
# The census
# ================================================================================================
def census(source, *, memories: dict | None = None, manifest: dict | None = None,
           conversations: dict | None = None, rows: list[dict] | None = None, rows_problems=()) -> dict:
    """The mechanism census of a run directory (a path), or of result rows (an iterable of dicts or
    ``QuestionResult``) with optional saved ``memories`` (``{method: {conv_id: {"events": [...],
    "structures": {...}}}}``), ``manifest`` and ``conversations`` (id -> ``Conversation``: their questions let
    each method's own decisions be checked, ``decisions``). See the module docstring for what is counted.

    For a run directory, ``rows`` are its result rows when the caller has read them already (``workbench report``
    has: a second copy of a large results file is what it cannot afford), ``rows_problems`` what that read met
    (bad lines, a file above the limit: listed with the census's problems); else ``results.jsonl`` is read, up to
    the display limit (``workbench.jsonl.MAX_READ_BYTES``; what a larger file left out is a problem). Names of
    folders that are not UTF-8 appear with their bytes escaped (``naive\\xfe``), so the census can be written
    as JSON and printed anywhere."""
    problems: list[str] = list(rows_problems)
    if isinstance(source, (str, os.PathLike)):
        run = Path(source)
        if not run.is_dir():
            raise FileNotFoundError(f"run directory not found: {escape_undecodable(str(run))}")
        store, results = None, run / "results.jsonl"
        if rows is not None:
            rows, why_none = list(rows), None
        else:
            try:
                store = ResultsStore(results, capped=True) if results.is_file() else None
                why_none = f"{results} is missing"
            except LeadsOutside as exc:
                why_none = str(exc)
            rows = list(store) if store is not None else []
        if store is not None:
            problems.extend(str(b) for b in store.bad)
            if store.capped is not None:
                problems.append(f"{store.capped}; the counts cover those rows only")
        elif why_none is not None:
            problems.append(f"{why_none}: only saved memories are counted")
        mems = _read_memories(run, problems)
        manifest = {}
        if (run / "manifest.json").is_file():
            try:
                manifest = read_json(confined(run / "manifest.json", run))
            except DamagedFile as exc:  # LeadsOutside included
                problems.append(str(exc))
        sources = ["results.jsonl", "memories/*/*/events.jsonl", "memories/*/*/structures.json", "manifest.json",
                   "conversations/*.json"]
        saved = {cid for convs in mems.values() for cid in convs}
        conversations = {**_read_conversations(run, rows, problems, given=conversations or {}, saved=saved),
                         **(conversations or {})}
    else:
        rows = [r.to_dict() if hasattr(r, "to_dict") else dict(r) for r in source]
        mems = _memories_from(memories)
        manifest = manifest or {}
        sources = ["result rows"] + (["saved memories"] if memories else [])
    by_method: dict[str, list[dict]] = {}
    for r in rows:
        by_method.setdefault(str(r.get("method")), []).append(r)
    decided = _decisions(rows, conversations or {}, problems)
    _lend_turns(mems, conversations or {})
    methods = {}
    for name in sorted(set(by_method) | set(mems)):
        mrows = by_method.get(name, [])
        traces = [_trace(r, f"results.jsonl: {name} / {r.get('qa_id')!r}", problems) for r in mrows]
        c = _Counts()
        _common(c, mrows, traces)
        params = _params(mrows)
        spec = method_census(name)  # the method's own counters, declared in its folder
        _lend_prompts(name, mems.get(name, {}))
        if spec is not None:
            common = set(c.counts)
            try:
                spec.count(c, mrows, traces, mems.get(name, {}), params)
            except Exception as exc:  # a shape the readers did not foresee, or a plugin's bug: this method's alone
                reason = f"counting stopped at an unexpected value in the run ({type(exc).__name__}: {exc})"
                problems.append(f"{name}: {reason}; its mechanism counts are left out")
                for part in (c.counts, c.why_zero, c.missing, c.sources):
                    for key in [k for k in part if k not in common]:
                        del part[key]
                c.lack("mechanisms", reason)
        entry = c.to_dict()
        try:
            checked = _checked(spec, mrows, traces, mems.get(name, {}), entry, problems, method=name)
        except Exception as exc:  # a method's check (its pick, its check_off) failing is its own problem only
            problems.append(f"{name}: its mechanism check raised ({type(exc).__name__}: {exc}); nothing was checked")
            checked = {"checkable": False, "why": f"the method's check raised {type(exc).__name__}"}
        if checked is not None:
            entry["checked"] = checked
        if decided.get(name):
            entry["decisions"] = decided[name]
        entry["configurations"] = len({str(r.get("params_hash")) for r in mrows})
        entry["conversations_saved"] = len(mems.get(name, {}))
        methods[name] = entry
    return escape_undecodable_all({
        "schema": SCHEMA, "computed_from": sources,
        "scripted": bool(manifest.get("scripted")) if isinstance(manifest, dict) else False,
        "label": manifest.get("label") if isinstance(manifest, dict) and manifest.get("scripted") else None,
        "methods": methods, "problems": problems})


def write_census(run_dir: str | os.PathLike, value: dict | None = None) -> Path:
    """(Re)compute the census of ``run_dir`` (unless given) and write ``<run_dir>/mechanisms.json`` atomically."""
    value = census(run_dir) if value is None else value
    return write_json_atomic(Path(run_dir) / FILE, value, indent=2)


def read_census(run_dir: str | os.PathLike) -> dict | None:
    """``<run_dir>/mechanisms.json`` if present and shaped like a census; ``DamagedFile`` if it is not."""
    path = Path(run_dir) / FILE
    if not path.is_file():
        return None
    value = read_json(confined(path, run_dir))
    if value.get("schema") != SCHEMA or not isinstance(value.get("methods"), dict):
        raise DamagedFile(path, f"not a mechanism census of schema {SCHEMA!r}")
    return value


# ================================================================================================
# Rendering
# ================================================================================================


def _headline_of(method: str) -> tuple[tuple[str, str], ...]:
    """The counts the app header and the one-line summary show for ``method``, with labels (its census's)."""
    spec = method_census(method)
    return spec.headline if spec is not None else ()


def _problems_of(method: str) -> tuple[tuple[str, str], ...]:
    """Counts of a model-output problem listed beside the failures when non-zero (its census's)."""
    spec = method_census(method)
    return spec.problems if spec is not None else ()


_FAILURES = (("row_errors", "raised"), ("fallback_answers", "fallback answers"), ("cassette_misses", "cassette misses"),
             ("llm_errors", "failed LLM calls"), ("construction_llm_errors", "failed construction calls"),
             ("construction_method_failures", "failed construction steps"), ("judge_errors", "judge errors"))
#: the failure labels above for a count of one, by count name ("1 judge error", not "1 judge errors")
_ONE = {"fallback_answers": "fallback answer", "cassette_misses": "cassette miss", "llm_errors": "failed LLM call",
        "construction_llm_errors": "failed construction call",
        "construction_method_failures": "failed construction step", "judge_errors": "judge error"}


def value_text(value) -> str:
    if value is None:
        return "missing"
    if isinstance(value, dict):
        if all(isinstance(v, dict) for v in value.values()) and value:
            return "; ".join(f"{k}: {value_text(v)}" for k, v in value.items())
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "none"
    return str(value)


def item_text(item: dict) -> str:
    """One headline item as words: ``3 gaps opened``, or ``planner scopes: SHORT 2, LONG 1`` for a breakdown
    (and for a label that ends in a colon: ``episodes repeating ...: 95``)."""
    if item["label"].endswith(":"):
        return f"{item['label']} {value_text(item['value'])}"
    if isinstance(item["value"], dict):
        return f"{item['label']}: {value_text(item['value'])}"
    label = _ONE.get(item.get("name", ""), item["label"]) if item["value"] == 1 else item["label"]
    return f"{value_text(item['value'])} {label}"


def headline(value: dict) -> list[dict]:
    """Per method, ``{"method", "questions", "items": [{"name", "label", "value", "fired", "note"}],
    "failures": [...]}``: the census counts the app header shows. ``fired`` is False for a zero (or
    an all-zero dict), None for a missing count; ``note`` is its ``why_zero`` or ``missing`` text."""
    out = []
    for method, entry in (value.get("methods") or {}).items():
        if not isinstance(entry, dict):
            continue
        counts = entry.get("counts") if isinstance(entry.get("counts"), dict) else {}
        why = entry.get("why_zero") if isinstance(entry.get("why_zero"), dict) else {}
        missing = entry.get("missing") if isinstance(entry.get("missing"), dict) else {}

        def item(name, label):
            v = counts.get(name)
            fired = None if v is None else not _is_zero(v)
            return {"name": name, "label": label, "value": v, "fired": fired,
                    "note": missing.get(name) if v is None else why.get(name, "")}

        items = [item(n, lbl) for n, lbl in _headline_of(method) if n in counts]
        failures = [item(n, lbl) for n, lbl in _FAILURES + _problems_of(method) if counts.get(n)]
        from .annotations import checked_text

        out.append({"method": method, "questions": counts.get("questions"), "items": items, "failures": failures,
                    "checked": checked_text(entry.get("checked") if isinstance(entry.get("checked"), dict) else None)})
    return out


def summary_line(value: dict) -> str:
    """``AMA: 0 updates at ingestion (not fired), ... · MemR3: 3 gaps opened, ...`` (plain text)."""
    parts = []
    for h in headline(value):
        bits = [item_text(i) + (" (not fired)" if i["fired"] is False else "") for i in h["items"]]
        bits += [item_text(f) for f in h["failures"]]
        if h.get("checked"):
            bits.append(f"checked: {h['checked']}")
        if bits:
            parts.append(f"{h['method']}: " + ", ".join(bits))
    return " · ".join(parts)


#: counts every method gets (``_common``); a compact listing leaves them out where they are zero
_GENERIC = ("answers_with_trace", "row_errors", "flagged_rows", "llm_errors", "cassette_misses", "fallback_answers",
            "construction_llm_errors", "construction_method_failures", "failure_kinds", "judge_errors")


def _rows(value: dict, *, compact: bool = False) -> list[list[str]]:
    rows = []
    for method, entry in (value.get("methods") or {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("counts"), dict):
            continue
        why, missing = entry.get("why_zero") or {}, entry.get("missing") or {}
        headline = dict(_headline_of(method))  # one registry lookup per method, not per count
        for name, v in entry["counts"].items():
            if compact and name in _GENERIC and v is not None and _is_zero(v):
                continue
            note = missing.get(name) if v is None else why.get(name, "")
            flag = "missing" if v is None else ("not fired" if _is_zero(v) and name in headline
                                                else "")
            rows.append([method, name, value_text(v), flag, note or ""])
    return rows


def census_markdown(value: dict, *, heading: str = "## Mechanisms fired") -> str:
    """The census as a Markdown section: one table row per count (method, count, value, note)."""
    lines = [heading, ""]
    if value.get("scripted"):
        label = markdown_text(value.get("label") or "the replies were scripted")
        lines += [f"> Scripted run: {label}. These counts show the "
                  "plumbing, not what a model would do.", ""]
    lines += ["Counted from what the run recorded (result rows and their traces, saved events and structures; "
              "`workbench.eval.mechanisms`). A zero of a method's own mechanism is marked *not fired*, with the "
              "evidence from the run where it can be read; *missing* means the run does not record it. Failure "
              "counts that are zero are left out (`workbench mechanisms RUN_DIR` lists every count).", ""]
    rows = [[markdown_text(c) for c in (m, n, v, f, one_line(w, 160))] for m, n, v, f, w in _rows(value, compact=True)]
    lines.append(markdown_table(["method", "count", "value", "", "why zero / why missing"], rows,
                                [False, False, False, False, False]) if rows else "(no methods in this run)")
    checked = [(h["method"], h["checked"]) for h in headline(value) if h.get("checked")]
    if checked:
        annotated = any("annotated" in str((e.get("checked") or {}).get("phenomena", ""))
                        for e in (value.get("methods") or {}).values() if isinstance(e, dict))
        where = ("the phenomena planted in the project's conversations or annotated in LoCoMo's "
                 "(`sample_data/annotations.json`, `sample_data/labels/locomo_phenomena.json`, "
                 "`workbench.eval.annotations`)" if annotated else
                 "the planted phenomena of the conversation (`sample_data/annotations.json`, "
                 "`workbench.eval.annotations`)")
        lines += ["", f"Did each firing do the right thing? Checked against {where}:", ""]
        lines += [f"- **{markdown_text(m)}**: {markdown_text(one_line(t, 300))}" for m, t in checked]
    decided = [(m, e["decisions"]) for m, e in (value.get("methods") or {}).items()
               if isinstance(e, dict) and isinstance(e.get("decisions"), dict) and e["decisions"]]
    if decided:
        lines += ["", "Were the steps' own decisions right? Each checked against the question's gold: the answer a "
                  "step decided on, with the answer checker, or for a Judge the gold evidence among its candidates "
                  "(`workbench.eval.decisions`; per step in the trace views):", ""]
        lines += [f"- **{markdown_text(m)}**: {markdown_text(one_line(tally_text(d), 400))}" for m, d in decided]
    if value.get("problems"):
        lines += ["", f"{len(value['problems'])} problem(s) reading the run: "
                  + "; ".join(markdown_text(one_line(p, 200)) for p in value["problems"][:5])]
    return "\n".join(lines) + "\n"


def census_text(value: dict) -> str:
    """The census as a plain-text table for the terminal (``workbench mechanisms``)."""
    rows = [["method", "count", "value", "", "note"]] + [[m, n, one_line(v, 60), f, one_line(w, 90)]
                                                         for m, n, v, f, w in _rows(value)]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    out = ["  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + ("  " + r[4] if r[4] else "") for r in rows]
    if value.get("scripted"):
        out.insert(0, f"SCRIPTED RUN: {value.get('label') or ''}".rstrip())
    for h in headline(value):
        if h.get("checked"):
            out.append(f"checked {h['method']}: {h['checked']}")
    for m, e in (value.get("methods") or {}).items():
        if isinstance(e, dict) and isinstance(e.get("decisions"), dict) and e["decisions"]:
            out.append(f"decisions {m}: {tally_text(e['decisions'])}")
    for p in value.get("problems") or []:
        out.append(f"problem: {p}")
    return "\n".join(line.rstrip() for line in out)


#: what ``workbench mechanisms`` meets when it cannot write ``mechanisms.json`` where it was asked to: a run on a
#: read-only disk or someone else's folder, or a full disk. The census is printed all the same; nothing is written
UNWRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT)


def mechanisms_command(args) -> int:
    """``workbench mechanisms RUN_DIR``: (re)compute the census, print it, write ``mechanisms.json`` (or ``--out``).

    A run that cannot be written to (read-only, not ours, a full disk) is still counted and printed: the file is
    then not written, and a note on stderr says so and where it could go (``--out``); the run is left unchanged."""
    value = census(args.run)
    if args.format == "json":
        print(terminal_json(json.dumps(value, indent=2, ensure_ascii=False)))  # C1 controls survive json.dumps
    else:
        print(terminal_text(census_text(value)))
    if args.no_write:
        return 0
    target = Path(args.out) if getattr(args, "out", None) else Path(args.run) / FILE
    shown = terminal_text(escape_undecodable(str(target)))
    try:
        path = write_json_atomic(target, value, indent=2)
    except OSError as exc:
        if exc.errno not in UNWRITABLE:
            raise
        print(f"note: {shown} was not written ({exc.strerror or exc}); the census above is printed only and the run "
              "is left unchanged (--out FILE writes it elsewhere, --no-write skips writing)", file=sys.stderr)
        return 0
    if args.format != "json":
        print(f"\n-> {terminal_text(escape_undecodable(str(path)))}")
    return 0
