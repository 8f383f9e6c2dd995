"""The demo: build every method's memory for a sample conversation offline, answer and judge a
fixed set of questions, save the run, and serve the app over it.

The same configuration (the active profile, ``DEMO``) feeds the notebooks and the committed example
report, so all of them replay one recorded cassette (``DEMO.cassette``, since issue 20
``sample_data/cassettes/demo.jsonl``, recorded with Qwen2.5-Coder-1.5B): with the profile's model
installed, calls missing from the cassette run live; without it the cassette alone replays.
"""
from __future__ import annotations

import shutil
import sys
import warnings
from pathlib import Path
from typing import NamedTuple

from .data import Conversation, Dataset, load_sample

# the recorded configurations live below the demo (workbench.eval.profiles), so that eval, build and ask
# apply a profile as the demo does (--profile); re-exported here, where they have always been imported from
from .eval.profiles import ACTIVE as _ACTIVE
from .eval.profiles import (DEMO_PROFILES, PROFILES_FILE, UNCALIBRATED, DemoProfile, _bounds, _tuples,  # noqa: F401
                            load_profiles)
DEMO_05B = DEMO_PROFILES["0.5b"]  # the demo until issue 20, kept for comparison
DEMO_15B = DEMO_PROFILES["1.5b"]  # issue 20: the stronger offline model as reader, agent and judge
DEMO = DEMO_PROFILES[_ACTIVE]  # the active profile: what the demo, notebooks and report replay
DEMO_SESSIONS = DEMO_05B.sessions
DEMO_QUESTIONS = DEMO_05B.questions
CASSETTE = DEMO_05B.cassette


def _slices(path: Path = PROFILES_FILE) -> tuple[dict, Path]:
    """Knowledge-update slices (``demo_profiles.json``): name -> (sample file, sample id, sessions kept
    (1-based, inclusive) or None for all, QA indices asked), and the cassette they were recorded into."""
    from .jsonl import read_json

    try:
        raw = read_json(path)["knowledge_update_slices"]
        slices = {name: (v["file"], v["sample"], tuple(v["sessions"]) if v["sessions"] else None,
                         tuple(v["questions"])) for name, v in raw["slices"].items()}
        return slices, path.parent / raw["cassette"]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: malformed knowledge_update_slices ({type(exc).__name__}: {exc})") from exc


#: short slices with a planted knowledge update, for the methods that edit memory, and their cassette
KNOWLEDGE_UPDATE_SLICES, REFRESH_CASSETTE = _slices()


def knowledge_update_slice(name: str) -> Conversation:
    """One slice of ``KNOWLEDGE_UPDATE_SLICES``: the conversation cut to its sessions, with only its
    knowledge-update questions."""
    from dataclasses import replace

    file, sample_id, sessions, qa_idx = KNOWLEDGE_UPDATE_SLICES[name]
    conv = next(c for c in load_sample(file).conversations if c.id == sample_id)
    qas = tuple(q for q in conv.qa if int(q.id.rsplit("q", 1)[1]) in qa_idx)
    if len(qas) != len(qa_idx):
        raise ValueError(f"slice {name}: expected QA items {qa_idx} in {sample_id}, found {[q.id for q in qas]}")
    if sessions:
        conv = replace(conv, sessions=conv.sessions[sessions[0] - 1:sessions[1]])
    return replace(conv, qa=qas)


def demo_conversation(profile: DemoProfile = DEMO) -> Conversation:
    return load_sample()[0].head(profile.sessions)


class NotebookSetup(NamedTuple):
    """What every method notebook starts from (``llm, emb, conv, qa, demo_qs = notebook_setup()``)."""

    llm: object  # the replay LLM over the committed cassette
    emb: object  # the demo embedder (all-MiniLM-L6-v2, int8 ONNX)
    conv: Conversation  # the demo slice
    qa: dict  # question id -> QA of the slice
    demo_qs: list  # the recorded demo questions, in DEMO_QUESTIONS order


