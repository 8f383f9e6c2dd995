"""What a run was: the manifest pieces every run directory records, and the summary the app shows.

A run directory's ``manifest.json`` holds a ``summary`` (the services of its latest evaluation:
LLM spec and model file sha256, embedder, judge spec and its audit, dataset file and sha256, code
commit, prompt hashes) and ``evaluations`` (one full per-invocation manifest each, see
``harness.run_manifest``). ``run_summary`` reads any of the layouts written so far (the scripted
demo's own fields, ``evaluations`` only, or a ``summary``), so the app header never has to guess.

Prompt hashes: a method's prompts are the string constants (UPPER_CASE names) of the modules its
class lists in ``prompt_modules`` (the modules of its subpackage; its own module when it lists
none), each hashed under the module's flat name from before the methods became subpackages
(``methods.moved.prompt_key``: ``hmem_prompts``, ``baselines_prompts``), so stored hashes stay
comparable; the judge's are ``judge_prompt_hash()``. A changed prompt changes the hash, which the
harness uses to decide what to re-run on resume.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import sys
import os
from functools import lru_cache
from pathlib import Path


def prompt_modules(method) -> list[str]:
    """The modules whose string constants make up a method's prompts (full dotted paths)."""
    import workbench.methods as pkg

    cls = type(method)
    by_profile = getattr(cls, "profile_prompt_modules", {})  # a profile's own prompts (methods.profile)
    names = set(cls.prompt_modules) | set(by_profile.get(getattr(method, "profile", None), ()))
    return sorted({f"{pkg.__name__}.{name}" for name in names} or {cls.__module__})


def method_prompt_hashes(method) -> dict[str, str]:
    """``{module key: sha256[:12] of its prompt constants}`` for a method's prompt modules."""
    from ..methods.census_kit import prompt_constants
    from ..methods.moved import prompt_key

    out = {}
    for name in prompt_modules(method):
        consts = prompt_constants(importlib.import_module(name))
        if consts:
            out[prompt_key(name)] = hashlib.sha256(json.dumps(consts, sort_keys=True).encode()).hexdigest()[:12]
    return out


def combined_hash(hashes: dict) -> str:
    return hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()[:12]


def method_prompt_hash(method) -> str:
    """One hash over ``method_prompt_hashes`` (stored in every result row as ``prompt_hash``)."""
    return combined_hash(method_prompt_hashes(method))


# -- services -------------------------------------------------------------------------------------------

@lru_cache(maxsize=16)
def _file_sha256(path: str, size: int, mtime: float) -> str:
    from ..runtime.models import sha256_of

    return sha256_of(Path(path))


def file_sha256(path) -> str | None:
    """sha256 of a file (memoised by path, size and mtime), None when it is not a file."""
    p = Path(path)
    if not p.is_file():
        return None
    st = p.stat()
    return _file_sha256(str(p.resolve()), st.st_size, st.st_mtime)


def llm_spec(llm) -> dict | None:
    """Model name, client class and the model file's sha256: for the offline models the pinned sha256
    (verified on every first load); for a ``gguf:<path>`` file its own; a cassette is named with its
    sha256 (replayed calls come from it, not from a model)."""
    if llm is None:
        return None
    from ..runtime.models import MODELS

    inner = getattr(llm, "inner", None)
    model = getattr(llm, "model", None) or type(llm).__name__
    out = {"model": model, "class": type(llm).__name__}
    if inner is not None or type(llm).__name__ == "CachedLLM":
        out["backend"] = type(inner).__name__ if inner is not None else "replay only"
        cassette = getattr(getattr(llm, "cassette", None), "path", None)
        if cassette:
            out["cassette"] = Path(cassette).name
            out["cassette_sha256"] = file_sha256(cassette)
    core = inner if inner is not None else llm
    path = getattr(core, "model_path", None)
    if model in MODELS:
        out["model_sha256"] = MODELS[model].sha256
        out["model_sha256_source"] = "pinned (workbench.runtime.models, verified on load)"
    elif path is not None:
        out["model_sha256"] = file_sha256(path)
        out["model_sha256_source"] = "file"
    return out


def embedder_spec(embedder) -> dict | None:
    if embedder is None:
        return None
    inner = getattr(embedder, "inner", None) or getattr(embedder, "embedder", None)
    name = getattr(embedder, "name", None) or getattr(inner, "name", None) or type(embedder).__name__
    return {"name": str(name), "class": type(embedder).__name__}


def dataset_spec(dataset) -> dict:
    """Dataset name, file name(s) and sha256 (no directory: paths are machine-specific)."""
    files = sorted({c.source for c in dataset.conversations if getattr(c, "source", "")})
    out = {"name": dataset.name, "files": [os.path.basename(f) for f in files]}
    shas = [file_sha256(f) for f in files]
    out["sha256"] = shas[0] if len(shas) == 1 else (combined_hash(shas) if shas and all(shas) else None)
    return out


def judge_entry(judge, audit: dict | None) -> dict | None:
    """The judge's spec, key and compact audit (None: not audited), for manifests."""
    from .audit import compact, is_reliable, reliability_note
    from .judge import judge_key, judge_spec

    spec = judge_spec(judge)
    if spec is None:
        return None
    llm = getattr(judge, "llm", None)
    return {**spec, "key": judge_key(spec), "llm": llm_spec(llm) if llm is not None else None,
            "audit": compact(audit), "reliable": is_reliable(audit), "reliability": reliability_note(audit)}


