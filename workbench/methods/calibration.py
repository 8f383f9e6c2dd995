"""Embedder calibration: map the papers' cosine thresholds onto the embedder actually in use.

A cosine threshold belongs to the encoder it was tuned with (RecMem: text-embedding-3-small; H-Mem
alpha: Qwen3-Embedding-4B). Another encoder spreads cosines differently: with all-MiniLM-L6-v2 at
the papers' values, H-Mem's tree almost never consolidates and RecMem's gate fires on < 2 % of
units. ``calibrate(embedder, conversations)`` measures the embedder's similarity distributions on
conversation data and picks, per threshold, the value that reproduces a target *rate* of the
decision the threshold drives. Where the paper reports enough to derive that rate, the target is
derived from it (``basis: "derived"``); otherwise it is a documented target of ours
(``basis: "target"``). Only embeddings are used, no LLM; the decisions are replayed with the
methods' own code (``hmem.tree.HTree``, ``recmem.trigger.decide``).

What each method calibrates, and against which target, is its own: a method whose thresholds belong to an
embedder declares a ``CalibrationHook`` (``MemoryMethod.calibration``, in its folder's ``calibration.py``:
H-Mem's alphas from its paper's Table 7, RecMem's theta_sim from a documented trigger rate). This module is
generic: it embeds the conversations once (``CalibrationData``), runs every registered method's hook, and
writes one file whose ``methods`` section holds each hook's part; it also lists what is deliberately not
calibrated (each hook's ``not_calibrated`` notes, under ``<method>.<param>``).

``apply_calibration(method, calibration, dataset=...)`` sets the calibrated parameters on a method
whose embedder matches the calibration; ``threshold_warnings`` says when a method's thresholds
were set for another embedder than the one in use. The MiniLM calibration ships as
``calibrations/all-MiniLM-L6-v2-int8.json`` (made with ``workbench calibrate`` on the sample data: the
demo's) and ``all-MiniLM-L6-v2-int8.locomo.json`` (made on two LoCoMo dev conversations plus the sample,
used for ``locomo:`` data); see ``shipped_calibration_path`` for why there are two.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..jsonl import loads_strict

FORMAT = "workbench-calibration/1"
CALIBRATION_DIR = Path(__file__).resolve().parent / "calibrations"



@dataclass(frozen=True)
class CalibrationHook:
    """A method's part of a calibration: ``paper_embedder`` (the encoder its paper tuned its thresholds with);
    ``calibrate(data, kinds)`` -> ``{"section": its entry under ``methods``, "data": {...}, "similarity": {...},
    "not_calibrated": {param: note}}``; ``measure(data, calibration, kinds)`` -> its before/after replay;
    ``summary_lines(section)`` and ``measure_lines(measured)``: the same in words. ``not_calibrated``: notes
    on thresholds left alone, for a method with nothing to calibrate."""

    paper_embedder: str | None
    calibrate: Callable[..., dict] | None = None
    measure: Callable[..., dict] | None = None
    summary_lines: Callable[[dict], list[str]] | None = None
    measure_lines: Callable[[dict], list[str]] | None = None
    not_calibrated: dict = field(default_factory=dict)


class CalibrationData:
    """The conversations a calibration is measured on, embedded once and shared by every method's hook."""

    def __init__(self, embedder, conversations: Sequence):
        self.embedder = embedder
        self.convs = list(conversations)
        self._cache: dict = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        return _embed_all(self.embedder, texts)

    def cached(self, key: str, make: Callable[[], Any]) -> Any:
        """``make()`` once per key (embeddings a hook computes for both its calibrate and measure)."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    @property
    def turn_vecs(self) -> list[np.ndarray]:
        return self.cached("turn_vecs", lambda: [self.embed([t.text for t in c.turns]) for c in self.convs])

    @property
    def turn_pairs(self) -> np.ndarray:
        return self.cached("turn_pairs", lambda: np.concatenate([_pairs(v) for v in self.turn_vecs]))

    @property
    def turn_nearest_earlier(self) -> np.ndarray:
        return self.cached("turn_nearest", lambda: np.concatenate([nearest_earlier(v) for v in self.turn_vecs]))


def hooks() -> list[tuple[str, CalibrationHook]]:
    """``(method name, hook)`` for every registered method that declares one, in the registry's order."""
    from .registry import REGISTRY

    return [(name, cls.calibration) for name, cls in REGISTRY.items()
            if isinstance(getattr(cls, "calibration", None), CalibrationHook)]


def paper_embedders() -> dict[str, str]:
    """Method name -> the encoder its paper tuned its cosine thresholds with (from the hooks)."""
    return {name: hook.paper_embedder for name, hook in hooks() if hook.paper_embedder}