def notebook_setup(*, mode: str = "replay", show: bool = True, profile: DemoProfile = DEMO) -> NotebookSetup:
    """The shared first cell of notebooks 01-06, written once: the demo LLM (by default replay-only,
    so every call is a recorded reply), the embedder, the demo slice and its recorded questions.
    Notebook 00 spells the same steps out. ``show`` prints one line describing the slice."""
    conv = demo_conversation(profile)
    qa = {q.id: q for q in conv.qa}
    demo_qs = [qa[i] for i in profile.questions if i in qa]
    if show:
        print(conv.id, "|", len(conv.sessions), "sessions,", len(conv.turns), "turns |", len(demo_qs),
              "demo questions")
    return NotebookSetup(demo_llm(mode=mode, profile=profile), demo_embedder(), conv, qa, demo_qs)


def demo_dataset(profile: DemoProfile = DEMO) -> Dataset:
    return Dataset("sample", (demo_conversation(profile),))


def demo_llm(*, mode: str = "auto", spec: str | None = None, cassette: str | Path | None = None,
             profile: DemoProfile = DEMO):
    """The demo's LLM: the profile's model (or ``spec``) behind its record/replay cassette (or
    ``cassette``), with the profile's output bounds, which are part of the cassette key and so apply
    when replaying as when recording.

    ``mode="replay"`` needs no model at all (notebooks under nbval use it).
    """
    from .llm import CachedLLM, default_llm
    from .llm.errors import LLMError

    cassette = profile.cassette if cassette is None else cassette
    if mode == "replay":
        return with_profile_bounds(CachedLLM.replay(cassette), profile)
    try:
        inner = default_llm(spec or profile.llm)
    except (LLMError, FileNotFoundError) as exc:
        if Path(cassette).exists():
            print(f"note: no live model ({exc}); replaying {cassette} only", file=sys.stderr)
            return with_profile_bounds(CachedLLM.replay(cassette), profile)
        raise
    return with_profile_bounds(CachedLLM(inner, cassette, mode="auto"), profile)


def with_profile_bounds(llm, profile: DemoProfile = DEMO):
    """``llm`` with the profile's output bounds on (none for a profile without them)."""
    if profile.bounds:
        llm.output_bounds = profile.bounds
    return llm


def demo_embedder():
    from .embed import CachedEmbedder, MiniLMEmbedder

    return CachedEmbedder(MiniLMEmbedder())


def demo_calibration(*, record: bool = False, choice: str | None = "auto", profile: DemoProfile = DEMO):
    """The calibration the demo applies: ``auto`` = the one the cassette was recorded with
    (``CASSETTE_CALIBRATION``), when recording too, so that a re-recording only adds the calls the
    code changed (a recording that should move to the shipped MiniLM calibration says so explicitly:
    ``workbench demo --record --calibration shipped:all-MiniLM-L6-v2-int8``, then set
    ``CASSETTE_CALIBRATION``); ``off``; or a file or ``shipped:<embedder>`` spec.
    ``record`` is kept for callers; it no longer changes the choice."""
    from .methods.calibration import load_calibration

    if choice in (None, "off", "none"):
        return None
    if choice != "auto":
        return load_calibration(choice)
    return load_calibration(profile.calibration) if profile.calibration else None


def demo_methods(llm, embedder, names=None, *, calibration: dict | str | None = "recorded",
                 profile: DemoProfile = DEMO) -> dict:
    """Every registered method with the profile's demo parameters. ``calibration="recorded"`` (the
    default) is the calibration the profile's cassette was recorded with, so notebooks and benchmarks
    build the methods as recorded and a replay meets every call. Without one (``None``), each method gets
    the profile file's ``without_calibration`` parameters (hand-set thresholds); with one, each method gets
    its LoCoMo dataset preset and the calibrated thresholds (``workbench.methods.calibration``)."""
    from .eval.settings import build_method
    from .methods import REGISTRY

    from .methods.base import method_base

    if calibration == "recorded":
        calibration = demo_calibration(profile=profile)
    variants = profile.variants
    order = [n for base in profile.order
             for n in (base, *(v for v in variants if method_base(v) == base))]  # each variant after its method
    names = names or [n for n in order if method_base(n) in REGISTRY]
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for name in names:
            if name != method_base(name) and name not in variants:
                raise ValueError(f"unknown demo variant {name!r}; the demo's: {sorted(variants) or 'none'}")
            # the one path every command takes (workbench.eval.settings): the profile's overrides and variant,
            # its hand-set thresholds without a calibration, the LoCoMo preset and the calibration with one,
            # and its output bounds on the LLM
            out[name] = build_method(name, llm=llm, embedder=embedder, data=None if calibration is None else "locomo",
                                     calibration=calibration, profile=profile, warn=False).method
    return out


