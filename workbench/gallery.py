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
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
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


def gallery_params(name: str) -> dict:
    """The parameters ``name``'s example runs with: its overrides in the 1.5B demo profile
    (``workbench.eval.profiles``), then the example's own."""
    from .eval.profiles import get_profile

    how = gallery_methods([name])[name].how_it_works
    return {**get_profile(PROFILE).overrides.get(name, {}), **how.gallery_params}


def cassette(name: str) -> Path:
    return CASSETTES / f"{name}.jsonl"


def eval_argv(name: str, out: Path | str, *, replay: bool, model: str = MODEL) -> list[str]:
    """The ``workbench eval`` arguments of ``name``'s example: replaying its committed cassette (no model), or
    recording into it with ``model``."""
    conv = gallery_methods([name])[name].how_it_works.gallery
    tape = cassette(name)
    argv = ["--method", name, "--data", "gallery", "--conversations", conv,
            "--llm", f"replay:{tape}" if replay else model, "--judge", "same", "--save-memories", "--no-progress",
            "--bounded-outputs", "--calibration", CALIBRATION, "--out", str(out)]
    if not replay:
        argv += ["--cassette", str(tape)]
    for key, value in gallery_params(name).items():
        argv += ["--param", f"{key}={json.dumps(list(value) if isinstance(value, tuple) else value)}"]
    return argv


def run_example(name: str, out: Path | str, *, replay: bool = True, quiet: bool = True) -> None:
    """Run ``name``'s example into the run directory ``out`` (in this process, through ``workbench eval``'s own
    command). ``quiet``: the command's estimate, notes and table are not printed (a failure's message quotes
    them). Raises if the command fails."""
    from .eval.cli import add_eval_arguments, eval_command

    parser = argparse.ArgumentParser(prog="workbench eval")
    add_eval_arguments(parser)
    args = parser.parse_args(eval_argv(name, out, replay=replay))
    sink = io.StringIO()
    with contextlib.ExitStack() as stack:
        if quiet:  # the estimate and the table; kept for the error message
            stack.enter_context(contextlib.redirect_stdout(sink))
            stack.enter_context(contextlib.redirect_stderr(sink))
        rc = eval_command(args)
    if rc:
        raise RuntimeError(f"the gallery example of {name} failed (exit {rc}):\n{sink.getvalue()[-2000:]}")


def run_gallery(out: Path | str, names: Iterable[str] | None = None, *, replay: bool = True,
                quiet: bool = True) -> Path:
    """Every gallery example (or ``names``) into one run directory ``out``, replayed from the committed cassettes
    by default; an example whose cassette is missing is skipped with a note on stderr. Returns ``out``."""
    import sys

    out = Path(out)
    for name in gallery_methods(names):
        if replay and not cassette(name).exists():
            print(f"note: {name}'s gallery example is not recorded ({cassette(name).name}); skipped", file=sys.stderr)
            continue
        run_example(name, out, replay=replay, quiet=quiet)
    return out
