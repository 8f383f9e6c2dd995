"""The mechanism gallery (issue #40): each method's signature mechanism on a short conversation written for it.

A method that declares a gallery example (``how_it_works.gallery``, ``workbench.methods.explain``) is run
on that conversation of ``sample_data/gallery_conversations.json`` (``--data gallery``) with the demo
model (Qwen2.5-Coder-1.5B), its 1.5B demo configuration (``sample_data/demo_profiles.json``: overrides,
bounded outputs, shipped MiniLM calibration) and the example's own ``gallery_params``, and its LLM calls
are recorded into ``sample_data/cassettes/gallery/<method>.jsonl``. Every run goes through the same
``workbench eval`` command (``eval_argv``), recording or replaying, so a replay asks exactly the recorded
calls. Nothing is scripted: when the model gets the mechanism wrong, the run and the checked census say so.

``run_gallery(out)`` replays every example into one run directory (``workbench demo`` puts it in
``<run>/gallery``, where the app's "How it works" tab finds it); ``scripts/record_gallery.py`` records.

Two method profiles (``workbench.methods.profile``, issue #39 item 6): the gallery above is the ``small``
profile, named explicitly. The ``paper`` profile runs the same example with the same model and nothing of the
small model's configuration -- no demo overrides, no output bounds, no calibration, only the example's own
parameters -- into ``<method>.paper.jsonl`` beside it and ``<run>/gallery-paper``, so the "How it works" page can
show what the paper's own method did with a small model next to the tuned one.

A plugin method ships its example in its own package (issue #65 item 3): a class attribute
``resources = "my_package.resources"`` names a package folder (``workbench.methods.registry.method_resources``)
holding ``gallery_conversations.json`` (its example's conversation, LoCoMo format), ``annotations.json`` (the
phenomena planted there), ``cassettes/gallery/<method>.jsonl`` (and ``<method>.paper.jsonl``) and
``cost_profiles.json``. Its example then runs on that file (``data_spec``) and replays that cassette
(``cassette``); the built-ins keep the workbench's ``sample_data``. docs/plugin-checklist.md says how to ship them.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import warnings
from pathlib import Path
from typing import Iterable

from .data import SAMPLE_DIR

#: where each method's gallery cassette lives (``<method>.jsonl``)
CASSETTES = SAMPLE_DIR / "cassettes" / "gallery"
#: the model the gallery is recorded with: the demo's
MODEL = "local:qwen2.5-coder-1.5b"
#: the demo profile whose configuration the gallery runs with
PROFILE = "1.5b"
#: the embedder calibration the 1.5B demo is recorded with
CALIBRATION = "shipped:all-MiniLM-L6-v2-int8"
#: where ``workbench demo`` writes the replayed gallery, inside its run directory
SUBDIR = "gallery"
#: the method profiles the gallery is recorded with (``workbench.methods.profile``); the first is the demo's
METHOD_PROFILES = ("small", "paper")


def _check_profile(profile: str) -> str:
    if profile not in METHOD_PROFILES:
        raise ValueError(f"gallery profile {profile!r}: expected one of {', '.join(METHOD_PROFILES)}")
    return profile


def subdir(profile: str = "small") -> str:
    """The run subdirectory of a profile's replayed gallery: ``gallery`` (small), ``gallery-paper``."""
    return SUBDIR if _check_profile(profile) == "small" else f"{SUBDIR}-{profile}"


def gallery_methods(names: Iterable[str] | None = None) -> dict[str, type]:
    """``name -> class`` of the registered methods that declare a gallery example, in registry order
    (``names``: only those; a name without an example is an error naming the ones that have one)."""
    from .methods import REGISTRY

    found = {n: c for n, c in REGISTRY.items() if getattr(getattr(c, "how_it_works", None), "gallery", None)}
    if names is None:
        return found
    names = list(names)
    unknown = [n for n in names if n not in found]
    if unknown:
        raise ValueError(f"no gallery example for {', '.join(unknown)} (methods with one: {', '.join(found)})")
    return {n: found[n] for n in names}


def gallery_params(name: str, profile: str = "small") -> dict:
    """The parameters ``name``'s example runs with. ``small``: its overrides in the 1.5B demo profile
    (``workbench.eval.profiles``), then the example's own; ``paper``: the example's own only. A method with
    two profiles is told which one (``profile=``)."""
    from .eval.profiles import get_profile

    cls = gallery_methods([name])[name]
    how = cls.how_it_works
    demo = get_profile(PROFILE).overrides.get(name, {}) if _check_profile(profile) == "small" else {}
    named = {"profile": profile} if "profile" in cls._param_names() else {}
    return {**demo, **how.gallery_params, **named}


def cassette(name: str, profile: str = "small") -> Path:
    """``<method>.jsonl`` (small profile), ``<method>.paper.jsonl`` (paper profile): in the method's own resource
    folder (``cassettes/gallery/``) when it declares one, else in the workbench's ``sample_data``. A plugin's
    recording goes into its own package, never into the workbench."""
    from .methods.registry import method_resources

    file = f"{name}.jsonl" if _check_profile(profile) == "small" else f"{name}.{profile}.jsonl"
    if not re.fullmatch(r"[a-z0-9_]+", name):  # a registered method's name: nothing that could leave the folder
        raise ValueError(f"gallery cassette of {name!r}: not a method name")
    folder = method_resources(name)
    return (folder / "cassettes" / "gallery" if folder is not None else CASSETTES) / file


