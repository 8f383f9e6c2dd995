"""``workbench reproduce <paper> [--table N]``: a paper's headline evaluation as the paper ran it, beside its table.

    workbench reproduce hymem --data locomo:locomo10.json --embedder-url http://127.0.0.1:8001/v1
    workbench reproduce memr3 --table 1 --llm openai:gpt-4.1-mini --data locomo:locomo10.json \\
        --reranker-url http://127.0.0.1:8002/v1
    workbench reproduce ama --estimate --prices prices.json

The table (``paper_tables``) says what the paper ran: the dataset and the slice of it that was scored, the
backbone, the judge model and prompt, the metrics. The run is the ordinary ``workbench eval`` path: the method is
built by ``settings.build_method`` with its ``paper`` profile, the paper's embedder and reranker
(``components``, as ``--embedder auto`` / ``--reranker auto`` pick them), judged by ``LLMJudge`` and evaluated by
``harness.evaluate`` into a resumable run directory. It then prints each of the paper's rows beside the run's
figure, the number of questions behind it and the difference.

Nothing runs when a part of the paper's setup is missing: no API key, no endpoint for an embedder OpenAI's API
does not serve (the Qwen3 embedders: ``--embedder-url``), no reranker where the paper has one
(``--reranker-url``). The refusal names each missing part and how to supply it. A part given explicitly
instead (``--embedder minilm``, ``--reranker none``, a local ``--llm``) is run and reported as a departure.
``--estimate`` prices the run first (calls, tokens, dollars with ``--prices``, hours), on the data given or, with
none, on the sample data scaled to the paper's slice; it makes no call.
"""
from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

from .components import api_url
from .paper_tables import METRICS, OVERALL, PaperTable, get_table

DEFAULT_OUT = Path("runs") / "reproduce"
SAMPLE_FOR_ESTIMATE = "sample"


def add_parser(sub) -> None:
    p = sub.add_parser("reproduce", help="run a paper's headline evaluation as the paper describes it, beside its "
                                         "table", description="Run a paper's headline evaluation as the paper ran "
                                         "it (docs/reproduce.md) and print it beside the paper's table.")
    # no ``choices``: listing the papers would load every method (and plugin) just to print the help
    p.add_argument("paper", help="the paper, by its method's registry name (as --method takes it)")
    p.add_argument("--table", default=None, help="the paper's table number (default: its headline table)")
    p.add_argument("--data", default=None, help="locomo:<locomo10.json> | longmemeval:<longmemeval_s_cleaned.json> "
                   "(required for a run; --estimate without it prices the sample data scaled to the paper's slice)")
    p.add_argument("--llm", default=None, help="openai:<model>[@url] (default: the paper's main backbone on "
                                               "OpenAI's API)")
    p.add_argument("--judge", default=None, help="judge LLM spec (default: the paper's judge model, on the --llm "
                                                 "endpoint)")
    p.add_argument("--embedder", default="auto", help="auto (the paper's embedder) | minilm | hash | "
                                                      "openai:<model>[@url] (anything but the paper's: a departure)")
    p.add_argument("--embedder-url", default=None, metavar="URL",
                   help="an OpenAI-compatible /embeddings server (vLLM, llama.cpp) serving the paper's open embedder")
    p.add_argument("--reranker", default="auto", help="auto (the paper's reranker) | none | <spec> "
                                                      "(anything but the paper's: a departure)")
    p.add_argument("--reranker-url", default=None, metavar="URL", help="a /rerank server serving the paper's "
                                                                       "reranker")
    p.add_argument("--conversations", default=None, help="e.g. 0-2 or conv-26 (default: all; fewer is not the "
                                                         "paper's slice)")
    p.add_argument("--limit-questions", type=int, default=None, metavar="N",
                   help="at most N questions per conversation (not the paper's slice)")
    p.add_argument("--estimate", action="store_true", help="price the run (calls, tokens, $, hours), then stop")
    p.add_argument("--prices", default=None, metavar="IN,OUT|FILE",
                   help="USD per million prompt,completion tokens, or a JSON file {model: [IN, OUT]} (the backbone "
                        "and the judge are priced by their own entries)")
    p.add_argument("--out", default=None, help="run directory (default: runs/reproduce/<paper>-table<N>)")
    p.add_argument("--workers", type=int, default=1, help="questions answered in parallel")
    p.add_argument("--cassette", default=None, help="record (or with --llm replay, replay) every LLM call")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=reproduce_command)


# -- what the run is -------------------------------------------------------------------------------------------

def _model(spec: str | None) -> str | None:
    kind, _, rest = (spec or "").partition(":")
    return (rest.partition("@")[0] or None) if kind == "openai" else spec


