"""``workbench eval`` and ``workbench report``: argument definitions and command functions.

    workbench eval --method naive_rag --param top_k=5 --data locomo:<path> --conversations 0-2 \\
        --questions 20 --llm openai:gpt-4.1-mini --judge openai:gpt-4o-mini --embedder minilm \\
        --out runs/eval --cassette runs/eval/cassette.jsonl --workers 4 [--fair]
    workbench report runs/eval/results.jsonl [--format md|csv|json] [--cost]
    workbench judge-audit --data sample --judge local --n 200      (see ``workbench.eval.audit``)

``eval`` writes ``<out>/results.jsonl`` (append-only, resumable: rerun the same command after an
interruption), ``<out>/results.manifests.jsonl`` (one manifest per invocation), ``<out>/results.costs.jsonl``
(per finished invocation: the estimate beside the calls, tokens and seconds spent), ``<out>/manifest.json``
(the run directory manifest the app reads; evaluations are appended to its ``evaluations`` list),
``<out>/mechanisms.json`` (the mechanism census of the run directory, ``workbench.eval.mechanisms``;
its memory-based counts need ``--save-memories``), and with ``--save-memories`` the built memories
under ``<out>/memories``. ``--cassette`` records
every LLM call (method and judge); ``--llm replay:`` (or ``replay``) with ``--cassette`` replays it
without any model. ``--fair`` gives the method ``answer_prompt="shared"`` (one answer prompt for all
methods, ``workbench.methods.answer_prompt``); the report adds a failure-attribution table.

``report --format md`` writes the whole report (``report.report_markdown``): the judge's audit and a
reliability banner, the headline table (F1 when the judge is unreliable or unaudited), paired
differences against Full-Context and per-category cells, and for one run directory its mechanism
census ("Mechanisms fired"). The audits come from the run directory's
manifest, then from the audit cache (``--audits``).
"""
from __future__ import annotations

import os
import re
import stat
import sys
import time
from pathlib import Path

from ..extras import usage_errors
from ..jsonl import DamagedFile, append_line, confined, escape_undecodable, read_json
from ..rundir import check_links_stay_inside
from ..untrusted import terminal_text

DEFAULT_OUT = Path("runs") / "eval"


def default_method() -> str | None:
    """The registered method that declares ``default_choice`` (the plain retrieval baseline), if any."""
    from ..methods import REGISTRY

    return next((name for name, cls in REGISTRY.items() if getattr(cls, "default_choice", False)), None)


def add_eval_arguments(parser) -> None:
    parser.add_argument("--method", default=default_method(), help="method name, or several separated by commas "
                        "(one after another into one run directory; see workbench.methods.REGISTRY; default: "
                        "the registered method that declares default_choice)")
    parser.add_argument("--param", action="append", metavar="K=V", help="method parameter (JSON values), repeatable")
    parser.add_argument("--data", default="sample", help="sample | tiny | gallery | demo (the demo's slice and "
                        "questions, with its profile; the methods it recorded replay its cassette unless --llm names "
                        "them) | locomo:<path> | longmemeval:<path>")
    parser.add_argument("--conversations", "--conversation", dest="conversations", default=None,
                        help="e.g. 0-2, 0,3,5 or conv-26 (default: all)")
    parser.add_argument("--questions", type=int, default=None, help="at most N questions per conversation")
    parser.add_argument("--categories", default=None, help="e.g. 1,2,3,4 (LoCoMo) or temporal-reasoning")
    parser.add_argument("--llm", default=None, help="openai:<model>[@url] | local[:name] | gguf:<path> | replay:[file] "
                        "| scripted[:replies.json] (no model: docs/method-contract.md); or one per method: "
                        "'my_method=scripted:replies.json,*=replay:cassette.jsonl'")
    parser.add_argument("--judge", default=None, help="judge LLM spec, 'same' for the method's LLM, or 'checker' (the "
                        "deterministic checker, no model); default: no judge (every row still gets the checker's "
                        "verdict)")
    add_component_arguments(parser)
    parser.add_argument("--calibration", default="auto", help="embedder calibration: auto (the shipped one for "
                                                              "the embedder, if any) | off | <file.json>")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="run directory")
    parser.add_argument("--cassette", default=None, help="record/replay cassette (JSONL) for every LLM call")
    parser.add_argument("--workers", type=int, default=1, help="questions answered in parallel (API backends)")
    parser.add_argument("--request-timeout", type=float, default=None, metavar="SECONDS",
                        help="seconds one request to an openai: server may wait (default 60)")
    parser.add_argument("--attempts", type=int, default=None, metavar="N",
                        help="tries per call to an openai: server, the first included (default 3); a server that "
                             "never answers costs about N x the request timeout")
    parser.add_argument("--save-memories", action="store_true", help="save each built memory for the app")
    parser.add_argument("--retry-errors", action="store_true", help="rerun questions whose stored row is a failure, "
                        "and judge again rows whose judge call failed (their answer is kept)")
    parser.add_argument("--fair", action="store_true", help="fair arena: every method answers with the one shared "
                                                            "answer prompt (answer_prompt=shared)")
    parser.add_argument("--no-progress", action="store_true", help="no question and ingest progress bars")
    parser.add_argument("--estimate", action="store_true",
                        help="print predicted calls, tokens, wall time (and cost) per phase, then stop: no LLM call")
    parser.add_argument("--prices", default=None, metavar="IN,OUT|FILE",
                        help="USD per million prompt,completion tokens, or a JSON file {model: [IN, OUT]}")
    parser.add_argument("--bounded-outputs", action="store_true",
                        help="per-role maxItems/maxLength/max_tokens (workbench.llm.bounds); new cassette keys")
    add_profile_argument(parser)
    parser.add_argument("--executor", default="thread", choices=["thread", "ray"],
                        help="thread: here (default); ray: one Ray task per method x conversation")
    parser.add_argument("--address", default=None, help="Ray cluster address (default: start a local Ray)")


