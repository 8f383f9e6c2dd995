"""``workbench eval`` and ``workbench report``: argument definitions and command functions.

    workbench eval --method naive_rag --param top_k=5 --data locomo:<path> --conversations 0-2 \\
        --questions 20 --llm openai:gpt-4.1-mini --judge openai:gpt-4o-mini --embedder minilm \\
        --out runs/eval --cassette runs/eval/cassette.jsonl --workers 4
    workbench report runs/eval/results.jsonl [--format md|csv|json] [--cost]

``eval`` writes ``<out>/results.jsonl`` (append-only, resumable: rerun the same command after an
interruption), ``<out>/results.manifests.jsonl`` (one manifest per invocation), ``<out>/manifest.json``
(the run directory manifest the app reads; evaluations are appended to its ``evaluations`` list),
and with ``--save-memories`` the built memories under ``<out>/memories``. ``--cassette`` records
every LLM call (method and judge); ``--llm replay:`` (or ``replay``) with ``--cassette`` replays it
without any model.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

DEFAULT_OUT = Path("runs") / "eval"


def add_eval_arguments(parser) -> None:
    parser.add_argument("--method", default="naive_rag", help="method name (see workbench.methods.REGISTRY)")
    parser.add_argument("--param", action="append", metavar="K=V", help="method parameter (JSON values), repeatable")
    parser.add_argument("--data", default="sample", help="sample | tiny | locomo:<path> | longmemeval:<path>")
    parser.add_argument("--conversations", default=None, help="e.g. 0-2, 0,3,5 or conv-26 (default: all)")
    parser.add_argument("--questions", type=int, default=None, help="at most N questions per conversation")
    parser.add_argument("--categories", default=None, help="e.g. 1,2,3,4 (LoCoMo) or temporal-reasoning")
    parser.add_argument("--llm", default=None, help="openai:<model>[@url] | local[:name] | gguf:<path> | replay:[file]")
    parser.add_argument("--judge", default=None, help="judge LLM spec, 'same' for the method's LLM; default: no judge")
    parser.add_argument("--embedder", default="minilm", help="minilm | hash | openai:<model>")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="run directory")
    parser.add_argument("--cassette", default=None, help="record/replay cassette (JSONL) for every LLM call")
    parser.add_argument("--workers", type=int, default=1, help="questions answered in parallel (API backends)")
    parser.add_argument("--save-memories", action="store_true", help="save each built memory for the app")
    parser.add_argument("--retry-errors", action="store_true", help="rerun questions whose stored row is a failure")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--bounded-outputs", action="store_true",
                        help="per-role maxItems/maxLength/max_tokens (workbench.llm.bounds); new cassette keys")
    parser.add_argument("--executor", default="thread", choices=["thread", "ray"],
                        help="thread: here (default); ray: one Ray task per method x conversation")
    parser.add_argument("--address", default=None, help="Ray cluster address (default: start a local Ray)")


def add_report_arguments(parser) -> None:
    parser.add_argument("results", nargs="+", help="results.jsonl files (or run directories)")
    parser.add_argument("--format", default="md", choices=["md", "csv", "json"])
    parser.add_argument("--metric", default=None, help="accuracy column: judge | f1 | locomo_f1 | ... (default: "
                                                       "judge when present, else f1)")
    parser.add_argument("--cost", action="store_true", help="print the tidy cost-accuracy frame instead")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=None, help="write to this file instead of stdout")


def _llm(spec: str | None, cassette: str | None):
    from ..cli import make_llm

    if cassette and spec in ("replay", "replay:"):
        return make_llm("replay", cassette)
    if spec == "replay:":
        raise SystemExit("--llm replay: needs --cassette PATH (or use replay:<file>)")
    return make_llm(spec, cassette)


def bounded(llm, on: bool):
    """``llm`` with the per-role output bounds of ``workbench.llm.bounds`` switched on when ``on``."""
    if on:
        from ..llm.bounds import BOUNDED_OUTPUTS

        llm.output_bounds = BOUNDED_OUTPUTS
    return llm


def _categories(text: str | None):
    return None if not text else [int(c) if c.strip().isdigit() else c.strip() for c in text.split(",") if c.strip()]


def eval_command(args) -> int:
    from ..cli import build_method, make_embedder, parse_params
    from ..data import load_dataset
    from .harness import evaluate
    from .judge import LLMJudge

    dataset = load_dataset(args.data)
    executor = getattr(args, "executor", "thread")
    names = [m.strip() for m in args.method.split(",") if m.strip()]
    if executor == "ray":
        return _eval_ray(args, dataset, names)
    if len(names) > 1:
        raise SystemExit("several methods in one --method need --executor ray; run one command per method")
    if "," in (args.llm or "") or "," in (args.judge or ""):
        raise SystemExit("several endpoints in --llm/--judge need --executor ray")
    llm = bounded(_llm(args.llm, args.cassette), getattr(args, "bounded_outputs", False))
    method = build_method(args.method, llm, make_embedder(args.embedder), parse_params(args.param))
    judge = None
    if args.judge:
        judge = LLMJudge(llm if args.judge == "same" else _llm(args.judge, args.cassette))
    out = Path(args.out)
    res = evaluate(method, dataset, judge=judge, workers=args.workers, store=out / "results.jsonl",
                   questions=args.questions, conversations=args.conversations, categories=_categories(args.categories),
                   progress=not args.no_progress, save_memories_dir=out if args.save_memories else None,
                   retry_errors=args.retry_errors)
    _finish(out, res)
    return 0


def _finish(out: Path, res) -> None:
    from .report import export, summary_table

    _update_run_manifest(out, res.manifest)
    print(f"{res!r} -> {out / 'results.jsonl'}")
    if len(res):
        print(export(summary_table(res.to_frame()).drop(columns=["params", "params_hash"]), "md"))


def _eval_ray(args, dataset, names: list[str]) -> int:
    """Every (method x conversation) as a Ray task; one driver thread per method streams rows into one store."""
    from concurrent.futures import ThreadPoolExecutor

    from ..cli import parse_params
    from .executors import CliRecipe, RayExecutor, ensure_ray
    from .harness import evaluate
    from .store import ResultsStore

    out = Path(args.out)
    store = ResultsStore(out / "results.jsonl")
    params = parse_params(args.param)
    recipes = [CliRecipe(name, params, args.llm, args.cassette, args.embedder, args.judge,
                         getattr(args, "bounded_outputs", False)) for name in names]

    def one(k: int):
        recipe = recipes[k]
        method, judge = recipe(k)  # driver copies: name, parameters and manifest only, never called here
        ex = RayExecutor(recipe, address=args.address, first_index=k)
        return evaluate(method, dataset, judge=judge, workers=args.workers, store=store,
                        questions=args.questions, conversations=args.conversations,
                        categories=_categories(args.categories), progress=not args.no_progress,
                        save_memories_dir=out if args.save_memories else None, retry_errors=args.retry_errors,
                        executor=ex)

    ensure_ray(args.address)  # start or join Ray once, before the driver threads
    with ThreadPoolExecutor(max_workers=len(recipes)) as pool:
        results = list(pool.map(one, range(len(recipes))))
    for res in results:
        _finish(out, res)
    return 0


def _update_run_manifest(out: Path, manifest: dict) -> None:
    path = out / "manifest.json"
    data = {}
    if path.exists():
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError:
            data = {}
    data.setdefault("evaluations", []).append({**manifest, "results": "results.jsonl"})
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str))


def report_command(args) -> int:
    from .report import cost_accuracy_frame, export, method_stats, method_stats_markdown, results_frame, summary_table
    from .store import load_rows

    paths = [Path(p) / "results.jsonl" if Path(p).is_dir() else Path(p) for p in args.results]
    rows = load_rows(paths)
    df = results_frame(rows)
    if df.empty:
        print("no result rows found", file=sys.stderr)
        return 1
    kw = dict(metric=args.metric, n_boot=args.n_boot, seed=args.seed)
    table = cost_accuracy_frame(df, **kw) if args.cost else summary_table(df, **kw)
    text = export(table, args.format)
    if args.format == "md" and not args.cost:
        stats = method_stats(rows)
        text += "\n\n" + method_stats_markdown(stats) if stats else ""
    if args.output:
        Path(args.output).write_text(text + ("\n" if not text.endswith("\n") else ""))
    else:
        print(text)
    return 0
