"""Which memory methods exist: the built-in ones and plugins, found through one entry-point group.

A method is registered under a name (its class's ``name``) in the entry-point group ``workbench.methods``::

    [project.entry-points."workbench.methods"]
    recency_bm25 = "my_package.recency:RecencyBM25"

The workbench's own methods register the same way, in its ``pyproject.toml``. The group is read once, the
first time a name is looked up (``get_method``, iterating ``REGISTRY``), so importing ``workbench.methods``
imports no plugin. A class made at run time (in a notebook) joins with ``register(cls)``.

``BUILTIN`` names the built-in methods a second time, as ``"module:Class"`` strings: a checkout used from
``PYTHONPATH`` without being installed, or an install whose metadata predates an entry point, has no (or an
old) ``entry_points.txt``, and the built-ins must not disappear with it. It is also the order views list
methods in (the cheap baselines first); plugins follow, by name, then run-time registrations.

A plugin that cannot be loaded is left out, and every built-in and every other plugin keeps working. Each
such plugin gives one line (a ``PluginWarning``, printed once per process, and kept in ``plugin_problems()``
for the app's header), naming its entry point (name, ``module:Class``, the distribution it comes from), what is
wrong and how to switch it off. What is wrong may be:

- its import raised: any exception, and also ``SystemExit`` (a plugin that calls ``sys.exit()`` or runs an
  ``argparse`` parser at import would otherwise stop every CLI command with what reads as a workbench usage
  error, and the app with it) and ``GeneratorExit``; only ``KeyboardInterrupt`` goes through, since the person
  pressing Ctrl-C meant it;
- what it loads is not a ``MemoryMethod`` subclass, or its ``name`` is not its entry point's;
- its name is a built-in method's: the built-in is kept;
- two plugins (two distributions) register one name: **both are left out**. Any rule for picking one (the
  order of ``sys.path``, of the distributions' names) depends on how each machine was set up, so one run
  directory would be evaluated with one class and viewed with another without anyone noticing; results are
  filed under the name, so the mix-up would reach every figure. Refusing both makes the clash visible on the
  first command, and the line says how to keep the one meant.

``WORKBENCH_DISABLE_PLUGINS`` (names separated by commas or spaces: an entry point's name or a distribution's,
or ``all``) leaves plugins out before they are imported: the way to keep one of two clashing plugins, or to
work around one that breaks at import until it is fixed, without uninstalling it.

Nothing here imports a method subpackage by name: MemR3's backend lookup and the generic census, report and
views all come through ``get_method``.
"""
from __future__ import annotations

import importlib
import os
import re
import threading
import warnings
from collections.abc import Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points

from .base import MemoryMethod, method_base

GROUP = "workbench.methods"

#: the built-in methods, in the order views list them; the same strings as their entry points
BUILTIN: dict[str, str] = {
    "full_context": "workbench.methods.baselines:FullContext",
    "naive_rag": "workbench.methods.baselines:NaiveRAG",
    "eager_floor": "workbench.methods.baselines:EagerFloor",
    "eager_facts": "workbench.methods.baselines:EagerFacts",
    "hymem": "workbench.methods.hymem:HyMem",
    "ama": "workbench.methods.ama:AMA",
    "hmem": "workbench.methods.hmem:HMem",
    "recmem": "workbench.methods.recmem:RecMem",
    "memr3": "workbench.methods.memr3:MemR3",
    "mem0_style": "workbench.methods.baselines:Mem0Style",
}
#: names kept registered so saved runs load, -> the name to use instead
DEPRECATED: dict[str, str] = {"eager_facts": "eager_floor"}


#: the environment variable naming plugins to leave out unimported (see the module docstring)
DISABLE_ENV = "WORKBENCH_DISABLE_PLUGINS"
#: how long a plugin's exception message may be in its one line (a traceback pasted into a message is cut)
MESSAGE_CHARS = 300
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class PluginWarning(UserWarning):
    """A method plugin was left out; the message names its entry point, why, and how to switch it off."""


def _one_line(text: object, limit: int = MESSAGE_CHARS) -> str:
    """``text`` on one line a terminal shows as it is: whitespace runs (newlines) as one space, control
    characters (an ANSI escape in a plugin's message) spelled ``\\xNN``, cut to ``limit`` characters."""
    flat = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", " ".join(str(text).split()))
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def _dist_name(ep: EntryPoint) -> str | None:
    dist = getattr(ep, "dist", None)
    try:
        name = dist.metadata["Name"] if dist is not None else None
    except Exception:  # a distribution whose metadata cannot be read: named by its entry point alone
        return None
    return _one_line(name, 100) if name else None


