"""One path from settings to a built method (issue #39).

``build_method`` is the only place a method is configured for a run: ``workbench eval`` on the
thread executor and in every Ray worker (``executors.CliRecipe``), ``eval --estimate``, ``workbench
build`` and ``ask``, and the demo, the notebooks and the benchmarks (``workbench.demo.demo_methods``).
The layers, each winning over the one before:

1. the method's defaults;
2. its dataset preset for the kind of ``data`` (``presets.dataset_preset``);
3. the embedder calibration (``presets.resolve_calibration``: ``auto``, ``off`` or a file); with a
   ``profile``, ``auto`` is the calibration the profile's cassette was recorded with;
4. a profile's method profile (``method_profile``: ``small`` for every recorded profile, named for each
   method that has two, ``workbench.methods.profile``), its hand-set thresholds for runs without calibration
   (``without_calibration`` in ``demo_profiles.json``), its overrides for the method, and those of a labelled
   variant (``ama[paper-judge]``);
   a labelled name the profile did not record (or any labelled name without a profile) is one of the method's
   ``ablations`` (``recmem[w/o episodic]``, ``labelled_params``), and an unknown label is an error;
5. the explicit parameters (``--param``, and ``answer_prompt="shared"`` with ``--fair``).

The LLM gets the output bounds of ``--bounded-outputs`` (every bounded role) or else the profile's:
bounds are part of each bounded call's cassette key, so a method replays its recording only with them.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import NamedTuple

from ..methods.base import VARIANT, method_base
from .presets import RunSetup, prepare_method
from .profiles import ACTIVE, DEMO_PROFILES, UNCALIBRATED, DemoProfile, get_profile

NO_CALIBRATION = (None, "off", "none")
#: ``--data demo``: the demo's slice, questions and profile (``demo_data``)
DEMO_DATA = "demo"


def _has_profiles(name: str) -> bool:
    """Whether registered method ``name`` takes ``profile=`` (``workbench.methods.profile``)."""
    from ..methods import REGISTRY

    cls = REGISTRY.get(name)
    return cls is not None and "profile" in cls._param_names()


def explicit_params(pairs: list[str] | None, *, fair: bool = False) -> dict:
    """The explicit parameters of a command line: ``--param K=V`` pairs, plus ``answer_prompt="shared"``
    with ``--fair`` (``workbench.methods.answer_prompt``). ``ValueError`` names a bad pair."""
    from ..methods.spec import parse_params

    params = parse_params(pairs)
    if fair:
        params["answer_prompt"] = "shared"
    return params


def output_bounds(*, bounded: bool = False, profile: str | DemoProfile | None = None) -> dict:
    """The per-role output bounds a run's LLM uses: all of them with ``bounded``, else the profile's."""
    from ..llm.bounds import BOUNDED_OUTPUTS

    if bounded:
        return BOUNDED_OUTPUTS
    profile = get_profile(profile)
    return profile.bounds if profile is not None else {}


def bound_llm(llm, *, bounded: bool = False, profile: str | DemoProfile | None = None):
    """``llm`` with ``output_bounds(...)`` switched on (in place; returned). An LLM is left as it is when
    there are none, so bounds set by its maker (``demo.demo_llm``) stay."""
    bounds = output_bounds(bounded=bounded, profile=profile)
    if bounds and llm is not None:
        llm.output_bounds = bounds
    return llm


def build_method(name: str, *, llm, embedder, params: dict | None = None, data: str | None = None,
                 calibration: str | dict | None = "auto", bounded: bool = False,
                 profile: str | DemoProfile | None = None, warn: bool = True, reranker=None) -> RunSetup:
    """Method ``name`` configured from a run's settings (see the module docstring), with the record of
    how (``RunSetup``: the method, its dataset preset, the calibration applied, the explicit parameters,
    the profile and the bounded roles; ``RunSetup.manifest()`` is what the run manifest keeps).

    ``data``: the data spec or dataset name (picks the preset and the calibration's variant);
    ``calibration``: ``auto`` | ``off`` | a file or ``shipped:`` spec | a loaded calibration dict;
    ``profile``: a recorded profile's name or the profile; ``warn``: print threshold warnings; ``reranker``: the
    reranker service for a method that takes one (``components.choose_components`` picks it)."""
    profile = get_profile(profile)
    explicit = dict(params or {})
    replayed = replayed_cassette(llm)
    if profile is None and replayed is not None:  # a replay is built as its cassette was recorded, or it misses
        profile = recorded_profile(replayed)
        if profile is not None and warn:
            print(f"note: {name} replays {Path(replayed).name}, the cassette profile {profile.name} was recorded "
                  f"with: built with --profile {profile.name} (its parameters, calibration and output bounds; "
                  "give --profile to choose another)", file=sys.stderr)
    base, label, labelled = labelled_params(name, profile)
    if profile is None and replayed is not None and warn:
        note = replay_profile_note(name, llm, explicit)
        if note:
            print(f"note: {note}", file=sys.stderr)
    if profile is None:
        explicit = {**labelled, **explicit}
    else:
        if calibration == "auto":
            calibration = profile.calibration  # what the profile's cassette was recorded with (None: before any)
        hand_set = UNCALIBRATED["params"].get(base, {}) if calibration in NO_CALIBRATION else {}
        named = {"profile": profile.method_profile} if _has_profiles(base) else {}
        explicit = {**named, **hand_set, **profile.overrides.get(base, {}), **labelled, **explicit}
    bound_llm(llm, bounded=bounded, profile=profile)
    setup = prepare_method(base, llm, embedder, explicit, data=data, calibration=calibration, warn=warn,
                           reranker=reranker)
    if label is not None:
        setup.method.labelled(label)
    setup.profile = profile.name if profile is not None else None
    setup.output_bounds = tuple(sorted(getattr(llm, "output_bounds", None) or {}))
    return setup


def labelled_params(name: str, profile: DemoProfile | None = None) -> tuple[str, str | None, dict]:
    """``(method, label, parameters)`` of a run's method name: ``ama`` -> ``("ama", None, {})``; a labelled name
    ``base[label]`` is a variant the profile recorded (``ama[paper-judge]``) or else one of the method's own
    ``ablations`` (``recmem[w/o episodic]``: case, spaces, ``/``, ``-`` and ``_`` aside, run under the label
    ``wo-episodic``). Any other label is a ``ValueError`` listing both, never dropped: a silently unlabelled
    run would be the plain method under the name the user asked for."""
    from ..methods import get_method

    base = method_base(name)
    if name == base:
        return base, None, {}
    label = name[len(base):]
    if not (label.startswith("[") and label.endswith("]") and len(label) > 2):
        raise ValueError(f"method {name!r}: write a labelled method as name[label], with the label in square brackets")
    label = label[1:-1]
    if profile is not None and name in profile.variants:
        return base, label, dict(profile.variants[name])
    cls = get_method(base)
    try:
        params = cls.ablation_params(label)
    except ValueError:
        variants = sorted(v for v in (profile.variants if profile is not None else ()) if method_base(v) == base)
        recorded = [v for p in DEMO_PROFILES.values() for v in p.variants if method_base(v) == base]
        hint = (f"; the recorded profiles' variants: {', '.join(sorted(set(recorded)))} (with --profile)"
                if recorded and profile is None else "")
        raise ValueError(f"unknown variant {name!r}: [{label}] names none of {base}'s ablations "
                         f"({', '.join(repr(a) for a in cls.ablations) or 'it declares none'})"
                         + (f" nor a variant of profile {profile.name} ({', '.join(variants) or 'none'})"
                            if profile is not None else hint)) from None
    return base, ablation_label(label), params


def ablation_label(label: str) -> str:
    """The run label of an ablation named on a command line: kept when it is a valid label already
    (``wo-episodic``), else lowercased with ``/`` dropped and other runs of characters made ``-``
    (``W/O Episodic`` -> ``wo-episodic``), so it passes ``MemoryMethod.labelled``."""
    if VARIANT.fullmatch(label):
        return label
    slug = re.sub(r"[^a-z0-9_-]+", "-", label.casefold().replace("/", "")).strip("-_")[:32].rstrip("-_")
    if not slug or not VARIANT.fullmatch(slug):
        raise ValueError(f"label [{label}] gives no run label (letters, digits, - and _)")
    return slug


class DemoData(NamedTuple):
    """What ``--data demo`` evaluates: the demo's dataset and questions, and how the demo configures methods."""

    dataset: object  # workbench.data.Dataset: the profile's slice of sample-1, named "sample" as the demo's
    questions: list  # the profile's recorded question ids (``--questions N``: the first N)
    profile: DemoProfile
    build_data: str | None  # the data ``build_method`` gets: "locomo" with a calibration, as the demo; else None


def demo_data(profile: str | DemoProfile | None = None, *, questions: int | None = None,
              calibration: str | None = "auto") -> DemoData:
    """The demo's slice rebuilt exactly as ``workbench.demo`` builds it (the first ``profile.sessions`` sessions
    of sample-1 with the questions whose evidence lies there, its question ids, the dataset name ``sample`` the
    question dates and presets read), so that ``workbench eval --data demo`` replays the demo's cassette for the
    methods the demo recorded. ``profile``: a recorded profile (default: the active one)."""
    from ..data import Dataset, load_sample

    profile = get_profile(profile) or DEMO_PROFILES[ACTIVE]
    conv = load_sample()[0].head(profile.sessions)
    ids = list(profile.questions[:questions] if questions else profile.questions)
    build_data = None if calibration in NO_CALIBRATION else "locomo"
    return DemoData(Dataset("sample", (conv,)), ids, profile, build_data)


def demo_methods_recorded(profile: DemoProfile) -> set[str]:
    """The method names the profile's cassette holds calls of: its methods and labelled variants."""
    return {*profile.order, *profile.variants}


def replayed_cassette(llm) -> str | None:
    """The cassette a replay-only LLM (``CachedLLM.replay``) answers from, else None (a live or scripted LLM)."""
    from ..llm.cache import CachedLLM

    if not isinstance(llm, CachedLLM) or llm.inner is not None:
        return None
    path = getattr(llm.cassette, "path", None)
    return str(path) if path else None


def replay_profile_note(name: str, llm, explicit: dict) -> str | None:
    """For a method that takes profiles, replaying calls of a model that is not an offline one with no profile
    given: a note that ``profile="auto"`` is ``paper`` for that model, so a recording made with the small profile
    (by an offline model or a scripted LLM, which count as small) misses unless ``--param profile="small"`` or the
    recording's ``--profile`` is given. The cassette does not record which profile made it, so this is said, not
    guessed. None otherwise."""
    if "profile" in explicit or not _has_profiles(method_base(name)) or getattr(llm, "small_model", False):
        return None
    return (f"{name} replays calls of model {getattr(llm, 'model', None)!r}, not an offline model: its "
            "profile='auto' is 'paper' here; a recording made with its small profile (an offline model's, or a "
            "scripted LLM's) replays only with --param profile='\"small\"' (or the --profile it was recorded with)")


def recorded_profile(cassette) -> DemoProfile | None:
    """The recorded profile whose cassette ``cassette`` is (the same file, or a copy with the same content, as
    ``workbench demo`` makes in its run directory), else None: a replay of it misses unless the methods are
    built with that profile's parameters, calibration and output bounds."""
    if cassette is None:
        return None
    path = Path(cassette)
    if not path.is_file():
        return None
    from .manifest import file_sha256

    digest = None
    for p in DEMO_PROFILES.values():
        if not p.cassette.is_file():
            continue
        if p.cassette.resolve() == path.resolve():
            return p
        if p.cassette.stat().st_size == path.stat().st_size:
            digest = digest or file_sha256(path)
            if file_sha256(p.cassette) == digest:
                return p
    return None