def dataset_kind(name: str | None) -> str | None:
    """``locomo`` | ``longmemeval`` from a data spec or dataset name (the sample data is LoCoMo format)."""
    if not name:
        return None
    key = re.sub(r"[^a-z]", "", str(name).lower())
    if key.startswith("longmemeval") or key.startswith("lme"):
        return "longmemeval"
    if key.startswith(("locomo", "sample", "tiny", "gallery")):
        return "locomo"
    return None


# -- similarity distributions ---------------------------------------------------------------------------

def quantiles(values: np.ndarray) -> dict:
    if len(values) == 0:
        return {}
    qs = np.quantile(values, [0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99])
    return {"n": int(len(values)), "mean": round(float(values.mean()), 4),
            **{f"q{int(p * 100):02d}": round(float(v), 4)
               for p, v in zip([0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99], qs)}}


def quantile_of(value: float, dist: dict, values: np.ndarray | None = None) -> float | None:
    """Share of the distribution below ``value`` (exact when the raw values are given)."""
    if values is not None and len(values):
        return round(float((values < value).mean()), 4)
    return None


def _pairs(vectors: np.ndarray) -> np.ndarray:
    sims = vectors @ vectors.T
    return sims[np.triu_indices(len(vectors), 1)]


def nearest_earlier(vectors: np.ndarray) -> np.ndarray:
    sims = vectors @ vectors.T
    return np.array([sims[i, :i].max() for i in range(1, len(vectors))]) if len(vectors) > 1 else np.zeros(0)


# -- the whole calibration ------------------------------------------------------------------------------

def _embed_all(embedder, texts: list[str]) -> np.ndarray:
    return np.asarray(embedder(texts), dtype=np.float32) if texts else np.zeros((0, getattr(embedder, "dim", 1)))


def calibrate(embedder, conversations: Iterable, *, data_label: str = "", kinds: Sequence[str] = ("locomo",)) -> dict:
    """Measure ``embedder`` on ``conversations`` and calibrate every registered method's thresholds through its
    hook (module docstring). ``kinds``: the dataset presets to calibrate (``locomo`` and/or ``longmemeval``, for
    the methods with presets); all are calibrated on the same data, which is recorded."""
    convs = [c for c in conversations if c.turns]
    if not convs:
        raise ValueError("calibration needs at least one conversation with turns")
    data = CalibrationData(embedder, convs)
    name = getattr(embedder, "name", type(embedder).__name__)
    out = {"format": FORMAT, "embedder": name, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "data": {"label": data_label, "conversations": [c.id for c in convs],
                    "turns": int(sum(len(c.turns) for c in convs))},
           "similarity": {"turn_pairs": quantiles(data.turn_pairs),
                          "turn_nearest_earlier": quantiles(data.turn_nearest_earlier)},
           "methods": {}, "not_calibrated": {}}
    for method, hook in hooks():
        part = hook.calibrate(data, kinds) if hook.calibrate is not None else {}
        if part.get("section") is not None:
            out["methods"][method] = part["section"]
        out["data"].update(part.get("data") or {})
        out["similarity"].update(part.get("similarity") or {})
        for param, note in {**hook.not_calibrated, **(part.get("not_calibrated") or {})}.items():
            out["not_calibrated"][f"{method}.{param}"] = note
    return out


# -- reading and applying ----------------------------------------------------------------------------------

def _embedder_name(embedder) -> str | None:
    if embedder is None:
        return None
    return getattr(embedder, "name", None) or type(embedder).__name__


def shipped_calibration_path(embedder_name: str | None, variant: str | None = None) -> Path | None:
    """The calibration shipped in the package for this embedder (``<name>.<variant>.json`` when a
    variant is asked for and shipped, else ``<name>.json``), if any.

    Rates depend on conversation length (a longer history gives the gate and the tree more
    candidates), so one threshold cannot fit short and long conversations alike: the plain file is
    made on the sample data (the demo, notebooks and CI), the ``locomo`` variant on LoCoMo dev data.
    """
    if not embedder_name:
        return None
    stem = re.sub(r'[^A-Za-z0-9._-]+', '_', embedder_name)
    for name in ([f"{stem}.{variant}.json"] if variant else []) + [f"{stem}.json"]:
        path = CALIBRATION_DIR / name
        if path.exists():
            return path
    return None


def load_calibration(source) -> dict:
    """A calibration from a path, or ``"shipped:<embedder name>"``. Validates the fields it uses."""
    if isinstance(source, dict):
        data, where = source, "<dict>"
    else:
        text = str(source)
        if text.startswith("shipped:"):
            name, _, variant = text.split(":", 1)[1].partition("@")
            path = shipped_calibration_path(name, variant or None)
        else:
            path = Path(text)
        if path is None or not path.exists():
            raise FileNotFoundError(f"calibration file not found: {source}")
        where = text  # as given (a shipped one is named, never by its absolute path)
        try:
            data = loads_strict(path.read_text())
        except ValueError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc})") from None
        data = {**data, "_path": where, "_sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{where}: field 'format' must be {FORMAT!r}")
    if not isinstance(data.get("embedder"), str) or not isinstance(data.get("methods"), dict):
        raise ValueError(f"{where}: needs a string 'embedder' and an object 'methods'")
    return data


