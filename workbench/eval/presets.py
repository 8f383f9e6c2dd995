"""How ``workbench eval`` configures a method for a run: dataset preset, embedder calibration, then
the user's explicit parameters (each later layer wins), and what the manifest records about it.

- Dataset preset: a method with ``for_dataset`` (RecMem: LoCoMo 0.7/5, LongMemEval 0.6/4 and the
  answer length) is configured for the kind of data evaluated (``locomo`` for LoCoMo-format data,
  the sample included; ``longmemeval``).
- Calibration (``workbench.methods.calibration``): ``"auto"`` applies the calibration shipped for the
  embedder in use when there is one (its ``locomo`` variant on ``locomo:`` data); a path applies that
  file; ``"off"`` applies none. Applied only
  to methods whose embedder matches the calibration's.
- A method whose thresholds were set for another embedder and that runs uncalibrated gets a warning
  (printed, and listed in the manifest under ``threshold_warnings``).
"""
from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field

from ..methods import get_method
from ..methods.base import SERVICE_PARAMS
from ..methods.calibration import (apply_calibration, calibration_summary, dataset_kind, load_calibration, maps_profile,
                                   shipped_calibration_path, threshold_warnings)


@dataclass
class RunSetup:
    """A configured method and the record of how it was configured."""

    method: object
    dataset_kind: str | None
    preset: dict = field(default_factory=dict)
    calibration: dict | None = None
    calibrated: dict = field(default_factory=dict)
    explicit: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    profile: str | None = None  # the recorded profile applied (``settings.build_method``), if any
    output_bounds: tuple = ()  # the roles whose outputs the method's LLM bounds (``--bounded-outputs``, a profile)

    def manifest(self) -> dict:
        """The manifest keys of this setup (merged into the run manifest by ``evaluate``)."""
        return setup_manifest(self)


def setup_manifest(setup: RunSetup) -> dict:
    out = {"dataset_preset": {"kind": setup.dataset_kind, "params": setup.preset},
           "calibration": ({**calibration_summary(setup.calibration), "applied": setup.calibrated}
                           if setup.calibration is not None else None),
           "explicit_params": setup.explicit, "threshold_warnings": list(setup.warnings)}
    if setup.profile is not None:  # keys only a profile or bounds add: a plain run's manifest is as before
        out["profile"] = setup.profile
    if setup.output_bounds:
        out["output_bounds"] = list(setup.output_bounds)
    return out


def dataset_preset(cls, kind: str | None) -> dict:
    """The parameters ``cls.for_dataset(kind)`` sets (its module's ``DATASET_PRESETS`` entry and any
    value differing from the defaults); ``{}`` for methods without presets."""
    if kind is None or not hasattr(cls, "for_dataset"):
        return {}
    try:
        probe = cls.for_dataset(kind)
    except ValueError:
        return {}
    params = probe.get_params()
    # what the preset changes is measured against the same profile's plain instance (a method with profiles:
    # its PROFILE defaults resolved), and the profile itself is the run's to choose, never the preset's
    defaults = cls(profile=probe.profile).get_params() if getattr(cls, "profiles", None) else cls._defaults()
    table = getattr(sys.modules[cls.__module__], "DATASET_PRESETS", {}) or {}
    keys = set(table.get(kind, {})) | {k for k, v in params.items() if k not in SERVICE_PARAMS and v != defaults.get(k)}
    return {k: params[k] for k in sorted(keys) if k in params and k not in SERVICE_PARAMS and k != "profile"}


def resolve_calibration(choice: str | None, embedder, data: str | None = None) -> dict | None:
    """``auto`` (the calibration shipped for this embedder, its ``locomo`` variant for ``locomo:`` data;
    none when nothing is shipped), ``off``/None, or a file path."""
    if choice in (None, "off", "none"):
        return None
    if choice == "auto":
        name = getattr(embedder, "name", None)
        variant = "locomo" if str(data or "").startswith("locomo:") else None
        path = shipped_calibration_path(name, variant)
        if path is None:
            return None
        return load_calibration(f"shipped:{name}@{variant}" if variant and path.name.endswith(f".{variant}.json")
                                else f"shipped:{name}")
    return load_calibration(choice)


def prepare_method(name: str, llm, embedder, params: dict | None = None, *, data: str | None = None,
                   calibration: str | dict | None = "auto", warn: bool = True, reranker=None) -> RunSetup:
    """Build method ``name`` for a run on ``data`` (a data spec or dataset name): defaults < dataset
    preset < calibration < ``params``. ``calibration="auto"`` calibrates nothing for a method built with its
    ``paper`` profile (calibrated thresholds are one of the small profile's aids) unless the calibration maps that
    profile's own thresholds onto the embedder (``maps_profile``: H-Mem's alphas); a file or dict given by name
    is applied to either profile, and the paper profile's ``param_notes`` then lists the thresholds it moved."""
    cls = get_method(name)
    kind = dataset_kind(data)
    preset = dataset_preset(cls, kind)
    accepted = inspect.signature(cls.__init__).parameters
    services = {k: v for k, v in (("llm", llm), ("embedder", embedder)) if k in accepted}
    if reranker is not None:
        if "reranker" not in accepted:
            raise ValueError(f"{name} takes no reranker (it reranks nothing); run it without one")
        services["reranker"] = reranker
    explicit = dict(params or {})
    if "profile" in explicit and "profile" in accepted:  # the profile first, so its values are the base
        services["profile"] = explicit["profile"]
    method = cls(**services, **preset)
    if calibration == "auto" and getattr(method, "profile", None) == "paper":
        # calibrated thresholds are a small-model aid, so the paper profile keeps the paper's -- except where the
        # calibration maps the paper profile's own thresholds onto this embedder by what the paper reports they
        # produced (H-Mem's alphas, from Table 7's join shares): those are the paper's thresholds carried across
        auto = resolve_calibration("auto", embedder, data)
        calibration = auto if maps_profile(auto, name, "paper") else None
    cal = (calibration if isinstance(calibration, dict) or calibration is None
           else resolve_calibration(calibration, embedder, data))
    method, applied = apply_calibration(method, cal, dataset=kind)
    if explicit:
        method.set_params(**explicit)
    if preset:  # its param_notes read the dataset's preset as the paper's setting for this dataset
        method.dataset_preset_ = kind
    effective = {k: v for k, v in applied.items() if k not in explicit}  # explicit parameters win
    matches = cal is not None and cal.get("embedder") == getattr(embedder, "name", None)
    warnings = threshold_warnings(method, cal if applied else None)
    if warn:
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)
    return RunSetup(method, kind, preset, cal if matches else None, effective, explicit, warnings)
