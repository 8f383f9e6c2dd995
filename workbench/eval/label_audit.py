"""Verdict sources measured against labelled real answers (issue: verdicts, items 2, 4 and 6).

``audit_on_labels(labels, source)`` gives, for one verdict source (a function from a labelled answer to
True / False / None), how often it accepts answers a careful reader calls wrong (false accepts, overall, per kind
of wrong answer and per category) and rejects answers the reader calls right (false rejects), with Wilson 95 %
intervals, its agreement with the reader, and the cost per verdict. The sources the workbench has:

- ``recorded_judge``: the verdict each run's own LLM judge wrote at the time (per judge model; free to audit);
- ``checker``: the deterministic checker (``workbench.eval.checker``), no model at all;
- ``f1``: token F1 >= 0.5, the old per-row rule, for comparison.

Labels default to the lenient protocol; ``protocol="strict"`` audits against the strict one.
"""
from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping, Sequence

from .checker import check_answer
from ..data import DatasetError
from .labels import (DEFAULT_LABELS, LABELS_DIR, WRONG_KINDS, LabelledAnswer, load_labels, note_label_problem,
                     parse_label_json, read_label_file)
from .metrics import token_f1
from .stats import rate

Verdict = Callable[[LabelledAnswer], "bool | None"]


def checker_source(entities: Mapping[str, Sequence[str]] | None = None, **kw) -> Verdict:
    """The deterministic checker as a verdict source; ``entities`` maps a conversation id to its names."""
    entities = entities or {}

    def verdict(a: LabelledAnswer) -> bool:
        return check_answer(a.question, a.gold, a.prediction, entities=entities.get(a.conv_id, ()), **kw).correct

    return verdict


def recorded_judge(a: LabelledAnswer) -> bool | None:
    return {"CORRECT": True, "WRONG": False}.get(a.judge_label or "")


def f1_source(threshold: float = 0.5) -> Verdict:
    return lambda a: token_f1(a.prediction, a.gold) >= threshold


def recall_source(threshold: float = 0.5) -> Verdict:
    """Gold content recall alone (the checker's last rule without its date, name, number and yes/no rules)."""
    from .checker import content_recall

    def verdict(a: LabelledAnswer) -> bool:
        r = content_recall(a.gold, a.prediction, a.question)
        return r is not None and r >= threshold

    return verdict


def method_rank_agreement(labels: Sequence[LabelledAnswer], source: Verdict, *, min_answers: int = 10,
                          protocol: str = "lenient") -> dict:
    """Spearman's rank correlation between methods ranked by the readers' labels and by ``source`` (per source
    run: the demo's methods, each real-scale method per conversation), over groups of at least ``min_answers``:
    whether a table led by ``source`` would order the methods as careful readers do."""
    import pandas as pd

    rows = [{"group": f"{a.source}/{a.method}", "truth": getattr(a, protocol) == "right", "v": source(a)}
            for a in labels]
    df = pd.DataFrame(rows).dropna(subset=["v"])
    if df.empty:
        return {"groups": 0, "spearman": None}
    g = df.assign(v=df["v"].astype(float), truth=df["truth"].astype(float)).groupby("group")
    means = g[["truth", "v"]].mean()[g.size() >= min_answers]
    if len(means) < 3:
        return {"groups": int(len(means)), "spearman": None}
    rho = means["truth"].rank().corr(means["v"].rank())
    return {"groups": int(len(means)), "spearman": None if rho != rho else round(float(rho), 3)}


def source_table(labels: Sequence[LabelledAnswer] | None = None) -> list[dict]:
    """Every verdict source the workbench has, measured on the labelled set: agreement, false accepts and
    rejects, and the rank correlation of methods (item 6 of the verdicts issue: the headline is the best)."""
    labels = list(shipped_labels() if labels is None else labels)
    if not labels:
        return []
    sources = [("checker", checker_source(shipped_entities())), ("f1", f1_source()),
               ("content recall >= 0.5", recall_source())]
    models = sorted({a.judge_model for a in labels if a.judge_model})
    sources += [(f"judge {m} (recorded)", recorded_judge) for m in models]
    # a variant that costs nothing more: the LLM judge may only accept what the checker accepts too
    checker = checker_source(shipped_entities())
    both = lambda a: None if recorded_judge(a) is None else bool(recorded_judge(a) and checker(a))  # noqa: E731
    sources += [(f"judge {m} (recorded) and checker", both) for m in models]
    out = []
    for name, src in sources:
        subset = labels
        if name.startswith("judge "):
            model = name[len("judge "):].split(" (recorded)")[0]
            subset = [a for a in labels if a.judge_model == model]
        a = audit_on_labels(subset, src, name=name)
        out.append({"source": name, "n": a["decided"], "agreement": a["agreement"]["rate"],
                    "false_accept": a["false_accept"]["rate"], "false_reject": a["false_reject"]["rate"],
                    "fa_ci": a["false_accept"]["ci"], "fr_ci": a["false_reject"]["ci"],
                    "method_rank_spearman": method_rank_agreement(subset, src)["spearman"]})
    return out


