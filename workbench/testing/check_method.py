"""``check_method(cls)``: run the method contract on any class, as scikit-learn's ``check_estimator`` does.

The contract (docs/method-contract.md) is what every view, the harness and the census rely on; the checks
are ``workbench.testing.contract.CHECKS`` plus ``check_declarations`` here (the class-level attributes the
generic views read). ``check_method`` runs them all and, when any fails, raises one ``ContractError`` that
lists each failed check with what the contract asks and what happened, so a method author sees every
problem at once rather than the first assertion.

By default each check builds fresh instances with a ``ScriptedLLM`` that answers any call with a minimal
reply valid for its schema (``default="auto"``) and a ``HashEmbedder``, passed only if ``__init__`` takes
``llm`` / ``embedder``; a method whose prompts need meaningful replies to build anything passes ``make``,
a function returning a fresh, unbuilt instance. The conversation is the tiny sample unless one is given.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

from ..data import Conversation
from ..methods.components import parameter_notes
from ..methods.base import Ablation, MemoryMethod
from . import contract as C

#: what each check asks of a method, in the words docs/method-contract.md uses
ASKS: dict[str, str] = {
    "check_declarations": "the class sets its own `name` (lowercase, letters, digits and _), and its optional "
                          "declarations have the documented types (each of its `ablations` an `Ablation` whose "
                          "overrides name parameters of `__init__`)",
    "check_init_stores_params_verbatim": "`__init__` takes keyword-only parameters, stores each unchanged under its "
                                         "own name, and builds nothing (no attribute ending in `_`)",
    "check_params_round_trip": "`get_params`/`clone`/`repr`/`params_hash` agree (a clone has the same parameters, "
                               "repr and hash), parameters are keyword-only, and `set_params` refuses unknown ones",
    "check_answer_before_ingest_raises": "`answer` before `ingest` raises NotIngestedError",
    "check_ingest_then_answer": "`ingest(conversation)` returns the method, then `answer(question)` returns an "
                                "Answer whose text is a string and whose every LLM call sits in one of its steps",
    "check_trace_json_round_trip": "an Answer and every memory event survive a JSON round trip unchanged",
    "check_units_have_provenance": "`ingest` stores something, and every unit `memories()` lists and every event "
                                   "cites the ids of turns of the conversation it came from",
    "check_context_hits_have_provenance": "every hit in an answer's context names the turns of the conversation it "
                                          "came from",
    "check_reingest_resets_state": "a second `ingest` starts from scratch (as many units and events, not more)",
    "check_ingest_never_sees_labels": "the method keeps no gold QA, and `answer` takes only `question` and `now`",
    "check_save_load": "`save(path)` then `load(path)` gives the same memory, events and repr",
    "check_retriever": "`as_retriever()`, if the method offers one, returns at most k hits and masks the ids in "
                       "`exclude`",
    "check_no_gold_reaches_method": "no gold label reaches a prompt or the memory",
    "check_summary_stats": "`summary_stats` is a static method returning a JSON-able dict from saved traces alone",
    "check_structures_json": "`structures()`, if the method has it, returns plain JSON (objects with string keys, "
                             "lists, strings, finite numbers, booleans, null): structures.json feeds the Structures "
                             "tab and the census; each part it declares by kind is valid for its kind "
                             "(`workbench.structures`)",
    "check_census_runs": "the declared `census` counts a tiny scripted run without raising, its `check` picks its "
                         "input from it, and its `headline` and `problems` name counts it makes",
    "check_construct": "the class can be built with the default services (a scripted LLM, a hash embedder)",
}

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _class_of(make: C.MakeMethod) -> type:
    """The class ``make`` builds: named by ``check_method``'s factory without building one (so a class that cannot
    be built still has its declarations checked, and the cause is reported once), else from an instance."""
    cls = getattr(make, "method_class", None)
    return cls if cls is not None else type(make())


def check_declarations(make: C.MakeMethod, conv: Conversation) -> None:
    """The class-level attributes the harness and the generic views read have the documented shapes, and the
    names they give (card and view kinds, a gallery id, prompt modules) exist."""
    cls = _class_of(make)
    assert cls.name != MemoryMethod.name and _NAME.match(str(cls.name)), (
        f"{cls.__name__}.name = {cls.name!r}: set a lowercase name of letters, digits and _ (it names result rows, "
        "saved memories and the CLI's --method)")
    for attr in ("per_session_roles", "whole_conversation_roles"):
        value = getattr(cls, attr)
        assert isinstance(value, frozenset) and all(isinstance(v, str) for v in value), (
            f"{cls.__name__}.{attr} must be a frozenset of step names, got {value!r}")
    labels = cls.category_labels
    assert labels is None or (isinstance(labels, dict) and set(labels) == {1, 2, 3, 4, 5}
                              and all(isinstance(v, str) for v in labels.values())), (
        f"{cls.__name__}.category_labels must be None or a label for each LoCoMo category 1-5, got {labels!r}")
    assert isinstance(cls.value_notes, dict) and all(isinstance(v, dict) for v in cls.value_notes.values()), (
        f"{cls.__name__}.value_notes must map parameters to {{value: note}} dicts")
    _check_profiles(cls, make)
    assert isinstance(cls.step_cards, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in cls.step_cards.items()), (
        f"{cls.__name__}.step_cards must map step kinds to card kinds (strings), got {cls.step_cards!r}")
    for attr in ("structure_view", "title"):
        value = getattr(cls, attr)
        assert value is None or isinstance(value, str), f"{cls.__name__}.{attr} must be None or a string"
    from ..methods.census_kit import CensusSpec
    assert cls.census is None or isinstance(cls.census, CensusSpec), (
        f"{cls.__name__}.census must be None or a workbench.methods.census_kit.CensusSpec")
    from ..methods.explain import HowItWorks
    assert cls.how_it_works is None or isinstance(cls.how_it_works, HowItWorks), (
        f"{cls.__name__}.how_it_works must be None or a workbench.methods.explain.HowItWorks")
    assert isinstance(cls.prompt_modules, tuple), f"{cls.__name__}.prompt_modules must be a tuple of module names"
    assert isinstance(cls.ablations, dict), f"{cls.__name__}.ablations must be a dict of name -> Ablation"
    params = set(cls._param_names())
    for label, row in cls.ablations.items():
        assert isinstance(label, str) and isinstance(row, Ablation) and isinstance(row.source, str) and row.source, (
            f"{cls.__name__}.ablations[{label!r}] must be an Ablation(params, source) with its source named")
        unknown = set(row.params) - params
        assert not unknown, f"{cls.__name__}.ablations[{label!r}] sets {sorted(unknown)}, not parameters of __init__"
    _check_named_kinds(cls)
    _check_prompt_modules(cls)
    _check_gallery(cls)
    _check_answer_prompt(cls, make)


def _check_profiles(cls, make: C.MakeMethod) -> None:
    """A method with ``profiles`` has exactly ``paper`` and ``small``, each giving a value to every ``PROFILE``
    parameter and nothing else; each small value that is not the paper's says why (``profile_notes``); the paper
    profile has no departures and the small one lists each of its aids (``param_notes``)."""
    from ..methods.profile import PROFILE, PROFILE_NAMES

    defaults = cls._defaults()
    placeholders = {k for k, v in defaults.items() if v is PROFILE}
    if not cls.profiles:
        assert not placeholders, f"{cls.__name__}: {sorted(placeholders)} default to PROFILE but profiles is empty"
        return
    assert set(cls.profiles) == set(PROFILE_NAMES), (
        f"{cls.__name__}.profiles must have exactly {PROFILE_NAMES}, got {sorted(cls.profiles)}")
    assert "profile" in defaults, f"{cls.__name__}.__init__ must take profile= (workbench.methods.profile)"
    for name, values in cls.profiles.items():
        assert set(values) == placeholders, (
            f"{cls.__name__}.profiles[{name!r}] must give exactly the PROFILE parameters {sorted(placeholders)}; "
            f"missing {sorted(placeholders - set(values))}, extra {sorted(set(values) - placeholders)}")
    aids = {k for k in placeholders if cls.profiles["small"][k] != cls.profiles["paper"][k]}
    unexplained = aids - set(cls.profile_notes)
    assert not unexplained, f"{cls.__name__}.profile_notes must say why small departs on {sorted(unexplained)}"
    assert set(cls.profile_prompt_modules) <= set(PROFILE_NAMES), (
        f"{cls.__name__}.profile_prompt_modules keys must be profile names, got {sorted(cls.profile_prompt_modules)}")
    services = _services(cls, make)
    built = {}
    for name in PROFILE_NAMES:
        try:
            built[name] = cls(**services, profile=name)
        except Exception as exc:  # the tables' shape is checked above: say what building one raised
            raise AssertionError(f"{cls.__name__}(profile={name!r}) raised {type(exc).__name__}: {exc}; fix "
                                 f"{cls.__name__}.profiles[{name!r}] or __init__'s self._apply_profile") from exc
    paper, small = built["paper"], built["small"]
    assert paper.profile == "paper" and small.profile == "small"
    own = parameter_notes(paper.param_notes)  # the embedder and reranker in use are judged apart (components)
    assert own == {}, (
        f"{cls.__name__}(profile='paper').param_notes must list no parameter, got {own}")
    missing = aids - set(small.param_notes)
    assert not missing, f"{cls.__name__}(profile='small').param_notes must list its aids; missing {sorted(missing)}"


def _services(cls, make: C.MakeMethod) -> dict:
    """The services (LLM, embedder) the factory gives, for building other configurations of the class."""
    return {k: v for k, v in make().get_params().items() if k in ("llm", "embedder")}


@lru_cache(maxsize=1)
def view_vocabulary() -> tuple[frozenset | None, frozenset | None]:
    """``(card kinds, structure view kinds)`` the installed views know, or None for each the views do not
    offer here (no ``widgets`` package installed: nothing draws, so nothing to check against).

    Read from the views' source, never imported: ``widgets`` imports Panel, which the core (and so
    ``check_method``) never loads. Card kinds are the keys of ``widgets/trace_cards.py``'s ``CARD_KINDS``;
    structure view kinds the keys of ``widgets/structure_cards.py``'s ``CARDS`` and each name given to
    ``register_structure_view("...")`` in the widgets modules."""
    try:
        spec = importlib.util.find_spec("widgets")
    except (ImportError, ValueError):
        spec = None
    roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec is not None else []
    root = next((r for r in roots if (r / "trace_cards.py").is_file()), None)
    if root is None:
        return None, None
    cards = _dict_keys(root / "trace_cards.py", "CARD_KINDS")
    views = set(_dict_keys(root / "structure_cards.py", "CARDS") or ())
    for path in [*root.glob("*.py"), *root.glob("tabs/*.py")]:
        views |= _registered_views(path)
    return cards, frozenset(views) if views else None


def _parse(path: Path):
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


def _dict_keys(path: Path, name: str) -> frozenset | None:
    tree = _parse(path)
    for node in ast.walk(tree) if tree is not None else ():
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == name and isinstance(node.value, ast.Dict):
            return frozenset(k.value for k in node.value.keys
                             if isinstance(k, ast.Constant) and isinstance(k.value, str))
    return None


def _registered_views(path: Path) -> set[str]:
    tree = _parse(path)
    out = set()
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == \
                "register_structure_view" and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            out.add(node.args[0].value)
    return out


def _check_named_kinds(cls) -> None:
    """``step_cards`` values and ``structure_view`` name kinds the installed views know."""
    cards, views = view_vocabulary()
    if cards is not None:
        unknown = {k: v for k, v in cls.step_cards.items() if v not in cards}
        assert not unknown, (f"{cls.__name__}.step_cards names unknown card kind(s) {unknown}: use one of "
                             f"{', '.join(sorted(cards))} (widgets.trace_cards.CARD_KINDS), or leave the step out "
                             "for the generic card")
    if views is not None and cls.structure_view is not None:
        assert cls.structure_view in views, (
            f"{cls.__name__}.structure_view = {cls.structure_view!r} is no structure view kind: use one of "
            f"{', '.join(sorted(views))}, or None for the generic view of structures.json")


def _check_prompt_modules(cls) -> None:
    """Each ``prompt_modules`` entry (dotted, relative to ``workbench.methods``, as the manifest's prompt hashes read
    it) imports: a run hashes its prompt constants to know which rows a prompt change must answer again."""
    import workbench.methods as pkg

    modules = [*cls.prompt_modules, *(m for ms in cls.profile_prompt_modules.values() for m in ms)]
    for mod in modules:
        assert isinstance(mod, str) and mod, f"{cls.__name__}.prompt_modules must name modules (strings), got {mod!r}"
        try:
            importlib.import_module(f"{pkg.__name__}.{mod}")
        except Exception as exc:  # named in the failure: a run could not hash this module's prompts
            absolute = importlib.util.find_spec(mod.split(".")[0]) is not None
            raise AssertionError(
                f"{cls.__name__}.prompt_modules names {mod!r}, but {pkg.__name__}.{mod} cannot be imported "
                f"({type(exc).__name__}: {exc}): entries are relative to {pkg.__name__}"
                + (f"; {mod!r} is an absolute module name, which runs cannot hash yet: leave prompt_modules "
                   "empty to hash the class's own module" if absolute else "")) from None


def _check_gallery(cls) -> None:
    """A ``how_it_works`` gallery example names a conversation of ``--data gallery``."""
    hiw = cls.how_it_works
    gallery = getattr(hiw, "gallery", None)
    if gallery is None:
        return
    from ..data import load_locomo, load_sample
    from ..methods.registry import resource_file

    ids = [c.id for c in load_sample("gallery_conversations").conversations]
    own = resource_file(cls, "gallery_conversations.json")  # a plugin's own gallery (a bad declaration raises)
    if own is not None:
        ids += [c.id for c in load_locomo(own).conversations if c.id not in ids]
    assert gallery in ids, (f"{cls.__name__}.how_it_works.gallery = {gallery!r} is no conversation of --data "
                            f"gallery or of its own resources: use one of {', '.join(ids)}, or gallery=None")
    params = set(cls._param_names())
    unknown = set(getattr(hiw, "gallery_params", {}) or {}) - params
    assert not unknown, (f"{cls.__name__}.how_it_works.gallery_params sets {sorted(unknown)}, not parameters of "
                         "__init__")


def _check_answer_prompt(cls, make: C.MakeMethod) -> None:
    """A method that answers with an LLM takes ``answer_prompt`` (``native`` | ``shared``), so that ``--fair``
    (every method answering with the one shared prompt) can run it."""
    if "llm" not in cls._param_names():
        return
    assert "answer_prompt" in cls._param_names(), (
        f"{cls.__name__}.__init__ takes no answer_prompt, so --fair cannot run it: add answer_prompt: str = "
        "\"native\" and, when it is \"shared\", write the final answer with "
        "workbench.methods.answer_prompt.shared_answer")
    try:
        shared = cls(**_services(cls, make), answer_prompt="shared")
    except Exception as exc:
        raise AssertionError(f"{cls.__name__}(answer_prompt='shared') raised {type(exc).__name__}: {exc}; --fair "
                             "builds every method so") from None
    assert shared.answer_prompt == "shared", f"{cls.__name__}.__init__ must store answer_prompt as given"


def _not_json(value: Any, where: str = "") -> str | None:
    """Where ``value`` first stops being plain JSON, and what is there; None when it is plain JSON."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where or 'the value'} is {value!r} (not a JSON number)"
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                return f"{where or 'an object'} has the key {k!r} ({type(k).__name__}; JSON keys are strings)"
            found = _not_json(v, f"{where}[{k!r}]")
            if found:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = _not_json(v, f"{where}[{i}]")
            if found:
                return found
        return None
    kind = f"{type(value).__module__}.{type(value).__qualname__}".removeprefix("builtins.")
    return f"{where or 'the value'} is a {kind}"


