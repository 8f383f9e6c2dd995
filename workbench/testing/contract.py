"""The contract every memory method must pass (in the spirit of scikit-learn's ``check_estimator``).

Each check is a small function ``check_x(make_method, conversation)`` where ``make_method()``
returns a fresh, unbuilt method wired to a ``ScriptedLLM`` (or any LLM) and a ``HashEmbedder``.
``CHECKS`` lists them; ``tests/test_contract.py`` runs all of them over every registered method
(one parametrised suite; a method added to the registry without a configuration there fails it).
"""
from __future__ import annotations

import inspect
import json
import tempfile
from dataclasses import replace
from typing import Callable

from ..data import QA, Conversation, Session
from ..data.types import GOLD_TURN_EXTRAS
from ..llm.ledger import track
from ..methods.base import SERVICE_PARAMS, MemoryMethod, NotIngestedError
from ..trace import Answer, MemoryEvent
from ..methods.profile import PROFILE, resolve_profile

MakeMethod = Callable[[], MemoryMethod]


def check_init_stores_params_verbatim(make: MakeMethod, conv: Conversation) -> None:
    """As scikit-learn's estimators: ``__init__`` stores each argument unchanged (a class built with its
    defaults holds exactly those defaults) and builds nothing."""
    m = make()
    cls = type(m)
    params = m.get_params()
    for name, value in params.items():
        assert getattr(m, name) is value, f"{cls.__name__}.__init__ altered parameter {name!r}"
        assert value is not PROFILE, f"{cls.__name__}.__init__ left {name!r} at PROFILE: call self._apply_profile"
    built = sorted(k for k in vars(m) if k.endswith("_") and not k.startswith("_"))
    assert not built, (f"{cls.__name__}.__init__ set built state {built}: build it in _build (after _reset "
                       "clears it), never in __init__")
    services = {k: params[k] for k in SERVICE_PARAMS if k in params}
    fresh = cls(**services)
    # the one exception to "stored verbatim": a PROFILE default takes the resolved profile's value, and "auto"
    # the profile it resolves to (workbench.methods.profile)
    profiled = cls.profiles.get(getattr(fresh, "profile", None), {})
    for name, default in cls._defaults().items():
        if name in services or default is inspect.Parameter.empty:
            continue
        if default is PROFILE:
            default = profiled[name]
        elif name == "profile" and cls.profiles:
            default = resolve_profile(default, services.get("llm"))
        got = getattr(fresh, name)
        assert got is default or got == default, \
            f"{cls.__name__}() stores {name} = {got!r}, not its default {default!r}: __init__ altered it"


def check_params_round_trip(make: MakeMethod, conv: Conversation) -> None:
    m = make()
    params = m.get_params()
    clone = m.clone()
    name = type(m).__name__
    assert clone.get_params().keys() == params.keys(), (
        f"{name}.clone() has parameters {sorted(clone.get_params())}, not {sorted(params)}: every __init__ "
        "parameter must be stored under its own name")
    for k, v in params.items():
        got = clone.get_params()[k]
        assert got is v or got == v, (f"{name}.clone() has {k} = {got!r}, not {v!r}: __init__ must store {k} "
                                      "unchanged (derive other values in _build)")
    assert repr(clone) == repr(m), f"{name}: repr(clone()) differs from repr(): repr must be deterministic"
    assert m.params_hash() == clone.params_hash(), (f"{name}.params_hash() differs on a clone: a parameter's "
                                                    "value is not stable (a fresh object each time?)")
    sig = inspect.signature(type(m).__init__)
    positional = [n for n, p in sig.parameters.items() if n != "self" and p.kind != p.KEYWORD_ONLY]
    assert not positional, (f"{name}.__init__ parameters {positional} must be keyword-only: write "
                            "def __init__(self, *, ...)")
    try:
        m.set_params(__not_a_param__=1)
    except ValueError:
        pass
    else:
        raise AssertionError(f"{name}.set_params accepted an unknown parameter: leave set_params to MemoryMethod")


def check_answer_before_ingest_raises(make: MakeMethod, conv: Conversation) -> None:
    m = make()
    try:
        m.answer("anything?")
    except NotIngestedError:
        return
    raise AssertionError("answer() before ingest() must raise NotIngestedError")


