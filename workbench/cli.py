"""Command line: ``workbench demo | build | ask | eval | report | mechanisms | app | models | bench | cassette |
judge-audit | calibrate``.

A user error (bad dataset, unknown method, missing model, bad spec, damaged file) prints one
line ``workbench: error: ...`` and exits with status 2; ``--debug`` shows the traceback instead.
So does a write the machine refused (a full disk, a read-only folder: the line names the file and
what to do) and an environment failure that stopped a run (``failures.EnvironmentFailure``).
"""
from __future__ import annotations

import argparse
import errno
import json
import sys
from pathlib import Path

from .extras import MissingExtra, run_benchmarks, serve_app, usage_errors
from .failures import EnvironmentFailure
from .untrusted import terminal_text

DEFAULT_RUN = Path("runs") / "demo"


# -- shared option helpers: the library builds; a bad spec becomes a usage error -----------------------
def make_embedder(name: str):
    from .embed import embedder_from_spec

    with usage_errors():
        return embedder_from_spec(name)


def make_llm(spec: str | None, cassette: str | None = None):
    """An LLM from a spec, wrapped in a record/replay cassette when one is given."""
    from .llm import llm_from_options

    with usage_errors():
        return llm_from_options(spec, cassette)


def parse_params(pairs: list[str] | None) -> dict:
    from .methods import spec as method_spec

    with usage_errors():
        return method_spec.parse_params(pairs)


def method_components(args) -> tuple:
    """The embedder and reranker of ``build``/``ask``'s one method (``--embedder``/``--reranker``, ``auto``:
    the paper's where reachable, as ``workbench eval`` chooses them: ``eval.components``)."""
    from .eval.components import Components, component_choices

    with usage_errors():
        parts = Components(component_choices(args, [args.method]))
        return parts.embedder(args.method), parts.reranker(args.method)


def configure_method(args, llm, embedder, reranker=None):
    """The ``RunSetup`` of ``build``/``ask``: ``--method`` with the dataset preset of ``--data``, the
    ``--calibration``, the ``--profile``, the ``--param`` values and ``--fair``, and the LLM's output bounds
    (``--bounded-outputs``, the profile's), by ``settings.build_method`` -- the one path ``workbench eval``
    takes on either executor and the demo takes, so a memory built here is the one an eval would build."""
    from .eval.settings import build_method, explicit_params

    with usage_errors():
        return build_method(args.method, llm=llm, embedder=embedder,
                            params=explicit_params(args.param, fair=args.fair), data=args.data,
                            calibration=args.calibration, bounded=args.bounded_outputs, profile=args.profile,
                            reranker=reranker)


def pick_conversation_id(ids: list[str], which: str | int | None, *, where: str) -> str:
    """``which`` as an id among ``ids``, or as an index into them (None: the first)."""
    which = "0" if which is None else str(which)
    if which in ids:
        return which
    if which.lstrip("-").isdigit() and -len(ids) <= int(which) < len(ids):
        return ids[int(which)]
    raise SystemExit(f"workbench: no conversation {which!r} in {where} (it has {len(ids)}: {', '.join(ids[:5])}"
                     f"{', ...' if len(ids) > 5 else ''})")


def pick_conversation(dataset, which: str | int | None):
    """A conversation of ``dataset`` by id or index (``--conversation``)."""
    ids = [c.id for c in dataset.conversations]
    return dataset[pick_conversation_id(ids, which, where=f"dataset {dataset.name!r}")]