def _specs(args, table: PaperTable) -> tuple[str, str]:
    """The LLM and judge specs: the given ones, else the paper's backbone and judge, the judge on the LLM's endpoint."""
    llm = args.llm or f"openai:{table.backbones[0]}"
    if args.judge:
        return llm, args.judge
    api, url = api_url(llm)
    return llm, f"openai:{table.judge}" + (f"@{url}" if api and url else "")


def _key_problems(*specs: str) -> list[str]:
    """An ``openai:`` spec on OpenAI's own API needs a key (a server at a URL does not)."""
    if os.environ.get("OPENAI_API_KEY"):
        return []
    need = [s for s in dict.fromkeys(specs) if api_url(s)[0] and api_url(s)[1] is None]
    return [f"API key: {', '.join(need)} call{'s' if len(need) == 1 else ''} OpenAI's API and OPENAI_API_KEY is not "
            "set; export OPENAI_API_KEY, or give --llm/--judge openai:<model>@<url> for an OpenAI-compatible server"
            ] if need else []


def resolve_components(method_cls, *, llm_spec, embedder, embedder_url, reranker, reranker_url):
    """``(embedder_spec, reranker_spec, notes)`` for the run, decided where ``--embedder auto`` / ``--reranker auto``
    always are (``components.choose_components``)."""
    from .components import choose_components

    choice = choose_components(method_cls.name, llm_spec=llm_spec, embedder=embedder, embedder_url=embedder_url,
                               reranker=reranker, reranker_url=reranker_url)
    return choice.embedder, choice.reranker, list(choice.notes)


def _takes_reranker(cls) -> bool:
    return "reranker" in cls._param_names()


def component_problems(method_cls, embedder_spec: str, reranker_spec: str, *, embedder: str,
                       reranker: str) -> list[str]:
    """What stops a paper-grade run: a component left at ``auto`` that did not resolve to the paper's. One given
    explicitly (``--embedder minilm``, ``--reranker none``) is run; the method's departures then list it."""
    from ..methods.components import component_departures

    paper = method_cls.components
    emb_name = _model(embedder_spec) if embedder_spec.startswith("openai:") else embedder_spec
    rr_name = None if reranker_spec in (None, "none") else reranker_spec.split(":", 1)[-1].partition("@")[0]
    off = component_departures(paper, embedder=emb_name, reranker=rr_name)
    problems = []
    if "embedder" in off and embedder == "auto":
        how = (f"serve {paper.embedder_served} on an OpenAI-compatible server (vLLM, llama.cpp) and give "
               "--embedder-url URL" if not paper.embedder_on_openai else
               f"give an openai: --llm (OpenAI's API serves {paper.embedder_served})")
        problems.append(f"embedder: {paper.embedder} ({paper.source}) is not reachable: {how}; or name another "
                        "with --embedder (run as a departure)")
    if "reranker" in off and reranker == "auto":
        if not _takes_reranker(method_cls):
            problems.append(f"reranker: the paper reranks with {paper.reranker} ({paper.source}), and the "
                            f"workbench's {method_cls.name} has no reranker stage yet; --reranker none runs it "
                            "without one (a departure)")
        else:
            problems.append(f"reranker: {paper.reranker} ({paper.source}) is not reachable: serve "
                            f"{paper.reranker_served} behind a /rerank endpoint (vLLM, llama.cpp) and give "
                            "--reranker-url URL; or --reranker none (run as a departure)")
    return problems


def question_ids(dataset, table: PaperTable, *, conversations=None, limit: int | None = None) -> list[str] | int | None:
    """The questions a run covers, as ``harness.evaluate`` takes them: the table's categories are given to it
    apart; here the repeated questions the paper dropped (the same text twice in one conversation: the first
    is kept, whatever its category) and ``limit`` per conversation."""
    if not table.dedupe_questions:
        return limit
    from .selection import select_conversations

    cats = set(table.categories)
    ids: list[str] = []
    for conv in select_conversations(dataset, conversations):
        seen, kept = set(), []
        for qa in conv.qa:
            text = " ".join(qa.question.split()).lower()
            if text not in seen:
                seen.add(text)
                if qa.category in cats:
                    kept.append(qa.id)
        ids += kept[:limit] if limit is not None else kept
    return ids


# -- the command ----------------------------------------------------------------------------------------------

