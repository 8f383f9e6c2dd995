"""The evaluation harness: ``evaluate(method, dataset) -> EvalResult``, resumable and append-only.

Per conversation a fresh ``method.clone().ingest(conv)`` (its construction usage is recorded); per
question ``answer(question, now=...)`` (the question date where the method's paper uses it on that
benchmark, ``question_time``) — the method never sees the gold — then metrics and,
if given, the LLM judge, giving one frozen ``QuestionResult``. Each row is appended to the
``ResultsStore`` as soon as it is done, keyed by (method, params_hash, dataset, qa_id): a rerun
skips keys already present, and a conversation whose selected questions are all done is not
re-ingested. Evidence recall, ``turns_shown`` and evidence precision are computed on the
provenance of ``Answer.context`` (what the method's final reader saw); ``check`` holds the
deterministic checker's verdict (``checker.py``: dates as days, names as entities, gold content
recall; also the ``checker`` score) and ``attribution`` labels each row from it (``attribution.py``;
the judge untrusted). A stored row also records the judge's key
(``judge.judge_key``: model, decoding, judge prompt hash) and the method's prompt hash: a row answered
under other method prompts is answered again, and a row judged by another judge (or not judged) is
re-judged from its stored prediction, without re-answering; rows written before these fields existed
are kept as they are unless their judge model differs from the current one. Any ``Exception`` from
``ingest``/``answer`` becomes a failure row carrying the error in words (``row_error``: "answering
failed: <what happened>: <message> [<type>]"; scored as a wrong answer);
``KeyboardInterrupt`` stops the run with every finished row kept, and so does an
``EnvironmentFailure`` (a cassette that cannot be written on a full disk: the machine's failure,
never recorded as the method's). ``retry_errors`` reruns failure rows and re-judges rows whose
judge call failed.

Protocol choices (DATA.md): LoCoMo categories 1-4 are scored by every metric and the judge;
category 5 (adversarial) only by the official rule (``adversarial``) and reported apart from the
headline. LongMemEval is scored by question type with the per-type judge. Each row carries its
conversation's construction tokens (``construction_tokens``); reports average them per conversation.
``construction_tokens_per_question`` (spread over all the conversation's questions in the dataset)
is kept for older readers.
"""
from __future__ import annotations

import contextvars
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from ..data import QA, Conversation, Dataset
from ..failures import describe_error
from ..llm.ledger import track, watch_calls
from ..methods.progress import show_ingest_progress
from ..trace import Usage
from .attribution import attribute
from .checker import check_dict, check_qa
from .estimate import cost_keys, estimate_run
from .judge import JudgeVerdict, LLMJudge, judge_key
from .metrics import DEFAULT, bleu_tokenizer, evidence_recall, is_abstention, resolve_metrics
from .metrics import evidence_precision, score_prediction, session_recall, turns_shown
from .selection import category_name, select, select_conversations  # noqa: F401 (re-exported)
from .store import ResultsStore, row_key