def _normal(name: str) -> str:
    """A distribution or entry point name compared as pip compares names (case, ``-``/``_``/``.`` folded)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _where(ep: EntryPoint) -> str:
    """An entry point as its one line names it: ``'name' = 'module:Class' (from distribution X 1.0)``."""
    dist = _dist_name(ep)
    version = getattr(getattr(ep, "dist", None), "version", None) if dist else None
    origin = f" from distribution {dist}{' ' + _one_line(version, 40) if version else ''}" if dist else ""
    return f"method plugin {ep.name!r} = {ep.value!r}{origin} (entry point group {GROUP!r})"


def _target(ep: EntryPoint) -> str:
    """``'module:Class' (distribution X 1.0)``: one of several entry points of one name."""
    dist = _dist_name(ep)
    version = getattr(getattr(ep, "dist", None), "version", None) if dist else None
    origin = f"distribution {dist}{' ' + _one_line(version, 40) if version else ''}" if dist else "no distribution"
    return f"{ep.value!r} ({origin})"


def _how_to_disable(ep: EntryPoint) -> str:
    dist = _dist_name(ep)
    return (f"to switch it off, set {DISABLE_ENV}={dist or ep.name}"
            + (f" or uninstall it (pip uninstall {dist})" if dist else ""))


def disabled_plugins(value: str | None = None) -> set[str]:
    """The names ``WORKBENCH_DISABLE_PLUGINS`` lists (normalised), ``{"all"}`` for every plugin."""
    value = os.environ.get(DISABLE_ENV, "") if value is None else value
    return {_normal(v) for v in re.split(r"[,\s]+", value) if v}


def _is_disabled(ep: EntryPoint, disabled: set[str]) -> bool:
    if not disabled:
        return False
    dist = _dist_name(ep)
    return "all" in disabled or _normal(ep.name) in disabled or (dist is not None and _normal(dist) in disabled)


def _load_target(target: str) -> object:
    module, _, attr = target.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _check_class(name: str, obj: object, where: str) -> type[MemoryMethod]:
    """``obj`` if it is a method class registered under its own name; else ``TypeError`` saying what is wrong."""
    if not (isinstance(obj, type) and issubclass(obj, MemoryMethod)):
        raise TypeError(f"{where} is {obj!r}, not a subclass of workbench.methods.MemoryMethod")
    if obj.name != name:
        raise TypeError(f"{where} registers name {name!r} but the class says name = {obj.name!r}; they must agree "
                        "(results and saved memories are filed under the class's name)")
    if obj is MemoryMethod or obj.name == MemoryMethod.name:
        raise TypeError(f"{where}: the class must set its own ``name``")
    return obj


class _Registry(Mapping):
    """``name -> class`` for every registered method, filled on first use (see the module docstring)."""

    def __init__(self) -> None:
        self._classes: dict[str, type[MemoryMethod]] | None = None
        self._runtime: dict[str, type[MemoryMethod]] = {}
        self._lock = threading.RLock()
        #: one line per plugin left out by the last load (``plugin_problems``)
        self.problems: list[str] = []

    def _entry_points(self) -> list[EntryPoint]:
        return list(entry_points(group=GROUP))

    def _load(self) -> dict[str, type[MemoryMethod]]:
        with self._lock:
            if self._classes is not None:
                return self._classes
            classes: dict[str, type[MemoryMethod]] = {}
            for name, target in BUILTIN.items():  # a broken built-in is a bug: it raises
                classes[name] = _check_class(name, _load_target(target), f"built-in method {name!r} ({target})")
            problems: list[str] = []
            plugins = self._load_plugins(problems)
            classes.update(plugins)
            for name, cls in self._runtime.items():
                classes.setdefault(name, cls)
            self._classes = classes
            self.problems = problems
            for line in problems:  # once per load (the registry is read once per process)
                _warn(line)
            return classes

    def _load_plugins(self, problems: list[str]) -> dict[str, type[MemoryMethod]]:
        """The plugins' classes by name; every plugin left out adds its one line to ``problems``."""
        try:
            eps = self._entry_points()
        except Exception as exc:  # a broken distribution's metadata: the built-ins still work
            problems.append(f"the installed packages' method plugins could not be listed ({type(exc).__name__}: "
                            f"{_one_line(exc)}); only the built-in methods are available")
            return {}
        disabled = disabled_plugins()
        by_name: dict[str, list[EntryPoint]] = {}
        for ep in eps:
            if ep.name in BUILTIN and ep.value == BUILTIN[ep.name]:
                continue  # the workbench's own entry point for a built-in
            if not _is_disabled(ep, disabled):
                by_name.setdefault(ep.name, []).append(ep)
        plugins: dict[str, type[MemoryMethod]] = {}
        for name in sorted(by_name):
            found = list({ep.value: ep for ep in by_name[name]}.values())  # one target declared twice is one
            if name in BUILTIN:
                problems.extend(f"{_where(ep)} left out: {name!r} is a built-in method's name, and the built-in "
                                f"({BUILTIN[name]}) is kept; rename the plugin's entry point and class name; "
                                f"{_how_to_disable(ep)}" for ep in found)
                continue
            if len(found) > 1:
                problems.append(f"method plugins {' and '.join(_target(ep) for ep in found)} register one name "
                                f"{name!r} (entry point group {GROUP!r}): all {len(found)} are left out (which one "
                                f"is meant would depend on this machine's install order); keep one by setting "
                                f"{DISABLE_ENV} to the others' distribution names, or uninstall all but one")
                continue
            ep = found[0]
            try:
                plugins[name] = _check_class(name, ep.load(), _where(ep))
            except KeyboardInterrupt:  # the person at the keyboard meant it
                raise
            except TypeError as exc:  # what it loads is not a method class of that name (``_check_class``)
                if str(exc).startswith(_where(ep)):
                    problems.append(f"{_one_line(exc, 2 * MESSAGE_CHARS)}; left out; {_how_to_disable(ep)}")
                else:
                    problems.append(self._failed(ep, exc))
            except BaseException as exc:  # noqa: B036 - SystemExit, GeneratorExit and every error of its import
                problems.append(self._failed(ep, exc))
        return plugins

    @staticmethod
    def _failed(ep: EntryPoint, exc: BaseException) -> str:
        if isinstance(exc, SystemExit):
            code = "" if exc.code is None else _one_line(repr(exc.code))
            what = f"SystemExit({code}) (it called sys.exit while being imported)"
        else:
            what = f"{type(exc).__name__}: {_one_line(exc) or '(no message)'}"
        return (f"{_where(ep)} left out: importing it raised {what}; every other method works; "
                f"{_how_to_disable(ep)}")

    def register(self, cls: type[MemoryMethod], *, replace: bool = False) -> type[MemoryMethod]:
        """Add a method class made at run time (a notebook's) under ``cls.name``; returns it, so it can be a
        class decorator. A name already taken raises unless ``replace=True`` (never for a built-in)."""
        cls = _check_class(getattr(cls, "name", None), cls, f"register({getattr(cls, '__name__', cls)!r})")
        with self._lock:
            taken = self._load().get(cls.name)
            if taken is not None and taken is not cls:
                if cls.name in BUILTIN or not replace:
                    raise ValueError(f"a method named {cls.name!r} is already registered ({taken.__module__}."
                                     f"{taken.__qualname__}); pick another name" + ("" if cls.name in BUILTIN
                                                                                     else " or pass replace=True"))
            self._runtime[cls.name] = cls
            self._classes[cls.name] = cls
        return cls

    def unregister(self, name: str) -> None:
        """Remove a run-time registration (built-ins and entry points stay)."""
        with self._lock:
            if self._runtime.pop(name, None) is not None and self._classes is not None:
                self._classes.pop(name, None)

    def reload(self) -> None:
        """Read the entry points again (after installing a plugin into the running interpreter)."""
        with self._lock:
            self._classes = None

    def __getitem__(self, name: str) -> type[MemoryMethod]:
        return self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._load()))

    def __len__(self) -> int:
        return len(self._load())

    def __repr__(self) -> str:
        return f"REGISTRY({sorted(self._load())})"


