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

A plugin that cannot be loaded (import error, not a ``MemoryMethod`` subclass, a ``name`` different from its
entry point's, a name a built-in already has) is left out with a ``PluginWarning`` naming the entry point and
what is wrong; it never hides the built-ins or the other plugins. Nothing here imports a method subpackage
by name: MemR3's backend lookup and the generic census, report and views all come through ``get_method``.
"""
from __future__ import annotations

import importlib
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


class PluginWarning(UserWarning):
    """A method plugin was left out; the message names its entry point and why."""


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

    def _entry_points(self) -> list[EntryPoint]:
        return list(entry_points(group=GROUP))

    def _load(self) -> dict[str, type[MemoryMethod]]:
        with self._lock:
            if self._classes is not None:
                return self._classes
            classes: dict[str, type[MemoryMethod]] = {}
            for name, target in BUILTIN.items():  # a broken built-in is a bug: it raises
                classes[name] = _check_class(name, _load_target(target), f"built-in method {name!r} ({target})")
            plugins = {}
            for ep in sorted(self._entry_points(), key=lambda e: e.name):
                where = f"entry point {ep.name!r} = {ep.value!r} (group {GROUP!r})"
                if ep.name in BUILTIN:
                    if ep.value != BUILTIN[ep.name]:
                        warnings.warn(f"{where} left out: {ep.name!r} is a built-in method's name", PluginWarning,
                                      stacklevel=3)
                    continue
                try:
                    plugins[ep.name] = _check_class(ep.name, ep.load(), where)
                except Exception as exc:  # any failure of a third-party import is that plugin's, not ours
                    warnings.warn(f"{where} left out: {type(exc).__name__}: {exc}", PluginWarning, stacklevel=3)
            classes.update(plugins)
            for name, cls in self._runtime.items():
                classes.setdefault(name, cls)
            self._classes = classes
            return classes

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


REGISTRY = _Registry()
register = REGISTRY.register


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
