"""Evaluation fan-out on Ray: one task per (method, conversation), rows streamed back to the driver.

``evaluate(method, dataset, executor=RayExecutor(recipe))`` keeps everything that makes a run
resumable on the driver — the plan, the manifest and the append-only ``ResultsStore`` — and sends
only the work out: each task rebuilds the method (and judge) from a picklable *recipe*, ingests
one conversation and yields each finished row as soon as it is scored (a Ray streaming
generator), so the driver writes rows while tasks are still running.

Why a recipe and not the method object: a method holds its LLM client (locks, open cassettes, a
loaded llama.cpp model), which cannot be shipped to another process. ``recipe(task_index)`` returns
``(method, judge_or_None)``; ``CliRecipe`` is the one ``workbench eval`` uses, and it shares a list of
OpenAI-compatible endpoints across tasks round-robin (``--llm openai:<model>@<url1>,<url2>``).

Failures: a worker that dies (OOM, a killed process, a lost node) makes Ray rerun the task up to
``max_retries`` times; rows a rerun yields again are dropped by key, so the store never gets a
duplicate. A task that still fails gives a failure row for each of its questions not yet stored
(scored as wrong, rerun by ``--retry-errors``), so one lost conversation never stops the run; a task stopped by
an ``EnvironmentFailure`` (its cassette on a full disk) stops the run instead, as on the thread executor.
Cassettes are shared through the file system (``CachedLLM`` appends under a file lock): fine on one
machine; on a multi-node cluster give each node the cassette path on shared storage.
"""
from __future__ import annotations

import dataclasses
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..failures import EnvironmentFailure
from .harness import QuestionResult, _answer_all, _ingest, _judge, category_name

Recipe = Callable[[int], tuple[Any, Any]]


def _import_ray():
    try:
        import ray
    except ImportError as exc:
        raise ImportError("--executor ray needs Ray: pip install 'memory-workbench[ray]'") from exc
    return ray


def split_endpoints(spec: str | None) -> list[str | None]:
    """``openai:<model>@<url1>,<url2>`` -> one spec per endpoint; any other spec -> itself alone."""
    if not spec or not spec.startswith("openai:") or "@" not in spec:
        return [spec]
    head, _, urls = spec.partition("@")
    return [f"{head}@{u.strip()}" for u in urls.split(",") if u.strip()] or [spec]


def ensure_ray(address: str | None = None, **init_kwargs):
    """The ``ray`` module, connected: joins ``address`` (or starts a local instance) unless already connected."""
    ray = _import_ray()
    if not ray.is_initialized():
        ray.init(address=address, **{"include_dashboard": False, "log_to_driver": False, **init_kwargs})
    return ray


@dataclass(frozen=True)
class CliRecipe:
    """What ``workbench eval`` was asked for, rebuilt inside a worker (plain strings: picklable).

    The method is configured by ``settings.build_method``, the same path as the thread executor,
    ``workbench build``/``ask`` and the demo: defaults < dataset preset (``data``) < calibration < profile
    < ``params``, and the output bounds of ``bounded_outputs`` or the profile. Without it a worker would
    run class defaults (RecMem's LoCoMo thresholds on LongMemEval, an uncalibrated
    embedder), and its ``params_hash`` would not match the driver's plan.
    """

    method: str
    params: dict
    llm: str | None = None
    cassette: str | None = None
    embedder: str = "minilm"
    judge: str | None = None  # an LLM spec, "same" (the method's LLM) or "checker" (no model)
    bounded_outputs: bool = False
    request_timeout: float | None = None  # seconds per request to an openai: server (None: the default)
    attempts: int | None = None  # tries per call to it
    data: str | None = None  # the data spec: picks the dataset preset and the calibration variant
    calibration: str | None = "auto"  # auto | off | shipped:<embedder> | a file path (see presets)
    profile: str | None = None  # a recorded profile's name (``--profile``; workbench.eval.profiles)
    reranker: str = "none"  # a reranker spec (``components.ComponentChoice.reranker``)

    def setup(self, index: int, *, warn: bool = False):
        """``(RunSetup, judge_or_None)`` for task ``index``; ``warn`` prints the threshold warnings
        (the driver does, once; workers stay quiet)."""
        from ..embed import embedder_from_spec as make_embedder
        from ..llm import llm_from_options as _llm
        from .judge import CheckerJudge, LLMJudge
        from .components import build_reranker
        from .settings import build_method

        llms = split_endpoints(self.llm)
        options = {"request_timeout": self.request_timeout, "attempts": self.attempts}
        llm = _llm(llms[index % len(llms)], self.cassette, **options)
        setup = build_method(self.method, llm=llm, embedder=make_embedder(self.embedder), params=dict(self.params),
                             data=self.data, calibration=self.calibration, bounded=self.bounded_outputs,
                             profile=self.profile, warn=warn, reranker=build_reranker(self.reranker))
        judge = None
        if self.judge == "checker":  # the deterministic checker: no model (as in the thread path)
            judge = CheckerJudge()
        elif self.judge:
            judges = split_endpoints(self.judge)
            judge = LLMJudge(llm if self.judge == "same" else _llm(judges[index % len(judges)], self.cassette,
                                                                   **options))
        return setup, judge

    def __call__(self, index: int):
        setup, judge = self.setup(index)
        return setup.method, judge


