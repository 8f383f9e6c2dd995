"""Command-line plumbing shared by ``workbench.cli``, ``workbench.eval.cli`` and the demo: the
parts above the core that the command line starts (the Panel app, the benchmarks), and usage errors.

Imports run one way (core -> methods -> eval -> widgets -> app/CLI; benchmarks on top), and the
import-linter contracts in ``pyproject.toml`` forbid ``workbench`` from importing ``widgets`` or
``benchmarks``. The CLI and the demo still start them, by module name at run time, here; a missing
optional dependency becomes one message that says what to install instead of a traceback.
"""
from __future__ import annotations

import importlib
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType


class MissingExtra(RuntimeError):
    """An optional part (or one of its dependencies) is not installed; the message says what to install."""


def require(module: str, *, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` by name, or raise ``MissingExtra`` naming the missing module and the pip extra."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise MissingExtra(f"{purpose} needs the {exc.name!r} module: pip install 'memory-workbench[{extra}]'") \
            from exc


def serve_app(run_dir, **kw):
    """Serve the Panel app (``widgets.app.serve``) over a run directory."""
    return require("widgets.app", extra="ui", purpose="the app").serve(run_dir, **kw)


def checkout_root(start: Path | None = None) -> Path | None:
    """The source checkout holding ``benchmarks/``: the current directory, or the one this package
    was installed from in editable mode. ``None`` for a plain wheel install run elsewhere."""
    for root in (start or Path.cwd(), Path(__file__).resolve().parents[1]):
        if (root / "benchmarks" / "run_all.py").is_file():
            return root
    return None


def run_benchmarks(args: list[str]) -> int:
    """``python -m benchmarks.run_all ARGS`` in the checkout (benchmarks are not installed with the
    package; running them as a module from the checkout needs no ``sys.path`` edits)."""
    root = checkout_root()
    if root is None:
        raise MissingExtra("workbench bench runs the benchmarks of a source checkout (benchmarks/ is not "
                           "installed with the package): run it from the checkout's root directory")
    return subprocess.call([sys.executable, "-m", "benchmarks.run_all", *args], cwd=root)


@contextmanager
def usage_errors():
    """Turn the library's ``ValueError`` for a bad spec (method, parameter, LLM, embedder) into a
    one-line usage error (``SystemExit``) instead of a traceback."""
    try:
        yield
    except ValueError as exc:
        raise SystemExit(f"workbench: {exc}") from exc


__all__ = ["usage_errors", "MissingExtra", "require", "serve_app", "checkout_root", "run_benchmarks"]
