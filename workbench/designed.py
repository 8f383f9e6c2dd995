"""Designed runs (issue #64): a method's ``paper`` profile replayed on reference replies written by hand.

A designed run is the gallery example (or a sample conversation's signature case) run through the method's real code
-- its embedder (the project's MiniLM), index, thresholds and control flow -- with one thing replaced: the LLM is a
``ReferenceLLM`` (``workbench.llm.reference``) answering each prompt from ``sample_data/reference/<method>.<id>.json``,
the replies a careful, capable model would give. Whether the mechanism then reaches its planted outcome is a property
of the method's code; where it does not on right replies, the code has a defect.

A designed run is labelled in its manifest (``scripted``: true, ``label``: "reference replies written by hand, not a
model", ``designed``: the file) and its LLM's model name says the same, so every view that names the run's LLM labels
it. It is written to its own directory (a new temporary one by default), never into a model run's directory: it is
never counted in any accuracy, census figure or chart of a model run.

    run = designed_run("ama")                 # -> DesignedRun; run.out is the run directory
    run.census["checked"], run.llm.misses     # the checked census entry; prompts the file did not cover (none)
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .data import SAMPLE_DIR

#: where the reference-replies files live
REFERENCE_DIR = SAMPLE_DIR / "reference"
#: the label a designed run carries in its manifest, census and every view that shows it
LABEL = "designed run: reference replies written by hand, not a model"


class UncoveredPrompts(RuntimeError):
    """The designed run asked prompts its reference file does not cover (each listed); its outputs are not a
    designed run."""


@dataclass
class DesignedRun:
    """A finished designed run: ``out`` (its run directory), ``llm`` (the ``ReferenceLLM``: ``misses``, ``unused()``),
    ``result`` (the harness's ``EvalResult``), ``census`` (the method's entry of the run's mechanism census)."""

    method: str
    conversation: str
    out: Path
    llm: Any
    result: Any
    census: dict

    @property
    def verdict(self) -> str:
        """The checked census's one word (``workbench.eval.annotations.checked_verdict``): "right" when every firing
        of the mechanism was right and nothing planted was missed."""
        from .eval.annotations import checked_verdict

        return checked_verdict(self.census.get("checked"))[0]


def reference_file(method_name: str, conversation_id: str) -> Path:
    """``sample_data/reference/<method>.<conversation>.json``."""
    return REFERENCE_DIR / f"{method_name}.{conversation_id}.json"


def _conversation(file: dict, path: Path):
    """The file's conversation, cut to the turns and questions it names (``turns``, ``questions``; all when absent),
    and the dataset it came from. A named turn or question the conversation lacks is an error naming the file."""
    from .data import Dataset, load_dataset
    from .data.types import Conversation

    data = load_dataset(file["data"])
    try:
        conv = data[file["conversation"]]
    except KeyError:
        raise ValueError(f"{path}: conversation {file['conversation']!r} is not in the {file['data']!r} data") from None
    keep, asks = file.get("turns"), file.get("questions")
    if keep is not None:
        unknown = sorted(set(keep) - {t.id for t in conv.turns})
        if unknown:
            raise ValueError(f"{path}: field 'turns' names turns {unknown} that {conv.id} does not have")
        sessions = tuple(replace(s, turns=tuple(t for t in s.turns if t.id in set(keep))) for s in conv.sessions)
        conv = Conversation(conv.id, conv.speakers, tuple(s for s in sessions if s.turns), conv.qa, conv.source)
    if asks is not None:
        unknown = sorted(set(asks) - {q.id for q in conv.qa})
        if unknown:
            raise ValueError(f"{path}: field 'questions' names questions {unknown} that {conv.id} does not have")
        conv = replace(conv, qa=tuple(q for q in conv.qa if q.id in set(asks)))
    return conv, Dataset(data.name, (conv,))


def _embedder():
    """The project's MiniLM (the gallery's embedder); a missing [local] extra is said, never replaced by another."""
    from .embed import embedder_from_spec

    try:
        return embedder_from_spec("minilm")
    except Exception as exc:  # an absent package or model file: said, the run does not go on with another embedder
        raise RuntimeError(f"a designed run needs the project's MiniLM embedder (the [local] extra): {exc}") from exc


def designed_run(method_name: str, gallery_id: str | None = None, *, out: str | Path | None = None,
                 replies: str | Path | None = None, reply_list: list[dict] | None = None, embedder=None,
                 allow_uncovered: bool = False) -> DesignedRun:
    """Replay ``method_name``'s paper profile on ``gallery_id`` (default: the method's gallery example) with the
    reference replies of ``replies`` (default ``reference_file(method_name, gallery_id)``) into run directory ``out``
    (default: a new temporary directory). ``reply_list`` replaces the file's replies (a test changing one reply);
    ``embedder`` replaces MiniLM (tests only). Raises ``UncoveredPrompts`` listing every prompt the file did not
    cover, unless ``allow_uncovered`` (then they are in ``run.llm.misses``)."""
    from .eval.judge import CheckerJudge
    from .eval.harness import evaluate
    from .eval.manifest import update_run_manifest
    from .eval.mechanisms import census, write_census
    from .eval.settings import build_method
    from .gallery import gallery_methods
    from .llm.reference import ReferenceLLM, load_reference
    from .methods import get_method

    cls = get_method(method_name)
    if gallery_id is None:
        gallery_id = gallery_methods([method_name])[method_name].how_it_works.gallery
    path = Path(replies) if replies is not None else reference_file(method_name, gallery_id)
    file = load_reference(path)
    if file["method"] != method_name or file["conversation"] != gallery_id:
        raise ValueError(f"{path}: written for {file['method']} on {file['conversation']}, not {method_name} on "
                         f"{gallery_id}")
    conv, dataset = _conversation(file, path)
    llm = ReferenceLLM(path, conv, replies=reply_list)
    own = getattr(getattr(cls, "how_it_works", None), "gallery", None) == gallery_id
    params = {**(cls.how_it_works.gallery_params if own else {}), **file.get("params", {}), "profile": "paper"}
    setup = build_method(method_name, llm=llm, embedder=embedder or _embedder(), params=params, data=file["data"],
                         calibration="off", bounded=False, warn=False)
    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix=f"designed-{method_name}-"))
    if out.exists() and any(out.iterdir()):  # a resumed run would ask no prompt: "0 uncovered" would mean nothing
        raise ValueError(f"{out}: a designed run needs an empty directory (it is never resumed or mixed with a "
                         "model run)")
    out.mkdir(parents=True, exist_ok=True)
    where = path.relative_to(SAMPLE_DIR.parent) if path.is_relative_to(SAMPLE_DIR.parent) else path.name
    label = {"scripted": True, "label": LABEL,
             "designed": {"replies": str(where), "conversation": conv.id, "turns": len(conv.turns),
                          "questions": len(conv.qa)}}
    res = evaluate(setup.method, dataset, judge=CheckerJudge(conv.speakers), store=out / "results.jsonl",
                   progress=False, save_memories_dir=out, extra_manifest={**setup.manifest(), **label})
    update_run_manifest(out, res.manifest, **label)  # top level too: the census and the views read it there
    write_census(out)
    write_calls(out / CALLS, llm.ledger.calls, llm.schemas)  # the designed path, step by step (``designed_log``)
    if llm.misses and not allow_uncovered:
        lines = [f"- {m['role']} about {m['about']}: {m['why']}; prompt starts {m['prompt_start'][:120]!r}"
                 for m in llm.misses]
        raise UncoveredPrompts(f"{path.name}: {len(llm.misses)} prompt(s) not covered by the reference replies "
                               f"(run kept in {out}):\n" + "\n".join(lines))
    entry = census(out)["methods"].get(setup.method.name, {})
    return DesignedRun(method_name, conv.id, out, llm, res, entry)