def _warn(line: str) -> None:
    """One ``PluginWarning`` line: issued at no source line, so it prints as the one line (Python's own
    ``file:line:`` form would add the line of the registry or of its caller, which says nothing about the
    plugin). Each load issues each line once; a filter (``-W``, ``warnings.simplefilter``) still applies."""
    warnings.warn_explicit(line, PluginWarning, filename="workbench.methods", lineno=0,
                           module="workbench.methods.registry")


REGISTRY = _Registry()
register = REGISTRY.register


def plugin_problems() -> list[str]:
    """One line per method plugin left out (import error, ``SystemExit``, a name clash, not a method class),
    after reading the entry points if that has not happened yet: what the app lists in its header's
    problems (``store.note_all``), the CLI's stderr having had each line once already."""
    REGISTRY._load()
    return list(REGISTRY.problems)


def get_method(name: str) -> type[MemoryMethod]:
    """The class of a registered name, or of a labelled variant's name (``ama[probe]`` -> AMA)."""
    try:
        return REGISTRY[method_base(name)]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; available: {sorted(REGISTRY)}") from None


def display_name(name: str) -> str:
    """How views write a run's method name for people (usability review: "ama[paper-judge]" and "eager_floor"
    are code identifiers, unreadable on a projector): the class's ``title`` ("Eager floor"), with a labelled
    variant's label in words ("AMA (paper judge)"). A name no installed class has (a saved run of a plugin
    not installed here) is shown as it is; the run's own name stays what pickers select and links carry."""
    base = method_base(name)
    cls = REGISTRY.get(base)
    title = (cls.title or base) if cls is not None else base
    variant = str(name)[len(base):].strip("[]")
    return f"{title} ({variant.replace('-', ' ').replace('_', ' ')})" if variant else title