# -- commands --------------------------------------------------------------------------------------
def cmd_models(args) -> int:
    from .runtime import models

    if args.action == "list":
        for row in models.status():
            flag = ("assembled" if row["assembled"] else
                    "packages installed" if row["packages_installed"] else "missing")
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

    conv = pick_conversation(load_dataset(args.data), args.conversation)
    llm = make_llm(args.llm, args.cassette)
    method = configure_method(args, llm, *method_components(args)).method
    from .methods.progress import show_ingest_progress

    with show_ingest_progress(position=0, leave=True):  # per-turn bar with ETA, calls and tokens so far
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
    embedder, reranker = method_components(args)
    if args.run:
        from .rundir import RunDir

        from .eval.settings import bound_llm

        run = RunDir(args.run)
        conv_id = pick_conversation_id(run.conversation_ids(), args.conversation, where=args.run)
        bound_llm(llm, bounded=args.bounded_outputs, profile=args.profile)  # its parameters were saved; bounds were not
        method = run.load_method(args.method, conv_id, llm=llm, embedder=embedder, trust=args.trust,
                                 reranker=reranker)
    else:
        conv = pick_conversation(load_dataset(args.data), args.conversation)
        method = configure_method(args, llm, embedder, reranker).method.ingest(conv)
    ans = method.answer(args.question)
    print(terminal_text(f"Answer: {ans.text}\n"))  # a model's (or a replayed cassette's) text: no raw controls
    print("Context:")
    for h in ans.context[:args.show]:
        print(terminal_text(f"  [{h.unit_id}] ({h.score:.3f}; turns {', '.join(h.source_ids)}) {h.text[:160]}"))
    print(terminal_text(f"\nSteps: {', '.join(s.kind for s in ans.steps)}"))
    print(f"Usage: {ans.usage.calls} calls, {ans.usage.prompt_tokens} prompt + {ans.usage.completion_tokens} "
          f"completion tokens, {ans.usage.cached_calls} cached, {ans.usage.latency_s:.1f}s")
    return 0


def cmd_app(args) -> int:
    serve_app(args.run, port=args.port, address=args.address, show=not args.no_browser,
              allow_remote=args.allow_remote is not None, allowed_hosts=args.allow_remote or (),
              num_procs=args.num_procs)
    return 0


def cmd_cassette(args) -> int:
    """``check``: report a cassette's entries and bad lines (exit 1 when damaged); ``repair``:
    rewrite it atomically with only its good entries; ``costs``: what recording it cost, per method."""
    from .llm.cache import cassette_costs, check_cassette, repair_cassette

    if not Path(args.file).is_file():
        raise FileNotFoundError(f"cassette not found: {args.file}")
    if args.action == "costs":
        costs = cassette_costs(args.file)
        print(terminal_text(f"{args.file}: recorded with {', '.join(costs['models']) or 'no model'}"))
        print(f"{'role family':<14}{'calls':>7}{'prompt tok':>12}{'compl. tok':>12}{'call time':>11}  note")
        for family, c in costs["by_role"].items():
            missing = c["calls_without_latency"]
            note = f"{missing} calls recorded without their time" if missing else ""
            print(terminal_text(f"{family:<14}{c['calls']:>7}{c['prompt_tokens']:>12,}{c['completion_tokens']:>12,}"
                                f"{c['seconds'] / 60:>10.1f}m  {note}"))
        for line in costs["bad_lines"]:
            print(terminal_text(f"bad line  {line}"))
        return 1 if costs["bad_lines"] else 0
    report = repair_cassette(args.file) if args.action == "repair" else check_cassette(args.file)
    for line in report["bad_lines"]:
        print(terminal_text(f"bad line  {line}"))
    verdict = "damaged" if report["bad_lines"] else "ok"
    print(terminal_text(f"{args.file}: {report['entries']} good entries ({report['keys']} keys), "
                        f"{len(report['bad_lines'])} bad lines -> {verdict}"))
    if args.action == "repair":
        print(terminal_text(f"rewrote {args.file} with {report['kept']} entries ({len(report['bad_lines'])} bad "
                            "lines dropped)"))
        return 0
    return 1 if report["bad_lines"] else 0


def cmd_mechanisms(args) -> int:
    from .eval.mechanisms import mechanisms_command

    return mechanisms_command(args)


def cmd_demo(args) -> int:
    from .demo import DEMO, DEMO_PROFILES, estimate_demo, run_demo

    profile = DEMO_PROFILES[args.profile] if args.profile else DEMO
    if args.estimate:
        for est in estimate_demo(methods=args.methods, questions=args.questions, llm_spec=args.llm,
                                 profile=profile):
            print(est.format() + "\n")
        return 0

    run_demo(out=Path(args.out), methods=args.methods, questions=args.questions, serve=not args.no_serve,
             llm_spec=args.llm, port=args.port, record=args.record, calibration=args.calibration, profile=profile)
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
    return run_benchmarks(["--config", args.config])