def check_structures_json(make: C.MakeMethod, conv: Conversation) -> None:
    """``structures()`` is plain JSON: the run writes it to structures.json (an object it cannot write turns into
    its ``str``), the census and the Structures tab read it back."""
    m = make().ingest(conv)
    if not hasattr(m, "structures"):
        return
    name = type(m).__name__
    try:
        value = m.structures()
    except Exception as exc:
        raise AssertionError(f"{name}.structures() raised {type(exc).__name__}: {exc} on a built memory") from None
    assert isinstance(value, dict), f"{name}.structures() must return a dict, got {type(value).__name__}"
    where = _not_json(value)
    assert where is None, (f"{name}.structures(){where.split(' ', 1)[0] if where.startswith('[') else ''} is not "
                           f"plain JSON: {where}; return lists, dicts with string keys, strings, finite numbers, "
                           "booleans and None (a numpy array: .tolist(); a datetime: .isoformat())")
    from ..structures import validate_structures

    problems = validate_structures(value)  # the parts it declares by kind (docs/method-contract.md, "Structure kinds")
    assert not problems, (f"{name}.structures() declares a structure part that breaks its kind's format: "
                          + "; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
                          + " (docs/method-contract.md, \"Structure kinds\")")


def check_census_runs(make: C.MakeMethod, conv: Conversation) -> None:
    """The declared census runs on a tiny scripted run: ``count`` raises nothing, ``check``'s pick reads the run,
    ``headline`` and ``problems`` name counts that ``count`` makes (or says it lacks). The rows, traces and memory
    are shaped as ``workbench.eval.mechanisms`` gives them (JSON round-tripped, as read from a run directory)."""
    from ..methods.census_kit import Counts, Memory, Trace

    cls = _class_of(make)
    spec = cls.census
    if spec is None:
        return
    m = make().ingest(conv)
    rows, traces = [], []
    for qa in conv.qa[:2]:
        ans = m.answer(qa.question, now=qa.time)
        answer = json.loads(ans.to_json())
        rows.append({"method": m.name, "params_hash": m.params_hash(), "dataset": "tiny", "qa_id": qa.id,
                     "conv_id": conv.id, "category": qa.category, "category_name": str(qa.category),
                     "question": qa.question, "abstention": False, "gold": qa.answer, "prediction": ans.text,
                     "answer": answer,
                     "params": json.loads(json.dumps(m.config(), default=str)), "scores": {}, "error": None,
                     "failures": []})
        traces.append(Trace([(s.get("kind"), s.get("data", {})) for s in answer.get("steps", [])],
                            answer.get("error"), answer.get("text")))
    structures = m.structures() if hasattr(m, "structures") else {}
    memory = Memory([json.loads(e.to_json()) for e in m.events], json.loads(json.dumps(structures, default=str)),
                    turns={t.id: t.content for t in conv.turns})
    mems = {conv.id: memory}
    counts = Counts()
    where = f"{cls.__name__}.census"
    try:
        spec.count(counts, rows, traces, mems, rows[0]["params"] if rows else {})
    except Exception as exc:
        raise AssertionError(f"{where}.count raised {type(exc).__name__}: {exc} ({_origin(exc)}) on a tiny "
                             "scripted run; it must count any run, putting a count it cannot make with "
                             "counts.lack(name, reason)") from None
    made = set(counts.counts) | set(counts.missing)
    known = made | _count_names(spec.count)
    for attr in ("headline", "problems"):
        unknown = [n for n, _ in getattr(spec, attr)] if getattr(spec, attr) else []
        unknown = [n for n in unknown if n not in known]
        assert not unknown, (f"{where}.{attr} names {unknown}, which count() never puts (this run made "
                             f"{sorted(made) or 'none'}): name a count it puts, or put it in count()")
    if spec.check is not None:
        kind, pick = spec.check
        try:
            pick(rows, traces, mems)
        except Exception as exc:
            raise AssertionError(f"{where}.check ({kind!r}): its pick raised {type(exc).__name__}: {exc} "
                                 f"({_origin(exc)}) on a tiny scripted run; it must read any run") from None