def calibrated_params(calibration: dict, method_name: str, dataset: str | None = None,
                      profile: str | None = None) -> dict:
    """The parameters a calibration sets for one method (and its dataset preset, for a method with presets).

    ``profile``: the method's profile; a hook that mapped a profile's own thresholds (H-Mem's paper alphas, fitted on
    the paper profile's own build: ``methods.<name>.profiles.<profile>``) gives that profile those, and every other
    profile the method's ``params``."""
    entry = calibration.get("methods", {}).get(method_name)
    if not isinstance(entry, dict):
        return {}
    own = (entry.get("profiles") or {}).get(profile) if profile else None
    if isinstance(own, dict):
        return {k: tuple(v) if isinstance(v, list) else v for k, v in own.items()}
    params = dict(entry.get("params") or {})
    presets = entry.get("presets") or {}
    kind = dataset_kind(dataset) or ("locomo" if "locomo" in presets else None)
    if kind in presets:
        params.update({k: v for k, v in presets[kind].items()})
    # sequences are stored as JSON lists; the methods take them as tuples (H-Mem's alphas)
    return {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}


def maps_profile(calibration: dict | None, method_name: str, profile: str | None) -> bool:
    """Whether ``calibration`` maps ``profile``'s own thresholds for the method (``calibrated_params``)."""
    entry = (calibration or {}).get("methods", {}).get(method_name)
    return isinstance(entry, dict) and isinstance((entry.get("profiles") or {}).get(profile), dict)


def threshold_warnings(method, calibration: dict | None = None) -> list[str]:
    """Warnings for a method whose paper thresholds belong to another embedder than the one in use
    (none when a calibration for that embedder is applied, or the method has no such thresholds)."""
    paper = paper_embedders().get(getattr(method, "name", ""))
    used = _embedder_name(getattr(method, "embedder", None))
    if paper is None or used is None or used == paper:
        return []
    if (calibration is not None and calibration.get("embedder") == used
            and method.name in calibration.get("methods", {})):
        return []
    return [f"{method.name}: its similarity thresholds were set for {paper}, but the embedder in use is {used} "
            f"and no calibration for it is applied (run `workbench calibrate --embedder ...`)"]


def apply_calibration(method, calibration: dict | None, *, dataset: str | None = None):
    """Set the calibrated thresholds on ``method`` (in place; returns ``(method, applied params)``).

    Applied only when the calibration was made for the method's embedder; otherwise nothing is set
    and ``threshold_warnings`` reports the mismatch.
    """
    if calibration is None or calibration.get("embedder") != _embedder_name(getattr(method, "embedder", None)):
        return method, {}
    params = {k: v for k, v in calibrated_params(calibration, method.name, dataset,
                                                 getattr(method, "profile", None)).items()
              if k in method.get_params()}
    if params:
        method.set_params(**params)
    return method, params


def calibration_summary(calibration: dict | None) -> dict | None:
    """What a manifest records about a calibration: where it came from and what it was made on."""
    if calibration is None:
        return None
    return {"embedder": calibration.get("embedder"), "path": calibration.get("_path"),
            "sha256": calibration.get("_sha256"), "created": calibration.get("created"),
            "data": calibration.get("data"), "format": calibration.get("format")}


def summary_lines(calibration: dict) -> list[str]:
    """Before/after in words, one block per method that calibrated something (its hook's lines)."""
    m = calibration["methods"]
    out = [f"calibration for {calibration['embedder']} on {calibration['data']['label'] or 'data'} "
           f"({len(calibration['data']['conversations'])} conversations, {calibration['data']['turns']} turns)"]
    for method, hook in hooks():
        if method in m and hook.summary_lines is not None:
            out += hook.summary_lines(m[method])
    return out


def measure(embedder, conversations: Iterable, calibration: dict | None = None, *,
            kinds: Sequence[str] = ("locomo",)) -> dict:
    """Before/after on some data: each method's replay at its paper's thresholds and at the ``calibration``'s
    (no LLM). This is how a shipped calibration is checked on data it was not made on."""
    data = CalibrationData(embedder, [c for c in conversations if c.turns])
    out = {"conversations": [c.id for c in data.convs], "turns": int(sum(len(c.turns) for c in data.convs))}
    for method, hook in hooks():
        if hook.measure is not None:
            out[method] = hook.measure(data, calibration, kinds)
    return out


def measure_lines(m: dict, label: str = "") -> list[str]:
    out = [f"{label or 'data'}: {len(m['conversations'])} conversations, {m['turns']} turns"]
    for method, hook in hooks():
        if method in m and hook.measure_lines is not None:
            out += hook.measure_lines(m[method])
    return out