def reproduce_command(args) -> int:
    from ..data import load_dataset
    from ..methods import get_method

    data_kind = _data_kind(args.data)
    try:
        table = get_table(args.paper, args.table, data_kind if data_kind in ("locomo", "longmemeval") else None)
    except ValueError as exc:  # an unknown paper or table: say which exist
        raise SystemExit(f"workbench reproduce: {exc}") from None
    cls = get_method(args.paper)
    llm_spec, judge_spec = _specs(args, table)
    problems = _key_problems(llm_spec, judge_spec)
    emb_spec, rr_spec, notes = resolve_components(cls, llm_spec=llm_spec, embedder=args.embedder,
                                                  embedder_url=args.embedder_url, reranker=args.reranker,
                                                  reranker_url=args.reranker_url)
    problems += component_problems(cls, emb_spec, rr_spec, embedder=args.embedder, reranker=args.reranker)
    for note in notes if not problems else ():  # (a refused component's note would say what is used instead)
        print(f"note: {note}", file=sys.stderr)
    if data_kind is not None and data_kind != table.data_kind:
        problems.append(f"data: {args.paper} Table {table.table} is on {table.dataset}; give --data "
                        f"{table.data_kind}:<path>")
    if args.estimate:
        dataset = load_dataset(args.data or SAMPLE_FOR_ESTIMATE)
        return estimate(args, table, cls, dataset, llm_spec, judge_spec, emb_spec, problems)
    if args.data is None:
        problems.append(f"data: the paper scored {table.slice}; give --data {table.data_kind}:<path> "
                        f"({_download(table)})")
    if problems:
        raise SystemExit(f"workbench reproduce: cannot run {args.paper} Table {table.table} as the paper did:\n"
                         + "\n".join(f"  - {p}" for p in problems))
    return run(args, table, cls, load_dataset(args.data), llm_spec, judge_spec, emb_spec, rr_spec)


def _data_kind(spec: str | None) -> str | None:
    """``locomo`` / ``longmemeval`` for a data spec (the bundled samples are in LoCoMo's form), else its prefix."""
    from ..data import SAMPLE_SPECS

    if spec is None:
        return None
    return "locomo" if spec in SAMPLE_SPECS.values() else spec.partition(":")[0]


def _download(table: PaperTable) -> str:
    return ("data/locomo10.json of github.com/snap-research/locomo" if table.dataset == "locomo" else
            "longmemeval_s_cleaned.json of huggingface.co/datasets/xiaowu0162/longmemeval-cleaned")


def _out(args, table: PaperTable) -> Path:
    if args.out:
        return Path(args.out)
    suffix = "" if table.dataset == "locomo" else f"-{table.dataset}"
    return DEFAULT_OUT / f"{table.paper}-table{table.table}{suffix}"


def run(args, table, cls, dataset, llm_spec, judge_spec, emb_spec, rr_spec) -> int:
    from ..embed import embedder_from_spec
    from ..extras import usage_errors
    from ..rundir import check_links_stay_inside
    from .cli import _finish, _llm, _print_estimate, bound_requests, report_resume, sweep_stale_temps
    from .harness import evaluate
    from .judge import LLMJudge
    from .settings import build_method

    with usage_errors():
        llm = bound_requests(_llm(llm_spec, args.cassette), args)
        judge = LLMJudge(llm if judge_spec == llm_spec else bound_requests(_llm(judge_spec, args.cassette), args))
        embedder = embedder_from_spec(emb_spec)
        reranker = _reranker(rr_spec)
        setup = build_method(cls.name, llm=llm, embedder=embedder, params={"profile": "paper"}, data=args.data,
                             calibration="auto", warn=True, **({"reranker": reranker} if reranker else {}))
    method = setup.method
    out = _out(args, table)
    check_links_stay_inside(out)
    sweep_stale_temps(out)
    report_resume(out / "results.jsonl")
    header = run_header(table, dataset, args, llm_spec, judge_spec, method)
    categories = list(table.categories) if table.dataset == "locomo" else None
    res = evaluate(method, dataset, judge=judge, workers=args.workers, store=out / "results.jsonl",
                   questions=question_ids(dataset, table, conversations=args.conversations,
                                          limit=args.limit_questions),
                   conversations=args.conversations, categories=categories, progress=not args.no_progress,
                   extra_manifest={**setup.manifest(), "reproduce": header},
                   estimate=lambda todo: _print_estimate(args, method, todo, llm, judge, out))
    _finish(out, res)
    rows = compare(table, res.to_frame(), _model(llm_spec))
    print(format_comparison(table, header, rows))
    from ..jsonl import write_text_atomic

    write_text_atomic(out / "reproduce.json", json.dumps({"header": header, "rows": rows}, indent=1, default=str))
    return 0


def _reranker(spec: str | None):
    if not spec or spec == "none":
        return None
    from .components import build_reranker

    return build_reranker(spec)