def check_ingest_then_answer(make: MakeMethod, conv: Conversation) -> None:
    m = make()
    name = type(m).__name__
    assert m.ingest(conv) is m, f"{name}.ingest must return self (leave ingest to MemoryMethod; write _build)"
    qa = conv.qa[0]
    ans = m.answer(qa.question, now=qa.time)
    assert isinstance(ans, Answer), f"{name}._answer returned a {type(ans).__name__}, not a workbench.trace.Answer"
    assert isinstance(ans.text, str), f"{name}._answer's Answer.text is a {type(ans.text).__name__}, not a string"
    assert ans.method == m.name, f"the Answer names method {ans.method!r}, not {m.name!r}"
    assert ans.usage.calls == len(ans.calls), (
        f"{name}._answer made {ans.usage.calls} LLM call(s), {len(ans.calls)} inside a step: every LLM call made "
        "while answering must sit in a step (with self.step(steps, kind, title))")
    Answer.from_json(ans.to_json())  # must serialise


def check_trace_json_round_trip(make: MakeMethod, conv: Conversation) -> None:
    m = make().ingest(conv)
    ans = m.answer(conv.qa[0].question, now=conv.qa[0].time)
    assert Answer.from_json(ans.to_json()) == ans, "Answer must survive a JSON round trip unchanged"
    for e in m.events:
        assert MemoryEvent.from_json(e.to_json()) == e, (
            f"event {e.seq} ({e.op} {e.unit_id}) changes through JSON: give _emit plain values (strings, numbers, "
            "lists, dicts)")


def check_summary_stats(make: MakeMethod, conv: Conversation) -> None:
    """``summary_stats`` belongs to the class and needs no memory (a static method, so reports can call
    it on saved traces), reads the traces alone (answers reloaded from JSON give the same figures),
    and returns a JSON-able dict (the report writes it)."""
    m = make().ingest(conv)
    cls = type(m)
    assert isinstance(inspect.getattr_static(cls, "summary_stats"), staticmethod), \
        f"{cls.__name__}.summary_stats must be a static method of the class"
    answers = [m.answer(conv.qa[0].question, now=conv.qa[0].time)]
    stats = cls.summary_stats(answers)
    assert isinstance(stats, dict), f"{cls.__name__}.summary_stats must return a dict, got {type(stats).__name__}"
    try:
        json.dumps(stats, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"{cls.__name__}.summary_stats returned a dict that is not JSON ({exc}): the report "
                             "writes it") from None
    assert cls.summary_stats([Answer.from_json(a.to_json()) for a in answers]) == stats, \
        "summary_stats must read only what the saved traces keep"

def check_units_have_provenance(make: MakeMethod, conv: Conversation) -> None:
    m = make().ingest(conv)
    df = m.memories()
    assert len(df) > 0, "ingest stored nothing"
    turn_ids = {t.id for t in conv.turns}
    for row in df.itertuples():
        assert len(row.source_ids) > 0, f"unit {row.id} has no source turn ids"
        unknown = set(row.source_ids) - turn_ids
        assert not unknown, f"unit {row.id} cites unknown turns {unknown}"
    for e in m.events:
        unknown = sorted(set(e.source_ids) - turn_ids)
        assert not unknown, f"event {e.seq} ({e.op} {e.unit_id}) cites turns {unknown}, not of the conversation"


def check_context_hits_have_provenance(make: MakeMethod, conv: Conversation) -> None:
    m = make().ingest(conv)
    ans = m.answer(conv.qa[0].question, now=conv.qa[0].time)
    turn_ids = {t.id for t in conv.turns}
    for h in ans.context:
        assert h.source_ids, f"context hit {h.unit_id} has no provenance: give its Hit the source_ids of its turns"
        unknown = sorted(set(h.source_ids) - turn_ids)
        assert not unknown, f"context hit {h.unit_id} cites turns {unknown}, which the conversation does not have"


def check_reingest_resets_state(make: MakeMethod, conv: Conversation) -> None:
    m = make().ingest(conv)
    first = len(m.memories())
    n_events = len(m.events)
    m.ingest(conv)
    name = type(m).__name__
    assert len(m.memories()) == first, (f"{name}: a second ingest holds {len(m.memories())} units, the first "
                                        f"{first}: _reset must clear every built attribute (ending in _)")
    assert len(m.events) == n_events, (f"{name}: a second ingest recorded {len(m.events)} events, the first "
                                       f"{n_events}: _reset must clear the built state, so _build starts afresh")