def run_conversation(recipe: Recipe, index: int, conv, qas, ctx, workers: int, save_dir) -> Iterator[dict]:
    """The body of one task: build the method from the recipe, ingest ``conv``, yield its rows as dicts."""
    method, judge = recipe(index)
    if (method.name, method.params_hash()) != (ctx.method, ctx.params_hash):
        raise RuntimeError(f"the recipe built {method.name} {method.params_hash()} in the worker, but the driver "
                           f"planned {ctx.method} {ctx.params_hash}: check the recipe's parameters")
    ctx = dataclasses.replace(ctx, judge=judge)
    built = _ingest(method, conv, save_dir)
    for row in _answer_all(built, conv, qas, ctx, workers):
        yield row.to_dict()


class RayExecutor:
    """Run the conversations of an ``evaluate`` call as Ray tasks (see the module docstring).

    ``address``: a Ray cluster (``"auto"``, ``"ray://host:10001"``); None starts a local Ray instance
    unless one is already running in this process. ``num_cpus``: CPUs each task reserves (a
    llama.cpp model in the worker wants its threads). ``first_index``: the task index of the first
    task (give each method its own offset so endpoints rotate over methods too). ``init_kwargs`` go
    to ``ray.init``.
    """

    def __init__(self, recipe: Recipe, *, address: str | None = None, num_cpus: float = 1, max_retries: int = 3,
                 first_index: int = 0, init_kwargs: dict | None = None):
        self.recipe = recipe
        self.address = address
        self.num_cpus = num_cpus
        self.max_retries = max_retries
        self.init_kwargs = dict(init_kwargs or {})
        self._counter = first_index  # the recipe's task index: endpoints rotate over it

    def describe(self) -> str:
        return f"ray({self.address or 'local'})"

    def run(self, method, work, ctx, workers: int, save_dir) -> Iterator[QuestionResult]:
        """Submit one task per conversation and yield rows as they arrive, each key once."""
        if not work:
            return
        ray = ensure_ray(self.address, **self.init_kwargs)
        task = ray.remote(run_conversation).options(num_returns="streaming", num_cpus=self.num_cpus,
                                                    max_retries=self.max_retries, retry_exceptions=False)
        shipped = dataclasses.replace(ctx, judge=None)  # the judge is rebuilt from the recipe in the worker
        gens = {}
        for conv, qas in work:
            gen = task.remote(self.recipe, self._counter, conv, list(qas), shipped, workers, save_dir)
            self._counter += 1
            gens[gen] = (conv, list(qas))
        seen: set[str] = set()
        pending = list(gens)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for gen in ready:
                try:
                    row = ray.get(next(gen))
                except StopIteration:
                    continue
                except Exception as exc:  # the task failed for good: its missing questions become failure rows
                    if isinstance(getattr(exc, "cause", None), EnvironmentFailure):  # a full disk: not the method's
                        raise exc.cause from exc
                    conv, qas = gens[gen]
                    error = f"ray task failed: {type(exc).__name__}: {_first_line(exc)}"
                    for qa in qas:
                        if qa.id not in seen:
                            seen.add(qa.id)
                            yield failure_row(ctx, conv, qa, error)
                    continue
                pending.append(gen)
                if row["qa_id"] in seen:  # a retried task yields its rows again
                    continue
                seen.add(row["qa_id"])
                yield QuestionResult.from_dict(row)


def failure_row(ctx, conv, qa, error: str) -> QuestionResult:
    """A question whose task never reported: scored like any failed answer (empty prediction)."""
    from .metrics import is_abstention, score_prediction

    scores = score_prediction("", qa, ctx.scorers)
    verdict = _judge(ctx, qa, "", error)  # NOT_JUDGED, no LLM call
    if verdict is not None:
        scores["judge"] = verdict.score
    return QuestionResult(ctx.method, ctx.params_hash, ctx.dataset, conv.id, qa.id, qa.category,
                          category_name(qa.category), qa.question, qa.answer, "", scores,
                          judge_label=verdict.label if verdict else None,
                          judge_reasoning=verdict.reasoning if verdict else "", error=error,
                          abstention=is_abstention(qa), llm_model=ctx.llm_model,
                          judge_model=ctx.judge.model if ctx.judge else None, params=ctx.params)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return text.splitlines()[-1][:300] if text else type(exc).__name__