@dataclass(frozen=True)
class QuestionResult:
    """One evaluated question. ``answer`` is the full ``Answer`` JSON (for the trace widgets)."""

    method: str
    params_hash: str
    dataset: str
    conv_id: str
    qa_id: str
    category: Any
    category_name: str
    question: str
    gold: str
    prediction: str
    scores: dict = field(default_factory=dict)
    judge_label: str | None = None
    judge_reasoning: str = ""
    judge_error: str | None = None
    judge_tokens: int = 0
    evidence_recall: float | None = None
    session_recall: float | None = None
    turns_shown: int | None = None  # turns covered by Answer.context (what the final reader saw)
    evidence_precision: float | None = None  # gold turns shown / turns shown
    attribution: str | None = None  # attribution.attribute() with an untrusted judge (see there)
    check: dict | None = None  # the deterministic checker's verdict, kind and reason (checker.check_dict)
    query_tokens: int = 0
    # prompt tokens only (the papers' "input tokens", e.g. AMA's Table 4); None on rows written before it was kept
    query_prompt_tokens: int | None = None
    query_calls: int = 0
    construction_tokens: int = 0
    construction_calls: int = 0
    construction_tokens_per_question: float = 0.0
    latency_s: float = 0.0
    error: str | None = None
    abstention: bool = False
    llm_model: str | None = None
    judge_model: str | None = None
    judge_key: str | None = None
    prompt_hash: str | None = None
    params: dict = field(default_factory=dict)
    answer: dict | None = None
    failures: list = field(default_factory=list)  # what went wrong on the way (see ``question_failures``)

    def to_dict(self) -> dict:
        """Plain dict (a shallow copy: the nested values are already plain JSON)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, d: dict) -> "QuestionResult":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    @property
    def key(self) -> tuple:
        return row_key(self.to_dict())


@dataclass(frozen=True)
class EvalResult:
    """The rows of one ``evaluate`` call (including rows resumed from the store) and its manifest."""

    rows: tuple[QuestionResult, ...]
    manifest: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[QuestionResult]:
        return iter(self.rows)

    def __getitem__(self, i) -> QuestionResult:
        return self.rows[i]

    @property
    def errors(self) -> tuple[QuestionResult, ...]:
        return tuple(r for r in self.rows if r.error)

    def to_frame(self, *, answers: bool = False):
        from .report import results_frame

        return results_frame([r.to_dict() for r in self.rows], answers=answers)

    def summary(self, **kw):
        """Per-category table with bootstrap CIs (see ``report.summary_table``); the judge's audit
        recorded in the manifest decides whether the judge is the headline."""
        from .report import summary_table

        judge = self.manifest.get("judge") or {}
        if "audits" not in kw and judge.get("audit") and judge.get("key"):
            kw["audits"] = {judge["key"]: judge["audit"]}
        return summary_table(self.to_frame(), **kw)

    def __repr__(self) -> str:
        m = self.manifest
        return (f"EvalResult({m.get('method')!r} on {m.get('dataset')!r}: {len(self.rows)} rows, "
                f"{len(self.errors)} errors)")


@dataclass(frozen=True)
class _Ctx:
    """Constants of one run, shared by every question."""

    method: str
    params_hash: str
    dataset: str
    params: dict
    llm_model: str | None
    judge: LLMJudge | None
    scorers: dict
    keep_answers: bool
    judge_key: str | None = None
    prompt_hash: str | None = None


@dataclass(frozen=True)
class _Built:
    """A conversation's built method (or the error that stopped it) and its construction cost."""

    method: Any
    tokens: int = 0
    calls: int = 0
    per_question: float = 0.0
    error: str | None = None
    failures: tuple = ()  # the ingest summary entry, when anything failed while building