def check_ingest_never_sees_labels(make: MakeMethod, conv: Conversation) -> None:
    m = make().ingest(conv)
    assert m.conversation_.qa == (), "the method kept the gold QA list"
    sig = inspect.signature(m.answer)
    extra = sorted(set(sig.parameters) - {"question", "now"})
    assert not extra, f"{type(m).__name__}.answer takes {extra}: it must take only question and now (no gold data)"


def check_save_load(make: MakeMethod, conv: Conversation) -> None:
    m = make().ingest(conv)
    with tempfile.TemporaryDirectory() as d:
        m.save(d)
        loaded = type(m).load(d, llm=getattr(m, "llm", None), embedder=getattr(m, "embedder", None))
    name = type(m).__name__
    assert loaded.memories().equals(m.memories()), (f"{name}: memories() differs after save then load: keep every "
                                                    "built attribute picklable and end its name in _")
    assert loaded.events == m.events, f"{name}: the events differ after save then load"
    assert repr(loaded) == repr(m), f"{name}: repr differs after save then load ({loaded!r} vs {m!r})"


def check_retriever(make: MakeMethod, conv: Conversation) -> None:
    m = make().ingest(conv)
    try:
        r = m.as_retriever()
    except NotImplementedError:
        return
    hits = r.search(conv.qa[0].question, 3)
    assert len(hits) <= 3, f"as_retriever().search(query, 3) returned {len(hits)} hits, more than k=3"
    if hits:
        again = r.search(conv.qa[0].question, 3, exclude=frozenset({hits[0].unit_id}))
        assert hits[0].unit_id not in {h.unit_id for h in again}, "exclude must mask ids"


# A gold answer no conversation contains: if it reaches a prompt or the memory, a label leaked.
GOLD_PROBE = "Xylophanic-Quagmire-4471"
GOLD_QA_ID = "leak-probe-q1_abs"


def with_gold_labels(conv: Conversation) -> Conversation:
    """``conv`` loaded the way a benchmark could label it: every turn flagged ``has_answer`` (as
    LongMemEval does) and one QA whose gold answer is ``GOLD_PROBE``."""
    sessions = tuple(Session(s.id, s.date_time, tuple(replace(t, extras={**t.extras, "has_answer": True})
                                                      for t in s.turns), s.date_text) for s in conv.sessions)
    first = conv.qa[0] if conv.qa else None
    qa = QA(GOLD_QA_ID, first.question if first else "What happened?", GOLD_PROBE, 1,
            (sessions[0].turns[0].id,), first.time if first else None, {"abstention": True})
    return Conversation(conv.id, conv.speakers, sessions, (qa,), conv.source)


def prompt_texts(calls) -> list[str]:
    """Every message text of the recorded LLM calls."""
    return [str(m.get("content", "")) if isinstance(m, dict) else str(m) for c in calls for m in c.messages]


def check_no_gold_reaches_method(make: MakeMethod, conv: Conversation) -> None:
    """No gold-revealing field or id reaches the method's state, memory or any prompt it sends."""
    labelled = with_gold_labels(conv)
    with track() as calls:
        m = make().ingest(labelled)
        m.answer(labelled.qa[0].question, now=labelled.qa[0].time)
    seen = m.conversation_
    assert seen.qa == (), "the method kept the gold QA list"
    for t in seen.turns:
        leaked = GOLD_TURN_EXTRAS & set(t.extras or {})
        assert not leaked, f"turn {t.id} reached the method with gold extras {sorted(leaked)}"
    texts = prompt_texts(calls)
    for needle in (GOLD_PROBE, GOLD_QA_ID, "has_answer"):
        assert not any(needle in text for text in texts), f"{needle!r} reached a prompt"
    memory = " ".join(str(v) for v in m.memories().astype(str).to_numpy().ravel())
    assert GOLD_PROBE not in memory and "has_answer" not in memory, "a gold label reached the memory"


CHECKS = [check_init_stores_params_verbatim, check_params_round_trip, check_answer_before_ingest_raises,
          check_ingest_then_answer, check_trace_json_round_trip, check_units_have_provenance,
          check_context_hits_have_provenance, check_reingest_resets_state, check_ingest_never_sees_labels,
          check_save_load, check_retriever, check_no_gold_reaches_method, check_summary_stats]