def add_profile_argument(parser) -> None:
    """``--profile``: shared by ``eval``, ``build`` and ``ask`` (``workbench.eval.settings``)."""
    from .profiles import DEMO_PROFILES

    parser.add_argument("--profile", default=None, choices=sorted(DEMO_PROFILES),
                        help="a recorded demo configuration (sample_data/demo_profiles.json): its method "
                             "parameters, labelled variants (name[label]) and output bounds, and with --calibration "
                             "auto the calibration its cassette was recorded with, as the demo and notebooks "
                             "build them")


def add_report_arguments(parser) -> None:
    parser.add_argument("results", nargs="+", help="results.jsonl files (or run directories)")
    parser.add_argument("--format", default="md", choices=["md", "csv", "json"], help="output format")
    parser.add_argument("--metric", default=None, help="accuracy column: judge | f1 | locomo_f1 | ... (default: "
                                                       "judge when present, else f1)")
    parser.add_argument("--cost", action="store_true", help="print the tidy cost-accuracy frame instead")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples for the confidence intervals")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--output", default=None, help="write to this file instead of stdout")
    parser.add_argument("--audits", default=None, help="judge-audit cache (default: benchmarks/results/"
                                                       "judge_audits.json)")
    parser.add_argument("--title", default="Evaluation report", help="title of the markdown report")


def _llm(spec: str | None, cassette: str | None):
    from ..llm import llm_from_options

    return llm_from_options(spec, cassette)


def request_options(args) -> dict:
    """``--request-timeout`` and ``--attempts`` as ``llm_from_options`` keywords (absent: the defaults)."""
    return {"request_timeout": getattr(args, "request_timeout", None), "attempts": getattr(args, "attempts", None)}


def bound_requests(llm, args):
    """``llm`` with ``--request-timeout``/``--attempts`` applied to the OpenAI-compatible client inside it
    (through cassette and bounds wrappers); a note on stderr when they were given but nothing makes requests."""
    from ..llm.openai_chat import OpenAIChat

    options = request_options(args)
    if options == {"request_timeout": None, "attempts": None}:
        return llm
    inner, seen = llm, 0
    while inner is not None and seen < 8:
        if isinstance(inner, OpenAIChat):
            inner.bound_requests(timeout_s=options["request_timeout"], attempts=options["attempts"])
            return llm
        inner, seen = getattr(inner, "inner", None), seen + 1
    print(f"note: --request-timeout/--attempts apply to openai: servers; {llm!r} makes no such request",
          file=sys.stderr)
    return llm