def _announce(method, judge):
    """The harness's estimate hook for the demo: price the questions still to run and say it in one line."""
    def estimate(todo):
        from .eval.estimate import estimate_run

        est = estimate_run(method, todo, judge=judge)
        print(f"   estimate {est.summary()} if live (cassette hits replay instantly)", file=sys.stderr)
        return est

    return estimate


def run_demo(*, out: Path, methods=None, questions: int | None = None, serve: bool = True,
             llm_spec: str | None = None, port: int = 5006, record: bool = False, llm_mode: str = "auto",
             calibration: str | None = "auto", profile: DemoProfile = DEMO) -> Path:
    """Build, answer, judge and save; then serve the app. ``record`` appends to the committed cassette;
    ``llm_mode="replay"`` never loads a model (a call missing from the cassette is a recorded failure).
    ``calibration``: see ``demo_calibration`` (by default, what the cassette was recorded with)."""
    from .eval import LLMJudge, evaluate
    from .eval.audit import audits_for_rows
    from .eval.manifest import update_run_manifest
    from .eval.mechanisms import census, summary_line, write_census
    from .eval.report import export, load_results, report_markdown, summary_table
    from .eval.store import load_rows
    from .jsonl import write_text_atomic
    from .rundir import save_conversation

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "manifest.json").unlink(missing_ok=True)  # rewritten below, one evaluation per method
    cassette = profile.cassette
    if not record:  # never write into the repository: work on a copy in the run directory
        cassette = out / "cassette.jsonl"
        if not cassette.exists() and profile.cassette.exists():
            shutil.copyfile(profile.cassette, cassette)
    llm = demo_llm(mode=llm_mode, spec=llm_spec, cassette=cassette, profile=profile)
    embedder = demo_embedder()
    dataset = demo_dataset(profile)
    save_conversation(out, dataset[0])
    qids = list(profile.questions[:questions] if questions else profile.questions)
    # The judge gets its own model instance: llama.cpp keeps one prompt state per instance, so a
    # judge call between two questions would otherwise evict the reader's cached conversation prefix.
    judge_llm = demo_llm(mode=llm_mode, spec=llm_spec, cassette=cassette, profile=profile)
    judge = LLMJudge(judge_llm)
    cal = demo_calibration(record=record, choice=calibration, profile=profile)
    if cal is None:
        print(f"note: {UNCALIBRATED['note']}", file=sys.stderr)
    for name, method in demo_methods(llm, embedder, methods, calibration=cal, profile=profile).items():
        print(f"== {name}: building memory and answering {len(qids)} questions", file=sys.stderr)
        res = evaluate(method, dataset, judge=judge, store=out / "results.jsonl", questions=qids,
                       save_memories_dir=out, progress=True, estimate=_announce(method, judge))
        update_run_manifest(out, res.manifest, name="demo", created_by="workbench demo")
    rows = load_rows([out / "results.jsonl"])
    audits = audits_for_rows(rows)
    table = summary_table(load_results([out / "results.jsonl"]), audits=audits)
    mechanisms = census(out)  # what each method's own mechanism did in this run (mechanisms.json, app header)
    write_census(out, mechanisms)
    write_text_atomic(out / "report.md", report_markdown(load_results([out / "results.jsonl"]), audits=audits,
                                                         title="Demo report", mechanisms=mechanisms))
    cols = ["method", "n", "metric", "accuracy", "ci_low", "ci_high", "judge_accuracy", "judge_false_accept", "f1",
            "evidence_recall", "turns_shown", "query_tokens", "construction_tokens", "fc_token_ratio", "errors",
            "flagged"]
    overall = table[table["category"] == "overall"][cols] if not table.empty else table
    print(export(overall, "md") if not overall.empty else "(no results)")
    print(f"\nmechanisms fired: {summary_line(mechanisms) or '(none recorded)'}  (mechanisms.json)")
    print(f"\nrun saved in {out}  (cassette hits {getattr(llm, 'hits', 0)}, live calls {getattr(llm, 'misses', 0)}, "
          f"calls missing from a replay-only cassette {getattr(llm, 'replay_misses', 0)})")
    replay_gallery(out)
    if serve:
        from .extras import serve_app  # widgets sit above the core: imported by name, never statically

        serve_app(out, port=port, show=True)
    return out


