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
5. the explicit parameters (``--param``, and ``answer_prompt="shared"`` with ``--fair``).

The LLM gets the output bounds of ``--bounded-outputs`` (every bounded role) or else the profile's:
bounds are part of each bounded call's cassette key, so a method replays its recording only with them.
"""
from __future__ import annotations

from ..methods.base import method_base
from .presets import RunSetup, prepare_method
from .profiles import UNCALIBRATED, DemoProfile, get_profile

NO_CALIBRATION = (None, "off", "none")


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
    base = name
    if profile is not None:
        base = method_base(name)
        if name != base and name not in profile.variants:
            raise ValueError(f"unknown variant {name!r} of profile {profile.name}; its variants: "
                             f"{', '.join(sorted(profile.variants)) or 'none'}")
        if calibration == "auto":
            calibration = profile.calibration  # what the profile's cassette was recorded with (None: before any)
        hand_set = UNCALIBRATED["params"].get(base, {}) if calibration in NO_CALIBRATION else {}
        named = {"profile": profile.method_profile} if _has_profiles(base) else {}
        explicit = {**named, **hand_set, **profile.overrides.get(base, {}), **profile.variants.get(name, {}),
                    **explicit}
    bound_llm(llm, bounded=bounded, profile=profile)
    setup = prepare_method(base, llm, embedder, explicit, data=data, calibration=calibration, warn=warn,
                           reranker=reranker)
    if name != base:
        setup.method.labelled(name[len(base) + 1:-1])
    setup.profile = profile.name if profile is not None else None
    setup.output_bounds = tuple(sorted(getattr(llm, "output_bounds", None) or {}))
    return setup