# --embedder/--reranker and their resolution live in components.py (build and ask take them too)
from .components import Components, add_component_arguments, component_choices  # noqa: E402,F401


def _categories(text: str | None):
    return None if not text else [int(c) if c.strip().isdigit() else c.strip() for c in text.split(",") if c.strip()]


def eval_command(args) -> int:
    from .harness import evaluate

    dataset = run_dataset(args)
    if getattr(args, "estimate", False):
        return estimate_command(args, dataset)
    executor = getattr(args, "executor", "thread")
    names = [m.strip() for m in args.method.split(",") if m.strip()]
    if not names:
        raise SystemExit("--method names no method")
    with usage_errors():
        plan = MethodLLMs(args, names)
    if executor == "ray":
        return _eval_ray(args, dataset, names, plan)
    if any("," in (spec or "") for spec in plan.specs.values()) or "," in (args.judge or ""):
        raise SystemExit("several endpoints in --llm/--judge need --executor ray")
    with usage_errors():
        params = run_params(args)
        parts = Components(plan.component_choices())
        # every method is prepared before the first runs, so a bad name fails before any call is made;
        # this also puts the output bounds (--bounded-outputs, a profile's) on the LLM the judge may share
        setups = [thread_setup(args, name, plan.llm(name), parts.embedder(name), params,
                               reranker=parts.reranker(name), profile=plan.profile(name)) for name in names]
        judges = plan.judges()
    plan.print_notes()
    out = Path(args.out)
    check_links_stay_inside(out)  # every file this run appends to or reads back stays in the run directory
    sweep_stale_temps(out)
    report_resume(out / "results.jsonl")
    questions = run_questions(args)
    for name, setup in zip(names, setups):  # one method after another, all into one run directory and one file
        method, llm, judge = setup.method, plan.llm(name), judges[name]
        res = evaluate(method, dataset, judge=judge, workers=args.workers, store=out / "results.jsonl",
                       questions=questions, conversations=args.conversations,
                       categories=_categories(args.categories), progress=not args.no_progress,
                       save_memories_dir=out if args.save_memories else None, retry_errors=args.retry_errors,
                       extra_manifest={**setup.manifest(), **plan.manifest(name)},
                       estimate=lambda todo, method=method, llm=llm, judge=judge: _print_estimate(
                           args, method, todo, llm, judge, out))
        _finish(out, res)
    for llm, users in plan.by_llm(names, setups):  # each backend's counts span the methods that used it
        _save_prefix_stats(out, ",".join(users), llm)
    plan.print_summary()
    return 0


def run_dataset(args):
    """The dataset of ``--data``: ``demo`` is the demo's slice (``settings.demo_data``), anything else
    ``workbench.data.load_dataset``."""
    from ..data import load_dataset
    from .settings import DEMO_DATA, demo_data

    if args.data == DEMO_DATA:
        with usage_errors():
            return demo_data(getattr(args, "profile", None)).dataset
    return load_dataset(args.data)


def run_questions(args):
    """``--questions N`` (at most N per conversation), or with ``--data demo`` the profile's recorded question
    ids (the first N of them)."""
    from .settings import DEMO_DATA, demo_data

    if args.data == DEMO_DATA:
        return demo_data(getattr(args, "profile", None), questions=args.questions).questions
    return args.questions


def build_data(args) -> str | None:
    """The data spec methods are configured for: ``--data``, or for ``demo`` what the demo gives
    ``build_method`` (``locomo`` with a calibration, as ``workbench.demo.demo_methods``)."""
    from .settings import DEMO_DATA, demo_data

    if args.data == DEMO_DATA:
        return demo_data(getattr(args, "profile", None), calibration=args.calibration).build_data
    return args.data


#: how each method's LLM was chosen, in the words of the run's notes and manifest (``llm_choice.by``)
CHOSEN_BY = {"named": "named in --llm", "all": "--llm", "demo": "the demo's recording (--data demo)",
             "default": "the default LLM ($WORKBENCH_LLM, else the offline model)"}


