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


def checker_checks(entities: Mapping[str, Sequence[str]] | None = None, **kw) -> Verdict:
    """The checker as a verdict source that says why: its ``Check`` (``audit_on_labels`` counts a false reject by
    the kind the checker gave it: ``vague``, ``partial``, ``wrong_date``, ...)."""
    entities = entities or {}
    return lambda a: check_answer(a.question, a.gold, a.prediction, entities=entities.get(a.conv_id, ()), **kw)


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
    fr_kinds: dict[str, int] = defaultdict(int)
    for a in labels:
        v = source(a)
        if v is None:
            undecided += 1
            continue
        kind = getattr(v, "kind", None)  # a source that says why (``checker_checks``)
        v = bool(getattr(v, "correct", v))
        right = getattr(a, protocol) == "right"
        agree += v == right
        if right:
            fr.append(not v)
            by_cat[a.category]["fr"].append(not v)
            if not v:
                fr_kinds[kind or "?"] += 1
        else:
            fa.append(v)
            by_kind[a.kind if a.kind in WRONG_KINDS else "other"].append(v)
            by_cat[a.category]["fa"].append(v)
    decided = len(fa) + len(fr)
    return {"source": name, "protocol": protocol, "n": len(labels), "decided": decided, "undecided": undecided,
            "agreement": rate(agree, decided), "false_accept": rate(sum(fa), len(fa)),
            "false_reject": rate(sum(fr), len(fr)),
            "false_accept_by_kind": {k: rate(sum(v), len(v)) for k, v in sorted(by_kind.items())},
            "false_reject_by_kind": dict(sorted(fr_kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
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
    sources = {"checker": checker_checks(shipped_entities()), "f1": f1_source()}
    out = {}
    for m in sorted({a.method for a in labels if a.source == source}):
        mine = [a for a in labels if a.source == source and a.method == m]
        judged = [a for a in mine if judge_model is None or a.judge_model == judge_model]
        out[m] = {"n": len(mine), "right": sum(a.right for a in mine),
                  "conversations": sorted({a.conv_id for a in mine}),
                  **{k: audit_on_labels(mine, src) for k, src in sources.items()},
                  "judge": audit_on_labels(judged, recorded_judge)}
    return out


# -- the semantic step's thresholds, chosen by cross-validation (issue #66, item 1) ------------------------------
#: conversations whose answers are never used to fit or tune a verdict: LoCoMo conv-30 is the independent check
HELD_OUT_CONVERSATIONS = frozenset({"conv-30"})
#: the thresholds tried: MiniLM word cosine for a near-synonym, VADER valence gap for a sentiment word (None: off)
WORD_COS_GRID = (None, 0.70, 0.75, 0.80)
VALENCE_GAP_GRID = (None, 0.5, 1.0, 1.5, 2.0, 2.5)


def fit_labels(labels: Sequence[LabelledAnswer]) -> list[LabelledAnswer]:
    """The labelled answers a verdict may be fitted on: none of a held-out conversation (``HELD_OUT_CONVERSATIONS``)."""
    return [a for a in labels if a.conv_id not in HELD_OUT_CONVERSATIONS]


def _errors(truth: Sequence[bool], verdicts: Sequence[bool]) -> float:
    """False-reject rate plus false-accept rate: both errors weigh alike whatever the share of right answers."""
    right = [v for t, v in zip(truth, verdicts) if t]
    wrong = [v for t, v in zip(truth, verdicts) if not t]
    return (sum(not v for v in right) / max(len(right), 1)) + (sum(wrong) / max(len(wrong), 1))


def cross_validate(labels: Sequence[LabelledAnswer] | None = None, *, folds: int = 5, seed: int = 0,
                   word_cos_grid=WORD_COS_GRID, valence_gap_grid=VALENCE_GAP_GRID) -> dict:
    """The checker's semantic thresholds chosen by ``folds``-fold cross-validation on the labelled answers (no
    held-out conversation's): on each fold's training part the grid point with the fewest errors (false-reject
    plus false-accept rate) is chosen and judged on the fold left out; the out-of-fold verdicts give the false
    accepts and rejects with Wilson 95 % intervals. Folds hold whole questions (every method's answer to one
    question in one fold), so a gold seen in training is never scored in its fold. Also the point chosen on all
    of them (what ``paraphrase.WORD_COS`` / ``VALENCE_GAP`` should be) and the lexical checker's figures beside."""
    import random

    from .checker import check_answer
    from .paraphrase import Paraphrase

    labels = fit_labels(shipped_labels() if labels is None else labels)
    entities = shipped_entities()
    base = Paraphrase()
    grid = [(c, g) for c in word_cos_grid for g in valence_gap_grid]
    truth = [a.right for a in labels]
    verdicts = {}
    for c, g in grid:
        para = base.with_thresholds(word_cos=c, valence_gap=g)
        verdicts[(c, g)] = [check_answer(a.question, a.gold, a.prediction, entities=entities.get(a.conv_id, ()),
                                         paraphrase=para).correct for a in labels]
    lexical = [check_answer(a.question, a.gold, a.prediction, entities=entities.get(a.conv_id, ()),
                            paraphrase=None).correct for a in labels]
    questions = sorted({(a.conv_id, a.qa_id) for a in labels})
    random.Random(seed).shuffle(questions)
    fold_of = {q: i % folds for i, q in enumerate(questions)}
    out_of_fold = [False] * len(labels)
    chosen = []
    for f in range(folds):
        train = [i for i, a in enumerate(labels) if fold_of[(a.conv_id, a.qa_id)] != f]
        test = [i for i, a in enumerate(labels) if fold_of[(a.conv_id, a.qa_id)] == f]
        best = min(grid, key=lambda p: (_errors([truth[i] for i in train], [verdicts[p][i] for i in train]),
                                        grid.index(p)))
        chosen.append(best)
        for i in test:
            out_of_fold[i] = verdicts[best][i]
    overall = min(grid, key=lambda p: (_errors(truth, verdicts[p]), grid.index(p)))

    def figures(vs):
        fr = [not v for t, v in zip(truth, vs) if t]
        fa = [v for t, v in zip(truth, vs) if not t]
        return {"false_reject": rate(sum(fr), len(fr)), "false_accept": rate(sum(fa), len(fa))}

    return {"n": len(labels), "folds": folds, "held_out": sorted(HELD_OUT_CONVERSATIONS),
            "chosen_per_fold": [{"word_cos": c, "valence_gap": g} for c, g in chosen],
            "chosen_on_all": {"word_cos": overall[0], "valence_gap": overall[1]},
            "cross_validated": figures(out_of_fold), "on_all_with_chosen": figures(verdicts[overall]),
            "lexical_only": figures(lexical),
            "grid": [{"word_cos": c, "valence_gap": g, **figures(verdicts[(c, g)])} for c, g in grid]}


def summary_markdown(labels: Sequence[LabelledAnswer] | None = None, cv: dict | None = None) -> str:
    """The label audit's summary: the checker's cross-validated false rejects and accepts with their 95 %
    intervals (no held-out conversation's answer), then per method its false accepts and its false rejects by the
    kind the checker gave them (a method whose right answers are paraphrases shows many ``vague`` ones), so a
    reader can tell a method ranked down by the checker from one ranked down by its answers."""
    labels = list(shipped_labels() if labels is None else labels)
    if not labels:
        return "_no labelled answers shipped: the checker is not audited_"
    cv = cross_validate(labels) if cv is None else cv

    def fig(r):
        lo, hi = r["ci"] or (None, None)
        return f"{r['k']}/{r['n']} = {r['rate']:.1%} [95% CI {lo:.1%}, {hi:.1%}]" if r["rate"] is not None else "–"

    c, lex = cv["cross_validated"], cv["lexical_only"]
    chosen = cv["chosen_on_all"]
    lines = [f"Checker on {cv['n']} labelled answers ({cv['folds']}-fold cross-validation by question; no answer "
             f"of {', '.join(cv['held_out'])}): false rejects {fig(c['false_reject'])}, false accepts "
             f"{fig(c['false_accept'])}. Word overlap alone: false rejects {fig(lex['false_reject'])}, false "
             f"accepts {fig(lex['false_accept'])}. Thresholds chosen on all of them: MiniLM word cosine "
             f"{chosen['word_cos']}, sentiment valence gap {chosen['valence_gap']} (None: the rule is off).", "",
             "| method | labelled answers | right by the readers | checker: accepts wrong | checker: rejects right "
             "| rejects right, by the checker's kind |", "|---|---|---|---|---|---|"]
    checks = checker_checks(shipped_entities())
    for m in sorted({a.method for a in labels}):
        mine = [a for a in labels if a.method == m]
        r = audit_on_labels(mine, checks)
        fa, fr = r["false_accept"], r["false_reject"]
        kinds = ", ".join(f"{k} {n}" for k, n in r["false_reject_by_kind"].items()) or "–"
        lines.append(f"| {m} | {len(mine)} | {sum(a.right for a in mine)} | {fa['k']}/{fa['n']} | "
                     f"{fr['k']}/{fr['n']} | {kinds} |")
    return "\n".join(lines)