def conversations_file(name) -> Path | None:
    """The ``gallery_conversations.json`` that the resource folder of ``name`` (a method's name or class) ships, or
    None (the workbench's gallery)."""
    from .methods.registry import resource_file

    return resource_file(name, "gallery_conversations.json")


def data_spec(name: str) -> str:
    """The ``--data`` spec ``name``'s example runs on: its own ``gallery_conversations.json`` (``locomo:PATH``)
    when its resources ship one, else ``gallery`` (the workbench's mechanism gallery)."""
    own = conversations_file(name)
    return f"locomo:{own}" if own is not None else "gallery"


def conversation_ids(name) -> list[str]:
    """The ids of the gallery conversations ``name``'s (a method's name or class; ``check_method`` passes the
    class) example may name (``how_it_works.gallery``): its own file's
    and the workbench's gallery's. A damaged file raises its ``DatasetError`` (file and field named)."""
    from .data import load_locomo, load_sample

    ids = [c.id for c in load_sample("gallery_conversations").conversations]
    own = conversations_file(name)
    return ids + ([c.id for c in load_locomo(own).conversations if c.id not in ids] if own is not None else [])


def annotations(name: str) -> dict:
    """``{conv_id: ConversationAnnotations}`` of the phenomena planted in ``name``'s gallery conversations: the
    workbench's shipped annotations, with its resources' ``annotations.json`` over them (checked against its own
    conversations when it ships them; ``eval.annotations.method_annotations``, which the census reads too). A
    damaged file raises its ``DatasetError``."""
    from .eval.annotations import method_annotations

    return method_annotations(name)


def eval_argv(name: str, out: Path | str, *, replay: bool, model: str = MODEL, profile: str = "small") -> list[str]:
    """The ``workbench eval`` arguments of ``name``'s example under a method ``profile``: replaying its committed
    cassette (no model), or recording into it with ``model``. Only the small profile gets the demo's output
    bounds and calibration; the paper profile runs with the method's own thresholds and no bounds."""
    conv = gallery_methods([name])[name].how_it_works.gallery
    tape = cassette(name, profile)
    aids = ["--bounded-outputs", "--calibration", CALIBRATION] if profile == "small" else ["--calibration", "off"]
    argv = ["--method", name, "--data", data_spec(name), "--conversations", conv,
            "--llm", f"replay:{tape}" if replay else model, "--judge", "same", "--save-memories", "--no-progress",
            *aids, "--out", str(out)]
    if not replay:
        argv += ["--cassette", str(tape)]
    for key, value in gallery_params(name, profile).items():
        argv += ["--param", f"{key}={json.dumps(list(value) if isinstance(value, tuple) else value)}"]
    return argv


def run_example(name: str, out: Path | str, *, replay: bool = True, quiet: bool = True,
                profile: str = "small") -> None:
    """Run ``name``'s example into the run directory ``out`` (in this process, through ``workbench eval``'s own
    command). ``quiet``: the command's estimate, notes and table are not printed (a failure's message quotes
    them). Raises if the command fails."""
    from .eval.cli import add_eval_arguments, eval_command

    parser = argparse.ArgumentParser(prog="workbench eval")
    add_eval_arguments(parser)
    args = parser.parse_args(eval_argv(name, out, replay=replay, profile=profile))
    sink = io.StringIO()
    caught: list = []
    with contextlib.ExitStack() as stack:
        if quiet:  # the estimate and the table; kept for the error message
            # warnings (a damaged cassette line skipped) are caught apart, to be said below: the sink is dropped
            caught = stack.enter_context(warnings.catch_warnings(record=True))
            stack.enter_context(contextlib.redirect_stdout(sink))
            stack.enter_context(contextlib.redirect_stderr(sink))
        rc = eval_command(args)
    for w in caught:  # outside the redirect: on the real stderr, or to whoever catches warnings
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if rc:
        raise RuntimeError(f"the {profile} gallery example of {name} failed (exit {rc}):\n{sink.getvalue()[-2000:]}")


def cassette_problems(name: str, profile: str = "small") -> list[str]:
    """Every damaged line of ``name``'s committed gallery cassette (``file:line: reason``; none when it is not
    recorded): a replay skips such a line and misses its call, and the "How it works" page says so."""
    from .llm.cache import check_cassette

    tape = cassette(name, profile)
    return list(check_cassette(tape)["bad_lines"]) if tape.exists() else []


def run_gallery(out: Path | str, names: Iterable[str] | None = None, *, replay: bool = True,
                quiet: bool = True, profile: str = "small") -> Path:
    """Every gallery example (or ``names``) into one run directory ``out``, replayed from the committed cassettes
    by default; an example whose cassette is missing is skipped with a note on stderr. Returns ``out``."""
    import sys

    out = Path(out)
    for name in gallery_methods(names):
        if replay and not cassette(name, profile).exists():
            print(f"note: {name}'s {profile} gallery example is not recorded ({cassette(name, profile).name}); "
                  "skipped", file=sys.stderr)
            continue
        run_example(name, out, replay=replay, quiet=quiet, profile=profile)
    return out
