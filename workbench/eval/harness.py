"""The evaluation harness: ``evaluate(method, dataset) -> EvalResult``, resumable and append-only.

Per conversation a fresh ``method.clone().ingest(conv)`` (its construction usage is recorded); per
question ``answer(question, now=qa.time)`` — the method never sees the gold — then metrics and,
if given, the LLM judge, giving one frozen ``QuestionResult``. Each row is appended to the
``ResultsStore`` as soon as it is done, keyed by (method, params_hash, dataset, qa_id): a rerun
skips keys already present, and a conversation whose selected questions are all done is not
re-ingested. Any ``Exception`` from ``ingest``/``answer`` becomes a failure row carrying the error
text (scored as a wrong answer); ``KeyboardInterrupt`` stops the run with every finished row kept.

Protocol choices (DATA.md): LoCoMo categories 1-4 are scored by every metric and the judge;
category 5 (adversarial) only by the official rule (``adversarial``) and reported apart from the
headline. LongMemEval is scored by question type with the per-type judge. Construction tokens are
amortised over all questions of the conversation in the dataset (not just those selected), so the
figure does not change with the subset evaluated.
"""
from __future__ import annotations

import contextvars
import json
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from ..data import CATEGORY_NAMES, QA, Conversation, Dataset
from ..llm.ledger import track
from ..trace import Usage
from .judge import JudgeVerdict, LLMJudge
from .metrics import DEFAULT, bleu_tokenizer, evidence_recall, is_abstention, resolve_metrics
from .metrics import score_prediction, session_recall
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
    query_tokens: int = 0
    query_calls: int = 0
    construction_tokens: int = 0
    construction_calls: int = 0
    construction_tokens_per_question: float = 0.0
    latency_s: float = 0.0
    error: str | None = None
    abstention: bool = False
    llm_model: str | None = None
    judge_model: str | None = None
    params: dict = field(default_factory=dict)
    answer: dict | None = None

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
        """Per-category table with bootstrap CIs (see ``report.summary_table``)."""
        from .report import summary_table

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


@dataclass(frozen=True)
class _Built:
    """A conversation's built method (or the error that stopped it) and its construction cost."""

    method: Any
    tokens: int = 0
    calls: int = 0
    per_question: float = 0.0
    error: str | None = None


def evaluate(method, dataset: Dataset, *, judge: LLMJudge | None = None, metrics=DEFAULT, workers: int = 1,
             store: ResultsStore | str | Path | None = None, questions=None, conversations=None, categories=None,
             progress: bool = True, save_memories_dir: str | Path | None = None, retry_errors: bool = False,
             keep_answers: bool = True, executor=None) -> EvalResult:
    """Evaluate ``method`` on ``dataset`` (see the module docstring).

    ``store``: a ``ResultsStore`` or a JSONL path (resumable), None for memory only.
    ``conversations``: index, id, ``"0-2"``/``"0,3"`` spec, slice or iterable; ``questions``: int (at
    most N per conversation, dataset order) or iterable of QA ids; ``categories``: LoCoMo ints or
    LongMemEval types. ``workers`` > 1 answers questions of a conversation on a thread pool.
    ``save_memories_dir``: save each built memory there (``rundir`` layout) for the app and widgets.
    ``retry_errors``: rerun questions whose stored row is a failure (the new row supersedes it).
    ``executor``: None runs conversations here, one after another; an executor object (e.g.
    ``executors.RayExecutor``) runs them elsewhere and yields the rows back, which are stored here.
    """
    store = store if isinstance(store, ResultsStore) else ResultsStore(store)
    ctx = _Ctx(method.name, method.params_hash(), dataset.name, method.config(), _model(getattr(method, "llm", None)),
               judge, resolve_metrics(metrics), keep_answers)
    plan = select(dataset, conversations=conversations, questions=questions, categories=categories)
    keys = [(conv, qa, (ctx.method, ctx.params_hash, ctx.dataset, qa.id)) for conv, qas in plan for qa in qas]
    todo = {k for _, _, k in keys if _needs_run(store.get(k), retry_errors)}
    manifest = run_manifest(method, dataset, judge, ctx, plan, workers, resumed=len(keys) - len(todo))
    manifest["executor"] = executor.describe() if executor is not None else "local"
    if store.path:
        _append_manifest(store.path, manifest)
    bar = _progress(len(keys), len(keys) - len(todo), f"{ctx.method} on {ctx.dataset}", progress)
    work = [(conv, [qa for qa in qas if (ctx.method, ctx.params_hash, ctx.dataset, qa.id) in todo])
            for conv, qas in plan]
    work = [(conv, pending) for conv, pending in work if pending]
    run = executor.run if executor is not None else run_local
    try:
        for row in run(method, work, ctx, workers, save_memories_dir):
            store.append(row.to_dict())
            bar.update(1)
    finally:
        bar.close()
    rows = tuple(QuestionResult.from_dict(store.get(k)) for _, _, k in keys if store.get(k) is not None)
    return EvalResult(rows, manifest)