def find_judge_audit(judge, dataset_name: str | None = None, cache=None) -> dict | None:
    """The cached audit of ``judge`` (``audit.DEFAULT_CACHE`` unless ``cache``), None when absent or unreadable."""
    from .audit import DEFAULT_CACHE, AuditCache
    from .judge import judge_key

    if judge is None:
        return None
    try:
        store = cache if isinstance(cache, AuditCache) else AuditCache(cache or DEFAULT_CACHE)
    except ValueError as exc:
        import warnings

        warnings.warn(f"judge audit cache unreadable: {exc}")
        return None
    from .audit import REAL_ANSWERS, _real_answer_audit, compact

    found = store.find(judge_key(judge), dataset=dataset_name)
    if found is not None and found.get("dataset") == REAL_ANSWERS:
        return found
    real = _real_answer_audit(getattr(judge, "model", None))  # real answers outrank probes (labelled set)
    return {**real, "probe_audit": compact(found)} if real is not None else found


# -- the run directory's manifest -------------------------------------------------------------------

SUMMARY_FIELDS = ("llm", "embedder", "judge", "dataset", "git_commit", "prompt_hashes", "package_version")


def summary_of(evaluation: dict) -> dict:
    """The ``summary`` block of a run manifest from one evaluation manifest."""
    return {"llm": evaluation.get("llm"), "embedder": evaluation.get("embedder"), "judge": evaluation.get("judge"),
            "dataset": evaluation.get("dataset_info") or evaluation.get("dataset"),
            "git_commit": evaluation.get("git_commit"), "package_version": evaluation.get("version"),
            "prompt_hashes": {evaluation.get("method"): evaluation.get("prompt_hashes")}}


def update_run_manifest(out: Path, evaluation: dict, **extra) -> Path:
    """Append ``evaluation`` to ``<out>/manifest.json`` and refresh its ``summary`` (prompt hashes of
    every method evaluated so far are kept). An unreadable manifest is kept aside, not overwritten."""
    from ..jsonl import DamagedFile, confined, read_json, write_json_atomic
    from ..llm.redact import redact_value

    out = Path(out)
    path = out / "manifest.json"
    data: dict = {}
    if path.exists():
        try:
            data = read_json(confined(path, out))  # a link out of the run is damaged too (moved aside)
        except DamagedFile as exc:  # reported and kept aside, never silently reset
            backup = path.with_name("manifest.json.damaged")
            path.replace(backup)
            print(f"warning: {exc}; kept it as {backup} and started a new manifest.json", file=sys.stderr)
    if not isinstance(data.get("evaluations", []), list):
        raise ValueError(f"{path}: field 'evaluations' is not a list; fix or move the file")
    data.update(extra)
    data.setdefault("evaluations", []).append(redact_value({**evaluation, "results": "results.jsonl"}))
    summary = summary_of(evaluation)
    prompts = dict((data.get("summary") or {}).get("prompt_hashes") or {})
    prompts.update(summary["prompt_hashes"])
    summary["prompt_hashes"] = prompts
    data["summary"] = redact_value(summary)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, data, indent=2)
    return path


def run_summary(manifest: dict) -> dict:
    """``{"llm", "embedder", "judge", "judge_audit", "dataset", "git_commit"}`` as display strings and
    the judge's audit (or None), from any manifest layout; missing parts say "not recorded"."""
    m = manifest if isinstance(manifest, dict) else {}
    s = m.get("summary") if isinstance(m.get("summary"), dict) else {}
    evals = m.get("evaluations") if isinstance(m.get("evaluations"), list) else []
    last = evals[-1] if evals and isinstance(evals[-1], dict) else {}

    def pick(*keys):
        for src in (s, m, last):
            for k in keys:
                if src.get(k):
                    return src[k]
        return None

    llm, judge = pick("llm", "llm_model"), pick("judge", "judge_model")
    emb, data = pick("embedder"), pick("dataset_info", "dataset", "data")
    audit = judge.get("audit") if isinstance(judge, dict) else None
    return {"llm": _label(llm, "model"), "embedder": _label(emb, "name"), "judge": _label(judge, "model", "rule"),
            "judge_audit": audit if isinstance(audit, dict) else None,
            "judge_reliability": judge.get("reliability") if isinstance(judge, dict) else None,
            "dataset": _label(data, "name", "spec"), "git_commit": str(pick("git_commit") or "not recorded")[:12],
            "llm_sha256": (llm.get("model_sha256") or "")[:12] if isinstance(llm, dict) else ""}


def run_embedder_name(manifest: dict, method: str | None = None) -> str | None:
    """The name of the embedder a run used (for ``method`` when given: the last evaluation of that
    method that records one), from any manifest layout; None when the manifest does not say.
    A method evaluated without an embedder (Full-Context records none) falls back to the run's."""
    m = manifest if isinstance(manifest, dict) else {}
    evals = [e for e in (m.get("evaluations") if isinstance(m.get("evaluations"), list) else []) if isinstance(e, dict)]
    mine = [e.get("embedder") for e in evals if method is not None and e.get("method") == method and e.get("embedder")]
    s = m.get("summary") if isinstance(m.get("summary"), dict) else {}
    for v in [*reversed(mine), s.get("embedder"), m.get("embedder"),
              *(e.get("embedder") for e in reversed(evals))]:
        name = v.get("name") if isinstance(v, dict) else v
        if name:
            return str(name)
    return None


def _label(v, *keys) -> str:
    if isinstance(v, dict):
        for k in keys:
            if v.get(k):
                return str(v[k])
        return "not recorded"
    return str(v) if v else "not recorded"