def evaluate(method, dataset: Dataset, *, judge: LLMJudge | None = None, metrics=DEFAULT, workers: int = 1,
             store: ResultsStore | str | Path | None = None, questions=None, conversations=None, categories=None,
             progress: bool = True, save_memories_dir: str | Path | None = None, retry_errors: bool = False,
             keep_answers: bool = True, estimate=None, extra_manifest: dict | None = None,
             executor=None) -> EvalResult:
    """Evaluate ``method`` on ``dataset`` (see the module docstring).

    ``store``: a ``ResultsStore`` or a JSONL path (resumable), None for memory only.
    ``conversations``: index, id, ``"0-2"``/``"0,3"`` spec, slice or iterable; ``questions``: int (at
    most N per conversation, dataset order) or iterable of QA ids; ``categories``: LoCoMo ints or
    LongMemEval types. ``workers`` > 1 answers questions of a conversation on a thread pool.
    ``save_memories_dir``: save each built memory there (``rundir`` layout) for the app and widgets.
    ``retry_errors``: rerun questions whose stored row is a failure (the new row supersedes it), and judge again
    rows whose judge call failed (``judge_error``; the stored answer is kept, not answered again).
    ``estimate``: a ``RunEstimate`` of this run (``workbench.eval.estimate``), or a function of the plan
    still to run (resumed rows left out) returning one; computed when None. The manifest holds it
    beside what the run spent (``spent``, ``estimate_vs_spent``).
    ``progress``: the question bar, and under it a per-turn ingest bar, both with calls and tokens so far.
    ``extra_manifest``: keys added to the run manifest (``eval.presets``: dataset preset, calibration).
    ``executor``: None runs conversations here, one after another; an executor object (e.g.
    ``executors.RayExecutor``) runs them elsewhere and yields the rows back, which are stored here.
    """
    from .manifest import method_prompt_hash

    store = store if isinstance(store, ResultsStore) else ResultsStore(store)
    ctx = _Ctx(method.name, method.params_hash(), dataset.name, method.config(), _model(getattr(method, "llm", None)),
               judge, resolve_metrics(metrics), keep_answers, judge_key(judge), method_prompt_hash(method))
    plan = select(dataset, conversations=conversations, questions=questions, categories=categories)
    keys = [(conv, qa, (ctx.method, ctx.params_hash, ctx.dataset, qa.id)) for conv, qas in plan for qa in qas]
    actions = {k: _needs_run(store.get(k), retry_errors, ctx) for _, _, k in keys}
    todo = {k for k, a in actions.items() if a == "answer"}
    rejudge = {k for k, a in actions.items() if a == "judge"}
    manifest = run_manifest(method, dataset, judge, ctx, plan, workers, resumed=len(keys) - len(todo) - len(rejudge),
                            rejudged=len(rejudge))
    manifest["estimate"] = _estimate(estimate, method, plan, judge, todo)
    manifest.update(extra_manifest or {})
    manifest["executor"] = executor.describe() if executor is not None else "local"
    if store.path:
        _append_manifest(store.path, manifest)
    bar = _progress(len(keys), len(keys) - len(todo) - len(rejudge), f"{ctx.method} on {ctx.dataset}", progress)
    work = [(conv, [qa for qa in qas if (ctx.method, ctx.params_hash, ctx.dataset, qa.id) in todo])
            for conv, qas in plan]
    work = [(conv, pending) for conv, pending in work if pending]
    run = executor.run if executor is not None else run_local
    spent, finished = [], False
    try:
        with track() as spent, watch_calls(_running_counts(bar)), show_ingest_progress(progress, position=1):
            for conv, qas in plan:
                for qa in qas:
                    k = (ctx.method, ctx.params_hash, ctx.dataset, qa.id)
                    if k in rejudge:
                        store.append(rejudge_row(store.get(k), qa, ctx).to_dict())
                        bar.update(1)
            for row in run(method, work, ctx, workers, save_memories_dir):
                store.append(row.to_dict())
                bar.update(1)
        finished = True
    finally:
        bar.close()
        # recorded for an interrupted run too: what it spent up to the interruption
        manifest.update(cost_keys(manifest["estimate"], spent), interrupted=not finished)
        if store.path:
            _append_costs(store.path, manifest)
    rows = tuple(QuestionResult.from_dict(store.get(k)) for _, _, k in keys if store.get(k) is not None)
    return EvalResult(rows, manifest)


def _estimate(estimate, method, plan, judge, todo) -> dict:
    """The run's estimate as a manifest entry, for the questions still to do."""
    ids = {k[3] for k in todo}
    todo_plan = [(c, [q for q in qas if q.id in ids]) for c, qas in plan]
    todo_plan = [(c, qs) for c, qs in todo_plan if qs]
    if callable(estimate):  # the caller prices (and prints) the questions still to run
        estimate = estimate(todo_plan)
    if estimate is not None:
        return estimate.to_dict() if hasattr(estimate, "to_dict") else dict(estimate)
    try:
        return estimate_run(method, todo_plan, judge=judge).to_dict()
    except Exception as exc:  # an estimate must never stop a run; its failure is recorded instead
        return {"error": f"{type(exc).__name__}: {exc}"}


def _running_counts(bar):
    """A ledger watcher that shows the run's calls and tokens so far on the question bar."""
    counts = {"calls": 0, "tokens": 0}

    def on_call(call):
        counts["calls"] += 1
        counts["tokens"] += call.prompt_tokens + call.completion_tokens
        bar.set_postfix_str(f"{counts['calls']} calls, {counts['tokens']:,} tokens", refresh=False)

    return on_call


def _needs_run(row: dict | None, retry_errors: bool, ctx: _Ctx | None = None) -> str | None:
    """What a stored row needs: ``"answer"`` (absent, a failure to retry, or answered under other
    method prompts), ``"judge"`` (judged by another judge, not judged, or, with ``retry_errors``, a
    judge call that failed: its answer is kept and judged again), or None (nothing)."""
    if row is None or (retry_errors and bool(row.get("error"))):
        return "answer"
    if ctx is None:
        return None
    if row.get("prompt_hash") and ctx.prompt_hash and row["prompt_hash"] != ctx.prompt_hash:
        return "answer"
    if ctx.judge is None:
        return None
    if retry_errors and row.get("judge_error"):  # the answer stands; the judge call that failed is made again
        return "judge"
    if row.get("judge_key"):
        return "judge" if row["judge_key"] != ctx.judge_key else None
    # a row from before judge keys: keep it when the same judge model judged it
    return "judge" if row.get("judge_model") != ctx.judge.model else None