def spec_label(spec: str | None, cassette: str | None = None) -> str:
    """An LLM spec as manifests and notes write it: a file by its name (no machine path), a server's URL left
    out (``openai:<model>@<server>``)."""
    if not spec:
        return "default"
    kind, _, rest = spec.partition(":")
    if kind in ("replay", "scripted", "gguf"):
        target = rest or (cassette if kind == "replay" else "")
        return f"{kind}:{Path(target).name}" if target else kind
    if kind == "openai" and "@" in rest:
        return f"openai:{rest.partition('@')[0]}@<server>"
    return spec


class MethodLLMs:
    """Which LLM each method of one command line runs with, built once per spec.

    ``--llm SPEC`` gives every method SPEC; ``--llm 'a=SPEC,b[label]=SPEC,*=SPEC'`` gives each named method its
    own (a label falls back to its method's entry) and ``*`` the rest; an unnamed method without ``*`` gets the
    default LLM. With ``--data demo``, a method the demo recorded that no entry names (a bare ``--llm SPEC``
    names none; ``*=SPEC`` names every method) replays the demo profile's cassette, so built-in methods replay
    their recording while a plugin runs on ``--llm`` (``scripted:FILE``, say). When the methods end on
    different LLMs a note says so before the run and after it, and each evaluation's manifest records its
    own (``llm_choice``)."""

    def __init__(self, args, names: list[str]):
        from ..llm.default import is_per_method, per_method_specs
        from ..methods.base import method_base
        from .settings import DEMO_DATA, demo_data, demo_methods_recorded

        self.args, self.names = args, names
        named = per_method_specs(args.llm)
        explicit_all = is_per_method(args.llm) and "*" in named
        unknown = [k for k in named if k != "*" and k not in names and k not in {method_base(n) for n in names}]
        if is_per_method(args.llm) and unknown:
            raise ValueError(f"--llm names {', '.join(unknown)}, which --method does not run ({', '.join(names)})")
        demo = demo_data(getattr(args, "profile", None)).profile if args.data == DEMO_DATA else None
        self.demo = demo
        self.specs: dict[str, str | None] = {}
        self.by: dict[str, str] = {}
        for name in names:
            own = named.get(name, named.get(method_base(name))) if is_per_method(args.llm) else None
            if own is not None:
                self.specs[name], self.by[name] = own, "named"
            elif demo is not None and not explicit_all and (name in demo_methods_recorded(demo)
                                                            or method_base(name) in demo.order):
                self.specs[name], self.by[name] = f"replay:{demo.cassette}", "demo"
            elif named.get("*") is not None:
                self.specs[name], self.by[name] = named["*"], "all"
            else:
                self.specs[name], self.by[name] = None, "default"
        self._built: dict = {}

    def llm(self, name: str):
        """The built LLM of ``name`` (one instance per spec: methods sharing a spec share its client)."""
        spec = self.specs[name]
        if spec not in self._built:
            self._built[spec] = bound_requests(_llm(spec, self.args.cassette), self.args)
        return self._built[spec]

    def differ(self) -> bool:
        return len(set(self.specs.values())) > 1

    def component_choices(self) -> dict:
        """``component_choices`` for each group of methods that share an LLM spec (the paper components an
        ``auto`` embedder or reranker picks depend on the LLM's server)."""
        from argparse import Namespace

        if not self.differ():
            return component_choices(self.args, self.names)
        out: dict = {}
        for spec in dict.fromkeys(self.specs.values()):
            group = [n for n in self.names if self.specs[n] == spec]
            out.update(component_choices(Namespace(**{**vars(self.args), "llm": spec}), group))
        return out

    def profile(self, name: str) -> str | None:
        """The recorded profile ``name`` is built with: ``--profile``, or with ``--data demo`` the demo's (None:
        ``settings.build_method`` takes the one a replayed cassette was recorded with, if any)."""
        return getattr(self.args, "profile", None) or (self.demo.name if self.demo is not None else None)

    def judges(self) -> dict:
        """The judge of each method: none, the deterministic checker, the method's own LLM (``same``), or one
        LLM judge shared by all."""
        from .judge import CheckerJudge, LLMJudge

        judge = self.args.judge
        if not judge:
            return {n: None for n in self.names}
        if judge == "checker":  # the deterministic checker: no model (workbench.eval.judge.CheckerJudge)
            shared = CheckerJudge()
            return {n: shared for n in self.names}
        if judge == "same":
            return {n: LLMJudge(self.llm(n)) for n in self.names}
        shared = LLMJudge(bound_requests(_llm(judge, self.args.cassette), self.args))
        return {n: shared for n in self.names}

    def manifest(self, name: str) -> dict:
        """What an evaluation's manifest records of how its LLM was chosen (beside ``llm``, the model): when the
        run's methods use different LLMs, or the LLM is a reply file (whose sha256 identifies the replies)."""
        spec = self.specs[name]
        if not self.differ() and not (spec or "").startswith("scripted"):
            return {}
        entry = {"spec": spec_label(spec, self.args.cassette), "by": CHOSEN_BY[self.by[name]]}
        source = getattr(self._built.get(spec), "source", None)
        if spec and spec.startswith("scripted:") and source:
            from .manifest import file_sha256

            entry["sha256"] = file_sha256(source)
        return {"llm_choice": entry}

    def lines(self) -> list[str]:
        """One line per LLM: the methods that run on it and how it was chosen."""
        out = []
        for spec in dict.fromkeys(self.specs.values()):
            users = [n for n in self.names if self.specs[n] == spec]
            by = sorted({CHOSEN_BY[self.by[n]] for n in users})
            out.append(f"{', '.join(users)}: {spec_label(spec, self.args.cassette)} ({'; '.join(by)})")
        return out

    def print_notes(self) -> None:
        if self.differ():
            print(terminal_text("note: the methods run on different LLMs, so their scores compare readers as well "
                                "as memories:\n  " + "\n  ".join(self.lines())), file=sys.stderr)

    def print_summary(self) -> None:
        """After the run: each LLM's methods, and for a replay how many calls it missed."""
        if not self.differ() and not any(getattr(llm, "replay_misses", 0) for llm in self._built.values()):
            return
        for spec, llm in self._built.items():
            users = [n for n in self.names if self.specs[n] == spec]
            misses = getattr(llm, "replay_misses", None)
            tail = f": {llm.hits} cassette hits, {misses} misses" if misses is not None else ""
            print(terminal_text(f"{', '.join(users)} on {spec_label(spec, self.args.cassette)}{tail}"),
                  file=sys.stderr)

    def by_llm(self, names: list[str], setups) -> list:
        """``[(llm, [method names])]``: the run's backends and the methods (as run) that used each."""
        out: dict = {}
        for name, setup in zip(names, setups):
            out.setdefault(self.specs[name], (self.llm(name), []))[1].append(setup.method.name)
        return list(out.values())


