"""Command line: ``workbench demo | build | ask | eval | report | calibrate | app | models | bench``."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

DEFAULT_RUN = Path("runs") / "demo"
CASSETTE_DIR = Path(__file__).resolve().parents[1] / "sample_data" / "cassettes"


# -- shared option helpers -------------------------------------------------------------------------
def make_embedder(name: str):
    from .embed import CachedEmbedder, HashEmbedder, MiniLMEmbedder, OpenAIEmbedder

    if name == "hash":
        return HashEmbedder(dim=256)
    if name == "minilm":
        return CachedEmbedder(MiniLMEmbedder())
    if name.startswith("openai:"):
        return CachedEmbedder(OpenAIEmbedder(name.split(":", 1)[1]))
    raise SystemExit(f"unknown embedder {name!r}: use minilm, hash or openai:<model>")


def make_llm(spec: str | None, cassette: str | None = None):
    """An LLM from a spec, wrapped in a record/replay cassette when one is given."""
    from .llm import CachedLLM, default_llm

    if spec and spec.startswith("replay:"):
        return default_llm(spec)
    if cassette and spec == "replay":
        return CachedLLM.replay(cassette)
    llm = default_llm(spec)
    return CachedLLM(llm, cassette) if cassette else llm


def parse_params(pairs: list[str] | None) -> dict:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--param expects key=value, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def build_method(name: str, llm, embedder, params: dict):
    import inspect

    from .methods import get_method

    cls = get_method(name)
    accepted = inspect.signature(cls.__init__).parameters
    kw = {k: v for k, v in (("llm", llm), ("embedder", embedder)) if k in accepted}
    return cls(**kw, **params)


# -- commands --------------------------------------------------------------------------------------
def cmd_models(args) -> int:
    from .runtime import models

    if args.action == "list":
        for row in models.status():
            flag = "assembled" if row["assembled"] else ("packages installed" if row["packages_installed"] else "missing")
            print(f"{row['name']:<22} {flag:<20} {row['size_mb']:>5} MB  {row['note']}")
            print(f"{'':<22} {row['path']}")
        return 0
    names = [args.name] if args.name else [models.DEFAULT_MODEL, models.FALLBACK_MODEL]
    for name in names:
        if args.action == "install":
            path = models.assemble(name, install=True)
            if not args.quiet:
                print(f"{name}: ready at {path} (sha256 verified)")
        else:
            path = models.verify(name)
            print(f"{name}: sha256 OK ({path})")
    return 0


def cmd_build(args) -> int:
    from .data import load_dataset
    from .rundir import save_conversation, save_memory_snapshot

    dataset = load_dataset(args.data)
    conv = dataset[args.conversation]
    llm = make_llm(args.llm, args.cassette)
    method = build_method(args.method, llm, make_embedder(args.embedder), parse_params(args.param))
    method.ingest(conv)
    out = Path(args.out)
    save_conversation(out, conv)
    path = save_memory_snapshot(method, out)
    u = method.construction_usage_
    print(f"{method!r} built {len(method.memories())} units and {len(method.events)} events for {conv.id} "
          f"({u.calls} LLM calls, {u.total_tokens} tokens, {u.cached_calls} from cache) -> {path}")
    return 0


def cmd_ask(args) -> int:
    from .data import load_dataset

    llm = make_llm(args.llm, args.cassette)
    embedder = make_embedder(args.embedder)
    if args.run:
        from .rundir import RunDir

        run = RunDir(args.run)
        conv_id = args.conversation_id or run.conversation_ids()[0]
        method = run.load_method(args.method, conv_id, llm=llm, embedder=embedder)
    else:
        conv = load_dataset(args.data)[args.conversation]
        method = build_method(args.method, llm, embedder, parse_params(args.param)).ingest(conv)
    ans = method.answer(args.question)
    print(f"Answer: {ans.text}\n")
    print("Context:")
    for h in ans.context[:args.show]:
        print(f"  [{h.unit_id}] ({h.score:.3f}; turns {', '.join(h.source_ids)}) {h.text[:160]}")
    print(f"\nSteps: {', '.join(s.kind for s in ans.steps)}")
    print(f"Usage: {ans.usage.calls} calls, {ans.usage.prompt_tokens} prompt + {ans.usage.completion_tokens} "
          f"completion tokens, {ans.usage.cached_calls} cached, {ans.usage.latency_s:.1f}s")
    return 0


def cmd_app(args) -> int:
    from widgets.app import serve

    serve(args.run, port=args.port, address=args.address, show=not args.no_browser)
    return 0


def cmd_demo(args) -> int:
    from .demo import run_demo

    run_demo(out=Path(args.out), methods=args.methods, questions=args.questions, serve=not args.no_serve,
             llm_spec=args.llm, port=args.port, record=args.record, calibration=args.calibration)
    return 0


def cmd_calibrate(args) -> int:
    from .data import load_dataset
    from .methods.calibration import calibrate, load_calibration, measure, measure_lines, summary_lines

    convs, labels = [], []
    for spec in args.data:
        ds = load_dataset(spec)
        picked = list(ds.conversations[:args.conversations]) if args.conversations else list(ds.conversations)
        convs += picked
        labels.append(f"{ds.name} ({len(picked)} conv.)")
    kinds = [k.strip() for k in args.presets.split(",") if k.strip()]
    if args.check:  # before/after of an existing calibration on this data; writes nothing
        embedder = make_embedder(args.embedder)
        cal = load_calibration(f"shipped:{embedder.name}" if args.check == "shipped" else args.check)
        print("\n".join(measure_lines(measure(embedder, convs, cal, kinds=kinds), ", ".join(labels))))
        return 0
    cal = calibrate(make_embedder(args.embedder), convs, data_label=", ".join(labels), kinds=kinds)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(cal, indent=2) + "\n")
    print("\n".join(summary_lines(cal)))
    print(f"-> {out}")
    return 0


def cmd_bench(args) -> int:
    root = Path(__file__).resolve().parents[1]  # benchmarks/ lives in the checkout, beside the package
    if not (root / "benchmarks" / "run_all.py").exists():
        raise SystemExit("workbench bench needs a source checkout (benchmarks/ is not installed with the package)")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from benchmarks.run_all import main as bench_main

    return bench_main(["--config", args.config])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="workbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("models", help="list, install or verify the offline models")
    p.add_argument("action", choices=["list", "install", "verify"])
    p.add_argument("name", nargs="?")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_models)

    def common(p, data=True):
        p.add_argument("--method", default="naive_rag")
        p.add_argument("--param", action="append", help="method parameter key=value (JSON values)")
        p.add_argument("--llm", default=None, help="openai:<model>[@url] | local[:name] | gguf:<path> | replay:<file>")
        p.add_argument("--cassette", default=None, help="record/replay cassette (JSONL)")
        p.add_argument("--embedder", default="minilm", help="minilm | hash | openai:<model>")
        if data:
            p.add_argument("--data", default="sample", help="sample | tiny | locomo:<path> | longmemeval:<path>")
            p.add_argument("--conversation", type=int, default=0)

    p = sub.add_parser("build", help="build a method's memory for one conversation and save it")
    common(p)
    p.add_argument("--out", default=str(DEFAULT_RUN))
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("ask", help="answer a question from memory, printing context and usage")
    common(p)
    p.add_argument("question")
    p.add_argument("--run", default=None, help="use a memory saved in this run directory")
    p.add_argument("--conversation-id", default=None)
    p.add_argument("--show", type=int, default=5)
    p.set_defaults(func=cmd_ask)

    try:
        from .eval.cli import add_eval_arguments, add_report_arguments, eval_command, report_command
    except ImportError:
        pass
    else:
        p = sub.add_parser("eval", help="evaluate a method on a dataset (resumable)")
        add_eval_arguments(p)
        p.set_defaults(func=eval_command)
        p = sub.add_parser("report", help="aggregate result files into tables")
        add_report_arguments(p)
        p.set_defaults(func=report_command)

    p = sub.add_parser("calibrate", help="map the papers' similarity thresholds onto an embedder (writes JSON)")
    p.add_argument("--embedder", default="minilm", help="minilm | hash | openai:<model>")
    p.add_argument("--data", action="append", required=True, help="sample | locomo:<path> | ... (repeatable, pooled)")
    p.add_argument("--conversations", type=int, default=None, help="at most N conversations per --data")
    p.add_argument("--presets", default="locomo,longmemeval", help="RecMem dataset presets to calibrate")
    p.add_argument("--out", default="calibration.json")
    p.add_argument("--check", default=None, help="instead: report before/after of a calibration file (or 'shipped') "
                                                 "on --data")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("app", help="serve the Panel app over a run directory")
    p.add_argument("--run", default=str(DEFAULT_RUN))
    p.add_argument("--port", type=int, default=5006)
    p.add_argument("--address", default="127.0.0.1")
    p.add_argument("--no-browser", action="store_true")
    p.set_defaults(func=cmd_app)

    p = sub.add_parser("demo", help="build memories for a sample conversation offline, then open the app")
    p.add_argument("--out", default=str(DEFAULT_RUN))
    p.add_argument("--methods", nargs="*", default=None)
    p.add_argument("--questions", type=int, default=None, help="how many of the demo questions (default all)")
    p.add_argument("--record", action="store_true", help="append new calls to the committed cassette")
    p.add_argument("--calibration", default="auto", help="auto (what the cassette was recorded with; the shipped "
                                                         "MiniLM calibration when recording) | off | <file.json>")
    p.add_argument("--llm", default=None)
    p.add_argument("--port", type=int, default=5006)
    p.add_argument("--no-serve", action="store_true")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("bench", help="run the benchmarks and write benchmarks/results")
    p.add_argument("--config", default="reduced", choices=["reduced", "full"])
    p.set_defaults(func=cmd_bench)

    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        print("interrupted; finished work is kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