def rejudge_row(row: dict, qa: QA, ctx: _Ctx) -> "QuestionResult":
    """The stored row with a fresh verdict from ``ctx.judge`` on its stored prediction (not re-answered)."""
    from dataclasses import replace

    old = QuestionResult.from_dict(row)
    verdict = _judge(ctx, qa, old.prediction, old.error)
    scores = {k: v for k, v in (old.scores or {}).items() if k != "judge"}
    if verdict is not None:
        scores["judge"] = verdict.score
    return replace(old, scores=scores, judge_label=verdict.label if verdict else None,
                   judge_reasoning=verdict.reasoning if verdict else "",
                   judge_error=verdict.error if verdict else None,
                   judge_tokens=(verdict.prompt_tokens + verdict.completion_tokens) if verdict else 0,
                   judge_model=ctx.judge.model if ctx.judge else None, judge_key=ctx.judge_key)
def run_local(method, work, ctx: _Ctx, workers: int, save_dir) -> Iterator[QuestionResult]:
    """The default executor: each conversation built here in turn, its questions on ``workers`` threads."""
    for conv, pending in work:
        built = _ingest(method, conv, save_dir)
        yield from _answer_all(built, conv, pending, ctx, workers)




def _model(service) -> str | None:
    if service is None:
        return None
    return getattr(service, "model", None) or getattr(service, "name", None) or type(service).__name__


def row_error(exc: BaseException, doing: str) -> str:
    """A result row's error in words (``describe_error``: what failed, then the message), with the
    exception's type name always in the text: errors that already speak in words (``InWords``, e.g.
    ``CacheMiss``) would otherwise drop it, and the census and the question view find cassette
    misses by the name ``CacheMiss``."""
    text = describe_error(exc, doing)
    name = type(exc).__name__
    return text if name in text else f"{text} [{name}]"


def _ingest(method, conv: Conversation, save_dir) -> _Built:
    built = method.clone()
    with track() as calls:
        try:
            built.ingest(conv)
        except Exception as exc:  # recorded on every question of this conversation
            return _Built(None, error=row_error(exc, "ingest"),
                          failures=ingest_failures(None, calls))
    u: Usage = built.construction_usage_
    n = max(1, len(conv.qa))
    if save_dir is not None:
        _save_memory(built, conv, Path(save_dir))
    return _Built(built, u.total_tokens, u.calls, u.total_tokens / n, failures=ingest_failures(built, calls))


def ingest_failures(built, calls) -> tuple:
    """One summary entry for a conversation's construction, when anything failed in it: the
    method's own ``failures_`` (by stage) and the LLM calls that errored or came back empty."""
    own = list(getattr(built, "failures_", None) or ()) if built is not None else []
    errors = [c for c in calls if c.error]
    empty = [c for c in calls if not c.error and not (c.response or "").strip()]
    if not (own or errors or empty):
        return ()
    stages: dict[str, int] = {}
    for f in own:
        where = str(f.get("stage") or f.get("where") or "?") if isinstance(f, dict) else "?"
        stages[where] = stages.get(where, 0) + 1
    return ({"phase": "ingest", "kind": "construction", "method_failures": len(own), "by_stage": stages,
             "llm_errors": len(errors), "empty_replies": len(empty)},)