def _count_names(count: Callable) -> set[str]:
    """Names a census could put on some run, read from the source of ``count``'s module and of ``census_kit``: the
    first argument of each ``.put("name", ...)`` / ``.lack("name", ...)``, the ``*_COUNTS`` tuples of
    ``census_kit``, and each string passed to a helper joined with the suffixes ``census_kit``'s helpers append
    (``summaries`` -> ``summaries_cut``). A tiny run does not make every count (no facts, no summaries), so its
    own counts alone would flag names that larger runs make."""
    from ..methods import census_kit

    put, args, suffixes = set(), set(), set()
    for module in {inspect.getmodule(count), census_kit} - {None}:
        try:
            tree = ast.parse(inspect.getsource(module))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                strings = [a.value for a in [*node.args, *(k.value for k in node.keywords)]
                           if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if getattr(node.func, "attr", None) in ("put", "lack") and node.args and \
                        isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    put.add(node.args[0].value)
                args.update(strings)
            elif isinstance(node, ast.JoinedStr) and module is census_kit:
                suffixes.update(v.value for v in node.values if isinstance(v, ast.Constant)
                                and isinstance(v.value, str) and re.fullmatch(r"_[a-z_]+", v.value))
            elif isinstance(node, ast.Assign) and module is census_kit and isinstance(node.value, ast.Tuple) and \
                    any(isinstance(t, ast.Name) and t.id.endswith("_COUNTS") for t in node.targets):
                put.update(e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return put | args | {f"{n}{suf}" for n in args if n.isidentifier() for suf in suffixes}


def _origin(exc: BaseException) -> str:
    """``file:line`` of the innermost frame that raised ``exc``."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}" if tb is not None else "?"


CHECKS: list[Callable] = [check_declarations, *C.CHECKS, check_structures_json, check_census_runs]


class ContractError(AssertionError):
    """One or more contract checks failed; ``failures`` is ``[(check name, what it asks, what happened)]``.

    Its message has one line per failure: the check, what happened (naming the attribute and the fix), then
    what the contract asks. Checks that failed the same way (one cause, such as an ``__init__`` that cannot
    build) share one line."""

    def __init__(self, cls: type, failures: list[tuple[str, str, str]], total: int, not_run: Sequence[str] = ()):
        self.failures = failures
        self.not_run = list(not_run)
        lines = [f"{cls.__module__}.{cls.__qualname__} fails {len(failures)} of {total} method contract checks "
                 "(docs/method-contract.md):"]
        for name, asks, what in failures:
            lines.append(f"- {name}: the contract asks that {asks}.\n    Failed: {what}")
        if self.not_run:
            lines.append(f"({len(self.not_run)} checks need an instance and did not run: "
                         f"{', '.join(self.not_run)})")
        super().__init__("\n".join(lines))


def default_make(cls: type[MemoryMethod]) -> C.MakeMethod:
    """A factory of fresh instances with an auto-answering scripted LLM and a hash embedder, each passed only
    when ``__init__`` takes it."""
    from ..embed import HashEmbedder
    from ..llm import ScriptedLLM

    accepted = inspect.signature(cls.__init__).parameters

    def make() -> MemoryMethod:
        services = {}
        if "llm" in accepted:
            services["llm"] = ScriptedLLM([], default="auto")
        if "embedder" in accepted:
            services["embedder"] = HashEmbedder(dim=128)
        return cls(**services)

    return make


def _what(exc: BaseException) -> str:
    """A failure in words: the assertion's own message, else the exception and where it was raised (never a bare
    "AssertionError")."""
    text = str(exc).strip()
    if isinstance(exc, AssertionError) and text:
        return text
    if isinstance(exc, AssertionError):
        return f"an assertion without a message failed at {_origin(exc)}"
    return f"{type(exc).__name__}: {text} (raised at {_origin(exc)})" if text else \
        f"{type(exc).__name__} raised at {_origin(exc)}"


def check_method(cls: type[MemoryMethod], *, make: C.MakeMethod | None = None,
                 conversation: Conversation | None = None, checks: Sequence[Callable] | None = None) -> None:
    """Run every contract check on ``cls``; return None when all pass, else raise ``ContractError`` listing
    each failure with what the contract asks.

    The class is built once first: when that fails, only the checks that need no instance run (the declarations,
    whose profile tables are the usual cause) and the cause is reported once, not by every check."""
    if not (isinstance(cls, type) and issubclass(cls, MemoryMethod)):
        raise TypeError(f"check_method takes a MemoryMethod subclass, got {cls!r}")
    if conversation is None:
        from ..data import load_sample

        conversation = load_sample("tiny_conversation")[0]
    given = make or default_make(cls)

    def factory() -> MemoryMethod:
        return given()

    factory.method_class = cls  # check_declarations reads the class without building one
    checks = list(CHECKS if checks is None else checks)
    failures: list[tuple[str, str, str]] = []
    not_run: list[str] = []
    try:
        factory()
    except Exception as exc:  # reported once below; the checks that need an instance are not run
        built = exc
    else:
        built = None
    for check in checks:
        if built is not None and check is not check_declarations:
            not_run.append(check.__name__)
            continue
        try:
            check(factory, conversation)
        except Exception as exc:  # a check's failure (assertion or crash) is reported, never swallowed
            failures.append((check.__name__, ASKS.get(check.__name__, "(see the check's source)"), _what(exc)))
    if built is not None and not_run:
        declared = [f for f in failures if f[0] == "check_declarations"]
        cause = _what(built)
        if not (declared and any(cause in f[2] or _same_cause(built, f[2]) for f in declared)):
            failures.append(("check_construct", ASKS["check_construct"],
                             f"{cls.__name__}() with the default services raised: {cause}; fix __init__ (or pass "
                             "make= a factory of working instances)"))
    failures = _merged(failures)
    if failures:
        raise ContractError(cls, failures, len(checks), not_run)


def _same_cause(exc: BaseException, text: str) -> bool:
    """Whether a declarations failure already explains why the class could not be built (a profile table)."""
    return "profiles" in text and ("profile" in str(exc) or isinstance(exc, (TypeError, KeyError)))


def _merged(failures: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Failures with the same message, one entry naming every check that met it."""
    out: dict[str, list] = {}
    for name, asks, what in failures:
        if what in out:
            out[what][0] += f", {name}"
        else:
            out[what] = [name, asks, what]
    return [tuple(v) for v in out.values()]