def run_params(args) -> dict:
    """The explicit method parameters of an ``eval`` command line: ``--param`` pairs, plus
    ``answer_prompt="shared"`` with ``--fair``. One definition for the thread and the Ray executor,
    so that ``--fair`` is never dropped by one of them."""
    from .settings import explicit_params

    return explicit_params(args.param, fair=getattr(args, "fair", False))


def thread_setup(args, name: str, llm, embedder, params: dict, *, warn: bool = True, reranker=None,
                 profile: str | None = None):
    """Method ``name`` configured for the thread executor by ``settings.build_method`` from the command
    line's ``--data``, ``--calibration``, ``--bounded-outputs`` and ``--profile`` (or ``profile``, which
    ``MethodLLMs.profile`` chose; ``ray_recipes`` rebuilds the same in each worker; ``build``/``ask`` and the
    demo take the same function)."""
    from .settings import build_method

    return build_method(name, llm=llm, embedder=embedder, params=params, data=build_data(args),
                        calibration=args.calibration, bounded=getattr(args, "bounded_outputs", False),
                        profile=profile or getattr(args, "profile", None), warn=warn, reranker=reranker)


def ray_recipes(args, names: list[str], plan: "MethodLLMs | None" = None) -> list:
    """One ``CliRecipe`` per method for ``--executor ray``: the strings ``thread_setup`` is built
    from, so each worker configures its method the way the thread executor does."""
    from .executors import CliRecipe

    plan = plan or MethodLLMs(args, names)
    params = run_params(args)
    choices = plan.component_choices()
    return [CliRecipe(name, params, plan.specs[name], args.cassette, choices[name].embedder,
                      args.judge, getattr(args, "bounded_outputs", False), **request_options(args),
                      data=build_data(args), calibration=args.calibration, profile=plan.profile(name),
                      reranker=choices[name].reranker) for name in names]