def readable_text(name: str, text: str) -> str:
    """A unit's stored text as views show it to people: through the method's ``readable`` structure hook where it
    has one (RecMem's units carry the authors' "[Message Timestamp]: ... [Message]: [Priya]: ..." frame), else as
    stored. Search and the Memories tab keep the stored text, which is what the method embedded."""
    cls = REGISTRY.get(method_base(name))
    hook = (getattr(cls, "structure_hooks", None) or {}).get("readable") if cls is not None else None
    return hook(text) if callable(hook) else text


def display_options(names) -> dict[str, str]:
    """``{display_name: name}`` for a picker, in the given order; a display name two runs' names share (a plugin
    titled like a built-in) keeps the run's name beside it, so every option stays distinct."""
    names = list(names)
    shown = [display_name(n) for n in names]
    return {(s if shown.count(s) == 1 else f"{s} · {n}"): n for s, n in zip(shown, names)}


# -- plugin resources (issue #65 item 3) ------------------------------------------------------------------------
#: the files a method's resource folder may hold, read by the gallery, the cost estimate and How it works
RESOURCE_FILES = ("gallery_conversations.json", "annotations.json", "cost_profiles.json", "cassettes/gallery/")


def method_resources(name):
    """The folder of the resources a method declares (``name``: its registered name, or the class itself), as a
    ``Path``: ``resources = "my_package.resources"`` names an importable package whose folder holds
    ``RESOURCE_FILES``. None when it declares none (the built-ins: their resources are the workbench's
    ``sample_data``). A declaration that does not name an importable package folder on disk raises ``ValueError``
    naming the class and the attribute, so a misspelt one is never read as "none".

    A class attribute rather than a second entry point group: the method's own entry point already finds the
    class, so a plugin declares its resources once, beside the rest of its declarations, and ``importlib.resources``
    finds the folder wherever pip put the package (an editable install too). The files are data from another
    package: each reader checks them as untrusted (``workbench.data.types.read_regular_file``, the JSONL readers)."""
    from importlib import resources as ir
    from pathlib import Path

    cls = name if isinstance(name, type) else REGISTRY.get(method_base(name))  # a class not registered: itself
    declared = getattr(cls, "resources", None) if cls is not None else None
    if declared is None:
        return None
    where = f"{cls.__module__}.{cls.__qualname__}.resources = {declared!r}"
    if not isinstance(declared, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*",
                                                         declared):
        raise ValueError(f"{where}: name the package that holds the method's resource files, as a dotted module "
                         "name (\"my_package.resources\")")
    try:
        folder = ir.files(declared)
    except (ImportError, TypeError) as exc:  # not importable, or a module rather than a package
        raise ValueError(f"{where}: not an importable package ({type(exc).__name__}: {_one_line(exc)})") from None
    path = Path(str(folder))
    if not path.is_dir():  # a zipped install: the readers need files on disk
        raise ValueError(f"{where}: the package's folder {path} is not a folder on disk (install the plugin "
                         "unzipped: pip install, not a zipapp)")
    return path


def resource_file(name, relative: str):
    """``relative`` (one of ``RESOURCE_FILES``, or a file under ``cassettes/gallery/``) inside the resource folder
    of ``name`` (a method's name or class), as a ``Path``; None when it declares no resources or ships no such
    file. A path that leaves the folder (``..``, a link pointing out of it) raises ``ValueError``: a plugin's
    resources are its own folder's files and nothing else."""
    folder = method_resources(name)
    if folder is None:
        return None
    path = folder / relative
    try:
        inside = path.resolve().is_relative_to(folder.resolve())
    except OSError as exc:
        raise ValueError(f"{name}'s resource {relative!r} could not be resolved: {exc}") from None
    if not inside:
        raise ValueError(f"{name}'s resource {relative!r} ({path}) lies outside its resource folder {folder}")
    return path if path.exists() else None
