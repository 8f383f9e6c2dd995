"""Which LLM each method of a run used, read from its manifest: for the run header and the report.

A run directory may hold methods evaluated on different LLMs (``--llm 'mine=scripted:F,*=replay:...'``, or
``--data demo``, where the demo's recorded methods replay its cassette and a plugin runs on ``--llm``). The
manifest's ``summary.llm`` names only the last evaluation's, so a header that shows it alone would say every
method ran on one model. Each evaluation records its own ``llm`` (``manifest.llm_spec``) and, from the command
line, ``llm_choice`` (its spec without machine paths, and how it was chosen); these functions read them.
"""
from __future__ import annotations


def llm_label(entry) -> str | None:
    """One evaluation's ``llm`` as people read it: the model, and for a replay the cassette it came from."""
    if not isinstance(entry, dict):
        return str(entry) if entry else None
    model = str(entry.get("model") or entry.get("class") or "")
    if not model:
        return None
    if entry.get("backend") == "replay only" and entry.get("cassette"):
        return f"{model} (replay of {entry['cassette']})"
    if str(entry.get("class")) in ("ScriptedFileLLM", "ScriptedLLM"):
        return f"{model} (scripted replies, no model)"
    return model


def llms_by_method(manifest) -> dict[str, str]:
    """``{method: LLM label}`` from a run manifest, the last evaluation of each method winning (a rerun into
    the same directory replaces what an earlier one used); methods whose evaluation records no LLM are left out."""
    evals = manifest.get("evaluations") if isinstance(manifest, dict) else None
    out: dict[str, str] = {}
    for ev in evals if isinstance(evals, list) else []:
        if not isinstance(ev, dict) or not isinstance(ev.get("method"), str):
            continue
        label = llm_label(ev.get("llm") or ev.get("llm_model"))
        if label:
            out.pop(ev["method"], None)
            out[ev["method"]] = label
    return out


def mixed_llms_line(manifest) -> str | None:
    """``"notebook_plugin: scripted-notes (scripted replies, no model); naive_rag, hymem: qwen2.5-coder-1.5b
    (replay of demo.jsonl)"`` when the run's methods used more than one LLM, else None (one LLM: the header's
    and the report's single name is true)."""
    return grouped_line(llms_by_method(manifest))


def mixed_embedders_line(manifest) -> str | None:
    """The same for embedders (``--embedder auto`` gives each paper method its paper's): ``"ama: text-embedding-3-large;
    recmem: text-embedding-3-small"`` when the run's methods embedded with more than one, else None."""
    evals = manifest.get("evaluations") if isinstance(manifest, dict) else None
    by: dict[str, str] = {}
    for ev in evals if isinstance(evals, list) else []:
        if isinstance(ev, dict) and isinstance(ev.get("method"), str) and isinstance(ev.get("embedder"), str):
            by.pop(ev["method"], None)
            by[ev["method"]] = ev["embedder"]
    return grouped_line(by)


def grouped_line(by: dict[str, str]) -> str | None:
    """``{method: label}`` as ``"a, b: label1; c: label2"``, or None when every method has the same label."""
    if len(set(by.values())) <= 1:
        return None
    groups: dict[str, list[str]] = {}
    for method, label in by.items():
        groups.setdefault(label, []).append(method)
    return "; ".join(f"{', '.join(methods)}: {label}" for label, methods in groups.items())


def llms_from_rows(rows) -> dict[str, list[str]]:
    """``{method: [model, ...]}`` from result rows (``llm_model``), in first-seen order: what a report over any
    results files can say without a manifest."""
    out: dict[str, list[str]] = {}
    for r in rows:
        if not isinstance(r, dict):
            continue
        method, model = r.get("method"), r.get("llm_model")
        if isinstance(method, str) and isinstance(model, str) and model:
            models = out.setdefault(method, [])
            if model not in models:
                models.append(model)
    return out


def llm_section(rows) -> str | None:
    """A markdown section naming the LLM of each method when the rows' methods ran on more than one (the scores
    then compare readers as well as memories), else None."""
    by = llms_from_rows(rows)
    if len({m for models in by.values() for m in models}) <= 1:
        return None
    lines = ["## The LLM each method ran on", "",
             "> The methods below ran on different LLMs, so their scores compare the readers as well as the "
             "memories.", "", "| method | LLM |", "|---|---|"]
    cell = lambda text: str(text).replace("|", "\\|").replace("\n", " ")  # noqa: E731 - run data in a table cell
    lines += [f"| {cell(method)} | {cell(', '.join(models))} |" for method, models in by.items()]
    return "\n".join(lines)
