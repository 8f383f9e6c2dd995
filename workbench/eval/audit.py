"""Judge audit: how often does a judge accept a wrong answer, or reject a right one?

An accuracy measured by an LLM judge is only as good as the judge. ``audit_judge`` measures the
judge on a probe set built from the dataset itself, with no hand labels:

- positives (the judge should say CORRECT): the gold answer; the gold inside a longer sentence;
  the gold with its date written another way ("7 May 2023" -> "May 7, 2023").
- negatives (the judge should say WRONG): the gold answer of another question of the same category
  in the same conversation (only when the two golds share no content word); "Not mentioned in the
  conversation" for an answerable question; the gold's date shifted by a week (a day-precise date)
  or a month (a month-precise one); a named entity of the gold swapped for another entity of the
  conversation (speakers for speakers).

The audit reports the false-accept rate (share of negatives judged CORRECT) and the false-reject
rate (share of positives judged WRONG) with Wilson 95% intervals, overall, per category and per
probe kind. A probe whose verdict cannot be read is a judge error, counted apart and left out of
both rates. A judge is *reliable* when at least ``MIN_NEGATIVES`` negatives were audited and its
false-accept rate is at most ``FALSE_ACCEPT_LIMIT`` (20 %); reports make F1 the headline otherwise.

Results are cached (``AuditCache``, a JSON file) under the key (judge spec, judge prompt hash,
probe-set hash), so reports and manifests reuse them; the cache stores figures and probe ids only,
never dataset text (LoCoMo is CC BY-NC). A run in progress keeps every verdict in a JSONL
checkpoint beside the cache and resumes from it.

    workbench judge-audit --data sample --judge local --n 200
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import sys
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable, Sequence

from ..data import QA, Conversation, Dataset, same_dataset
from .checker import conversation_entities
from .judge import judge_key, judge_spec
from .metrics import _free_text_gold, is_abstention, simple_tokenize
from .stats import rate, wilson  # noqa: F401  (re-exported: the audit's rates)

FALSE_ACCEPT_LIMIT = 0.20
MIN_NEGATIVES = 20
POSITIVE_KINDS = ("gold", "gold_in_sentence", "date_reformat")
NEGATIVE_KINDS = ("other_gold", "not_mentioned", "date_shift", "entity_swap")
NOT_MENTIONED = "Not mentioned in the conversation"
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CACHE = REPO_ROOT / "benchmarks" / "results" / "judge_audits.json"

# Sentences that wrap a gold answer without changing what it says (our own wording).
_WRAPPERS = ("From what they said in the conversation, the answer is {gold}.",
             "I think it was {gold}, going by the chat.",
             "The conversation indicates: {gold}.")
_STOP = frozenset("a an the and or of to in on at for with is was were be it its he she they her his their them "
                  "by from as that this i you we my your our not".split())


@dataclass(frozen=True)
class Probe:
    """One labelled (question, gold, candidate answer) triple; ``expected`` is the right verdict."""

    id: str
    qa_id: str
    conv_id: str
    category: int | str
    question: str
    gold: str
    candidate: str
    kind: str
    expected: bool

    def qa(self) -> QA:
        return QA(self.qa_id, self.question, self.gold, self.category)


# -- dates -------------------------------------------------------------------------------------------
_MONTHS = ("January February March April May June July August September October November December").split()
_MONTH_RE = "|".join(_MONTHS)
_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? ({_MONTH_RE}),? (\d{{4}})\b")
_MDY = re.compile(rf"\b({_MONTH_RE}) (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b")
_MY = re.compile(rf"\b({_MONTH_RE}),? (\d{{4}})\b")


@dataclass(frozen=True)
class _DateSpan:
    start: int
    end: int
    day: date
    precision: str  # "day" | "month"
    style: str      # "dmy" | "mdy" | "my"


def find_date(text: str) -> _DateSpan | None:
    """The first day- or month-precise English date in ``text`` (LoCoMo writes "7 May 2023")."""
    for rx, style in ((_DMY, "dmy"), (_MDY, "mdy")):
        m = rx.search(text)
        if m:
            d, mo, y = (m.group(1), m.group(2), m.group(3)) if style == "dmy" else (m.group(2), m.group(1), m.group(3))
            try:
                return _DateSpan(m.start(), m.end(), date(int(y), _MONTHS.index(mo) + 1, int(d)), "day", style)
            except ValueError:
                return None
    m = _MY.search(text)
    if m:
        return _DateSpan(m.start(), m.end(), date(int(m.group(2)), _MONTHS.index(m.group(1)) + 1, 1), "month", "my")
    return None


def _write_date(d: date, precision: str, style: str) -> str:
    month = _MONTHS[d.month - 1]
    if precision == "month":
        return f"{month} {d.year}"
    return f"{d.day} {month} {d.year}" if style == "dmy" else f"{month} {d.day}, {d.year}"


def reformat_date(text: str) -> str | None:
    """Same date, other notation: "7 May 2023" <-> "May 7, 2023"; "May 2023" -> "2023-05" ."""
    span = find_date(text)
    if span is None:
        return None
    if span.precision == "month":
        new = f"{span.day.year}-{span.day.month:02d}"
    else:
        new = _write_date(span.day, "day", "mdy" if span.style == "dmy" else "dmy")
    return text[:span.start] + new + text[span.end:]


def shift_date(text: str) -> str | None:
    """The date moved by a week (day precision) or a month (month precision), same notation."""
    span = find_date(text)
    if span is None:
        return None
    if span.precision == "day":
        new_day = span.day + timedelta(days=7)
    else:
        y, m = divmod(span.day.month, 12)
        new_day = date(span.day.year + y, m + 1, 1)
    return text[:span.start] + _write_date(new_day, span.precision, span.style) + text[span.end:]


# -- entities ----------------------------------------------------------------------------------------
def swap_entity(gold: str, question: str, entities: Sequence[str], speakers: Sequence[str], salt: str) -> str | None:
    """Replace the first known entity of ``gold`` by another one (a speaker by the other speaker;
    otherwise a deterministic pick, by ``salt``, among entities absent from the gold and question)."""
    words = re.findall(r"\b[A-Z][a-z]{2,}\b", gold)
    known = set(entities)
    target = next((w for w in words if w in known), None)
    if target is None:
        return None
    others = [s for s in speakers if s != target] if target in speakers else []
    if not others:
        others = [e for e in entities if e != target and e not in gold and e not in question and e not in speakers]
    if not others:
        return None
    pick = others[int(hashlib.sha256(salt.encode()).hexdigest(), 16) % len(others)]
    return re.sub(rf"\b{re.escape(target)}\b", pick, gold)


def _content(text: str) -> set[str]:
    return {w.strip("'\";:()") for w in simple_tokenize(text)} - _STOP - {""}


# -- the probe set -------------------------------------------------------------------------------------
def answerable(qa: QA) -> bool:
    """Questions with a short gold answer that a judge scores (not LoCoMo category 5, not LongMemEval
    abstention or preference rubrics)."""
    return _free_text_gold(qa) and not is_abstention(qa)


def probes_for_conversation(conv: Conversation) -> list[Probe]:
    """Every probe the rules above give for one conversation, in question order."""
    qas = [q for q in conv.qa if answerable(q)]
    entities = conversation_entities(conv)
    out: list[Probe] = []
    for i, qa in enumerate(qas):
        def probe(kind: str, candidate: str | None, expected: bool):
            if candidate and candidate.strip():
                out.append(Probe(f"{qa.id}#{kind}", qa.id, conv.id, qa.category, qa.question, qa.answer, candidate,
                                 kind, expected))

        salt = int(hashlib.sha256(qa.id.encode()).hexdigest(), 16)
        probe("gold", qa.answer, True)
        probe("gold_in_sentence", _WRAPPERS[salt % len(_WRAPPERS)].format(gold=qa.answer.rstrip(".")), True)
        probe("date_reformat", reformat_date(qa.answer), True)
        mine = _content(qa.answer)
        same_cat = qas[i + 1:] + qas[:i]
        other = next((o for o in same_cat if o.category == qa.category and mine and _content(o.answer)
                      and not (mine & _content(o.answer))), None)
        probe("other_gold", other.answer if other else None, False)
        probe("not_mentioned", NOT_MENTIONED, False)
        probe("date_shift", shift_date(qa.answer), False)
        probe("entity_swap", swap_entity(qa.answer, qa.question, entities, conv.speakers, qa.id), False)
    return out


def build_probes(dataset: Dataset | Iterable[Conversation]) -> list[Probe]:
    """All probes of every conversation."""
    return [p for conv in dataset for p in probes_for_conversation(conv)]


def sample_probes(probes: Sequence[Probe], n: int | None, *, seed: int = 0) -> list[Probe]:
    """At most ``n`` probes: half negatives, half positives (as far as each side has them), taken
    round-robin over probe kinds from seeded shuffles, returned sorted by id."""
    if n is None or n >= len(probes):
        return sorted(probes, key=lambda p: p.id)
    rng = random.Random(seed)
    by_kind: dict[str, list[Probe]] = {}
    for p in sorted(probes, key=lambda p: p.id):
        by_kind.setdefault(p.kind, []).append(p)
    for lst in by_kind.values():
        rng.shuffle(lst)
    neg = [k for k in NEGATIVE_KINDS if k in by_kind]
    pos = [k for k in POSITIVE_KINDS if k in by_kind]
    n_neg_avail = sum(len(by_kind[k]) for k in neg)
    n_neg = min(n_neg_avail, max(n - sum(len(by_kind[k]) for k in pos), n // 2 + n % 2))
    picked = _round_robin(by_kind, neg, n_neg) + _round_robin(by_kind, pos, n - n_neg)
    return sorted(picked, key=lambda p: p.id)


def _round_robin(by_kind: dict[str, list[Probe]], kinds: list[str], quota: int) -> list[Probe]:
    queues = {k: list(by_kind[k]) for k in kinds}
    out: list[Probe] = []
    while len(out) < quota and any(queues.values()):
        for k in kinds:
            if queues[k] and len(out) < quota:
                out.append(queues[k].pop(0))
    return out


def probe_set_hash(probes: Sequence[Probe]) -> str:
    blob = json.dumps([asdict(p) for p in probes], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# -- rates ---------------------------------------------------------------------------------------------
def rates(verdicts: Sequence[dict]) -> dict:
    """false_accept over negatives, false_reject over positives (verdicts with ``correct`` None left out)."""
    ok = [v for v in verdicts if v.get("correct") is not None]
    neg = [v for v in ok if not v["expected"]]
    pos = [v for v in ok if v["expected"]]
    return {"false_accept": rate(sum(1 for v in neg if v["correct"]), len(neg)),
            "false_reject": rate(sum(1 for v in pos if not v["correct"]), len(pos)),
            "judge_errors": sum(1 for v in verdicts if v.get("correct") is None)}


def is_reliable(audit: dict | None) -> bool:
    """At least ``MIN_NEGATIVES`` audited negatives and a false-accept rate of at most 20 %."""
    if not audit:
        return False
    fa = audit.get("false_accept") or {}
    return fa.get("rate") is not None and fa.get("n", 0) >= MIN_NEGATIVES and fa["rate"] <= FALSE_ACCEPT_LIMIT


def reliability_note(audit: dict | None) -> str:
    """One sentence saying whether (and why not) the judge's accuracy can be trusted."""
    if not audit:
        return ("judge not audited: its accuracy cannot be trusted (run `workbench judge-audit`); "
                "the deterministic checker is the headline")
    fa = audit.get("false_accept") or {}
    if fa.get("rate") is None or fa.get("n", 0) < MIN_NEGATIVES:
        seen = f"; {fa['rate']:.1%} of them falsely accepted" if fa.get("rate") is not None else ""
        return (f"judge audit too small ({fa.get('n', 0)} wrong answers probed, need {MIN_NEGATIVES}{seen}): its "
                "accuracy cannot be trusted; the deterministic checker is the headline")
    lo, hi = fa.get("ci") or [None, None]
    figure = f"{fa['rate']:.1%} false accepts [{_pct(lo)}, {_pct(hi)}] on {fa['n']} wrong answers"
    if fa["rate"] > FALSE_ACCEPT_LIMIT:
        return (f"judge unreliable: {figure} ({audit.get('dataset', '?')} audit), above the "
                f"{FALSE_ACCEPT_LIMIT:.0%} limit; the deterministic checker is the headline")
    return f"judge audited: {figure} ({audit.get('dataset', '?')} audit)"