#: a temporary file older than this is left over from a killed write (a live one exists for the
#: length of one write: milliseconds, seconds for a large memory)
STALE_TEMP_S = 30.0
_TEMP_NAME = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$|^state\.pkl\.tmp$")


def sweep_stale_temps(out: Path, *, older_than_s: float = STALE_TEMP_S) -> int:
    """Remove the temporary files a killed atomic write left in run directory ``out``
    (``.<name>.XXXXXXXX.tmp`` from ``write_text_atomic``, ``state.pkl.tmp`` from a memory save): no
    later write ever replaces them, so they would pile up. Only files of those names, older than
    ``older_than_s``, never through a link; says how many it removed (stderr). Returns the count."""
    if not out.is_dir():
        return 0
    now, removed = time.time(), 0
    for folder, dirs, files in os.walk(out, followlinks=False):
        for name in files:
            path = Path(folder) / name
            if not _TEMP_NAME.match(name):
                continue
            try:
                st = path.lstat()
                if stat.S_ISREG(st.st_mode) and now - st.st_mtime > older_than_s:
                    path.unlink()
                    removed += 1
            except OSError:  # gone already, or not ours to remove: left as it is
                continue
    if removed:
        print(terminal_text(f"note: removed {removed} temporary file(s) that killed writes had left in {out}"),
              file=sys.stderr)
    return removed


def report_resume(results: Path, *, shown: int = 10) -> None:
    """Before resuming into an existing results file: say (stderr) how many rows it keeps and which
    damaged or partial lines are skipped (``file:line: reason``; their questions run again), so a
    torn line left by a crash is never dropped silently."""
    from .store import ResultsStore

    if not results.is_file():
        return
    store = ResultsStore(results)
    if not store.bad:
        return
    lines = [f"resuming {results}: {len(store)} rows kept; {len(store.bad)} damaged or partial line(s) skipped "
             "(their questions run again):"]
    lines += [f"  {b}" for b in store.bad[:shown]]
    if len(store.bad) > shown:
        lines.append(f"  ... and {len(store.bad) - shown} more")
    print(terminal_text("\n".join(lines)), file=sys.stderr)


def _save_prefix_stats(out: Path, method: str, llm) -> None:
    """Append this session's prompt tokens sent vs. evaluated per role (llama.cpp backends only) to
    ``RUN_DIR/prefix_stats.jsonl``: one line per live session, so a recording spread over several
    sessions can be summed. Replayed calls never reach the backend and are not counted."""
    import json

    backend = getattr(llm, "inner", llm)
    stats = getattr(backend, "prefix_stats", None)
    if not stats:
        return
    line = {"method": method, "model": getattr(backend, "model", None),
            "state_cache_mb": getattr(backend, "state_cache_mb", None),
            "by_role": {role: dict(s) for role, s in stats.items()}}
    append_line(out / "prefix_stats.jsonl", json.dumps(line))  # locked, and never through a link out of the run


def _finish(out: Path, res) -> None:
    from .manifest import update_run_manifest
    from .mechanisms import write_census
    from .report import export, summary_table

    update_run_manifest(out, res.manifest)
    write_census(out)  # the mechanism census of everything the run directory holds now
    print(f"{res!r} -> {out / 'results.jsonl'}")
    if len(res):
        print(export(summary_table(res.to_frame()).drop(columns=["params", "params_hash"]), "md"))