@lru_cache(maxsize=2)
def _best(key: tuple) -> str:
    try:
        rows = {r["source"]: r for r in source_table()}
    except DatasetError as exc:  # the checker's names damaged: the default, said once
        note_label_problem(f"the checker's names unusable, so the best verdict source is not measured: {exc}")
        return "checker"
    scored = [(rows[name]["agreement"] or 0.0, name) for name in ("checker", "f1") if name in rows]
    return max(scored)[1] if scored else "checker"


def best_row_source() -> str:
    """``checker`` or ``f1``: whichever agrees more with the labelled real answers (``checker`` when no set is
    shipped). ``report.auto_metric`` leads with it when no judge is trusted."""
    return _best(_version(DEFAULT_LABELS, ENTITIES_FILE))  # the globals, read now (a test may point them away)


def audit_on_labels(labels: Sequence[LabelledAnswer], source: Verdict, *, protocol: str = "lenient",
                    name: str = "", cost_per_verdict: str = "") -> dict:
    """False-accept and false-reject rates of ``source`` against the labels (see the module docstring)."""
    fa, fr = [], []
    by_kind: dict[str, list[bool]] = defaultdict(list)
    by_cat: dict[int, dict[str, list[bool]]] = defaultdict(lambda: {"fa": [], "fr": []})
    agree = undecided = 0
    for a in labels:
        v = source(a)
        if v is None:
            undecided += 1
            continue
        right = getattr(a, protocol) == "right"
        agree += v == right
        if right:
            fr.append(not v)
            by_cat[a.category]["fr"].append(not v)
        else:
            fa.append(v)
            by_kind[a.kind if a.kind in WRONG_KINDS else "other"].append(v)
            by_cat[a.category]["fa"].append(v)
    decided = len(fa) + len(fr)
    return {"source": name, "protocol": protocol, "n": len(labels), "decided": decided, "undecided": undecided,
            "agreement": rate(agree, decided), "false_accept": rate(sum(fa), len(fa)),
            "false_reject": rate(sum(fr), len(fr)),
            "false_accept_by_kind": {k: rate(sum(v), len(v)) for k, v in sorted(by_kind.items())},
            "by_category": {str(c): {"false_accept": rate(sum(d["fa"]), len(d["fa"])),
                                     "false_reject": rate(sum(d["fr"]), len(d["fr"]))}
                            for c, d in sorted(by_cat.items())},
            "cost_per_verdict": cost_per_verdict}


# -- the shipped labelled set, as every view's audit --------------------------------------------------
ENTITIES_FILE = LABELS_DIR / "entities.json"
#: the least number of labelled wrong answers an audit needs before it can call a source reliable
MIN_WRONG = 20


@lru_cache(maxsize=4)
def _shipped(path: str, mtime: float) -> tuple[LabelledAnswer, ...]:
    return tuple(load_labels(path))


def shipped_labels(path: str | Path | None = None) -> tuple[LabelledAnswer, ...]:
    """The labelled answers shipped with the package (empty when the file is absent); cached per file version.
    A damaged file reads as empty too, said once (``labels.note_label_problem``): every view that shows an
    audit figure then says it is not audited, rather than the page failing. ``path``: ``DEFAULT_LABELS``."""
    path = Path(path or DEFAULT_LABELS)
    try:
        return _shipped(str(path), path.stat().st_mtime) if path.exists() else ()
    except (DatasetError, OSError) as exc:
        note_label_problem(f"labelled answers unusable, so no verdict source is audited on them: {exc}")
        return ()


def load_entities(path: str | Path) -> dict[str, list[str]]:
    """``entities.json``: conversation id -> the names the checker should know; a ``DatasetError`` naming the
    file and the entry when it is damaged (an entry dropped would change the checker's audit unseen)."""
    data = parse_label_json(path, read_label_file(path))
    if not isinstance(data, dict):
        raise DatasetError(str(path), "top level", f"expected an object {{conv_id: [names]}}, found "
                                                   f"{type(data).__name__}")
    for conv_id, names in data.items():
        if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
            raise DatasetError(str(path), conv_id, "must be a list of non-empty name strings")
    return data