def run_local(method, work, ctx: _Ctx, workers: int, save_dir) -> Iterator[QuestionResult]:
    """The default executor: each conversation built here in turn, its questions on ``workers`` threads."""
    for conv, pending in work:
        built = _ingest(method, conv, save_dir)
        yield from _answer_all(built, conv, pending, ctx, workers)


def _needs_run(row: dict | None, retry_errors: bool) -> bool:
    return row is None or (retry_errors and bool(row.get("error")))


def _model(service) -> str | None:
    if service is None:
        return None
    return getattr(service, "model", None) or getattr(service, "name", None) or type(service).__name__


def _ingest(method, conv: Conversation, save_dir) -> _Built:
    built = method.clone()
    try:
        built.ingest(conv)
    except Exception as exc:  # recorded on every question of this conversation
        return _Built(None, error=f"ingest failed: {type(exc).__name__}: {exc}")
    u: Usage = built.construction_usage_
    n = max(1, len(conv.qa))
    if save_dir is not None:
        _save_memory(built, conv, Path(save_dir))
    return _Built(built, u.total_tokens, u.calls, u.total_tokens / n)


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


def run_question(built: _Built, conv: Conversation, qa: QA, ctx: _Ctx) -> QuestionResult:
    """Answer one question, score it, judge it: a frozen row (never raises an ``Exception``)."""
    answer, error, usage, latency = None, built.error, Usage(), 0.0
    if built.method is not None:
        start = time.perf_counter()
        with track() as calls:
            try:
                answer = built.method.answer(qa.question, now=qa.time)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
        latency = time.perf_counter() - start
        usage = answer.usage if answer is not None else Usage.total(c.usage for c in calls)
    prediction = answer.text if answer is not None else ""
    scores = score_prediction(prediction, qa, ctx.scorers)
    verdict = _judge(ctx, qa, prediction, error)
    if verdict is not None:
        scores["judge"] = verdict.score
    source_ids = answer.source_ids if answer is not None else ()
    return QuestionResult(
        ctx.method, ctx.params_hash, ctx.dataset, conv.id, qa.id, qa.category, category_name(qa.category),
        qa.question, qa.answer, prediction, scores,
        judge_label=verdict.label if verdict else None, judge_reasoning=verdict.reasoning if verdict else "",
        judge_error=verdict.error if verdict else None,
        judge_tokens=(verdict.prompt_tokens + verdict.completion_tokens) if verdict else 0,
        evidence_recall=evidence_recall(qa.evidence, source_ids) if answer is not None else None,
        session_recall=session_recall(qa, source_ids) if answer is not None else None,
        query_tokens=usage.total_tokens, query_calls=usage.calls, construction_tokens=built.tokens,
        construction_calls=built.calls, construction_tokens_per_question=built.per_question,
        latency_s=round(latency, 6), error=error, abstention=is_abstention(qa), llm_model=ctx.llm_model,
        judge_model=ctx.judge.model if ctx.judge else None, params=ctx.params,
        answer=answer.to_dict() if (answer is not None and ctx.keep_answers) else None)