def _eval_ray(args, dataset, names: list[str], plan: "MethodLLMs | None" = None) -> int:
    """Every (method x conversation) as a Ray task; one driver thread per method streams rows into one store."""
    from concurrent.futures import ThreadPoolExecutor

    from .executors import RayExecutor, ensure_ray
    from .harness import evaluate
    from .store import ResultsStore

    out = Path(args.out)
    check_links_stay_inside(out)  # every file this run appends to or reads back stays in the run directory
    sweep_stale_temps(out)
    report_resume(out / "results.jsonl")
    store = ResultsStore(out / "results.jsonl")
    plan = plan or MethodLLMs(args, names)
    with usage_errors():
        recipes = ray_recipes(args, names, plan)
        # driver copies (name, parameters, setup for the manifest; never called here), built before any task
        # starts so that a bad name or parameter fails first, and the threshold warnings print once
        driver = [recipe.setup(k, warn=True) for k, recipe in enumerate(recipes)]

    plan.print_notes()
    questions = run_questions(args)

    def one(k: int):
        recipe, (setup, judge) = recipes[k], driver[k]
        ex = RayExecutor(recipe, address=args.address, first_index=k)
        return evaluate(setup.method, dataset, judge=judge, workers=args.workers, store=store,
                        questions=questions, conversations=args.conversations,
                        categories=_categories(args.categories), progress=not args.no_progress,
                        save_memories_dir=out if args.save_memories else None, retry_errors=args.retry_errors,
                        extra_manifest={**setup.manifest(), **plan.manifest(recipe.method)}, executor=ex)

    ensure_ray(args.address)  # start or join Ray once, before the driver threads
    with ThreadPoolExecutor(max_workers=len(recipes)) as pool:
        results = list(pool.map(one, range(len(recipes))))
    for res in results:
        _finish(out, res)
    return 0


def _plan(args, dataset):
    from .harness import select

    return select(dataset, conversations=args.conversations, questions=run_questions(args),
                  categories=_categories(args.categories))


def _history(out: Path) -> list[Path]:
    """Earlier manifests of this run directory: the latency model is refitted from their live calls."""
    return [p for p in (out / "manifest.json", out / "results.costs.jsonl") if p.is_file()]


def _print_estimate(args, method, plan, llm, judge, out: Path, problems=()):
    """Price ``plan`` and print it (stdout for ``--estimate``, else stderr before the run starts)."""
    from .estimate import estimate_run, parse_prices, service_problems

    try:
        prices = parse_prices(getattr(args, "prices", None), getattr(llm, "model", None))
    except ValueError as exc:
        raise SystemExit(str(exc)) from exc
    est = estimate_run(method, plan, llm=llm, judge=judge, history=_history(out), prices=prices,
                       problems=[*problems, *(service_problems(llm) if llm is not None else [])],
                       notes=[f"query and judge calls run on {args.workers} workers: their wall time can be up to "
                              f"{args.workers}x shorter on a backend that serves calls in parallel"]
                       if getattr(args, "workers", 1) > 1 else [])
    print(est.format(), file=sys.stderr if not getattr(args, "estimate", False) else sys.stdout, flush=True)
    return est


def estimate_command(args, dataset) -> int:
    """``workbench eval --estimate``: build the services without loading any model, price the plan, stop.

    A backend that cannot be built (no model installed, a bad spec) is reported as a flag, and the
    estimate still prints with the offline model's nominal latency. Exit status 2 when flagged."""
    from .estimate import backend_error
    from .judge import LLMJudge
    from .settings import build_method

    names = [m.strip() for m in args.method.split(",") if m.strip()]
    with usage_errors():
        plan = MethodLLMs(args, names)
    blocked = False
    choices = plan.component_choices()
    for name in names:  # one estimate per method, on its own LLM
        problems = []
        try:
            llm = plan.llm(name)
        except Exception as exc:  # any backend failure (no model, no API key) is reported as a flag
            problems.append(f"no usable LLM for {plan.specs[name] or 'the default'}: {backend_error(exc)}")
            llm = _Unbuilt(plan.specs[name] or "")
        judge = LLMJudge(llm) if args.judge else None
        embedder, calibration = _estimate_embedder(args, choices[name].embedder)
        # the method the run would build (settings.build_method: preset, calibration, profile, --param, --fair)
        method = build_method(name, llm=llm, embedder=embedder, params=run_params(args), data=build_data(args),
                              calibration=calibration, bounded=getattr(args, "bounded_outputs", False),
                              profile=plan.profile(name), warn=False).method
        blocked |= _print_estimate(args, method, _plan(args, dataset), llm, judge, Path(args.out), problems).blocked
    return 2 if blocked else 0