# ------------------------------------------------------------------------------------------------
# The designed path, and where a model's run leaves it (issue #64 item 3)
# ------------------------------------------------------------------------------------------------
#: a designed run's calls, as its LLM saw them (``designed_run`` writes it; ``designed_log`` reads it)
CALLS = "calls.jsonl"
#: how much of a reference reply's reason a divergence's sentence quotes (the file has it whole)
WHY_CHARS = 160
#: where a run directory keeps the designed runs made for its pages (``cached_designed_run``): beside ``gallery``,
#: never inside a model run's results, census or memories
DESIGNED_SUBDIR = "designed"
#: the parts of a reference rule's ``about`` that say what a prompt is about in the conversation; the others
#: (candidates, memory pool, answer) come from the run's own memory and differ between runs that took the same step
SUBJECT_KEYS = ("turn", "turns", "question", "query")
#: role suffixes of the client's own follow-up calls: their reply stands for the call they repair
_FOLLOW_UPS = ("repair", "retry")
_PHASES = ("construct", "query")


def _raw_call(call) -> dict:
    return {"role": call.role, "phase": call.phase, "model": call.model, "messages": list(call.messages),
            "response": call.response, "error": call.error}


def write_calls(path: Path, calls, schemas: dict | None = None) -> None:
    """Save a run's construction and query calls (``LLMCall``s, in the order made) as JSON Lines; the first line
    holds the schemas each role was sent with, when known."""
    lines = [json.dumps({"schemas": schemas or {}}, ensure_ascii=False)]
    lines += [json.dumps(_raw_call(c), ensure_ascii=False) for c in calls if c.phase in _PHASES]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def read_calls(path: Path) -> tuple[list[dict], dict]:
    """``(calls, schemas)`` from a ``write_calls`` file; a damaged file is a ``ValueError`` naming it."""
    try:
        rows = [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines() if x.strip()]
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable calls file ({exc})") from exc
    if not rows or not isinstance(rows[0].get("schemas"), dict):
        raise ValueError(f"{path}: the first line must hold the 'schemas' object")
    return rows[1:], rows[0]["schemas"]