def _judge(ctx: _Ctx, qa: QA, prediction: str, error: str | None):
    """The judge's verdict; a failed answer is not sent to the judge and counts as wrong."""
    if ctx.judge is None or not ctx.judge.applies_to(qa):
        return None
    if error is not None:
        return JudgeVerdict(False, "NOT_JUDGED", "the method failed to answer", model=ctx.judge.model)
    try:
        return ctx.judge.judge(qa, prediction, method=ctx.method)
    except Exception as exc:  # LLM failures are verdicts already; this catches anything else a judge raises
        return JudgeVerdict(None, error=f"{type(exc).__name__}: {exc}", model=ctx.judge.model)


def category_name(category) -> str:
    """Official LoCoMo names for the integers; LongMemEval types unchanged."""
    if isinstance(category, int):
        return CATEGORY_NAMES.get(category, str(category))
    return str(category)


# -- manifest and progress ---------------------------------------------------------------------------

def run_manifest(method, dataset: Dataset, judge, ctx: _Ctx, plan, workers: int, *, resumed: int = 0) -> dict:
    """What was run: package version, git commit, models, parameters, judge, data, selection, date."""
    import workbench

    judge_llm = getattr(judge, "llm", None)
    return {
        "package": "memory-workbench", "version": workbench.__version__, "git_commit": git_commit(),
        "python": platform.python_version(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "method": ctx.method, "class": type(method).__name__, "params_hash": ctx.params_hash, "params": ctx.params,
        "llm_model": ctx.llm_model, "embedder": _model(getattr(method, "embedder", None)),
        "judge_model": judge.model if judge else None,
        "judge_temperature": getattr(judge, "temperature", None) if judge else None,
        "judge_cached": type(judge_llm).__name__ == "CachedLLM",
        "dataset": dataset.name, "dataset_source": dataset[0].source if len(dataset) else "",
        "dataset_skipped": dict(dataset.skipped),
        "conversations": [c.id for c, _ in plan], "questions": sum(len(q) for _, q in plan),
        "resumed_rows": resumed, "metrics": list(ctx.scorers), "bleu_tokenizer": bleu_tokenizer(),
        "workers": workers,
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
    path = results_path.with_name(results_path.stem + ".manifests.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(manifest, default=str) + "\n")


def _progress(total: int, initial: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="q", disable=not enabled, leave=False)


# -- selection -----------------------------------------------------------------------------------------

def select(dataset: Dataset, *, conversations=None, questions=None,
           categories=None) -> list[tuple[Conversation, list[QA]]]:
    """The (conversation, questions) plan of a run, in dataset order; conversations left empty are dropped."""
    convs = select_conversations(dataset, conversations)
    cats = None if categories is None else {_category(c) for c in categories}
    per_conv = questions if isinstance(questions, int) else None
    ids = None if questions is None or per_conv is not None else {str(q) for q in questions}
    plan = []
    for conv in convs:
        qas = [q for q in conv.qa if (cats is None or q.category in cats) and (ids is None or q.id in ids)]
        if per_conv is not None:
            qas = qas[:per_conv]
        if qas:
            plan.append((conv, qas))
    return plan


def select_conversations(dataset: Dataset, spec=None) -> list[Conversation]:
    """``None`` (all), an index, an id, a slice/range, an iterable (ints are indices, strings ids), or a
    string spec like ``"0-2"`` (inclusive), ``"0,3,5"`` or ``"conv-26,conv-30"`` (digits are indices)."""
    if spec is None:
        return list(dataset.conversations)
    if isinstance(spec, int):
        return [dataset[spec]]
    if isinstance(spec, (slice, range)):
        return list(dataset.conversations[spec]) if isinstance(spec, slice) else [dataset[i] for i in spec]
    if isinstance(spec, str):
        items: list = []
        for part in (p.strip() for p in spec.split(",") if p.strip()):
            lo, dash, hi = part.partition("-")
            if dash and lo.isdigit() and hi.isdigit():
                items.extend(range(int(lo), int(hi) + 1))
            else:
                items.append(int(part) if part.isdigit() else part)
        spec = items
    out, seen = [], set()
    for item in spec:
        conv = dataset[item]
        if conv.id not in seen:
            seen.add(conv.id)
            out.append(conv)
    return out


def _category(c):
    return int(c) if isinstance(c, str) and c.strip().isdigit() else c
