"""``MemoryMethod``: the scikit-learn-shaped contract every memory method follows.

    m = HyMem(llm=llm, embedder=emb, top_k=10)   # keyword-only params with paper defaults
    m.ingest(conversation)                       # build memory (phase "construct"); returns self
    ans = m.answer("When did ...?")              # -> Answer with steps, context and usage
    m.memories(); m.events; m.as_retriever(); m.save(path); Method.load(path, llm=..., embedder=...)

Progress: ``_build`` reports the turns it has processed with ``self._advance(n)``; inside
``workbench.methods.progress.show_ingest_progress()`` (the harness switches it on) that drives a
per-turn bar with ETA and the calls and tokens spent so far.

Rules (checked by ``workbench.testing.contract``): ``__init__`` only stores its arguments under
their own names; built state lives in attributes ending in ``_``; ``ingest`` starts fresh and
never sees labels (the QA list is stripped); ``answer`` sees only the question (and the date it
is asked on); every stored unit keeps the ids of its source turns.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import pickle
import re
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Iterator, Mapping, Sequence

from .. import __version__
from ..data import Conversation
from ..jsonl import read_json, write_text_atomic
from ..llm.ledger import llm_tags, track
from ..trust import check_signature, write_signature
from ..trace import Answer, Hit, MemoryEvent, Step, Usage
from .answer_prompt import check_answer_prompt
from .moved import load_state
from .profile import PROFILE, resolve_profile
from .progress import advance, ingest_progress

if TYPE_CHECKING:
    from .census_kit import CensusSpec

#: a variant label (``MemoryMethod.labelled``): lower-case letters, digits, ``_`` and ``-``
VARIANT = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")


def method_base(name: str) -> str:
    """The registered method a run's method name stands for: ``ama[probe]`` -> ``ama`` (a labelled
    variant, ``MemoryMethod.labelled``; readers that dispatch on the method use this)."""
    return str(name).split("[", 1)[0]


SERVICE_PARAMS = ("llm", "embedder", "reranker")


@dataclass(frozen=True)
class Ablation:
    """One row of a paper's ablation table: the constructor parameters that turn the method into that row
    (``params``, overrides of the defaults) and where the row comes from (``source``: the table and row, and
    what the authors' code does where it decides)."""

    params: Mapping[str, Any]
    source: str


def _ablation_key(name: str) -> str:
    """``"W/O Episodic"``, ``"w/o_episodic"`` and ``"wo episodic"`` name the same ablation."""
    return re.sub(r"[\W_]+", "", str(name).casefold())


class NotIngestedError(RuntimeError):
    """``answer``/``memories`` was called before ``ingest``."""


@dataclass
class StepBuilder:
    """Mutable while a step runs; frozen into a ``Step`` when its block ends."""

    kind: str
    title: str
    data: dict = field(default_factory=dict)
    hits: list[Hit] = field(default_factory=list)


def _service_name(service) -> str | None:
    """A service as its saved configuration names it (``config``): the name itself, else its model or name."""
    if service is None or isinstance(service, str):
        return service
    return getattr(service, "model", None) or getattr(service, "name", None)


def _service_repr(value) -> str:
    name = getattr(value, "model", None) or getattr(value, "name", None)
    return repr(name) if name else type(value).__name__


def _comparable(value):
    """A JSON list of strings as the tuple a constructor default is (saved configs come back as lists)."""
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return tuple(value)
    return value


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


#: the ``value_notes`` entry of every method's ``answer_prompt`` (lowercase: not a prompt constant to hash)
fair_arena_note = {"shared": "the final answer is written with the workbench's shared answer prompt (fair arena, "
                             "answer_prompt.py), not the method's own"}


class MemoryMethod:
    """Base class. Subclasses implement ``_build(conv)``, ``_answer(question, now)`` and
    ``_units()``, and usually ``as_retriever()``."""

    name: ClassVar[str] = "base"
    # Benchmarks on which the method is given the question date (``answer(..., now=)``); the
    # harness passes ``now=None`` elsewhere. Each paper decides: e.g. HyMem and RecMem add it for
    # LongMemEval only. Read it with ``uses_question_date``/``question_date_policy`` (manifest).
    question_date_datasets: ClassVar[frozenset[str]] = frozenset({"locomo", "longmemeval"})
    # Modules (dotted, relative to ``workbench.methods``) whose UPPER_CASE string constants are the
    # prompts this method sends: their hash (``eval.manifest.method_prompt_hashes``) tells a resumed
    # run which rows to re-answer. Empty: the class's own module. List every module of the method's
    # subpackage, so a prompt added to any of them is hashed.
    prompt_modules: ClassVar[tuple[str, ...]] = ()
    # The two configurations of the method (``workbench.methods.profile``): ``{"paper": {param: value},
    # "small": {param: value}}`` for each parameter whose signature default is ``PROFILE``; the constructor's
    # ``profile`` picks one (``_apply_profile``). {}: the method has one configuration (the baselines).
    profiles: ClassVar[dict[str, dict]] = {}
    # Why the ``small`` profile leaves the paper's value of a parameter: parameter -> the aid and the recorded
    # evidence that made it necessary. ``param_notes`` shows it whenever a method runs with that aid.
    profile_notes: ClassVar[dict[str, str]] = {}
    # Other parameter values that leave the paper's method, profile or not: parameter -> value -> one sentence
    # saying what the method then does and why the option exists (e.g. the fair arena's shared answer prompt).
    value_notes: ClassVar[dict[str, dict]] = {}
    # Prompt modules that only a profile sends (e.g. ``{"paper": ("memr3.paper_prompts",)}``): hashed into the
    # prompt hash of a method built with that profile only, so one profile's prompts never re-answer the other's rows.
    profile_prompt_modules: ClassVar[dict[str, tuple[str, ...]]] = {}
    # How the method's paper labels the LoCoMo category integers in its result tables (DATA.md §1.5), when it
    # reports LoCoMo by category: ``{1: "single-hop", ...}``; ``eval.report.category_translation`` lists each.
    category_labels: ClassVar[dict[int, str] | None] = None
    # True for the reference the papers measure against (the whole conversation in the prompt): reports take
    # paired differences and token ratios against the registered method that says so.
    reference: ClassVar[bool] = False
    # Construction roles (the part after ``<name>.``) that run once per session by design, not per turn: the
    # cost estimate scales them by sessions.
    per_session_roles: ClassVar[frozenset[str]] = frozenset()
    # Question roles whose prompt holds the whole conversation: the estimate prices them by conversation length
    # and refuses the questions whose prompt would not fit the model's context.
    whole_conversation_roles: ClassVar[frozenset[str]] = frozenset()
    # How views and reports write the method's name in prose (e.g. "Full-Context"); None: its ``name``.
    title: ClassVar[str | None] = None
    # True for the method ``workbench eval`` runs when no ``--method`` is named (one registered method says so).
    default_choice: ClassVar[bool] = False
    # The method's own census (``census_kit.CensusSpec``: its mechanism counters, the counts the app header
    # shows, how it is checked against planted phenomena), run by the generic ``workbench.eval.mechanisms``;
    # None: the method gets the counts every method has (questions, failures) and nothing else.
    census: ClassVar["CensusSpec | None"] = None
    # How the trace views summarise each of the method's step kinds: step kind -> a card kind of the views'
    # vocabulary (``widgets.trace_cards.CARD_KINDS``: e.g. ``evidence_gaps`` for a step rewriting evidence and
    # gap lists, ``verdict`` for a judge's verdict). A step kind not declared gets the card its kind gets by
    # default, else the generic card (every field of the step).
    step_cards: ClassVar[dict[str, str]] = {}
    # The kind of view the Structures tab draws the method's saved structures with (``widgets.structure_cards``
    # and the ``*_views`` modules: e.g. ``tree_and_graph``, ``clusters``, ``chunks``, ``fact_list``). None: a
    # generic view of its structures.json.
    structure_view: ClassVar[str | None] = None
    # Functions that view calls to recompute what the method decided from its saved structures (RecMem's
    # ``clusters`` view replays the trigger gate at other thresholds): name -> callable. {}: the view needs none.
    # ``readable`` (any view kind): a unit's stored text as a person reads it (``registry.readable_text``).
    structure_hooks: ClassVar[dict] = {}
    # The method's part of ``workbench calibrate`` (``calibration.CalibrationHook``, in its folder's
    # calibration.py): the embedder its paper's thresholds belong to, how they are mapped onto another one,
    # and what is deliberately left alone. None: no embedder-cosine threshold to calibrate.
    calibration: ClassVar[object] = None  # a workbench.methods.calibration.CalibrationHook
    # The embedder (and reranker) its paper ran with (``components.PaperComponents``): ``--embedder auto`` uses
    # them where an endpoint serves them, and any other embedder or reranker is listed as a departure. None:
    # the method has no paper of its own (the baselines).
    components: ClassVar[object] = None  # a workbench.methods.components.PaperComponents
    # Its paper's headline tables (``paper_tables.PaperTable``, in its folder's paper_tables.py): what ``workbench
    # reproduce`` runs and prints beside the run's figures. (): none.
    paper_tables: ClassVar[tuple] = ()
    # What the method does in two plain sentences, its pipeline diagram and, where one was written, its
    # mechanism-gallery example with the right outcome (``explain.HowItWorks``, in its folder's how_it_works.py):
    # the app's "How it works" page, the method notebook's diagram and ``workbench.gallery`` read it. None: no page.
    how_it_works: ClassVar[object] = None  # a workbench.methods.explain.HowItWorks
    # The rows of the method's paper's ablation tables by name (``Ablation``: parameter overrides and the row's
    # source), declared in its folder; ``Method.ablation(name, llm=..., embedder=...)`` builds one. {}: none.
    ablations: ClassVar[dict[str, Ablation]] = {}

    # -- profiles (workbench.methods.profile) ----------------------------------------------------
    def _apply_profile(self, profile: str, llm=None) -> None:
        """Store the resolved profile (``auto`` -> ``paper``/``small`` for ``llm``) in ``self.profile`` and give
        each parameter still at ``PROFILE`` the profile's value. Each profiled method's ``__init__`` ends with it."""
        self.profile = resolve_profile(profile, llm)
        values = type(self).profiles.get(self.profile, {})
        for name in self._param_names():
            if getattr(self, name, None) is PROFILE:
                if name not in values:
                    raise TypeError(f"{type(self).__name__}.profiles[{self.profile!r}] gives no value for {name!r}")
                setattr(self, name, values[name])

    @classmethod
    def paper_params(cls) -> dict:
        """The paper's configuration: the paper profile's values over the signature defaults (services and
        ``profile`` left out). A method without profiles: its defaults."""
        out = {k: v for k, v in cls._defaults().items()
               if k not in SERVICE_PARAMS and k != "profile" and v is not inspect.Parameter.empty}
        return {**out, **cls.profiles.get("paper", {})}

    @classmethod
    def _departure_notes(cls, params: Mapping, dataset: str | None = None) -> dict[str, tuple[Any, str]]:
        """``param -> (value, note)`` for each value in ``params`` (a method's parameters or a saved config)
        that is not the paper's: a value ``value_notes`` names, or -- for a method with profiles -- any value
        other than ``paper_params()``'s, noted with ``profile_notes`` (the small profile's aids). ``dataset``:
        the run's, for a method whose paper sets some values per dataset (RecMem); the others ignore it."""
        if not isinstance(params, Mapping):
            return {}
        paper = cls.paper_params() if cls.profiles else {}
        out = {}
        for key, value in params.items():
            value = _comparable(value)
            if not isinstance(value, (str, int, float, bool, tuple, type(None))):
                continue
            note = cls.value_notes.get(key, {}).get(value) if _hashable(value) else None
            if note is None and key in paper and _comparable(paper[key]) != value:
                note = cls.profile_notes.get(key) or f"the paper profile has {paper[key]!r}"
            if note is not None:
                out[key] = (value, note)
        if cls.components is not None and "embedder" in params:
            from .components import component_departures
            out.update(component_departures(cls.components, embedder=_service_name(params.get("embedder")),
                                            reranker=_service_name(params.get("reranker"))))
        return out

    @property
    def param_notes(self) -> dict[str, str]:
        """``param -> note`` for each parameter of this instance that leaves the paper's method: empty for
        ``profile="paper"`` at its defaults on the paper's embedder (and reranker, ``components``); the ``small``
        profile lists each of its aids, and any other embedder or a missing reranker is listed under
        ``embedder`` / ``reranker``."""
        return {k: note for k, (_, note) in
                self._departure_notes(self.get_params(), getattr(self, "dataset_preset_", None)).items()}

    @classmethod
    def departures(cls, params: dict, dataset: str | None = None) -> list[str]:
        """``param = value: note`` for each value in ``params`` (e.g. a saved run's parameters) that is not the
        paper's (``_departure_notes``): what the run header, the report and the manifest list."""
        return [f"{k} = {v!r}: {note}" for k, (v, note) in cls._departure_notes(params, dataset).items()]

    @classmethod
    def ablation_params(cls, name: str) -> dict:
        """The parameter overrides of the paper's ablation ``name`` (``ablations``; case, spaces, "/", "-" and
        "_" are ignored). An unknown name raises ``ValueError`` listing the valid ones."""
        key = _ablation_key(name)
        for label, row in cls.ablations.items():
            if _ablation_key(label) == key:
                return dict(row.params)
        valid = ", ".join(repr(n) for n in cls.ablations) or "none: the class declares no ablations"
        raise ValueError(f"unknown {cls.__name__} ablation {name!r}; valid names: {valid}")

    @classmethod
    def ablation(cls, name: str, **params) -> "MemoryMethod":
        """An unbuilt instance configured as the paper's ablation ``name`` (``ablations``), with ``params``
        (services, other settings) on top: ``RecMem.ablation("w/o episodic", llm=llm, embedder=emb)``.
        A ``params`` key that an ablation also sets wins, so check ``ablation_params(name)`` before overriding."""
        return cls(**{**cls.ablation_params(name), **params})

    # -- parameters (scikit-learn style) -------------------------------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        names = []
        for p in sig.parameters.values():
            if p.name == "self":
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"{cls.__name__}.__init__ must not take *args/**kwargs")
            names.append(p.name)
        return names

    @classmethod
    def _defaults(cls) -> dict:
        sig = inspect.signature(cls.__init__)
        return {p.name: p.default for p in sig.parameters.values() if p.name != "self"}

    def get_params(self, deep: bool = False) -> dict:
        return {n: getattr(self, n) for n in self._param_names()}

    def set_params(self, **params) -> "MemoryMethod":
        """Set parameters (scikit-learn style). Changing ``profile`` also moves every profile parameter still at
        the old profile's value to the new profile's (``_reprofiled``); one set away from it is kept."""
        valid = self._param_names()
        for key in params:
            if key not in valid:
                raise ValueError(f"invalid parameter {key!r} for {type(self).__name__}; valid: {valid}")
        for key, value in self._reprofiled(params).items():
            setattr(self, key, value)
        return self

    def _reprofiled(self, params: dict) -> dict:
        """``params`` plus, when they change ``profile``, the new profile's value of each profile parameter that
        ``params`` leaves alone and that still holds the old profile's value; ``profile`` itself resolved."""
        cls = type(self)
        if "profile" not in params or not cls.profiles:
            return params
        new = resolve_profile(params["profile"], params.get("llm", getattr(self, "llm", None)))
        old_values, new_values = cls.profiles.get(getattr(self, "profile", None), {}), cls.profiles[new]
        out = {**params, "profile": new}
        for key, value in new_values.items():
            unchanged = key in old_values and _comparable(getattr(self, key, None)) == _comparable(old_values[key])
            if key not in params and unchanged:
                out[key] = value
        return out

    def clone(self, **overrides) -> "MemoryMethod":
        """An unbuilt copy with the same parameters (services shared), optionally overridden (``profile=``
        moves the parameters still at the old profile's values, as ``set_params``); a ``labelled`` method's copy
        keeps its label."""
        out = type(self)(**{**self.get_params(), **self._reprofiled(overrides)})
        if "name" in self.__dict__:
            out.name = self.name
        return out

    def labelled(self, variant: str) -> "MemoryMethod":
        """Run this method under the name ``<name>[<variant>]`` (e.g. ``ama[probe]``): its result rows,
        saved memories and census entry are its own, so two configurations of one method sit side by
        side in one run directory. Readers that dispatch on the method (census, structure views,
        trace cards, loading) use ``method_base``. Returns ``self``."""
        if not isinstance(variant, str) or not VARIANT.fullmatch(variant):
            raise ValueError(f"variant label must match {VARIANT.pattern!r}, got {variant!r}")
        self.name = f"{type(self).name}[{variant}]"
        return self

    def config(self) -> dict:
        """JSON-able parameters: services replaced by their model/name."""
        out = {}
        for k, v in self.get_params().items():
            if k == "reranker" and v is None:
                continue  # no reranker: the configuration (and its hash) a method had before rerankers existed
            if k in SERVICE_PARAMS:
                out[k] = (getattr(v, "model", None) or getattr(v, "name", None)) if v is not None else None
            elif isinstance(v, MemoryMethod):
                out[k] = {"method": v.name, **v.config()}
            elif hasattr(v, "name") and not isinstance(v, (str, int, float, bool, type(None), list, tuple, dict)):
                out[k] = getattr(v, "name")
            else:
                out[k] = v
        return json.loads(json.dumps(out, default=str))

    def params_hash(self) -> str:
        """Stable hash of the configuration (used to key results and saved memories)."""
        blob = json.dumps({"method": self.name, **self.config()}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def __repr__(self) -> str:
        defaults = self._defaults()
        profiled = type(self).profiles.get(getattr(self, "profile", None), {})
        defaults.update({k: profiled[k] for k, v in defaults.items() if v is PROFILE and k in profiled})
        parts = []
        for k, v in self.get_params().items():
            if k in SERVICE_PARAMS:
                if v is not None:
                    parts.append(f"{k}={_service_repr(v)}")
            elif defaults.get(k, inspect.Parameter.empty) != v:
                parts.append(f"{k}={v!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    # -- building --------------------------------------------------------------------------------
    def ingest(self, conversation: Conversation) -> "MemoryMethod":
        """Build memory from a conversation, from scratch. Gold QA is stripped before the method sees it."""
        if not isinstance(conversation, Conversation):
            raise TypeError(f"ingest() takes a Conversation, got {type(conversation).__name__}")
        self._validate_params()
        if "answer_prompt" in self._param_names():  # fair-arena switch (answer_prompt.py)
            check_answer_prompt(self.answer_prompt)
        conv = conversation.without_qa()
        self.events_: list[MemoryEvent] = []
        self.conversation_ = conv
        self._reset()
        with llm_tags(method=self.name, phase="construct"), track() as calls, \
                ingest_progress(f"{self.name}: ingest {conv.id}", len(conv.turns)):
            self._build(conv)
        self.construction_usage_ = Usage.total(c.usage for c in calls)
        self.construction_calls_ = len(calls)
        return self

    def _advance(self, turns: int = 1) -> None:
        """Progress hook: ``_build`` reports turns processed (a per-turn bar with ETA when shown)."""
        advance(turns)

    def _validate_params(self) -> None:
        """Check parameter values (called by ``ingest``; ``__init__`` does no validation)."""
        if "llm" in self._param_names() and getattr(self, "llm", None) is None:
            raise ValueError(f"{type(self).__name__} needs llm=... (see workbench.llm.default_llm)")
        if "embedder" in self._param_names() and getattr(self, "embedder", None) is None:
            raise ValueError(f"{type(self).__name__} needs embedder=... (see workbench.embed)")

    def _reset(self) -> None:
        """Clear built state before a new ingest (subclasses override)."""

    def _build(self, conv: Conversation) -> None:
        raise NotImplementedError

    @property
    def is_ingested(self) -> bool:
        return hasattr(self, "conversation_")

    def _check_ingested(self) -> None:
        if not self.is_ingested:
            raise NotIngestedError(f"{type(self).__name__}: call ingest(conversation) first")

    # -- answering -------------------------------------------------------------------------------
    def answer(self, question: str, *, now: datetime | None = None) -> Answer:
        """Answer from memory. ``now`` is when the question is asked (LongMemEval's question date)."""
        self._check_ingested()
        if not isinstance(question, str) or not question.strip():
            raise ValueError("question must be a non-empty string")
        with llm_tags(method=self.name, phase="query"), track() as calls:
            ans = self._answer(question, now=now)
        return replace(ans, usage=Usage.total(c.usage for c in calls), method=self.name)

    def _answer(self, question: str, *, now: datetime | None) -> Answer:
        raise NotImplementedError

    @property
    def order_dependent(self) -> bool:
        """True when answering can edit the memory later questions see, so that answers depend on
        question order (AMA with ``refresh_on_query``); run manifests state it."""
        return False

    @classmethod
    def uses_question_date(cls, dataset_kind: str) -> bool:
        """Whether the harness passes the question date on this benchmark (``QA.dataset_kind``)."""
        return dataset_kind in cls.question_date_datasets

    @classmethod
    def question_date_policy(cls) -> dict[str, bool]:
        """``{"locomo": bool, "longmemeval": bool}``: what a run manifest states about ``now``."""
        from ..data.types import DATASET_KINDS

        return {kind: cls.uses_question_date(kind) for kind in DATASET_KINDS}

    @contextmanager
    def step(self, steps: list[Step], kind: str, title: str) -> Iterator[StepBuilder]:
        """Record one decision: calls made inside the block are attached to the step."""
        builder = StepBuilder(kind, title)
        with track() as calls:
            yield builder
        steps.append(Step(builder.kind, builder.title, builder.data, tuple(builder.hits), tuple(calls)))

    # -- inspection ------------------------------------------------------------------------------
    def memories(self):
        """One row per stored unit: id, kind, text, source_ids, time, plus method-specific columns."""
        import pandas as pd

        self._check_ingested()
        rows = self._units()
        base = ["id", "kind", "text", "source_ids", "time"]
        extra = sorted({k for r in rows for k in r} - set(base))
        return pd.DataFrame(rows, columns=base + extra)

    def _units(self) -> list[dict]:
        raise NotImplementedError

    @property
    def events(self) -> tuple[MemoryEvent, ...]:
        return tuple(getattr(self, "events_", ()))

    def _emit(self, kind: str, unit_id: str, *, before: str | None = None, after: str | None = None,
              cause: str = "", source_ids=(), time=None, **data) -> MemoryEvent:
        event = MemoryEvent(len(self.events_), kind, unit_id, before, after, cause, tuple(source_ids),
                            time, self.name, data)
        self.events_.append(event)
        return event

    def as_retriever(self):
        """A ``Retriever`` over this method's memory (MemR3 and comparisons drive it)."""
        raise NotImplementedError(f"{type(self).__name__} does not expose a retriever")

    # -- report figures --------------------------------------------------------------------------
    @staticmethod
    def summary_stats(answers: Sequence[Answer]) -> dict:
        """The method's own decision figures, from saved answer traces alone (no memory, no LLM):
        AMA's Retry/Refresh counts, H-Mem's scopes and follow-ups, MemR3's iterations and guards, ...
        ``{}`` for a method with none beyond the harness's common columns (the baselines)."""
        return {}

    # -- persistence -----------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write ``params.json`` (readable), ``state.pkl`` (built state; services excluded) and
        ``state.sig`` (this machine's signature of the pickle, see ``workbench.trust``).

        The state stays a pickle because it holds arbitrary method structures (trees, graphs,
        FAISS-backed stores); ``load`` refuses a pickle this machine did not sign unless told
        ``trust=True``.
        """
        self._check_ingested()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path / "params.json", json.dumps({"method": self.name, "class": type(self).__name__,
                                                            "params": self.config(), "version": __version__},
                                                           indent=2, sort_keys=True))
        state = {k: v for k, v in self.__dict__.items() if k.endswith("_") and not k.startswith("_")}
        data = pickle.dumps(state)
        tmp = path / "state.pkl.tmp"
        tmp.write_bytes(data)
        tmp.replace(path / "state.pkl")
        write_signature(path, data)
        return path

    @classmethod
    def load(cls, path: str | Path, *, llm=None, embedder=None, reranker=None, trust: bool = False,
             **params) -> "MemoryMethod":
        """Rebuild a saved method without any LLM call; pass services (and any non-JSON params).

        ``state.pkl`` is a pickle, and unpickling can run code: unless ``trust=True`` it is loaded
        only when this machine signed it (saved here, unchanged), else ``UntrustedStateError``.
        Memories saved before the methods became subpackages still load (``moved.MOVED_MODULES``);
        a class this version lacks raises ``moved.SavedStateError`` naming the saving version.
        """
        path = Path(path)
        meta = read_json(path / "params.json")  # bounded and strict: the folder may come from elsewhere
        if method_base(meta["method"]) != cls.name and cls is not MemoryMethod:
            raise ValueError(f"{path} holds a {meta['method']} memory, not {cls.name}")
        saved = {k: v for k, v in meta["params"].items() if k not in SERVICE_PARAMS and not isinstance(v, dict)}
        names = cls._param_names()
        kwargs = {k: v for k, v in {**saved, **params}.items() if k in names}
        if cls.profiles and "profile" not in kwargs:  # saved before profiles: those defaults are the small profile's
            kwargs["profile"] = "small"
        if "llm" in names:
            kwargs["llm"] = llm
        if "embedder" in names:
            kwargs["embedder"] = embedder
        if "reranker" in names:
            kwargs["reranker"] = reranker
        tuples = {k for k, d in cls._defaults().items() if isinstance(d, tuple)}
        tuples |= {k for values in cls.profiles.values() for k, d in values.items() if isinstance(d, tuple)}
        for k, v in kwargs.items():
            if isinstance(v, list) and k in tuples:
                kwargs[k] = tuple(v)
        data = (path / "state.pkl").read_bytes()
        if not trust:
            check_signature(path, data)
        obj = cls(**kwargs)
        obj.__dict__.update(load_state(data, saved_by=meta.get("version")))
        obj._restore_services()
        if meta["method"] != cls.name and cls is not MemoryMethod:
            obj.labelled(meta["method"][len(cls.name) + 1:-1])  # a labelled variant keeps its name
        return obj

    def _restore_services(self) -> None:
        """Re-attach the embedder to stores after unpickling (stores drop it when pickled)."""
        from .store import UnitStore

        def visit(value, depth=0):
            if isinstance(value, UnitStore):
                value.embedder = self.embedder
            elif depth < 2 and isinstance(value, dict):
                for v in value.values():
                    visit(v, depth + 1)
            elif depth < 2 and isinstance(value, (list, tuple)):
                for v in value:
                    visit(v, depth + 1)

        for k, v in self.__dict__.items():
            if k.endswith("_"):
                visit(v)