def run_header(table, dataset, args, llm_spec, judge_spec, method) -> dict:
    """What the paper ran beside what this run runs, part by part (shown above the table; kept in the manifest)."""
    from .harness import select

    plan = select(dataset, conversations=args.conversations,
                  questions=question_ids(dataset, table, conversations=args.conversations,
                                         limit=args.limit_questions),
                  categories=list(table.categories) if table.dataset == "locomo" else None)
    n = sum(len(q) for _, q in plan)
    compared, _ = table.backbone_rows(_model(llm_spec))
    full = n == table.size["questions"] and len(plan) == table.size["conversations"] \
        and not (table.dataset == "longmemeval_s" and "oracle" in dataset.name.lower())  # oracle: evidence only
    judge_prompt = "this run's judge prompt is " + (
        "the workbench's rewording of the same protocol" if table.judge_as_ours else
        "the workbench's (the paper's own prompt is not reproduced; its criteria differ in wording)")
    return {
        "paper": table.paper, "table": table.table, "dataset": table.dataset, "source": table.source,
        "slice": {"paper": table.slice, "run": f"{dataset.name}: {len(plan)} conversation(s), {n} questions",
                  "paper_slice": full},
        "backbone": {"paper": list(table.backbones), "run": _model(llm_spec), "compared_with": compared},
        "judge": {"paper": table.judge_model or f"not stated (stand-in: {table.judge_stand_in})",
                  "paper_prompt": table.judge_prompt, "run": _model(judge_spec), "run_prompt": judge_prompt},
        "embedder": {"paper": method.components.embedder, "run": getattr(method.embedder, "name", None)},
        "reranker": {"paper": method.components.reranker or "none",
                     "run": getattr(getattr(method, "reranker", None), "name", None) or "none"},
        "departures": dict(method.param_notes),
        "notes": list(table.notes)}


# -- the comparison --------------------------------------------------------------------------------------------

def compare(table: PaperTable, frame, llm_model: str | None) -> list[dict]:
    """One dict per (paper row, metric): the paper's figure, this run's in the paper's scale, n, the difference."""
    from ..data import CATEGORY_NAMES
    from .report import summary_table

    backbone, paper_rows = table.backbone_rows(llm_model)
    summary = summary_table(frame, metric="f1", n_boot=200) if len(frame) else None
    by_name = {} if summary is None else {r["category"]: r for r in summary.to_dict("records")}
    out = []
    for key, cells in paper_rows.items():
        name = OVERALL if key == OVERALL else (CATEGORY_NAMES.get(key, str(key)) if isinstance(key, int) else key)
        got = by_name.get(name, {})
        for metric, paper_value in cells.items():
            scale = table.scale[metric]
            if metric == "judge":
                value, n = got.get("judge_accuracy"), got.get("judge_n", 0)
            else:
                value, n = got.get(metric), got.get("n", 0)
            value = None if value is None or (isinstance(value, float) and math.isnan(value)) else value * scale
            out.append({"row": table.row_label(key), "key": key, "metric": metric, "paper": paper_value,
                        "run": value, "n": int(n or 0), "diff": None if value is None else value - paper_value,
                        "backbone": backbone})
    return out


def format_comparison(table: PaperTable, header: dict, rows: list[dict]) -> str:
    import pandas as pd

    from .report import to_markdown

    unit = " (%)" if set(table.scale.values()) == {100} else ""
    lines = [f"\n{table.paper} Table {table.table} ({table.dataset}; {table.source})", ""]
    for part in ("slice", "backbone", "judge", "embedder", "reranker"):
        h = header[part]
        paper = ", ".join(h["paper"]) if isinstance(h["paper"], list) else h["paper"]
        line = f"  {part + ':':<10} paper: {paper} | this run: {h['run']}"
        if part == "backbone" and h["run"] != h["compared_with"]:
            line += f" (compared with the paper's {h['compared_with']} row)"
        if part == "judge":
            line += f"\n  {'':<10} paper's prompt: {h['paper_prompt']}; {h['run_prompt']}"
        lines.append(line)
    if not header["slice"]["paper_slice"]:
        lines.append("  NOT the paper's slice: this run's figures cannot be compared with the paper's")
    for k, v in (header["departures"] or {}).items():
        lines.append(f"  departure {k}: {v}")
    lines += [f"  note: {n}" for n in header["notes"]]
    frame = pd.DataFrame([{"row": r["row"], "metric": METRICS[r["metric"]] + (unit if table.scale[r["metric"]] == 100
                                                                                 else ""),
                           "paper": r["paper"], "this run": r["run"], "n": r["n"], "difference": r["diff"]}
                          for r in rows])
    return "\n".join(lines) + "\n\n" + to_markdown(frame, floatfmt=".3f" if 1 in table.scale.values() else ".2f")