def _unavailable(problem: MissingExtra):
    def command(args) -> int:
        raise problem
    return command


def _eval_commands(sub) -> None:
    """``eval`` and ``report`` are always listed; when a module they need is missing they say what to install."""
    try:
        from .eval import cli as eval_cli
    except ModuleNotFoundError as exc:
        eval_cli, problem = None, MissingExtra(f"needs the {exc.name!r} module, which is missing: reinstall with "
                                               "its dependencies (pip install 'memory-workbench')")
    for name, text, add, func in (("eval", "evaluate a method on a dataset (resumable)", "add_eval_arguments",
                                   "eval_command"),
                                  ("report", "aggregate result files into tables", "add_report_arguments",
                                   "report_command")):
        if eval_cli is not None:
            p = sub.add_parser(name, help=text)
            getattr(eval_cli, add)(p)
            p.set_defaults(func=getattr(eval_cli, func))
        else:
            p = sub.add_parser(name, help=f"{text} [unavailable: {problem}]")
            p.set_defaults(func=_unavailable(problem), unavailable=True)  # its options are not known: accepted


#: commands that live in their own module, each with ``add_parser(sub)`` (it adds its sub-parser and sets ``func``)
COMMAND_MODULES = (("reproduce", "workbench.eval.reproduce"), ("open", "workbench.open_recorded"))