def _pct(v) -> str:
    return "?" if v is None else f"{v:.0%}"


# -- running an audit ---------------------------------------------------------------------------------
def _breakdown(verdicts: Sequence[dict], field: str) -> dict:
    groups: dict[str, list[dict]] = {}
    for v in verdicts:
        groups.setdefault(str(v[field]), []).append(v)
    return {k: rates(vs) for k, vs in sorted(groups.items())}


def summarize(verdicts: Sequence[dict], *, spec: dict, probes_hash: str, dataset: str, data_sha256: str | None,
              seed: int, requested_n: int | None) -> dict:
    """The audit record: rates overall / per category / per kind, plus the per-probe verdicts (ids only)."""
    from .selection import category_name

    for v in verdicts:
        v.setdefault("category_name", category_name(v["category"]))
    out = {"judge_key": judge_key(spec), "judge": spec, "prompt_hash": spec.get("prompt_hash"),
           "probe_set_hash": probes_hash, "dataset": dataset, "data_sha256": data_sha256, "seed": seed,
           "requested_n": requested_n, "n_probes": len(verdicts),
           "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), **rates(verdicts),
           "per_category": _breakdown(verdicts, "category_name"), "per_kind": _breakdown(verdicts, "kind")}
    out["key"] = audit_key(spec, probes_hash)
    out["reliable"] = is_reliable(out)
    out["verdicts"] = [{k: v.get(k) for k in ("probe", "kind", "category", "expected", "label", "correct", "error")}
                       for v in verdicts]
    return out


