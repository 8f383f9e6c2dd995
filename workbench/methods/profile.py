"""Two configurations of every paper method, chosen by one constructor parameter (issue #39).

``profile="paper"`` is the paper's algorithm: its hyperparameters, prompts that keep every instruction of
the paper's own (in our words, with neutral placeholders), schemas that require each field the method
reads, and where the paper is silent the authors' public code's choice. ``profile="small"`` is the
configuration tuned for the offline 1.5B/0.5B models (shorter prompts, output bounds, calibrated
thresholds, probes...), each aid with the evidence that made it necessary (the method's ``profile_notes``).

A parameter whose value depends on the profile has the default ``PROFILE`` in the constructor's
signature; ``MemoryMethod._apply_profile`` replaces it with the chosen profile's value (the class's
``profiles`` table), so an explicit argument always wins and a built method's parameters are concrete
(``get_params``, ``clone``, ``params_hash`` and the run manifest see values, never the placeholder).

``profile="auto"`` (the default) is ``small`` for the offline local models and the scripted test LLMs that
stand in for them (``BaseLLM.small_model``), and ``paper`` for every other model, or when no LLM is given.
"""
from __future__ import annotations

PROFILE_NAMES = ("paper", "small")
AUTO = "auto"


class _FromProfile:
    """The placeholder default of a profile-dependent parameter (one instance, ``PROFILE``)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "PROFILE"

    def __reduce__(self):  # pickles (saved memories) keep the one instance
        return (_FromProfile, ())


#: the default of every parameter whose value the profile gives
PROFILE = _FromProfile()


def resolve_profile(profile: str, llm) -> str:
    """``paper`` or ``small``: ``profile`` itself, or for ``auto`` the one that suits ``llm``
    (``small`` for an offline local model, ``paper`` for any other model and for none).
    Anything else is a ``ValueError`` naming the valid values."""
    if profile == AUTO:
        return "small" if getattr(llm, "small_model", False) else "paper"
    if profile not in PROFILE_NAMES:
        raise ValueError(f"profile={profile!r}: expected one of {', '.join(map(repr, (*PROFILE_NAMES, AUTO)))}")
    return profile