def question_failures(answer, calls, error: str | None) -> list[dict]:
    """What went wrong while answering one question, from its trace and its LLM calls: calls that
    errored, replies that came back empty, JSON repairs/retries, steps that took a fallback or
    recorded an error, an empty final answer."""
    out = []
    for c in calls:
        if c.error:
            out.append({"phase": "answer", "kind": "llm_error", "role": c.role, "error": str(c.error)[:300]})
        elif not (c.response or "").strip():
            out.append({"phase": "answer", "kind": "empty_reply", "role": c.role})
        if c.role.endswith((".repair", ".retry")):
            out.append({"phase": "answer", "kind": "json_retry", "role": c.role})
    for i, st in enumerate(answer.steps if answer is not None else ()):
        data = st.data if isinstance(st.data, dict) else {}
        for key in ("fallback", "error"):
            if data.get(key):
                out.append({"phase": "answer", "kind": "fallback" if key == "fallback" else "step_error",
                            "step": i, "title": st.title, "detail": str(data[key])[:300]})
    if answer is not None and getattr(answer, "error", None):
        out.append({"phase": "answer", "kind": "answer_error", "detail": str(answer.error)[:300]})
    if answer is not None and error is None and not (answer.text or "").strip():
        out.append({"phase": "answer", "kind": "empty_answer"})
    return out


def _save_memory(built, conv: Conversation, run: Path) -> None:
    from ..rundir import save_conversation, save_memory_snapshot

    try:
        save_conversation(run, conv)
        save_memory_snapshot(built, run, conv.id)
    except Exception as exc:  # a method whose state cannot be saved still gets evaluated
        print(f"warning: could not save the {built.name} memory of {conv.id}: {exc}", file=sys.stderr)


def _answer_all(built: _Built, conv: Conversation, qas: list[QA], ctx: _Ctx, workers: int):
    """Yield finished rows (completion order when ``workers`` > 1)."""
    if workers <= 1 or len(qas) <= 1:
        for qa in qas:
            yield run_question(built, conv, qa, ctx)
        return
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(contextvars.copy_context().run, run_question, built, conv, qa, ctx) for qa in qas]
        for fut in as_completed(futures):
            yield fut.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def question_time(method, qa: QA):
    """The ``now`` a method gets: the question date where its paper uses it on this benchmark."""
    return qa.time if method.uses_question_date(qa.dataset_kind) else None


def run_question(built: _Built, conv: Conversation, qa: QA, ctx: _Ctx) -> QuestionResult:
    """Answer one question, score it, judge it: a frozen row (never raises an ``Exception``)."""
    answer, error, usage, latency = None, built.error, Usage(), 0.0
    if built.method is not None:
        start = time.perf_counter()
        with track() as calls:
            try:
                answer = built.method.answer(qa.question, now=question_time(built.method, qa))
            except Exception as exc:
                error = row_error(exc, "answering")
        latency = time.perf_counter() - start
        usage = answer.usage if answer is not None else Usage.total(c.usage for c in calls)
    failures = list(built.failures) + (question_failures(answer, calls, error) if built.method is not None else [])
    prediction = answer.text if answer is not None else ""
    scores = score_prediction(prediction, qa, ctx.scorers)
    check = check_qa(qa, prediction, error=error, conversation=conv)
    if check is not None:
        scores["checker"] = float(check.correct)
    verdict = _judge(ctx, qa, prediction, error)
    if verdict is not None:
        scores["judge"] = verdict.score
    source_ids = answer.source_ids if answer is not None else ()
    row = QuestionResult(
        ctx.method, ctx.params_hash, ctx.dataset, conv.id, qa.id, qa.category, category_name(qa.category),
        qa.question, qa.answer, prediction, scores,
        judge_label=verdict.label if verdict else None, judge_reasoning=verdict.reasoning if verdict else "",
        judge_error=verdict.error if verdict else None,
        judge_tokens=(verdict.prompt_tokens + verdict.completion_tokens) if verdict else 0,
        evidence_recall=evidence_recall(qa.evidence, source_ids) if answer is not None else None,
        session_recall=session_recall(qa, source_ids) if answer is not None else None,
        turns_shown=turns_shown(source_ids) if answer is not None else None,
        evidence_precision=evidence_precision(qa.evidence, source_ids) if answer is not None else None,
        query_tokens=usage.total_tokens, query_prompt_tokens=usage.prompt_tokens, query_calls=usage.calls,
        construction_tokens=built.tokens, construction_calls=built.calls,
        construction_tokens_per_question=built.per_question,
        latency_s=round(latency, 6), error=error, abstention=is_abstention(qa), llm_model=ctx.llm_model,
        judge_model=ctx.judge.model if ctx.judge else None, judge_key=ctx.judge_key, prompt_hash=ctx.prompt_hash,
        params=ctx.params,
        answer=answer.to_dict() if (answer is not None and ctx.keep_answers) else None, failures=failures,
        check=check_dict(check))
    return replace(row, attribution=attribute(row).label)