def _module_commands(sub) -> None:
    """Each of ``COMMAND_MODULES``; one whose import fails (a module it needs is missing) is still listed, and
    says what to install when run, as ``eval`` and ``report`` do."""
    import importlib
    for command, name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            problem = MissingExtra(f"needs the {exc.name!r} module, which is missing: reinstall with "
                                   "its dependencies (pip install 'memory-workbench')")
            p = sub.add_parser(command, help=f"[unavailable: {problem}]")
            p.set_defaults(func=_unavailable(problem), unavailable=True)
            continue
        module.add_parser(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workbench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show the full traceback on errors")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("models", help="list, install or verify the offline models")
    p.add_argument("action", choices=["list", "install", "verify"], help="what to do")
    p.add_argument("name", nargs="?", help="one model (default: the default and the fallback model)")
    p.add_argument("--quiet", action="store_true", help="print nothing when installing succeeds")
    p.set_defaults(func=cmd_models)

    def common(p):
        p.add_argument("--method", default="naive_rag", help="method name (see workbench.methods.REGISTRY)")
        p.add_argument("--param", action="append", metavar="K=V", help="method parameter (JSON values), repeatable")
        p.add_argument("--llm", default=None, help="openai:<model>[@url] | local[:name] | gguf:<path> | replay:<file>")
        p.add_argument("--cassette", default=None, help="record/replay cassette (JSONL)")
        from .eval.components import add_component_arguments

        add_component_arguments(p)
        p.add_argument("--data", default="sample", help="sample | tiny | locomo:<path> | longmemeval:<path>")
        p.add_argument("--calibration", default="auto", help="embedder calibration, as in eval: auto (the shipped "
                                                            "one for the embedder, if any) | off | <file.json>")
        # as in eval, so that one command line builds one method everywhere (workbench.eval.settings)
        p.add_argument("--fair", action="store_true", help="the one shared answer prompt (answer_prompt=shared), "
                                                           "as eval --fair")
        p.add_argument("--bounded-outputs", action="store_true",
                       help="per-role output bounds on the LLM (workbench.llm.bounds), as eval --bounded-outputs")
        p.add_argument("--profile", default=None, metavar="NAME",
                       help="a recorded demo configuration (0.5b | 1.5b: sample_data/demo_profiles.json), as eval "
                            "--profile: its parameters, variants and output bounds, and with --calibration auto the "
                            "calibration its cassette was recorded with")

    p = sub.add_parser("build", help="build a method's memory for one conversation and save it")
    common(p)
    p.add_argument("--conversation", "--conversations", dest="conversation", default="0",
                   help="the conversation, by index or id (default: the first)")
    p.add_argument("--out", default=str(DEFAULT_RUN), help="run directory to save the memory in")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("ask", help="answer a question from memory, printing context and usage")
    common(p)
    p.add_argument("question", help="the question to answer")
    p.add_argument("--run", default=None, help="use a memory saved in this run directory (no ingest)")
    p.add_argument("--conversation", "--conversations", "--conversation-id", dest="conversation", default=None,
                   help="the conversation, by index or id, in --data or in --run (default: the first)")
    p.add_argument("--trust", action="store_true", help="load a memory saved on another machine (unpickles it)")
    p.add_argument("--show", type=int, default=5, help="how many context hits to print")
    p.set_defaults(func=cmd_ask)

    _eval_commands(sub)
    from .eval import audit

    p = sub.add_parser("judge-audit", help="measure a judge's false-accept/false-reject rates on probes")
    audit.add_arguments(p)
    p.set_defaults(func=audit.audit_command)

    p = sub.add_parser("calibrate", help="map the papers' similarity thresholds onto an embedder (writes JSON)")
    p.add_argument("--embedder", default="minilm", help="minilm | hash | openai:<model>")
    p.add_argument("--data", action="append", required=True, help="sample | locomo:<path> | ... (repeatable, pooled)")
    p.add_argument("--conversations", type=int, default=None, help="at most N conversations per --data")
    p.add_argument("--presets", default="locomo,longmemeval", help="RecMem dataset presets to calibrate")
    p.add_argument("--out", default="calibration.json", help="where to write the calibration JSON")
    p.add_argument("--check", default=None, help="instead: report before/after of a calibration file (or 'shipped') "
                                                 "on --data")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("app", help="serve the Panel app over a run directory")
    p.add_argument("--run", default=str(DEFAULT_RUN), help="run directory to show")
    p.add_argument("--port", type=int, default=5006, help="port to serve on (0: any free port)")
    p.add_argument("--address", default="127.0.0.1", help="address to serve on")
    p.add_argument("--allow-remote", nargs="*", default=None, metavar="NAME",
                   help="allow a non-loopback --address (prints a warning; every request then needs the access "
                        "token printed in the link); the NAMEs are further host names it may be reached by (any "
                        "other Host header is refused)")
    p.add_argument("--num-procs", type=int, default=1,
                   help="server processes on the one port, for a class opening the app at once (0: one per core)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    p.set_defaults(func=cmd_app)

    p = sub.add_parser("mechanisms", help="count how often each method's own mechanism fired in a saved run "
                                          "(writes RUN_DIR/mechanisms.json)")
    p.add_argument("run", help="run directory (results.jsonl, memories/, manifest.json)")
    p.add_argument("--format", default="table", choices=["table", "json"], help="what to print")
    p.add_argument("--no-write", action="store_true", help="print only; do not (re)write mechanisms.json")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="write the census here instead of RUN_DIR/mechanisms.json (a run on a read-only disk); a "
                        "run that cannot be written to is still counted and printed, with a note")
    p.set_defaults(func=cmd_mechanisms)

    p = sub.add_parser("cassette", help="check, repair or price a record/replay cassette (JSONL)")
    p.add_argument("action", choices=["check", "repair", "costs"],
                   help="check: report bad lines; repair: rewrite without them; costs: calls, tokens and recorded "
                        "call time per role family (method)")
    p.add_argument("file", help="the cassette (JSONL) to check or repair")
    p.set_defaults(func=cmd_cassette)

    p = sub.add_parser("demo", help="build memories for a sample conversation offline, then open the app")
    p.add_argument("--out", default=str(DEFAULT_RUN), help="run directory to write")
    p.add_argument("--methods", nargs="*", default=None, help="method names (default: every registered method)")
    p.add_argument("--questions", type=int, default=None, help="how many of the demo questions (default all)")
    p.add_argument("--record", action="store_true", help="append new calls to the committed cassette")
    p.add_argument("--calibration", default="auto", help="auto (what the cassette was recorded with, also when "
                                                         "recording) | off | shipped:<embedder> | <file.json>")
    p.add_argument("--llm", default=None, help="LLM spec for calls the cassette lacks (default: the offline model)")
    p.add_argument("--port", type=int, default=5006, help="port of the app")
    p.add_argument("--no-serve", action="store_true", help="stop after writing the run (do not start the app)")
    p.add_argument("--estimate", action="store_true", help="print each method's predicted calls, tokens and time")
    p.add_argument("--profile", default=None, choices=("0.5b", "1.5b"),
                   help="recorded demo configuration: 0.5b | 1.5b (default: the active one, workbench.demo.DEMO)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("bench", help="run the benchmarks and write benchmarks/results")
    p.add_argument("--config", default="reduced", choices=["reduced", "full"], help="benchmark sizes")
    p.set_defaults(func=cmd_bench)
    _module_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv  # accepted anywhere on the line, not only before the command
    args, unknown = parser.parse_known_args([a for a in argv if a != "--debug"])
    if unknown and not getattr(args, "unavailable", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.debug = debug
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        print("interrupted; finished work is kept", file=sys.stderr)
        return 130
    except EnvironmentFailure as exc:  # the machine failed the run (a cassette on a full disk), not the method
        if args.debug:
            raise
        print(f"workbench: error: {printable(one_line(exc))}", file=sys.stderr)
        return 2
    except MissingExtra as exc:
        print(f"workbench {args.command}: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # a usage error raised with its message (``extras.usage_errors``)
        if not isinstance(exc.code, str):
            raise
        if args.debug:
            raise
        from .llm.redact import redact_text

        print(printable(redact_text(exc.code)), file=sys.stderr)
        return 2
    except Exception as exc:  # reported in one line; the traceback only with --debug
        if args.debug:
            raise
        if isinstance(exc, OSError) and exc.errno in DISK_ERRORS:
            print(f"workbench: error: {printable(disk_error(exc))}", file=sys.stderr)
        elif isinstance(exc, USER_ERRORS):
            print(f"workbench: error: {printable(one_line(exc))}", file=sys.stderr)
        else:
            print(f"workbench: internal error: {type(exc).__name__}: {printable(one_line(exc))} (--debug shows the "
                  "traceback)",
                  file=sys.stderr)
        return 2


#: errors caused by what the user gave (data, names, specs, files), reported in one line
USER_ERRORS = (ValueError, KeyError, LookupError, FileNotFoundError, IsADirectoryError, NotADirectoryError,
               PermissionError, ImportError, RuntimeError)


#: the file system refused a write (or a read) for a reason of the machine's, not of the command: each gets a line
#: saying which file and what to do (``disk_error``), never "internal error"
DISK_ERRORS = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
               errno.EROFS: "it is on a read-only file system", errno.EACCES: "permission denied",
               errno.EPERM: "the operation is not permitted"}


def disk_error(exc: OSError) -> str:
    """One line for a write the file system refused: the file, why, and what to do. Whatever was written before
    is kept: the workbench writes whole files by rename and appends whole lines, so an interrupted ``eval`` is
    resumed by running the same command again."""
    why = DISK_ERRORS[exc.errno]
    path = exc.filename
    if exc.errno in (errno.EACCES, errno.EPERM):  # a read refused as well as a write: say which file, not which way
        where = f"{path}" if path is not None else "a file could not be opened"
    else:
        where = f"cannot write {path}" if path is not None else "a file could not be written"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        todo = ("free some space there (or write elsewhere: --out/--output), then run the same command again; what "
                "was written before is kept (an eval resumes where it stopped)")
    elif exc.errno == errno.EROFS:
        todo = "write somewhere writable instead (--out/--output), or remount it read-write"
    else:
        todo = "check who owns it and its permissions, or write somewhere else (--out/--output)"
    return f"{where}: {why} ({exc.strerror or exc}); {todo}"


def printable(text: str) -> str:
    """Text for the terminal: controls shown as escapes (``terminal_text``), and the bytes of a name that was not
    UTF-8 as ``\\xNN`` (``jsonl.escape_undecodable``), so printing an error about such a folder cannot fail."""
    from .jsonl import escape_undecodable

    return terminal_text(escape_undecodable(str(text)))


def one_line(exc: BaseException) -> str:
    """``Type: message`` on one line (long messages cut), with any URL credentials redacted."""
    from .llm.redact import redact_text

    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, KeyError) and len(exc.args) == 1:
        text = f"not found: {exc.args[0]!r}"
    text = redact_text(text)
    return text if len(text) <= 500 else text[:497] + "..."


if __name__ == "__main__":
    sys.exit(main())
