"""The recorded method configurations (``sample_data/demo_profiles.json``): which methods each demo
cassette was recorded with, with which parameters over their defaults, which calibration and which
output bounds.

Read here, below the demo, so that every path that builds a method -- ``workbench eval`` on either
executor, ``build``, ``ask``, the demo, the notebooks and the benchmarks -- can apply a profile the same
way (``workbench.eval.settings.build_method``, ``--profile NAME``). ``workbench.demo`` re-exports these
names and adds what only the demo does with a profile (its conversation slice, questions and cassette).
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from ..data import SAMPLE_DIR

#: the recorded configurations (which methods, parameters and bounds each cassette was recorded with, and why):
#: data about particular methods, so it is a file beside the samples, not code here
PROFILES_FILE = SAMPLE_DIR / "demo_profiles.json"


class DemoProfile(NamedTuple):
    """One recorded demo configuration: what is built, asked and recorded, and into which cassette.

    The demo, the notebooks, the estimate and the benchmarks all read the active profile (``DEMO``),
    so they replay one cassette. A profile being recorded lives beside it until its cassette replays
    with 0 misses; ``workbench demo --profile NAME`` records or replays it without touching the
    active one, and moving the demo to it is one line (``"active"`` in ``demo_profiles.json``).
    The reasons for each override and bound are in the file (``why``, ``bounded_why``)."""

    name: str
    llm: str | None  # the model spec recorded with; None = the default offline model
    sessions: int  # sample-1's first sessions kept
    questions: tuple[str, ...]
    cassette: Path
    calibration: str | None  # the calibration the cassette was recorded with; None = recorded before calibration
    overrides: dict  # method -> parameters over its defaults
    variants: dict  # labelled second configurations (``MemoryMethod.labelled``): name -> parameters over the method's
    bounds: dict  # role -> workbench.llm.bounds.Bound; part of every bounded call's cassette key
    order: tuple[str, ...] = ()  # the methods recorded, in the order the demo builds them
    # the method profile (``workbench.methods.profile``) every method that has two was recorded with, named
    # explicitly so a cassette replays whatever ``profile="auto"`` would pick for the model
    method_profile: str = "small"


def _tuples(value):
    """JSON arrays as tuples: parameter values are compared and hashed as the constructors' tuple defaults are."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def _bounds(roles) -> dict:
    """The output bounds of ``roles`` (``BOUNDED_OUTPUTS``' entries, which ``--bounded-outputs`` uses too)."""
    from ..llm.bounds import BOUNDED_OUTPUTS

    missing = [r for r in roles if r not in BOUNDED_OUTPUTS]
    if missing:
        raise ValueError(f"{PROFILES_FILE}: bounded_roles {missing} have no entry in BOUNDED_OUTPUTS")
    return {role: BOUNDED_OUTPUTS[role] for role in roles}


def _method_profile(value) -> str:
    from ..methods.profile import PROFILE_NAMES

    if value not in PROFILE_NAMES:
        raise ValueError(f"method_profile {value!r}: expected one of {', '.join(PROFILE_NAMES)}")
    return value


def load_profiles(path: Path = PROFILES_FILE) -> tuple[dict[str, DemoProfile], str, dict]:
    """The recorded profiles by name, the active one's name, and what a run without calibration uses
    (``{"params": method -> parameters, "note": text}``), read from ``demo_profiles.json``; a malformed
    file is an error naming it."""
    from ..jsonl import read_json

    raw = read_json(path)
    try:
        order = tuple(raw["order"])
        profiles = {}
        for name, p in raw["profiles"].items():
            profiles[name] = DemoProfile(
                name, p["llm"], int(p["sessions"]), tuple(p["questions"]), path.parent / p["cassette"],
                p["calibration"], _tuples(p["overrides"]), _tuples(p["variants"]), _bounds(p["bounded_roles"]),
                order, _method_profile(p.get("method_profile", "small")))
        active = raw["active"]
        if active not in profiles:
            raise KeyError(f"active profile {active!r}")
        uncalibrated = {"params": _tuples(raw["without_calibration"]["params"]),
                        "note": str(raw["without_calibration"].get("note") or "")}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{path}: malformed demo profiles ({type(exc).__name__}: {exc})") from exc
    return profiles, active, uncalibrated


DEMO_PROFILES, ACTIVE, UNCALIBRATED = load_profiles()


def get_profile(profile: str | DemoProfile | None) -> DemoProfile | None:
    """A profile by name (``--profile``), a ``DemoProfile`` as given, or None; an unknown name is a
    ``ValueError`` listing the recorded ones."""
    if profile is None or isinstance(profile, DemoProfile):
        return profile
    if profile not in DEMO_PROFILES:
        raise ValueError(f"unknown profile {profile!r}; the recorded ones: {', '.join(sorted(DEMO_PROFILES))}")
    return DEMO_PROFILES[profile]