def _judge(ctx: _Ctx, qa: QA, prediction: str, error: str | None):
    """The judge's verdict; a failed answer is not sent to the judge and counts as wrong."""
    if ctx.judge is None or not ctx.judge.applies_to(qa):
        return None
    if error is not None:
        return JudgeVerdict(False, "NOT_JUDGED", "the method failed to answer", model=ctx.judge.model)
    try:
        return ctx.judge.judge(qa, prediction, method=ctx.method)
    except Exception as exc:  # LLM failures are verdicts already; this catches anything else a judge raises
        return JudgeVerdict(None, error=row_error(exc, "judging"), model=ctx.judge.model)


# -- manifest and progress ---------------------------------------------------------------------------

def run_manifest(method, dataset: Dataset, judge, ctx: _Ctx, plan, workers: int, *, resumed: int = 0,
                 rejudged: int = 0) -> dict:
    """What was run: package version, git commit, models (spec and model file sha256), embedder,
    parameters, prompt hashes, judge (spec, key and its cached audit), data (file sha256), selection, date."""
    import workbench

    from .manifest import dataset_spec, embedder_spec, find_judge_audit, judge_entry, llm_spec, method_prompt_hashes

    judge_llm = getattr(judge, "llm", None)
    return {
        "package": "memory-workbench", "version": workbench.__version__, "git_commit": git_commit(),
        "python": platform.python_version(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "method": ctx.method, "class": type(method).__name__, "params_hash": ctx.params_hash, "params": ctx.params,
        "profile": getattr(method, "profile", None), "departures": type(method).departures(ctx.params, ctx.dataset),
        # answering can edit the memory later questions read (AMA's refresh_on_query): the order of questions matters
        "order_dependent": bool(getattr(method, "order_dependent", False)),
        "llm_model": ctx.llm_model, "llm": llm_spec(getattr(method, "llm", None)),
        "embedder": _model(getattr(method, "embedder", None)),
        "embedder_info": embedder_spec(getattr(method, "embedder", None)),
        "prompt_hash": ctx.prompt_hash, "prompt_hashes": method_prompt_hashes(method),
        "judge_model": judge.model if judge else None,
        "judge_temperature": getattr(judge, "temperature", None) if judge else None,
        "judge_cached": type(judge_llm).__name__ == "CachedLLM",
        "judge": judge_entry(judge, find_judge_audit(judge, dataset.name)),
        "dataset": dataset.name, "dataset_source": os.path.basename(dataset[0].source) if len(dataset) else "",
        "dataset_info": dataset_spec(dataset), "dataset_skipped": dict(dataset.skipped),
        "conversations": [c.id for c, _ in plan], "questions": sum(len(q) for _, q in plan),
        "resumed_rows": resumed, "rejudged_rows": rejudged, "metrics": list(ctx.scorers),
        "bleu_tokenizer": bleu_tokenizer(), "workers": workers,
    }


def git_commit() -> str | None:
    """The commit of the working tree the package runs from, if it is a git checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _append_manifest(results_path: Path, manifest: dict) -> None:
    from ..jsonl import append_line
    from ..llm.redact import redact_value

    path = results_path.with_name(results_path.stem + ".manifests.jsonl")
    append_line(path, json.dumps(redact_value(manifest), default=str))


def _append_costs(results_path: Path, manifest: dict) -> None:
    """One line per finished invocation in ``results.costs.jsonl``: the estimate beside what was spent
    (the manifest line is written before the run, when only the estimate is known)."""
    keys = ("date", "method", "params_hash", "llm_model", "judge_model", "dataset", "conversations", "questions",
            "interrupted", "estimate", "spent", "estimate_vs_spent")
    from ..jsonl import append_line

    path = results_path.with_name(results_path.stem + ".costs.jsonl")
    try:
        append_line(path, json.dumps({k: manifest.get(k) for k in keys}, default=str))
    except OSError as exc:  # runs in ``evaluate``'s ``finally``: it must not hide why the run stopped (a full disk)
        print(f"warning: the run's costs were not recorded in {path}: {exc.strerror or exc}", file=sys.stderr)


def _progress(total: int, initial: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="q", disable=not enabled, leave=False, position=0)