def audit_key(spec: dict, probes_hash: str) -> str:
    """Cache key: (judge spec incl. its prompt hash, probe-set hash)."""
    return hashlib.sha256(json.dumps([spec, probes_hash], sort_keys=True, default=str).encode()).hexdigest()[:16]


def audit_judge(judge, probes: Sequence[Probe], *, dataset: str = "", data_sha256: str | None = None, seed: int = 0,
                requested_n: int | None = None, cache: "AuditCache | str | Path | None" = None,
                refresh: bool = False, progress: bool = True) -> dict:
    """Judge every probe (or reuse the cached audit of this judge on this probe set)."""
    spec = judge_spec(judge)
    phash = probe_set_hash(probes)
    key = audit_key(spec, phash)
    cache = cache if isinstance(cache, AuditCache) or cache is None else AuditCache(cache)
    if cache is not None and not refresh and (hit := cache.get(key)) is not None:
        return hit
    checkpoint = cache.checkpoint(key) if cache is not None else None
    done = _read_checkpoint(checkpoint) if checkpoint and not refresh else {}
    from tqdm.auto import tqdm

    verdicts = []
    for p in tqdm(probes, desc=f"judge audit ({spec.get('model')})", unit="probe", disable=not progress, leave=False):
        v = done.get(p.id)
        if v is None:
            v = _judge_probe(judge, p)
            if checkpoint is not None:
                checkpoint.parent.mkdir(parents=True, exist_ok=True)
                with open(checkpoint, "a", encoding="utf-8") as f:
                    f.write(json.dumps(v) + "\n")
        verdicts.append(v)
    result = summarize(verdicts, spec=spec, probes_hash=phash, dataset=dataset, data_sha256=data_sha256, seed=seed,
                       requested_n=requested_n)
    if cache is not None:
        cache.put(result)
        if checkpoint is not None:
            checkpoint.unlink(missing_ok=True)
    return result