def replay_gallery(out: Path) -> Path | None:
    """The mechanism gallery (``workbench.gallery``) replayed from its committed cassettes into ``<out>/gallery``
    (the small profile) and, for the methods whose paper profile is recorded, ``<out>/gallery-paper``, where the
    app's "How it works" tab finds each method's example. A failure is printed, not raised: the demo run itself
    is saved by then, and the tab says the example is missing. Returns the small profile's directory."""
    from .gallery import cassette, gallery_methods, run_gallery, subdir

    target = None
    for profile in ("small", "paper"):
        names = [n for n in gallery_methods() if cassette(n, profile).exists()]
        if not names:
            continue
        try:
            done = run_gallery(Path(out) / subdir(profile), names, profile=profile)
        except Exception as exc:  # shown to the user; the demo run above is complete and stays usable
            print(f"note: the {profile} mechanism gallery could not be replayed ({type(exc).__name__}: {exc}); the "
                  "app's How it works tab shows each method without that example", file=sys.stderr)
            continue
        target = target or (done if profile == "small" else None)
        print(f"{profile} profile's mechanism gallery replayed into {done} (the app's How it works tab)")
    return target


def estimate_demo(*, methods=None, questions: int | None = None, llm_spec: str | None = None,
                  profile: DemoProfile = DEMO) -> list:
    """``workbench demo --estimate``: each demo method's predicted calls, tokens and live wall time,
    without any LLM call or model load. Calls whose replies the committed cassette holds replay at
    no cost, so the wall time is what a run with an empty cassette would take."""
    from .eval import LLMJudge
    from .eval.estimate import backend_error, estimate_run, service_problems
    from .eval.harness import select
    from .llm import CachedLLM, default_llm

    try:
        inner = default_llm(llm_spec or profile.llm)  # llama.cpp loads lazily: building it loads nothing
    except Exception as exc:  # no model, no API key: reported in the notes, the cassette still replays
        inner, notes = None, [f"{backend_error(exc)}: the cassette replays, and a call missing from it "
                              "becomes a failed question"]
    else:
        notes = ["wall time is for an empty cassette: calls whose replies the committed cassette holds "
                 f"({profile.cassette.name}) replay in milliseconds"]
    cassette = profile.cassette
    llm = CachedLLM(inner, cassette, mode="auto") if inner is not None else CachedLLM.replay(cassette)
    with_profile_bounds(llm, profile)
    qids = list(profile.questions[:questions] if questions else profile.questions)
    plan = select(demo_dataset(profile), questions=qids)
    out = []
    cal = demo_calibration(profile=profile)
    for name, method in demo_methods(llm, None, methods, calibration=cal, profile=profile).items():
        out.append(estimate_run(method, plan, llm=inner or llm, judge=LLMJudge(llm), notes=notes,
                                problems=service_problems(inner) if inner is not None else []))
    return out


def prune_cassette(cassette: Path | None = None, profile: DemoProfile = DEMO) -> int:
    """Replay the whole demo configuration from the cassette into a scratch directory and drop
    every entry it did not use (calls of older prompts or configurations). Returns how many went.

    A resumed recording skips finished questions, so pruning needs this full replay to know
    which calls the configuration uses.
    """
    import tempfile

    from .eval import LLMJudge, evaluate

    llm = demo_llm(mode="replay", cassette=cassette, profile=profile)
    judge_llm = demo_llm(mode="replay", cassette=cassette, profile=profile)
    embedder = demo_embedder()
    with tempfile.TemporaryDirectory() as tmp:
        cal = demo_calibration(profile=profile)
        for method in demo_methods(llm, embedder, calibration=cal, profile=profile).values():
            res = evaluate(method, demo_dataset(profile), judge=LLMJudge(judge_llm), store=Path(tmp) / "r.jsonl",
                           questions=list(profile.questions), progress=False)
            failed = [r for r in res if r.error]
            if failed:
                raise RuntimeError(f"{method.name}: {len(failed)} questions do not replay ({failed[0].error}); "
                                   "finish recording before pruning")
    return llm.cassette.prune(llm.used_keys | judge_llm.used_keys)
