"""Failure attribution: why each question came out the way it did, from its result row and trace.

``attribute(row)`` is a pure function of one harness row (``QuestionResult`` or its dict; the
``answer`` trace is used when the gold evidence ids are passed) and gives one label:

- ``failed``: the method raised instead of answering (``row.error``); nothing else can be said.
- ``judge_disagrees``: the judge is trusted, and its label and a defined F1 disagree strongly
  (CORRECT with F1 = 0, or WRONG with F1 = 1): correctness is in doubt, so no reading/retrieval
  verdict is given. With an untrusted judge F1 decides and the judge's opinion does not change the
  label; the conflict is still recorded (``Attribution.judge_f1_conflict``, and a count column in
  ``attribution_table``), so the rows where the judge says CORRECT against F1 = 0 stay visible.
- ``abstained``: wrong, and the answer says the information is not there, on a question that has
  an answer. (On a question built to be unanswerable, LoCoMo category 5 or a LongMemEval ``_abs``
  item, abstaining is the right answer and counts as ``correct``.) A hedged answer that is right
  by the rule below counts as ``correct``.
- ``correct``: right by the correctness rule below.
- ``retrieval_miss``: wrong, and no gold evidence turn was among the turns covered by what the
  method put in front of its final reader (``Answer.context``, turn-level evidence recall = 0).
- ``reading_miss``: wrong although at least one gold evidence turn was in front of the reader.
- ``unattributed``: wrong, but the question has no gold evidence ids, so retrieval and reading
  cannot be told apart.
- ``ungraded``: correctness cannot be decided (no trusted judge and no F1 for this question type,
  e.g. LongMemEval preference questions with an untrusted judge).

Correctness rule ("right" / "wrong"), first that applies:
1. a question built to be unanswerable: right iff the answer abstains;
2. ``judge_trusted=True`` and the judge gave a label: the judge's verdict (a judge is trusted only when its
   audit on labelled real answers passes, ``audit.is_reliable``);
3. the deterministic checker (``workbench.eval.checker``: dates as days and periods, names as entities, gold
   content recall), stored in the row's ``scores["checker"]`` or, for rows written before it existed, computed
   from the row's question, gold and prediction (then without the conversation's names);
4. otherwise: undecided (``ungraded``).
Token F1 >= 0.5 used to be rule 3; it gets dates backwards (gold "13 May 2023": "21 May 2023" scores 0.67,
"13th of May" 0.33) and punishes long right answers, so it decides nothing now; ``f1_threshold`` is kept for
the ``judge_disagrees`` check and for comparisons. The checker's agreement with careful readers is measured on
the labelled answers (``workbench judge-audit``).

"Shown" follows the trace convention (``workbench.trace.Answer``): the units in front of the final reader, or of
the calls that wrote the text it reads. For MemR3 that is every batch its router read (its answer call reads only
the evidence the router calls wrote from them, paper Eq. 6), so a MemR3 ``retrieval_miss`` means no gold turn was
in any batch the router read, and a ``reading_miss`` that gold was read by the router and the evidence or the
answer lost it (an evidence-writing miss). Until turn 4 only the last batch counted, which put 36 of conv-30's 57
``retrieval_miss`` rows there though the router had read the gold (reviews/memr3.md, turn-4 N4). Partial recall
(one of two gold turns shown) counts as shown, hence ``reading_miss``. The reason says how much was shown: the
row's turn-level recall and the turns its context covers (``turns_shown``), where the row has them.

``attribution_table(frame)`` counts the labels per method (and share of each), for reports and
notebooks.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from .metrics import says_abstain  # noqa: F401  (re-exported: one definition of an abstaining answer)

LABELS = ("correct", "retrieval_miss", "reading_miss", "abstained", "judge_disagrees", "unattributed",
          "ungraded", "failed")
F1_THRESHOLD = 0.5

@dataclass(frozen=True)
class Attribution:
    """The label and what it rests on (for tooltips and notebooks)."""

    label: str
    correct: bool | None
    basis: str  # "abstention-question" | "judge" | "checker" | "abstention" | "none" | "error"
    gold_shown: bool | None  # any gold evidence turn in front of the final reader (None: no gold ids)
    reason: str = ""
    judge_f1_conflict: bool = False  # judge CORRECT with F1 = 0, or WRONG with F1 = 1 (any trust)


def _get(row, name, default=None):
    if isinstance(row, Mapping):
        return row.get(name, default)
    return getattr(row, name, default)


def _text(value) -> str:
    """A string field of a row; None and a frame's NaN give ""."""
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)