def _judge_probe(judge, p: Probe) -> dict:
    base = {"probe": p.id, "kind": p.kind, "category": p.category, "expected": p.expected}
    try:
        verdict = judge.judge(p.qa(), p.candidate, method="judge_audit")
    except Exception as exc:  # a judge that raises is a judge error on this probe, recorded, not fatal
        return {**base, "label": None, "correct": None, "error": f"{type(exc).__name__}: {exc}"}
    if verdict is None:
        return {**base, "label": None, "correct": None, "error": "judge does not score this question"}
    return {**base, "label": verdict.label, "correct": verdict.correct, "error": verdict.error}


def _read_checkpoint(path: Path) -> dict:
    out = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                v = json.loads(line)
                out[v["probe"]] = v
            except (json.JSONDecodeError, KeyError, TypeError):
                continue  # a torn last line: that probe is judged again
    return out


# -- the cache ----------------------------------------------------------------------------------------
class AuditCache:
    """Audits by key in one JSON file (``{"audits": {key: record}}``); unreadable files raise a clear error."""

    def __init__(self, path: str | Path = DEFAULT_CACHE):
        self.path = Path(path)
        self._audits: dict[str, dict] = {}
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                audits = data["audits"]
                if not isinstance(audits, dict):
                    raise TypeError("'audits' is not an object")
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{self.path}: not a judge-audit cache ({exc})") from None
            self._audits = audits

    def get(self, key: str) -> dict | None:
        return self._audits.get(key)

    def __iter__(self):
        return iter(self._audits.values())

    def __len__(self) -> int:
        return len(self._audits)

    def put(self, audit: dict) -> None:
        self._audits[audit["key"]] = audit
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"audits": self._audits}, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(self.path)

    def checkpoint(self, key: str) -> Path:
        return self.path.with_name(f"{self.path.stem}.{key}.partial.jsonl")

    def find(self, judge: str | None, *, model: str | None = None, dataset: str | None = None) -> dict | None:
        """The audit of a judge key (or, for rows that predate judge keys, of a judge model with the
        current prompt hash): the one on ``dataset`` if any, else the one with most probes."""
        from .judge import judge_prompt_hash

        if judge:
            found = [a for a in self if a.get("judge_key") == judge]
        elif model:
            found = [a for a in self if (a.get("judge") or {}).get("model") == model
                     and a.get("prompt_hash") == judge_prompt_hash()]
        else:
            return None
        if not found:
            return None
        same = [a for a in found if same_dataset(a.get("dataset"), dataset)]
        return max(same or found, key=lambda a: (a.get("n_probes", 0), a.get("date", "")))


