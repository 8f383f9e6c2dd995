"""Predict a run before it starts: LLM calls, prompt/completion tokens and wall time per phase.

``estimate_run(method, plan, llm=..., judge=...)`` prices the (conversation, questions) plan that
``evaluate`` would run, without any LLM call. How the figures come about:

1. **Calls and tokens** come from a *cost profile* per method (``sample_data/cost_profiles.json``), fitted by
   ``workbench.demo_profiles.fit_profiles`` on a replay of the demo
   (``workbench.demo``: sample-1,
   sessions 1-4, 53 turns, 6 questions, every call from the committed cassette). Each recorded call
   is grouped by (phase, role) and divided by the structural unit its role scales with:
   construction roles by *turns* (per-turn, per-exchange and per-fragment calls all grow with the
   turn count; the roles a method declares once per session (``per_session_roles``) with *sessions*),
   query roles by *questions*, judge roles by *judged questions*. JSON repairs and retries are
   roles of their own, so the small model's repair rate is carried into the prediction.
   Full-Context's answer prompt is the whole conversation: its prompt tokens per call are the
   conversation's own token count times the profile's model-tokens-per-counted-token ratio.
   A method's profile may hold construction *variants* fitted on another recording for other
   parameters (``workbench.demo_profiles.fit_construction_variant``): H-Mem's one-message fragments
   (the paper's, used at real scale) make about ten times the calls of the demo's 4-turn windows, so
   its construction is priced from the first 141 turns of the real-scale conv-30 recording when a
   method has ``fragment="turn"``.
2. **Wall time** prices those calls with the backend's ``LatencyModel``
   (``workbench.llm.latency``): refitted from the live calls that earlier run manifests in the
   same run directory recorded (``spent``), else the offline model's measured throughput on this
   machine (OFFLINE.md) or a rough API figure. Calls are assumed serial (llama.cpp serves one at a time).
3. **Cost** (API backends): tokens times a user-given price table (per million tokens).
4. **Flags**: work that cannot succeed — a Full-Context prompt over the backend's context window,
   a missing model or cassette — and caveats (no profile for the method, parameters other than the
   profile's, a different model than the one the profile was fitted on).

Measured error (``benchmarks/bench_estimate.py``): fitted on three demo questions, the query and
judge phases of the other three are predicted with exact call counts (AMA: ±11 %) and tokens within
±14 % (AMA's query tokens: +48 % / -33 %, its repairs are rare and lumpy).

Known limits: the profiles come from one 53-turn conversation and the 0.5B offline model; methods
whose per-call prompt grows with the memory (MemR3's router, RecMem's refinement) are priced at
the demo's prompt sizes, so long conversations are under-estimated for them. The run manifest
records the estimate beside what was spent (``estimate_vs_spent``), which shows the error.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..data import SAMPLE_DIR
from ..jsonl import loads_strict
from ..llm.latency import LatencyModel, latency_model_for
from ..methods import DEPRECATED, get_method
from ..methods.base import method_base

#: fitted on the demo cassette: data about particular methods, kept with the samples and cassettes
PROFILES_PATH = SAMPLE_DIR / "cost_profiles.json"
PHASES = ("construct", "query", "judge")


def _declaring_class(role_or_name: str):
    """The registered class a role (``<method>.<step>``) or method name belongs to, or None (a role of a
    method this installation does not have: its profile is still priced, with the generic units)."""
    try:
        return get_method(role_or_name.split(".", 1)[0])
    except ValueError:
        return None


def _step(role: str) -> str:
    """``hmem.profile.repair`` -> ``profile``: the step a role (or its repair/retry) belongs to."""
    return role.split(".repair")[0].split(".retry")[0].partition(".")[2]


def renamed(name: str) -> str:
    """The other name a renamed method's profile may be fitted under (``DEPRECATED``, both ways; same prompts
    and calls), or ``""``."""
    return {**DEPRECATED, **{new: old for old, new in DEPRECATED.items()}}.get(name, "")


def role_unit(role: str) -> str:
    """What a construction role's calls scale with: ``sessions`` for the roles a method declares as once per
    session (``per_session_roles``), else ``turns``. (H-Mem's consolidation is not per session: it runs when
    a leaf gives a tree node a new child, so it follows the turns: 275 calls over 141 turns on conv-30.)"""
    cls = _declaring_class(role)
    return "sessions" if cls is not None and _step(role) in cls.per_session_roles else "turns"


def whole_conversation_role(role: str) -> bool:
    """True for a question role whose prompt holds the whole conversation (``whole_conversation_roles``)."""
    cls = _declaring_class(role)
    return cls is not None and _step(role) in cls.whole_conversation_roles


@dataclass(frozen=True)
class PhaseEstimate:
    calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    seconds: float = 0.0

    @property
    def tokens(self) -> float:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: "PhaseEstimate") -> "PhaseEstimate":
        return PhaseEstimate(*(a + b for a, b in zip(asdict(self).values(), asdict(other).values())))


@dataclass(frozen=True)
class RunEstimate:
    """What a run is predicted to cost, and what would stop it (``flags``) or weakens the figure (``notes``)."""

    method: str
    llm_model: str | None
    conversations: int
    turns: int
    questions: int
    judged: int
    phases: dict = field(default_factory=dict)  # phase -> PhaseEstimate
    latency_model: dict = field(default_factory=dict)
    cost_usd: float | None = None
    flags: tuple = ()
    notes: tuple = ()
    basis: str = ""

    @property
    def total(self) -> PhaseEstimate:
        out = PhaseEstimate()
        for p in self.phases.values():
            out = out + p
        return out

    @property
    def blocked(self) -> bool:
        return bool(self.flags)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["phases"] = {k: {**asdict(v), "tokens": v.tokens} for k, v in self.phases.items()}
        d["total"] = {**asdict(self.total), "tokens": self.total.tokens}
        d["flags"], d["notes"] = list(self.flags), list(self.notes)
        return _rounded(d)

    def summary(self) -> str:
        """One line: total calls, tokens and live wall time, and the calls per phase."""
        t = self.total
        per = " / ".join(f"{k} {v.calls:,.0f}" for k, v in self.phases.items())
        line = f"{self.method}: ~{t.calls:,.0f} calls ({per}), ~{t.tokens:,.0f} tokens, ~{format_duration(t.seconds)}"
        return line + "".join(f"; WILL FAIL: {f}" for f in self.flags)

    def format(self) -> str:
        """A few plain lines for the terminal."""
        lines = [f"estimate for {self.method} ({self.llm_model or 'no model'}): {self.conversations} conversation(s), "
                 f"{self.turns} turns, {self.questions} questions ({self.judged} judged)"]
        lines.append(f"  {'phase':<10} {'calls':>8} {'prompt tok':>12} {'compl. tok':>11} {'wall time':>11}")
        for name, p in [*self.phases.items(), ("total", self.total)]:
            lines.append(f"  {name:<10} {p.calls:>8,.0f} {p.prompt_tokens:>12,.0f} {p.completion_tokens:>11,.0f} "
                         f"{format_duration(p.seconds):>11}")
        lines.append(f"  latency model: {self.latency_model.get('source', '?')}")
        if self.cost_usd is not None:
            lines.append(f"  cost: ${self.cost_usd:,.2f} at the given prices")
        lines.extend(f"  WILL FAIL: {f}" for f in self.flags)
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


def format_duration(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def _rounded(value):
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


# -- profiles ------------------------------------------------------------------------------------

ROLE_KEYS = {"phase": str, "role": str, "unit": str, "calls_per_unit": (int, float),
             "prompt_tokens_per_call": (int, float), "completion_tokens_per_call": (int, float)}
UNITS = ("conversations", "sessions", "turns", "questions", "judged")
#: the largest cost profile file read (the shipped one is a few tens of kB)
PROFILE_BYTES = 4 << 20


def load_profiles(path: Path | str = PROFILES_PATH) -> dict:
    """The cost profiles (``{}`` when the file is absent: estimates then say there is no profile).

    The file is checked field by field: a malformed one raises ``ValueError`` naming the file and the
    field, rather than an estimate built on garbage."""
    from ..data.types import DatasetError, read_regular_file

    path = Path(path)
    if not path.is_file():
        return {}
    try:  # bounded and regular-file only: a plugin's cost profile is another package's file
        data = loads_strict(read_regular_file(str(path), what="JSON cost profile", limit=PROFILE_BYTES)
                            .decode("utf-8"))
    except (OSError, ValueError, DatasetError) as exc:
        raise ValueError(f"{path}: not a readable JSON cost profile ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("methods"), dict):
        raise ValueError(f"{path}: expected an object with a 'methods' object")
    for name, prof in data["methods"].items():
        roles = prof.get("roles") if isinstance(prof, dict) else None
        if not isinstance(roles, list) or not isinstance(prof.get("params", {}), dict):
            raise ValueError(f"{path}: methods.{name} needs a 'roles' list and a 'params' object")
        variants = prof.get("variants", [])
        if not isinstance(variants, list) or not all(
                isinstance(v, dict) and isinstance(v.get("when"), dict) and isinstance(v.get("roles"), list)
                and isinstance(v.get("fitted_on", {}), dict) for v in variants):
            raise ValueError(f"{path}: methods.{name}.variants must be a list of {{when, roles, fitted_on}} objects")
        for where, rs in [("roles", roles)] + [(f"variants[{j}].roles", v["roles"]) for j, v in enumerate(variants)]:
            for i, r in enumerate(rs):
                bad = [k for k, t in ROLE_KEYS.items() if not isinstance(r, dict) or not isinstance(r.get(k), t)
                       or isinstance(r.get(k), bool)]
                if bad or r["phase"] not in PHASES or r["unit"] not in UNITS or r["calls_per_unit"] < 0:
                    raise ValueError(f"{path}: methods.{name}.{where}[{i}]: bad or missing "
                                     f"{bad or ['phase/unit/calls']}")
    return data


def plugin_profiles(name: str) -> dict:
    """The cost profiles in the ``cost_profiles.json`` of ``name``'s resource folder
    (``workbench.methods.registry.resource_file``), checked as ``load_profiles`` checks the workbench's own; ``{}``
    when the method ships none. A damaged file raises ``ValueError`` naming it and the field."""
    from ..methods.registry import resource_file

    path = resource_file(name, "cost_profiles.json")
    return load_profiles(path) if path is not None else {}


def structure(plan) -> dict:
    """The structural units of a plan: conversations, sessions, turns, questions, judged questions."""
    from .metrics import is_locomo

    convs = [c for c, _ in plan]
    return {"conversations": len(convs), "sessions": sum(len([s for s in c.sessions if s.turns]) for c in convs),
            "turns": sum(len(c.turns) for c in convs), "questions": sum(len(q) for _, q in plan),
            "judged": sum(1 for _, qs in plan for q in qs if not (is_locomo(q) and q.category == 5))}


def conversation_tokens(conv) -> int:
    """Counted (o200k) tokens of the conversation as Full-Context puts it in its prompt."""
    from ..llm.tokens import count_tokens
    from ..methods.common import format_conversation

    return count_tokens(format_conversation(conv.without_qa()))


# -- the estimate ----------------------------------------------------------------------------------

def estimate_run(method, plan, *, llm=None, judge=None, profiles: dict | None = None, history=(),
                 prices: tuple[float, float] | None = None, problems=(), notes=()) -> RunEstimate:
    """Predict the cost of ``evaluate(method, ...)`` over ``plan`` (see the module docstring).

    ``method``: a ``MemoryMethod`` (or its registered name); ``llm``: the backend (default: the
    method's); ``history``: earlier manifest files to refit the latency model from; ``prices``:
    (input, output) USD per million tokens; ``problems``: flags found while building the services
    (e.g. a missing model), passed through as flags; ``notes``: caveats passed through."""
    profiles = load_profiles() if profiles is None else profiles
    name = method if isinstance(method, str) else method.name
    llm = llm if llm is not None else getattr(method, "llm", None)
    units = structure(plan)
    latency = latency_model_for(llm, history=history) if llm is not None else LatencyModel.nominal()
    if _replay_only(llm):
        latency = LatencyModel(0.0, 1e12, 1e12, "replay from a cassette: no live calls (a miss is a failure)")
    flags, notes = list(problems), list(notes)
    fitted_methods = profiles.get("methods", {})
    base = method_base(name)  # a labelled variant (ama[paper-judge]) is priced by its method's profile
    prof = fitted_methods.get(base) or fitted_methods.get(renamed(base))
    fitted = profiles.get("fitted_on", {})
    if prof is None:  # a plugin's own cost profile, shipped in its resources (docs/plugin-checklist.md)
        try:
            own = plugin_profiles(base)
        except ValueError as exc:  # the plugin's file is damaged: said, and the run is estimated without it
            own = {}
            notes.append(f"{name}'s own cost profile is unusable: {exc}")
        prof, fitted = (own.get("methods") or {}).get(base), own.get("fitted_on", {})
    if prof is None:
        notes.append(f"no cost profile for {name!r}: calls and tokens unknown "
                     "(run python -m workbench.demo_profiles --refit after recording)")
        roles = []
    else:
        roles, params = prof["roles"], dict(prof["params"])
        variant = _variant(prof, method)
        if variant is not None:  # construction fitted under these parameters (e.g. H-Mem's one-message fragments)
            roles = [r for r in roles if r["phase"] != "construct"] + variant["roles"]
            params.update(variant["when"])
            f = variant["fitted_on"]
            notes.append(f"construction priced from a recording with {_when_text(variant['when'])} "
                         f"({f.get('cassette')}, {f.get('model')}: the first {f.get('turns_covered')} turns of "
                         f"{f.get('conversation')})")
        model = _model_name(llm)
        if model and fitted.get("model") and model != fitted["model"]:
            notes.append(f"profile fitted with {fitted['model']}; {model} may need fewer JSON repairs and "
                         "different answer lengths")
        if not isinstance(method, str):
            diff = sorted(k for k, v in method.config().items()
                          if k not in ("llm", "embedder") and str(params.get(k)) != str(v) and params.get(k) != v)
            if diff:
                notes.append(f"parameters differ from the profile's ({', '.join(diff)}): counts are indicative")
    phases = {p: PhaseEstimate() for p in PHASES}
    fc = next((r for r in roles if r["phase"] == "query" and whole_conversation_role(r["role"])), None)
    if fc is not None:
        phases["query"], refused = _whole_conversation(fc, plan, fitted, llm, latency, flags, notes)
        # a refused question fails before the judge: the harness does not send it to the judge
        units = {**units, "judged": units["judged"] - structure([(c, q) for c, q in plan if c.id in refused])["judged"]}
    judge_latency = _judge_latency(judge, llm, latency, history)
    for r in roles:
        if (r["phase"] == "judge" and judge is None) or r is fc:
            continue
        n = r["calls_per_unit"] * units[r["unit"]]
        pt, ct = n * r["prompt_tokens_per_call"], n * r["completion_tokens_per_call"]
        lm = judge_latency if r["phase"] == "judge" else latency
        phases[r["phase"]] = phases[r["phase"]] + PhaseEstimate(n, pt, ct, lm.total(n, pt, ct))
    if judge is not None and not any(r["phase"] == "judge" for r in roles) and prof is not None:
        notes.append("no judge calls in the profile")
    cost = None
    if prices is not None:
        total = sum((p for p in phases.values()), PhaseEstimate())
        cost = (total.prompt_tokens * prices[0] + total.completion_tokens * prices[1]) / 1e6
    return RunEstimate(name, _model_name(llm), units["conversations"], units["turns"], units["questions"],
                       units["judged"] if judge is not None else 0, phases, latency.to_dict(), cost,
                       tuple(flags), tuple(notes),
                       basis=f"profile fitted on {fitted.get('data', '?')} ({fitted.get('cassette', '?')})")


def _variant(prof: dict, method) -> dict | None:
    """The profile's construction variant whose parameters (``when``) the method has, if any
    (``workbench.demo_profiles.fit_construction_variant``); values compare as text (the CLI writes them so)."""
    if isinstance(method, str):
        return None
    config = method.config()
    return next((v for v in prof.get("variants") or []
                 if isinstance(v, dict) and isinstance(v.get("when"), dict) and v["when"]
                 and all(str(config.get(k)) == str(w) for k, w in v["when"].items())), None)


def _when_text(when: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in when.items())


def _whole_conversation(r: dict, plan, fitted: dict, llm, latency: LatencyModel, flags: list,
                  notes: list) -> tuple[PhaseEstimate, set]:
    """One answer call per question whose prompt holds the whole conversation; over-long ones are
    refused before decoding (flagged, and returned so their questions are not judged either)."""
    ratio = r["prompt_tokens_per_call"] / max(1, fitted.get("conversation_tokens") or 1)
    n_ctx, max_new = _context_window(llm)
    out, refused, longest = PhaseEstimate(), set(), 0.0
    for conv, qas in plan:
        pt = ratio * conversation_tokens(conv)
        n = r["calls_per_unit"] * len(qas)
        if n_ctx and pt + max_new > n_ctx:
            flags.append(f"Whole-conversation prompt for {conv.id} is ~{pt:,.0f} tokens, over the model's context of "
                         f"{n_ctx:,} ({max_new} kept for the reply): its {len(qas)} questions would fail")
            refused.add(conv.id)
            continue
        longest = max(longest, pt)
        ct = n * r["completion_tokens_per_call"]
        out = out + PhaseEstimate(n, n * pt, ct, latency.total(n, n * pt, ct))
    if n_ctx is None and plan:
        notes.append("the backend's context window is unknown here: whole-conversation prompts were not checked "
                     "against it")
    if longest > 4 * r["prompt_tokens_per_call"]:
        notes.append(f"Whole-conversation prompts of ~{longest:,.0f} tokens: prompt throughput falls at long "
                     "contexts, so its wall time is a lower bound")
    return out, refused


def _judge_latency(judge, llm, latency: LatencyModel, history) -> LatencyModel:
    """The judge's own backend prices its calls when it has one other than the method's."""
    jllm = getattr(judge, "llm", None)
    if jllm is None or jllm is llm or _base(jllm) is _base(llm):
        return latency
    if _replay_only(jllm):
        return LatencyModel(0.0, 1e12, 1e12, "replay from a cassette")
    return latency_model_for(jllm, history=history)


def _base(llm):
    return getattr(llm, "inner", None) or llm


def _replay_only(llm) -> bool:
    return llm is not None and type(llm).__name__ == "CachedLLM" and getattr(llm, "mode", "") == "replay"


def _model_name(llm) -> str | None:
    return getattr(llm, "model", None) if llm is not None else None


def _context_window(llm) -> tuple[int | None, int]:
    """(context tokens, tokens kept for the reply) of the backend where it is known (llama.cpp)."""
    base = _base(llm)
    n_ctx = getattr(base, "n_ctx", None)
    grow = getattr(base, "trained_context_cheaply", None)  # LlamaCpp grows its context up to this once
    if callable(grow):  # None (file missing, no metadata): the starting context stands
        n_ctx = grow() or n_ctx
    return (int(n_ctx) if isinstance(n_ctx, int) else None), int(getattr(base, "max_tokens", 512) or 512)


def service_problems(llm) -> list[str]:
    """Flags about the backend itself, found without loading it: a missing model file or cassette."""
    out = []
    base = _base(llm)
    path = getattr(base, "model_path", None)
    if path is not None and not Path(path).exists():
        out.append(f"model file not found: {path} (run `workbench models install`)")
    cassette = getattr(getattr(llm, "cassette", None), "path", None)
    if _replay_only(llm) and cassette is not None and not Path(cassette).exists():
        out.append(f"cassette not found: {cassette}; a replay-only run would fail every call")
    return out


# -- after the run: what was spent, beside what was estimated ------------------------------------------

MAX_LATENCY_SAMPLES = 400  # live calls kept per manifest for refitting the latency model


def spent_record(calls) -> dict:
    """Per phase: calls, tokens, seconds in LLM calls, cached and failed calls; plus a sample of live calls
    as ``[prompt_tokens, completion_tokens, latency_s]`` (what ``LatencyModel.from_manifests`` refits from)."""
    phases: dict = {}
    live = []
    for c in calls:
        phase = c.phase if c.phase in PHASES else "other"
        p = phases.setdefault(phase, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "llm_s": 0.0,
                                      "cached_calls": 0, "failed_calls": 0})
        p["calls"] += 1
        p["prompt_tokens"] += c.prompt_tokens
        p["completion_tokens"] += c.completion_tokens
        p["llm_s"] += c.latency_s
        p["cached_calls"] += int(c.cached)
        p["failed_calls"] += int(bool(c.error))
        if not c.cached and not c.error and c.latency_s > 0:
            live.append([c.prompt_tokens, c.completion_tokens, round(c.latency_s, 4)])
    step = max(1, -(-len(live) // MAX_LATENCY_SAMPLES))
    return _rounded({"phases": phases, "live_calls": len(live), "live_call_samples": live[::step]})


def estimate_vs_spent(estimate: dict | None, spent: dict) -> dict:
    """Relative error (estimate / spent - 1) of calls and tokens per phase, where both are known.

    Cached calls count as spent calls (a replay makes the same calls a live run would); wall time is
    compared only for live calls, in ``llm_s`` vs the estimate's seconds."""
    if not estimate or "phases" not in estimate:
        return {}
    out = {}
    for phase, e in estimate["phases"].items():
        s = spent["phases"].get(phase)
        if not s or not e.get("calls"):
            continue
        s_tokens = s["prompt_tokens"] + s["completion_tokens"]
        out[phase] = {k: round(a / b - 1, 3) for k, a, b in (("calls", e["calls"], s["calls"]),
                                                           ("tokens", e["tokens"], s_tokens)) if b}
    return out


def cost_keys(estimate: "RunEstimate | dict | None", calls) -> dict:
    """The manifest keys of a finished run: ``estimate``, ``spent`` and ``estimate_vs_spent``."""
    est = estimate.to_dict() if isinstance(estimate, RunEstimate) else estimate
    spent = spent_record(calls)
    return {"estimate": est, "spent": spent, "estimate_vs_spent": estimate_vs_spent(est, spent)}


def backend_error(exc: Exception) -> str:
    """One line for a backend that could not be built (the full help text is for a real run's error)."""
    from ..llm.errors import NoModelError

    if isinstance(exc, NoModelError):
        return "no language model installed (`workbench models install`, or set WORKBENCH_LLM)"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def parse_prices(text: str | None, model: str | None = None) -> tuple[float, float] | None:
    """``IN,OUT`` (USD per million prompt/completion tokens) or a JSON file ``{model: [IN, OUT]}``."""
    if not text:
        return None
    if Path(text).is_file():
        try:
            table = loads_strict(Path(text).read_text())
        except ValueError as exc:
            raise ValueError(f"--prices {text}: not JSON ({exc})") from exc
        entry = table.get(model) if isinstance(table, dict) else None
        if entry is None:
            raise ValueError(f"--prices {text}: no entry for model {model!r} (keys: {sorted(table)[:10]})")
        text = ",".join(str(x) for x in entry)
    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError as exc:
        raise ValueError(f"--prices expects IN,OUT (USD per million tokens) or a JSON file, got {text!r}") from exc
    return a, b