def _number(value) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if f != f else f  # NaN -> None


def expects_abstention(row) -> bool:
    """LoCoMo category 5 (adversarial) or a LongMemEval abstention item (the row's ``abstention``
    flag, or an id ending in ``_abs``)."""
    category = _get(row, "category")
    return (str(category) == "5" or _get(row, "abstention") in (True, 1)
            or str(_get(row, "qa_id", "")).endswith("_abs"))


def _f1(row) -> tuple[float | None, str]:
    scores = _get(row, "scores") or {}
    for name in ("f1", "locomo_f1"):
        value = _number(scores.get(name) if isinstance(scores, Mapping) else None)
        if value is None:  # a flattened frame row carries scores as columns
            value = _number(_get(row, name))
        if value is not None:
            return value, name
    return None, "none"


def _checker(row) -> bool | None:
    """The checker's verdict: the stored score, else computed from the row's own text (older rows)."""
    from .checker import row_score

    value = _number(_get(row, "checker"))  # a flattened frame row carries scores as columns
    if value is None:
        value = row_score(row if isinstance(row, Mapping) else {k: _get(row, k) for k in
                                                                ("scores", "gold", "category", "error", "question",
                                                                 "prediction")})
    return None if value is None else value >= 0.5


def _judge(row) -> bool | None:
    """The judge's verdict (True/False), None when there is no usable label."""
    if _text(_get(row, "judge_error")):
        return None
    label = _text(_get(row, "judge_label")).strip().upper()
    return {"CORRECT": True, "WRONG": False}.get(label)


def _gold_shown(row, evidence: Iterable[str] | None) -> bool | None:
    if evidence is not None:
        gold = set(evidence)
        answer = _get(row, "answer")
        if gold and isinstance(answer, Mapping):
            shown = {s for h in answer.get("context", ()) for s in h.get("source_ids", ())}
            return bool(gold & shown)
        if not gold:
            return None
    recall = _number(_get(row, "evidence_recall"))
    return None if recall is None else recall > 0


def attribute(row, *, evidence: Iterable[str] | None = None, judge_trusted: bool = False,
              f1_threshold: float = F1_THRESHOLD) -> Attribution:
    """The attribution of one result row (see the module docstring for the rules).

    ``evidence``: gold evidence turn ids; when given (and the row keeps its ``answer`` trace), whether
    gold was shown is read from the trace's ``context``; otherwise from the row's ``evidence_recall``.
    """
    gold_shown = _gold_shown(row, evidence)
    if _text(_get(row, "error")):
        return Attribution("failed", False, "error", gold_shown, _text(_get(row, "error")))
    abstains = says_abstain(_text(_get(row, "prediction")))
    f1, f1_name = _f1(row)
    verdict = _judge(row)
    conflict = verdict is not None and f1 is not None and ((verdict and f1 == 0.0) or (not verdict and f1 >= 1.0))
    if conflict and judge_trusted:
        return Attribution("judge_disagrees", None, "none", gold_shown,
                           f"judge {'CORRECT' if verdict else 'WRONG'} but {f1_name} = {f1:.2f}", True)
    label = _label(row, abstains, f1, f1_name, verdict, gold_shown, judge_trusted, f1_threshold)
    return replace(label, judge_f1_conflict=conflict)