# -- the estimate ----------------------------------------------------------------------------------------------

def estimate(args, table, cls, dataset, llm_spec, judge_spec, emb_spec, problems) -> int:
    """Price the run before anything runs (``estimate.estimate_run``): on ``dataset``, then, when that is not the
    paper's whole slice, scaled to it (construction by turns, questions and judging by questions)."""
    from ..embed import HashEmbedder, embedder_from_spec
    from .cli import _llm, _Unbuilt
    from .estimate import estimate_run, structure
    from .harness import select
    from .judge import LLMJudge
    from .settings import build_method

    def service(spec):
        try:
            return _llm(spec, None)
        except Exception:  # noqa: BLE001 -- no key or no model here: its calls are still counted and priced
            return _Unbuilt(spec)

    llm = service(llm_spec)
    judge = LLMJudge(llm if judge_spec == llm_spec else service(judge_spec))
    try:
        embedder = embedder_from_spec(emb_spec)
    except Exception:  # noqa: BLE001 -- (an openai: embedder without a key) the estimate needs no vector
        embedder = HashEmbedder()
    method = build_method(cls.name, llm=llm, embedder=embedder, params={"profile": "paper"},
                          data=args.data or SAMPLE_FOR_ESTIMATE, calibration="auto", warn=False).method
    plan = select(dataset, conversations=args.conversations,
                  questions=question_ids(dataset, table, conversations=args.conversations,
                                         limit=args.limit_questions),
                  categories=list(table.categories) if table.dataset == "locomo" else None)
    est = estimate_run(method, plan, llm=llm, judge=judge)
    print(f"{table.paper} Table {table.table} ({table.dataset}): {table.slice}")
    print(f"  backbone {_model(llm_spec)}, judge {_model(judge_spec)}, embedder {emb_spec}")
    print(est.format())
    prices = _prices(args.prices, _model(llm_spec), _model(judge_spec))
    units = structure(plan)
    size = table.size
    factors = {"construct": _ratio(size.get("turns"), units["turns"]),
               "query": _ratio(size["questions"], units["questions"]),
               "judge": _ratio(size["questions"], units["judged"])}
    scaled = args.data is None or any(f is not None and abs(f - 1) > 1e-9 for f in factors.values())
    print(_cost_lines(est, prices, {p: 1.0 for p in factors}, "this data"))
    if scaled:
        label = (f"the paper's slice ({size['conversations']} conversations, "
                 f"{size['turns'] or '?'} turns, {size['questions']} questions; scaled from this data)")
        print(_cost_lines(est, prices, factors, label))
        if factors["construct"] is None:
            print(f"  note: the paper's slice has no known turn count here: construction is left unscaled; "
                  f"price it on the data itself (--data {table.data_kind}:<path>)")
    print(f"  note: calls are priced as serial (--workers {args.workers}); embedding calls are not priced")
    for p in problems:
        print(f"  a real run would stop here: {p}")
    return 0


def _ratio(full, part) -> float | None:
    return None if not full or not part else full / part


def _prices(text: str | None, llm_model: str | None, judge_model: str | None) -> dict:
    """``{"llm": (in, out) or None, "judge": ...}`` from ``--prices`` (a file is looked up per model)."""
    from .estimate import parse_prices

    out = {}
    for who, model in (("llm", llm_model), ("judge", judge_model)):
        try:
            out[who] = parse_prices(text, model)
        except ValueError as exc:
            print(f"  note: {exc}", file=sys.stderr)
            out[who] = None
    return out


def _cost_lines(est, prices: dict, factors: dict, label: str) -> str:
    from .estimate import format_duration

    calls = tokens = seconds = 0.0
    dollars: float | None = 0.0
    for phase, p in est.phases.items():
        f = factors.get(phase) or 1.0
        calls, tokens, seconds = calls + p.calls * f, tokens + p.tokens * f, seconds + p.seconds * f
        price = prices.get("judge" if phase == "judge" else "llm")
        if price is None or dollars is None:
            dollars = None
        else:
            dollars += f * (p.prompt_tokens * price[0] + p.completion_tokens * price[1]) / 1e6
    cost = f"${dollars:,.2f}" if dollars is not None else "$? (give --prices)"
    return (f"  {label}: ~{calls:,.0f} calls, ~{tokens:,.0f} tokens, {cost}, ~{seconds / 3600:,.1f} hours "
            f"({format_duration(seconds)})")