def compact(audit: dict | None) -> dict | None:
    """The audit without its per-probe verdicts (what manifests and reports carry)."""
    if audit is None:
        return None
    return {k: v for k, v in audit.items() if k != "verdicts"}


REAL_ANSWERS = "labelled real answers"


def label_probes(labels, n: int | None = None, *, seed: int = 0) -> list[Probe]:
    """Labelled real answers (``workbench.eval.labels``) as probes: the candidate is the answer a method gave,
    ``expected`` the careful reader's lenient verdict, ``kind`` the reader's kind of error (or ``right``);
    ``n`` keeps a sample with as many right as wrong answers where the set allows."""
    probes = [Probe(f"real:{a.id}", a.qa_id, a.conv_id, a.category, a.question, a.gold, a.prediction,
                    a.kind, a.right) for a in labels]
    if n is None or n >= len(probes):
        return probes
    rng = random.Random(seed)
    right = [p for p in probes if p.expected]
    wrong = [p for p in probes if not p.expected]
    rng.shuffle(right)
    rng.shuffle(wrong)
    k = min(len(wrong), max(n - min(len(right), n // 2), n // 2))
    return sorted(wrong[:k] + right[:n - k], key=lambda p: p.id)


def audits_for_rows(rows, cache: AuditCache | str | Path | None = DEFAULT_CACHE, *,
                    dataset: str | None = None) -> dict[str, dict]:
    """``{judge key or judge model: compact audit}`` for every judge that judged ``rows`` and has an
    audit in ``cache`` (a missing cache file means no audits). ``dataset`` names the data the rows were
    evaluated on when the rows do not say: the audit on that dataset is preferred to the others of
    the same judge (a judge's false-accept rate differs from one dataset to the next)."""
    if cache is None:
        return {}
    if not isinstance(cache, AuditCache):
        cache = AuditCache(cache)
    out: dict[str, dict] = {}
    for r in rows:
        d = r.to_dict() if hasattr(r, "to_dict") else r
        key, model = d.get("judge_key"), d.get("judge_model")
        on = d.get("dataset") or dataset
        ident = key or model
        if not ident or ident in out:
            continue
        live = cache.find(key, dataset=REAL_ANSWERS) if key else None
        if live is not None and same_dataset(live.get("dataset"), REAL_ANSWERS):
            out[ident] = compact(live)  # this judge, run on the labelled real answers (`workbench judge-audit`)
            continue
        found = cache.find(key, dataset=on) if key else cache.find(None, model=model, dataset=on)
        real = _real_answer_audit(model)
        if real is not None:  # real answers first: every reliable / unreliable decision uses this figure
            out[ident] = {**real, "probe_audit": compact(found)}
        elif found is not None:
            out[ident] = compact(found)
    return out


def prefer_real_answers(audits: dict, rows) -> dict:
    """``audits`` with each judge's audit on labelled real answers in place of a probe audit, wherever the
    labelled set can say (the probe audit is kept inside as ``probe_audit``): audits recorded in a manifest at
    run time, or cached from probes, never outrank what the judge did on answers methods really gave."""
    out = dict(audits)
    for r in rows:
        d = r.to_dict() if hasattr(r, "to_dict") else r
        ident = d.get("judge_key") or d.get("judge_model")
        if not ident or (out.get(ident) or {}).get("basis") == "labelled real answers":
            continue
        if (out.get(ident) or {}).get("dataset") == REAL_ANSWERS:
            continue  # this judge was run on the labelled answers themselves (`workbench judge-audit`)
        real = _real_answer_audit(d.get("judge_model"))
        if real is not None:
            out[ident] = {**real, "probe_audit": compact(out.get(ident))}
    return out


def _real_answer_audit(model: str | None) -> dict | None:
    from .label_audit import judge_real_audit  # the labelled set is read lazily, once per file version

    return judge_real_audit(model)


# -- command line ------------------------------------------------------------------------------------
def add_arguments(parser) -> None:
    parser.add_argument("--data", default="sample", help="sample | tiny | locomo:<path> | longmemeval:<path>")
    parser.add_argument("--judge", default=None, help="judge LLM spec (local[:name] | gguf:<path> | openai:<model> "
                                                      "| replay:<file>) or 'checker' (the deterministic checker); "
                                                      "default: the offline model")
    parser.add_argument("--n", type=int, default=200, help="probes to judge (half negatives), 0 for all")
    parser.add_argument("--real", type=int, default=200, help="labelled real answers to judge first (as many wrong "
                        "as right where the set allows), 0 for all, -1 to skip")
    parser.add_argument("--labels", default=None, help="labelled answers file (default: the shipped set)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the probe sampling")
    parser.add_argument("--conversations", default=None, help="e.g. 0-2 (default: all)")
    parser.add_argument("--cassette", default=None, help="record/replay cassette for the judge calls")
    parser.add_argument("--cache", default=str(DEFAULT_CACHE), help="audit cache file (JSON)")
    parser.add_argument("--refresh", action="store_true", help="judge again even if the audit is cached")
    parser.add_argument("--json", action="store_true", help="print the audit record as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def data_sha256(dataset: Dataset) -> str | None:
    """sha256 of the dataset file(s) the conversations came from (None when unknown)."""
    from ..runtime.models import sha256_of

    files = sorted({c.source for c in dataset.conversations if c.source})
    if not files or not all(Path(f).is_file() for f in files):
        return None
    if len(files) == 1:
        return sha256_of(Path(files[0]))
    return hashlib.sha256("".join(sha256_of(Path(f)) for f in files).encode()).hexdigest()


def audit_command(args) -> int:
    from ..llm import llm_from_options as make_llm
    from ..data import load_dataset
    from .selection import select_conversations
    from .judge import LLMJudge

    dataset = load_dataset(args.data)
    convs = select_conversations(dataset, args.conversations)
    probes = sample_probes(build_probes(convs), args.n or None, seed=args.seed)
    if not probes:
        print(f"no probes: {args.data} has no answerable questions", file=sys.stderr)
        return 1
    spec = args.judge
    if spec == "checker":  # the deterministic checker: audited the same way, no model
        from .judge import CheckerJudge

        make_judge = CheckerJudge
    else:
        llm = make_llm("replay" if spec in ("replay", "replay:") and args.cassette else spec, args.cassette)
        make_judge = lambda: LLMJudge(llm)  # noqa: E731
    sections = []
    labels = _labels(args.labels)
    if labels and args.real >= 0:
        real = audit_judge(make_judge(), label_probes(labels, args.real or None, seed=args.seed),
                           dataset=REAL_ANSWERS, seed=args.seed, requested_n=args.real or None, cache=args.cache,
                           refresh=args.refresh, progress=not args.no_progress)
        sections.append(("On labelled real answers (the figure every view uses)", real))
        print(_free_sources(labels))
    audit = audit_judge(make_judge(), probes, dataset=dataset.name, data_sha256=data_sha256(dataset), seed=args.seed,
                        requested_n=args.n or None, cache=args.cache, refresh=args.refresh,
                        progress=not args.no_progress)
    sections.append(("On synthetic probes built from the dataset (second table)", audit))
    if args.json:
        print(json.dumps({title: compact(a) for title, a in sections}, indent=2))
    else:
        print("\n\n".join(f"## {title}\n{format_audit(a)}" for title, a in sections))
    return 0


def _labels(path):
    from .label_audit import shipped_labels
    from .labels import load_labels

    return load_labels(path) if path else list(shipped_labels())


def _free_sources(labels) -> str:
    """The verdict sources that cost nothing to audit: the checker, token F1 and the judges' recorded verdicts."""
    from .label_audit import (audit_on_labels, checker_source, f1_source, recorded_judge, shipped_entities,
                              verdict_note)

    lines = [f"Verdict sources on {len(labels)} labelled real answers (no model call):"]
    lines.append("  " + verdict_note("checker", audit_on_labels(labels, checker_source(shipped_entities()))))
    lines.append("  " + verdict_note("token F1 >= 0.5", audit_on_labels(labels, f1_source())))
    for model in sorted({a.judge_model for a in labels if a.judge_model}):
        mine = [a for a in labels if a.judge_model == model]
        lines.append("  " + verdict_note(f"{model} judge, as recorded", audit_on_labels(mine, recorded_judge)))
    return "\n".join(lines)


def format_audit(audit: dict) -> str:
    """The audit as a short text report (overall, per category, per kind)."""
    def line(name, r):
        fa, fr = r["false_accept"], r["false_reject"]
        return (f"  {name:<22} false-accept {_fmt_rate(fa):<26} false-reject {_fmt_rate(fr):<26}"
                + (f" judge errors {r['judge_errors']}" if r.get("judge_errors") else ""))

    judge = audit.get("judge") or {}
    out = [f"Judge audit: {judge.get('model')} (prompt {audit.get('prompt_hash')}) on {audit.get('dataset')} · "
           f"{audit.get('n_probes')} probes (set {audit.get('probe_set_hash')}) · key {audit.get('key')}",
           line("overall", audit), "  per category:"]
    out += [line(k, r) for k, r in audit.get("per_category", {}).items()]
    out.append("  per kind of wrong answer:" if audit.get("dataset") == REAL_ANSWERS else "  per probe kind:")
    for k, r in audit.get("per_kind", {}).items():
        positive = k in POSITIVE_KINDS or k == "right"  # "right": a labelled real answer the reader accepts
        which = r["false_reject"] if positive else r["false_accept"]
        what = "false-reject" if positive else "false-accept"
        out.append(f"  {k:<22} {what} {_fmt_rate(which)}")
    out.append(reliability_note(audit))
    return "\n".join(out)


def _fmt_rate(r: dict) -> str:
    if r.get("rate") is None:
        return "n/a (0 probes)"
    lo, hi = r.get("ci") or [None, None]
    return f"{r['rate']:.1%} ({r['k']}/{r['n']}) [{_pct1(lo)}, {_pct1(hi)}]"


def _pct1(v) -> str:
    return "?" if v is None else f"{v:.1%}"