def _label(row, abstains, f1, f1_name, verdict, gold_shown, judge_trusted, f1_threshold) -> Attribution:
    if expects_abstention(row):
        correct, basis = abstains, "abstention-question"
    elif judge_trusted and verdict is not None:
        correct, basis = verdict, "judge"
    elif (checked := _checker(row)) is not None:
        correct, basis = checked, "checker"
    elif abstains:  # an abstention on an answerable question is wrong whatever grades it
        correct, basis = False, "abstention"
    else:
        return Attribution("ungraded", None, "none", gold_shown, "no trusted judge label and no checker verdict")
    if correct:
        return Attribution("correct", True, basis, gold_shown)
    if abstains and not expects_abstention(row):
        return Attribution("abstained", False, basis, gold_shown, "answer says the information is missing")
    if gold_shown is None:
        return Attribution("unattributed", False, basis, None, "no gold evidence ids")
    if gold_shown:
        return Attribution("reading_miss", False, basis, True, f"gold evidence was shown{_shown(row)}, answer wrong")
    return Attribution("retrieval_miss", False, basis, False, f"no gold evidence turn was shown{_shown(row)}")


def _shown(row) -> str:
    """`` (recall 0.50 of the gold turns, 25 turns shown)`` from the row's figures; "" when it has neither."""
    recall, turns = _number(_get(row, "evidence_recall")), _number(_get(row, "turns_shown"))
    bits = ([f"recall {recall:.2f} of the gold turns"] if recall is not None else []) + (
        [f"{turns:.0f} turns shown"] if turns is not None else [])
    return f" ({', '.join(bits)})" if bits else ""


def attribution_label(row, **kw) -> str:
    return attribute(row, **kw).label


def attribution_table(frame, *, judge_trusted: bool | None = None, shares: bool = True):
    """Per method: count of each label (and its share of the method's rows when ``shares``), plus
    ``judge_f1_conflict``: rows where the judge and F1 disagree strongly (not part of the partition).

    ``frame``: the harness rows as a DataFrame (``results_frame``) or an iterable of rows. With
    ``judge_trusted=None`` the stored ``attribution`` column is used where present (it was computed
    with an untrusted judge); passing True/False recomputes every row with that judge trust.
    """
    import pandas as pd

    df = frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(
        [r.to_dict() if hasattr(r, "to_dict") else dict(r) for r in frame])
    if df.empty:
        return pd.DataFrame(columns=["method", "n", *LABELS])
    if judge_trusted is None and "attribution" in df.columns:
        labels = df["attribution"].where(df["attribution"].notna(), None)
        missing = labels.isna()
    else:
        labels = pd.Series([None] * len(df), index=df.index, dtype=object)
        missing = pd.Series(True, index=df.index)
    labels = labels.rename("attribution")
    trust = bool(judge_trusted)
    records = df.to_dict("records")
    found = [attribute(r, judge_trusted=trust) for r in records]
    labels[missing] = [a.label for a, m in zip(found, missing) if m]
    conflicts = pd.Series([a.judge_f1_conflict for a in found], index=df.index)
    method = (df["method"] if "method" in df.columns else pd.Series("?", index=df.index)).rename("method")
    counts = pd.crosstab(method, labels).reindex(columns=list(LABELS), fill_value=0)
    out = counts.copy()
    out.insert(0, "n", counts.sum(axis=1))
    out["judge_f1_conflict"] = conflicts.groupby(method).sum().reindex(out.index, fill_value=0).astype(int)
    if shares:
        for label in LABELS:
            out[f"{label}_share"] = (counts[label] / out["n"]).round(3)
    return out.reset_index().rename_axis(None, axis=1)


def attribution_markdown(frame, *, judge_trusted: bool | None = None) -> str:
    """The attribution table as a Markdown section (counts per method; what each label means)."""
    from .report import to_markdown

    table = attribution_table(frame, judge_trusted=judge_trusted, shares=False)
    basis = ("the judge (its audit on labelled real answers passes)" if judge_trusted
             else "the deterministic checker (judge not trusted; workbench.eval.checker)")
    return (f"### Failure attribution\n\nCorrect/wrong by {basis}; retrieval_miss = no gold evidence turn in "
            "what the final reader saw, reading_miss = gold shown but the answer wrong "
            "(workbench.eval.attribution); judge_f1_conflict counts rows where the judge and F1 disagree "
            "strongly.\n\n" + to_markdown(table))
