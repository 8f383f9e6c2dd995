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

import inspect
import re
from typing import Callable, Sequence

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
}

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def check_declarations(make: C.MakeMethod, conv: Conversation) -> None:
    """The class-level attributes the harness and the generic views read have the documented shapes."""
    cls = type(make())
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
    services = {k: v for k, v in make().get_params().items() if k in ("llm", "embedder")}
    paper, small = cls(**services, profile="paper"), cls(**services, profile="small")
    assert paper.profile == "paper" and small.profile == "small"
    own = parameter_notes(paper.param_notes)  # the embedder and reranker in use are judged apart (components)
    assert own == {}, (
        f"{cls.__name__}(profile='paper').param_notes must list no parameter, got {own}")
    missing = aids - set(small.param_notes)
    assert not missing, f"{cls.__name__}(profile='small').param_notes must list its aids; missing {sorted(missing)}"


CHECKS: list[Callable] = [check_declarations, *C.CHECKS]


class ContractError(AssertionError):
    """One or more contract checks failed; ``failures`` is ``[(check name, what it asks, what happened)]``."""

    def __init__(self, cls: type, failures: list[tuple[str, str, str]], total: int):
        self.failures = failures
        lines = [f"{cls.__module__}.{cls.__qualname__} fails {len(failures)} of {total} method contract checks "
                 "(docs/method-contract.md):"]
        for name, asks, what in failures:
            lines.append(f"- {name}: the contract asks that {asks}.\n    Failed: {what}")
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


def check_method(cls: type[MemoryMethod], *, make: C.MakeMethod | None = None,
                 conversation: Conversation | None = None, checks: Sequence[Callable] | None = None) -> None:
    """Run every contract check on ``cls``; return None when all pass, else raise ``ContractError`` listing
    each failure with what the contract asks."""
    if not (isinstance(cls, type) and issubclass(cls, MemoryMethod)):
        raise TypeError(f"check_method takes a MemoryMethod subclass, got {cls!r}")
    if conversation is None:
        from ..data import load_sample

        conversation = load_sample("tiny_conversation")[0]
    make = make or default_make(cls)
    checks = list(CHECKS if checks is None else checks)
    failures = []
    for check in checks:
        try:
            check(make, conversation)
        except Exception as exc:  # a check's failure (assertion or crash) is reported, never swallowed
            what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            failures.append((check.__name__, ASKS.get(check.__name__, "(see the check's source)"), what))
    if failures:
        raise ContractError(cls, failures, len(checks))