def _estimate_embedder(args, spec: str):
    """The run's embedder for ``--estimate``, and the calibration to apply: building one loads no model
    (MiniLM loads on its first text), so the estimate prices the configuration the run builds, calibrated
    thresholds included. One that cannot be built here (an ``openai:`` embedder without a key) is replaced
    by the hash embedder without calibration, and a note says so."""
    from ..embed import embedder_from_spec

    try:
        return embedder_from_spec(spec), args.calibration
    except Exception as exc:  # noqa: BLE001 -- any failure: the estimate still prints
        print(f"note: the embedder {spec!r} cannot be built here ({type(exc).__name__}: {exc}); "
              "the estimate uses the run's parameters without its calibration", file=sys.stderr)
        return embedder_from_spec("hash"), "off"


class _Unbuilt:
    """Stands in for a backend that could not be built, so its calls are still counted and priced
    (an ``openai:`` spec with the API latency figure, anything else with the offline model's)."""

    def __init__(self, spec: str):
        kind, _, rest = spec.partition(":")
        self.is_api = kind == "openai"
        self.model = rest.partition("@")[0] if self.is_api and rest else None

    def complete(self, *args, **kwargs):
        raise RuntimeError("this backend could not be built; it only stands in for the estimate")


def report_command(args) -> int:
    from ..jsonl import write_text_atomic
    from .attribution import attribution_markdown
    from .mechanisms import census
    from .method_llms import llm_section
    from .report import (cost_accuracy_frame, export, failure_counts, method_stats, report_markdown, results_frame,
                         summary_table)
    from .store import load_rows

    paths = [Path(p) / "results.jsonl" if Path(p).is_dir() else Path(p) for p in args.results]
    problems: list[str] = []
    rows = load_rows(paths, problems)  # each file up to the display limit (jsonl.MAX_READ_BYTES): said if cut
    for problem in problems:
        print(terminal_text(escape_undecodable(f"warning: {problem}")), file=sys.stderr)
    df = results_frame(rows)
    if df.empty:
        print("no result rows found", file=sys.stderr)
        return 1
    audits = report_audits(rows, [p.parent for p in paths], args.audits)
    kw = dict(metric=args.metric, n_boot=args.n_boot, seed=args.seed, audits=audits)
    if args.cost:
        text = export(cost_accuracy_frame(df, **kw), args.format)
    elif args.format == "md":
        # one run directory: its mechanism census, recomputed from what it holds (never a stale file)
        one_run = len(paths) == 1 and paths[0].name == "results.jsonl"
        # the rows read above, not a second copy of them
        mechanisms = census(paths[0].parent, rows=rows, rows_problems=problems) if one_run else None
        text = report_markdown(df, title=args.title, stats=method_stats(rows), mechanisms=mechanisms, **kw)
        text += "\n\n" + attribution_markdown(df)
        llms = llm_section(rows)  # methods that ran on different LLMs are named with theirs
        if llms:
            text += "\n\n" + llms
        failures = failure_counts(rows)
        if not failures.empty and failures["flagged_rows"].sum():
            text += "\n\n## Failures and fallbacks per method\n\n" + export(failures, "md")
    else:
        text = export(summary_table(df, **kw), args.format)
    if args.output:
        write_text_atomic(args.output, text + ("\n" if not text.endswith("\n") else ""))
    else:
        print(terminal_text(text))  # run data (method names, replies, paths) reach the terminal inert
    return 0


def report_audits(rows, run_dirs, cache=None) -> dict:
    """Judge audits for the rows: those recorded in the run directories' manifests, then the cache."""
    from .audit import DEFAULT_CACHE, audits_for_rows, prefer_real_answers

    found: dict = {}
    for d in run_dirs:
        path = Path(d) / "manifest.json"
        if not path.exists():
            continue
        try:
            manifest = read_json(confined(path, d))
        except DamagedFile as exc:  # LeadsOutside (a link out of the run) included
            print(terminal_text(f"warning: {exc}; judge audits taken from the cache"), file=sys.stderr)
            continue
        for ev in manifest.get("evaluations", []) if isinstance(manifest, dict) else []:
            judge = ev.get("judge") if isinstance(ev, dict) else None
            if isinstance(judge, dict) and judge.get("audit") and judge.get("key"):
                found.setdefault(judge["key"], judge["audit"])
    try:
        cached = audits_for_rows(rows, cache or DEFAULT_CACHE)
    except ValueError as exc:
        print(terminal_text(f"warning: {exc}"), file=sys.stderr)
        cached = {}
    return prefer_real_answers({**cached, **found}, rows)