def shipped_entities(path: str | Path | None = None) -> dict[str, list[str]]:
    """Conversation id -> names, saved beside the labels so the checker can be audited without the datasets
    (empty when the file is absent; a damaged one raises ``DatasetError``, see ``load_entities``).
    ``path``: ``ENTITIES_FILE``."""
    path = Path(path or ENTITIES_FILE)
    if not path.exists():
        return {}
    return load_entities(path)


def _as_audit(result: dict, **extra) -> dict:
    """A label audit in the shape of a probe audit (``audit.is_reliable`` and the reports read it)."""
    fa = result["false_accept"]
    reliable = fa.get("rate") is not None and fa["n"] >= MIN_WRONG and fa["rate"] <= 0.20
    return {**result, "dataset": "labelled real answers", "n_probes": result["decided"],
            "basis": "labelled real answers", "reliable": reliable, **extra}


def judge_real_audit(judge_model: str | None, labels: Sequence[LabelledAnswer] | None = None) -> dict | None:
    """The audit of an LLM judge on labelled real answers, from the verdicts that judge model wrote when the
    answers were recorded (None when the set holds too few of its verdicts to say)."""
    if not judge_model:
        return None
    labels = shipped_labels() if labels is None else labels
    mine = [a for a in labels if a.judge_model == judge_model and a.judge_label]
    if sum(1 for a in mine if not a.right) < MIN_WRONG:
        return None
    return _as_audit(audit_on_labels(mine, recorded_judge, name=f"judge {judge_model}",
                                     cost_per_verdict="one LLM call"), judge={"model": judge_model})


@lru_cache(maxsize=2)
def _checker_audit(key: tuple) -> dict | None:
    labels = shipped_labels()
    if not labels:
        return None
    try:
        entities = shipped_entities()
    except DatasetError as exc:  # the audit without the names would be another figure: none, said once
        note_label_problem(f"the checker's names unusable, so the checker is not audited: {exc}")
        return None
    return _as_audit(audit_on_labels(labels, checker_source(entities), name="checker",
                                     cost_per_verdict="no model call (regular expressions and a stemmer)"))


def checker_audit() -> dict | None:
    """The deterministic checker's audit on the shipped labelled answers (None when no set is shipped)."""
    return _checker_audit(_version(DEFAULT_LABELS, ENTITIES_FILE))


def _version(*paths) -> tuple:
    """What a cached figure over the shipped files depends on: each file's path and modification time."""
    out = []
    for p in map(Path, paths):
        try:
            out.append((str(p), p.stat().st_mtime))
        except OSError:
            out.append((str(p), 0.0))
    return tuple(out)


def verdict_note(metric: str, audit: dict | None) -> str:
    """One sentence naming a verdict source and its measured agreement with careful readers."""
    if not audit:
        return f"{metric}: not audited on labelled real answers"
    ag, fa, fr = audit["agreement"], audit["false_accept"], audit["false_reject"]
    return (f"{metric}: agrees with careful readers on {ag['rate']:.0%} of {ag['n']} labelled real answers "
            f"(accepts {fa['k']}/{fa['n']} wrong, rejects {fr['k']}/{fr['n']} right)")


def audit_by_method(labels: Sequence[LabelledAnswer], source: str = "real_scale",
                    judge_model: str | None = None) -> dict:
    """Each method's labelled answers of one ``source`` audited on their own: the checker, the judge's recorded
    verdicts (only ``judge_model``'s when given) and F1 >= 0.5 (``{method: {"n", "right", "conversations",
    "checker" | "judge" | "f1": audit}}``). Why: a judge that accepts more of one method's wrong answers than
    another's can reorder the methods, which its pooled false-accept rate hides."""
    sources = {"checker": checker_source(shipped_entities()), "f1": f1_source()}
    out = {}
    for m in sorted({a.method for a in labels if a.source == source}):
        mine = [a for a in labels if a.source == source and a.method == m]
        judged = [a for a in mine if judge_model is None or a.judge_model == judge_model]
        out[m] = {"n": len(mine), "right": sum(a.right for a in mine),
                  "conversations": sorted({a.conv_id for a in mine}),
                  **{k: audit_on_labels(mine, src) for k, src in sources.items()},
                  "judge": audit_on_labels(judged, recorded_judge)}
    return out