def decision_fields(schema) -> tuple[str, ...]:
    """The reply fields that steer a method's path: the enum, boolean and integer properties of the role's schema
    (AMA's Judge ``Action``, HyMem's ``finished``, RecMem's ``should_merge``); free text (summaries, answers) is
    content, compared by whether the step was taken at all."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return ()
    return tuple(k for k, v in props.items()
                 if isinstance(v, dict) and ("enum" in v or v.get("type") in ("boolean", "integer")))


def _reply_value(text: str):
    from .llm.errors import ParseError
    from .llm.jsonparse import extract_json

    try:
        return extract_json(text)
    except (ParseError, ValueError):  # free text, or a reply nobody could read: its words are kept as they are
        return text


def call_log(calls: list[dict], conversation, *, fields: dict | None = None, schemas: dict | None = None,
             reference: dict | None = None) -> list[dict]:
    """A run's calls (``read_calls``) as its path: one entry per construction or query call, in the order the
    conversation reaches them, each with ``role``, ``phase``, ``subject`` (what the prompt is about in the
    conversation, read by the reference rules of ``workbench.llm.reference``; None where a prompt is not one the
    rules read, as the small profile's), ``reply`` (parsed), ``decision`` (its ``fields``: per role the
    ``decision_fields`` of ``schemas``, or ``fields`` given), ``why`` (the reference entry's, with ``reference``),
    ``prompt`` and ``response``. A ``.repair``/``.retry`` call's reply replaces the reply of the call it repairs.
    A reference file's ``decides`` (role -> fields) names the decisions of its path where the schema's would
    compare tuning (AMA's Retriever ``K_dyn``) as if it were the mechanism; a role it leaves out is compared by
    whether its step was taken."""
    from .llm.reference import RULES, Prompt, RuleError

    turns = {str(t.id): str(t.text) for t in conversation.turns if str(t.text).strip()}
    questions = tuple(str(q.question) for q in conversation.qa)
    fields = dict(fields or {})
    for role, schema in (schemas or {}).items():
        fields.setdefault(role, decision_fields(schema))
    out: list[dict] = []
    for c in calls:
        head, _, tail = c["role"].rpartition(".")
        if tail in _FOLLOW_UPS and any(e["role"] == head for e in out):
            base = next(e for e in reversed(out) if e["role"] == head)
            base.update(_reply(c, base["fields"]), followed_up=tail)
            continue
        text = "\n".join(str(m.get("content", "")) for m in c.get("messages") or ())
        about = None
        if c["role"] in RULES:
            try:
                about = RULES[c["role"]](Prompt(text, turns, questions))
            except RuleError:  # not a prompt the rules read (another profile's wording): matched by order instead
                about = None
        subject = {k: about[k] for k in SUBJECT_KEYS if about and k in about} or None
        role_fields = tuple(fields.get(c["role"], ()))
        entry = {"role": c["role"], "phase": c["phase"], "subject": subject, "about": about, "fields": role_fields,
                 "prompt": text, "model": c.get("model"), **_reply(c, role_fields)}
        if reference is not None and about is not None:
            entry["why"] = next((r.get("why") for r in reference.get("replies", ())
                                 if r["role"] == c["role"] and r["about"] == about), None)
        out.append(entry)
    return _in_conversation_order(out, conversation)


def _reply(call: dict, fields: tuple) -> dict:
    if call.get("error"):
        return {"reply": None, "response": "", "decision": {"error": str(call["error"])}, "error": call["error"]}
    value = _reply_value(call.get("response") or "")
    decision = {f: value.get(f) for f in fields} if isinstance(value, dict) else {f: None for f in fields}
    return {"reply": value, "response": call.get("response") or "", "decision": decision, "error": None}


def _in_conversation_order(entries: list[dict], conversation) -> list[dict]:
    """Construction first, in the order of the turns each call is about, then each question in the conversation's
    order: calls made in parallel (a method's batch of summaries) come out in one order every time. A call whose
    subject names neither a turn nor a question stays after the call before it."""
    turn_at = {str(t.id): i for i, t in enumerate(conversation.turns)}
    question_at = {str(q.question): i for i, q in enumerate(conversation.qa)}
    keys, last = [], (0, -1)
    for n, e in enumerate(entries):
        s = e["subject"] or {}
        first = s.get("turn") or (s.get("turns") or [None])[0]
        if e["phase"] == "query" and s.get("question") in question_at:
            last = (1, question_at[s["question"]])
        elif e["phase"] == "construct" and first in turn_at:
            last = (0, turn_at[first])
        elif e["phase"] == "query" and last[0] == 0:
            last = (1, -1)
        keys.append((last, n))
    return [entries[n] for _, n in sorted(keys)]


def align(designed: list[dict], model: list[dict]) -> list[dict]:
    """Each step of ``designed``'s path (``call_log``) with the step of ``model``'s that takes it, walking the
    designed path in order: ``same`` (taken, each decision field as the reference reply), ``decided otherwise`` (a
    decision field differs, or the call failed: ``fields`` holds ``(reference, model)`` values), ``missing`` (no
    call of that role about that subject in that phase; ``others``: what the model's remaining calls of the role
    there are about); then ``extra``: the model's calls of the designed path's roles it made beyond it. Calls are
    paired per role and phase, by subject where both prompts are read, else in order."""
    used = [False] * len(model)
    roles = {d["role"] for d in designed}
    out = []
    for i, d in enumerate(designed):
        j = _pair(d, model, used)
        if j is None:
            others = [m["subject"] for k, m in enumerate(model)
                      if not used[k] and m["role"] == d["role"] and m["phase"] == d["phase"]]
            anywhere = sum(m["role"] == d["role"] and m["phase"] == d["phase"] for m in model)
            out.append({"kind": "missing", "at": i, "designed": d, "model": None, "others": others,
                        "role_calls": anywhere})
            continue
        used[j] = True
        m = model[j]
        diff = {f: (d["decision"].get(f), m["decision"].get(f)) for f in d["fields"]
                if d["decision"].get(f) != m["decision"].get(f)}
        if m.get("error"):
            diff = {"error": (None, m["error"])}
        out.append({"kind": "decided otherwise" if diff else "same", "at": i, "designed": d, "model": m,
                    "fields": diff})
    out += [{"kind": "extra", "at": None, "designed": None, "model": m}
            for k, m in enumerate(model) if not used[k] and m["role"] in roles]
    return out


def divergences(designed: list[dict], model: list[dict]) -> list[dict]:
    """The steps of ``align`` where the model's run leaves the designed path (all but ``same``), in the designed
    path's order, the model's extra calls last: the first is where it leaves it."""
    return [a for a in align(designed, model) if a["kind"] != "same"]


def touches(div: dict, turns, questions) -> bool:
    """Whether a divergence is about one of ``turns`` (turn ids) or ``questions`` (question texts): a planted
    phenomenon's, where it decides the example's outcome."""
    s = (div["designed"] or div["model"] or {}).get("subject") or {}
    ids = set(s.get("turns") or ()) | ({s["turn"]} if s.get("turn") else set())
    return bool(ids & set(turns)) or s.get("question") in set(questions)


def _pair(d: dict, model: list[dict], used: list[bool]) -> int | None:
    free = [k for k, m in enumerate(model) if not used[k] and m["role"] == d["role"] and m["phase"] == d["phase"]]
    if d["subject"] is not None:
        same = [k for k in free if model[k]["subject"] == d["subject"]]
        if same:
            return same[0]
        if any(model[k]["subject"] is not None for k in free):  # read, and about something else: not this step
            return None
    return free[0] if free else None


def first_divergence(designed: list[dict], model: list[dict]) -> dict | None:
    """The first of ``divergences`` (None: the model's run took every step of the designed path, deciding each as
    the reference replies did, and no decisive step beyond it)."""
    found = divergences(designed, model)
    return found[0] if found else None


def short_model(name: str | None) -> str:
    """"qwen2.5-coder-1.5b" -> "the 1.5B": how the page names the demo model; another name is kept."""
    import re

    hit = re.search(r"(\d+(?:\.\d+)?)b$", str(name or ""), flags=re.IGNORECASE)
    return f"the {hit.group(1)}B" if hit else str(name or "the model")


def subject_words(subject: dict | None) -> str:
    """What a step is about, in words: "turn D2:3", "turns D1:1-D1:7", "the question “...”"."""
    if not subject:
        return "a prompt the reference rules do not read"
    if "turn" in subject:
        return f"turn {subject['turn']}"
    if "turns" in subject:
        t = subject["turns"]
        return f"turn {t[0]}" if len(t) == 1 else f"turns {t[0]}-{t[-1]}" if t else "no turn"
    if "question" in subject:
        return f"the question “{subject['question']}”"
    return f"the query “{subject.get('query')}”"


def _values(decision: dict) -> str:
    return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in decision.items())


def divergence_text(div: dict | None, who: str = "the model", *, why_chars: int | None = None) -> str:
    """One sentence saying where and how the model's run left the designed path (``divergences`` entry), with the
    reference reply's reason (cut to ``why_chars`` characters when given)."""
    if div is None:
        return (f"{who}'s run took every step of the designed path and decided each as the reference replies do.")
    d, m = div["designed"], div["model"]
    if div["kind"] == "extra":
        return (f"{who}'s run makes a {m['role']} call on {subject_words(m['subject'])} that the designed path does "
                f"not ({_values(m['decision']) or 'a free-text reply'}).")
    phase = "building the memory" if d["phase"] == "construct" else "answering"
    reason = str(d.get("why") or "")
    if why_chars is not None and len(reason) > why_chars:
        reason = reason[:why_chars].rsplit(" ", 1)[0] + " …"
    why = f" (the reference reply's reason: {reason})" if reason else ""
    if div["kind"] == "missing":
        others = [subject_words(s) for s in div["others"]]
        instead = (f"its remaining {d['role']} calls there are on {', '.join(dict.fromkeys(others))}" if others
                   else (f"it makes no {d['role']} call at all while {phase} (its profile has no such step there, "
                         "or its run never reaches it)")
                   if not div.get("role_calls") else f"it makes no further {d['role']} call while {phase}")
        return (f"While {phase}, the designed path calls {d['role']} on {subject_words(d['subject'])}{why}; "
                f"{who}'s run does not: {instead}.")
    if "error" in div["fields"]:
        return (f"While {phase}, {who}'s {d['role']} call on {subject_words(d['subject'])} failed "
                f"({m['error']}); the reference reply is {_values(d['decision']) or 'free text'}{why}.")
    mine = _values({f: v[1] for f, v in div["fields"].items()})
    ref = _values({f: v[0] for f, v in div["fields"].items()})
    return (f"While {phase}, {who}'s {d['role']} on {subject_words(d['subject'])} answered {mine}; the reference "
            f"reply is {ref}{why}.")


def designed_log(run_dir: str | Path) -> list[dict]:
    """The designed path of a designed run's directory (``call_log`` of its ``calls.jsonl``, each step with the
    reference entry's reason), read with the reference file and conversation its manifest names."""
    run_dir = Path(run_dir)
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    where = (manifest.get("designed") or {}).get("replies")
    if not where:
        raise ValueError(f"{run_dir}: not a designed run (its manifest names no reference file)")
    path = SAMPLE_DIR.parent / where
    file = load_reference(path if path.is_file() else REFERENCE_DIR / Path(where).name)
    conv, _ = _conversation(file, path)
    calls, schemas = read_calls(run_dir / CALLS)
    decides = file.get("decides")
    fields = None if decides is None else {**{r: () for r in schemas}, **{r: tuple(f) for r, f in decides.items()}}
    return call_log(calls, conv, fields=fields, schemas=schemas, reference=file)


def load_reference(path):
    from .llm.reference import load_reference as load

    return load(path)


def file_hash(path: str | Path) -> str:
    """The first 12 hex digits of a file's sha256: what a cached designed run or call log is keyed by."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def _publish(tmp: Path, out: Path) -> Path:
    """Move a finished ``tmp`` directory to ``out``; a concurrent maker that got there first wins."""
    try:
        os.replace(tmp, out)
    except OSError:
        if not (out / CALLS).is_file():
            raise
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def cached_designed_run(run_dir: str | Path, method_name: str, gallery_id: str | None = None, *,
                        embedder=None) -> Path | None:
    """The designed run of ``method_name``'s gallery example for the run directory ``run_dir``:
    ``<run>/designed/<method>/<conversation>-<hash of the reference file>``, made on first use and reused after
    (a changed reference file makes a new one). None when the example has no reference file. It lives beside the
    run's ``gallery``, never in the run's own results or census. A run the file does not cover raises
    ``UncoveredPrompts``."""
    from .gallery import gallery_methods

    if gallery_id is None:
        gallery_id = gallery_methods([method_name])[method_name].how_it_works.gallery
    ref = reference_file(method_name, gallery_id)
    if not ref.is_file():
        return None
    folder = Path(run_dir) / DESIGNED_SUBDIR / method_name
    out = folder / f"{gallery_id}-{file_hash(ref)}"
    if (out / CALLS).is_file():
        return out
    folder.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=folder))
    try:
        designed_run(method_name, gallery_id, out=tmp, embedder=embedder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return _publish(tmp, out)


def designed_ready(run_dir: str | Path, method_name: str, gallery_id: str | None = None) -> bool:
    """Whether ``compare`` would find everything already made under ``run_dir`` (the designed run and the call log
    of each recorded profile): a view can then show it at once rather than make it (tens of seconds)."""
    from .gallery import cassette, gallery_methods

    if gallery_id is None:
        gallery_id = gallery_methods([method_name])[method_name].how_it_works.gallery
    ref = reference_file(method_name, gallery_id)
    if not ref.is_file():
        return False
    folder = Path(run_dir) / DESIGNED_SUBDIR / method_name
    if not (folder / f"{gallery_id}-{file_hash(ref)}" / CALLS).is_file():
        return False
    tapes = [cassette(method_name, p) for p in ("small", "paper")]
    return all((folder / f"model-{p}-{file_hash(t)}.calls.jsonl").is_file()
               for p, t in zip(("small", "paper"), tapes) if t.is_file())


def model_calls(method_name: str, profile: str, cache_dir: str | Path) -> list[dict] | None:
    """The calls the demo model's recorded gallery example makes (``read_calls`` form), by replaying its committed
    cassette (``workbench.gallery``) once with every call tracked; cached in ``cache_dir`` as
    ``model-<profile>-<hash of the cassette>.calls.jsonl``. None when that profile is not recorded."""
    from .gallery import cassette, run_example
    from .llm.ledger import track

    tape = cassette(method_name, profile)
    if not tape.is_file():
        return None
    cache_dir = Path(cache_dir)
    path = cache_dir / f"model-{profile}-{file_hash(tape)}.calls.jsonl"
    if not path.is_file():
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"replay-{method_name}-") as tmp, track() as calls:
            run_example(method_name, Path(tmp) / "run", replay=True, profile=profile)
        part = path.with_name(path.name + f".{os.getpid()}.part")
        write_calls(part, calls)
        os.replace(part, path)
    return read_calls(path)[0]


@dataclass
class Comparison:
    """A designed run beside one model run of the same example: the two paths (``call_log``), every divergence
    and the first, in words (``text``). ``who``: how the model is named ("the 1.5B")."""

    method: str
    profile: str
    designed_dir: Path
    designed: list[dict]
    model: list[dict]
    aligned: list[dict]
    who: str

    @property
    def found(self) -> list[dict]:
        """Every divergence (``divergences``)."""
        return [a for a in self.aligned if a["kind"] != "same"]

    @property
    def absent(self) -> list[tuple[str, str]]:
        """``(role, phase)`` of the designed path that the model's run never calls in that phase: a step its
        profile does not have (the small profile's own pipeline), said once rather than at every turn."""
        return list(dict.fromkeys((a["designed"]["role"], a["designed"]["phase"]) for a in self.aligned
                                  if a["kind"] == "missing" and not a.get("role_calls")))

    @property
    def first(self) -> dict | None:
        """Where the model's run leaves the designed path on a step its profile has (the first divergence that is
        not an ``absent`` step); the first of all when every divergence is one."""
        found = self.found
        shared = [a for a in found if not (a["kind"] == "missing" and not a.get("role_calls"))]
        return (shared or found or [None])[0]

    @property
    def text(self) -> str:
        return divergence_text(self.first, self.who, why_chars=WHY_CHARS)


def compare(run_dir: str | Path, method_name: str, profile: str, *, embedder=None) -> Comparison | None:
    """The designed run of ``method_name``'s example (``cached_designed_run``) beside the demo model's recorded
    run under ``profile`` (``model_calls``); None when either is missing. Both paths are read with the designed
    run's decision fields, so a step is compared on the same fields in both."""
    designed_dir = cached_designed_run(run_dir, method_name, embedder=embedder)
    if designed_dir is None:
        return None
    raw = model_calls(method_name, profile, designed_dir.parent)
    if raw is None:
        return None
    designed = designed_log(designed_dir)
    manifest = json.loads((designed_dir / "manifest.json").read_text(encoding="utf-8"))
    file = load_reference(REFERENCE_DIR / Path(manifest["designed"]["replies"]).name)
    conv, _ = _conversation(file, REFERENCE_DIR)
    fields = {e["role"]: e["fields"] for e in designed}
    model = call_log(raw, conv, fields=fields)
    who = short_model(next((c.get("model") for c in raw if c.get("model")), None))
    return Comparison(method_name, profile, designed_dir, designed, model, align(designed, model), who)
