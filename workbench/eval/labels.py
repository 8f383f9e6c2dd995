"""Labelled real answers: what a careful reader says of answers methods really gave (issue: verdicts).

A judge audited only on synthetic probes (``workbench.eval.audit``) can look far better than it is on
the answers methods actually give: most real wrong answers are on topic but vague, or name the wrong
day, which probes built from the gold rarely look like. The labelled set is the ground truth every
verdict source is measured against (``workbench judge-audit`` reads it first).

One JSON object a line (``sample_data/labels/answers.jsonl``), written by reading each answer against
the gold and the evidence turns under ``sample_data/labels/PROTOCOL.md``:

- ``id``: ``<source>/<method>/<qa_id>``, unique;
- ``source``: the run the answer comes from (``demo``, ``real_scale``);
- ``dataset``, ``conv_id``, ``qa_id``, ``category`` (LoCoMo 1-4), ``question``, ``gold``, ``prediction``,
  ``method``, ``evidence`` (gold turn ids);
- ``lenient``, ``strict``: ``"right"`` or ``"wrong"`` under the two protocols;
- ``kind``: for an answer wrong under ``lenient`` the kind of error (``WRONG_KINDS``), else ``"right"``;
- ``note``: one short reason in the labeller's words;
- ``judge_label``: the verdict the run's own judge gave (``CORRECT``/``WRONG``/null), ``judge_model``;
- ``relabel`` (optional): a second, blind reading of the same answer (``lenient``, ``strict``, ``kind``),
  for the agreement figure.

``load_labels`` refuses a malformed line with an error naming file, line and field, so a broken set never
turns into a silently smaller audit.

Every label and annotation file (this one, ``entities.json``, ``sample_data/annotations.json`` and the
annotated LoCoMo phenomena) is read through ``read_label_file`` and parsed strictly (``workbench.jsonl``'s
``loads_strict``: a key repeated in one object, NaN, a lone surrogate or absurd nesting is refused, not
guessed at): a named pipe or device given as ``--labels`` is refused before it is opened for reading (a pipe
with no writer would hang the command), a file over ``MAX_LABEL_BYTES`` is refused by its size, and text
that is not UTF-8 names its byte. Each refusal is one ``DatasetError`` naming the file and the field.

The files shipped with the package are read by every view (a verdict's audit, the checker's note). When one
of those is damaged, the views carry on as if it were absent (no audit figure, no planted marks) and the
damage is said once: a ``LabelFileWarning`` line, and ``label_problems()`` for the app's header. A file given
by name (``judge-audit --labels``) is an error instead.
"""
from __future__ import annotations

import json
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..data import DatasetError
from ..data.types import read_regular_file
from ..jsonl import json_reason, loads_strict

VERDICTS = ("right", "wrong")
#: kinds of wrong answer, as the labelling protocol defines them
WRONG_KINDS = ("abstain", "vague", "wrong_date", "wrong_entity", "wrong_value", "partial", "unrelated",
               "contradicts", "failed")
KINDS = ("right", *WRONG_KINDS)
REQUIRED = ("id", "source", "dataset", "conv_id", "qa_id", "category", "question", "gold", "prediction",
            "method", "lenient", "strict", "kind")
LABELS_DIR = Path(__file__).resolve().parents[1] / "sample_data" / "labels"  # inside an installed wheel
if not LABELS_DIR.is_dir():  # a checkout: sample_data/ sits at the top of the tree
    LABELS_DIR = Path(__file__).resolve().parents[2] / "sample_data" / "labels"
DEFAULT_LABELS = LABELS_DIR / "answers.jsonl"
#: the largest label or annotation file read: the shipped answers are under 1 MB and a careful reader labels
#: a few thousand answers at most, so a file this big is not a labels file (and would hold the audit for minutes)
MAX_LABEL_BYTES = 64 * 1024 * 1024


class LabelFileWarning(UserWarning):
    """A label or annotation file shipped with the package is damaged; the views go on without it."""


_PROBLEMS: list[str] = []
_PROBLEMS_LOCK = threading.Lock()


def note_label_problem(text: str) -> None:
    """Say once per process that a shipped label or annotation file could not be used (``LabelFileWarning``)
    and keep the line for ``label_problems``."""
    with _PROBLEMS_LOCK:
        if text in _PROBLEMS:
            return
        _PROBLEMS.append(text)
    warnings.warn_explicit(text, LabelFileWarning, filename="workbench labels", lineno=0,
                           module="workbench.eval.labels")


def label_problems() -> list[str]:
    """One line per shipped label or annotation file that could not be read in this process (what the app
    lists among its header's problems)."""
    with _PROBLEMS_LOCK:
        return list(_PROBLEMS)


def read_label_file(path: str | Path, *, limit: int = MAX_LABEL_BYTES) -> str:
    """The text of a label or annotation file; a ``DatasetError`` naming it when it is missing, is not a
    regular file (refused before any read: opened without blocking, so a named pipe with no writer cannot
    hang the open, and checked on the open descriptor), is larger than ``limit`` bytes, or is not UTF-8."""
    file = str(path)
    data = read_regular_file(file, what="labels file", limit=limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(file, f"byte {exc.start}", "not UTF-8 text") from None


def parse_label_json(path: str | Path, text: str, where: str = "file"):
    """``text`` parsed strictly (a repeated key, NaN, a lone surrogate or deep nesting refused); a
    ``DatasetError`` naming the file, ``where`` and the place inside the document otherwise."""
    try:
        return loads_strict(text, unique_keys=True)
    except json.JSONDecodeError as exc:
        raise DatasetError(str(path), where, f"not JSON: {json_reason(exc)}") from None
    except ValueError as exc:  # RefusedJson: said where inside the document
        inside = getattr(exc, "where", "")
        raise DatasetError(str(path), f"{where}, at {inside}" if inside else where,
                           f"refused JSON: {getattr(exc, 'reason', exc)}") from None


@dataclass(frozen=True)
class LabelledAnswer:
    """One real answer with a careful reader's verdicts (see the module docstring for the fields)."""

    id: str
    source: str
    dataset: str
    conv_id: str
    qa_id: str
    category: int
    question: str
    gold: str
    prediction: str
    method: str
    lenient: str
    strict: str
    kind: str
    evidence: tuple[str, ...] = ()
    note: str = ""
    judge_label: str | None = None
    judge_model: str | None = None
    relabel: Mapping[str, str] | None = field(default=None, compare=False)

    @property
    def right(self) -> bool:
        """Right under the lenient protocol (the one papers' judges apply)."""
        return self.lenient == "right"


def _fail(path: Path, line: int, what: str):
    raise DatasetError(str(path), f"line {line}", what)


def _check_row(path: Path, line: int, row) -> LabelledAnswer:
    if not isinstance(row, dict):
        _fail(path, line, "expected a JSON object")
    for name in REQUIRED:
        if name not in row:
            _fail(path, line, f"field {name!r} is missing")
    for name in ("id", "source", "dataset", "conv_id", "qa_id", "question", "gold", "prediction", "method"):
        if not isinstance(row[name], str):
            _fail(path, line, f"field {name!r} must be a string")
    for name in ("lenient", "strict"):
        if row[name] not in VERDICTS:
            _fail(path, line, f"field {name!r} must be one of {VERDICTS}, not {row[name]!r}")
    if row["kind"] not in KINDS:
        _fail(path, line, f"field 'kind' must be one of {KINDS}, not {row['kind']!r}")
    if (row["kind"] == "right") != (row["lenient"] == "right"):
        _fail(path, line, "field 'kind' must be 'right' exactly when 'lenient' is 'right'")
    if row["strict"] == "right" and row["lenient"] != "right":
        _fail(path, line, "an answer right under 'strict' must be right under 'lenient'")
    category = row["category"]
    if isinstance(category, bool) or not isinstance(category, int) or category not in (1, 2, 3, 4):
        _fail(path, line, f"field 'category' must be a LoCoMo category 1-4, not {category!r}")
    evidence = row.get("evidence") or []
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        _fail(path, line, "field 'evidence' must be a list of turn ids")
    relabel = row.get("relabel")
    if relabel is not None:
        if not isinstance(relabel, dict) or relabel.get("lenient") not in VERDICTS \
                or relabel.get("strict") not in VERDICTS or relabel.get("kind") not in KINDS:
            _fail(path, line, "field 'relabel' must hold 'lenient', 'strict' and 'kind' like the label itself")
    judge = row.get("judge_label")
    if judge is not None and judge not in ("CORRECT", "WRONG"):
        _fail(path, line, f"field 'judge_label' must be CORRECT, WRONG or null, not {judge!r}")
    for name in ("note", "judge_model"):  # optional, but never a number or a list read as text
        if row.get(name) is not None and not isinstance(row[name], str):
            _fail(path, line, f"field {name!r} must be a string or null, not {type(row[name]).__name__}")
    return LabelledAnswer(
        id=row["id"], source=row["source"], dataset=row["dataset"], conv_id=row["conv_id"], qa_id=row["qa_id"],
        category=category, question=row["question"], gold=row["gold"], prediction=row["prediction"],
        method=row["method"], lenient=row["lenient"], strict=row["strict"], kind=row["kind"],
        evidence=tuple(evidence), note=str(row.get("note") or ""), judge_label=judge,
        judge_model=row.get("judge_model"),
        relabel=dict(relabel) if relabel else None)


def load_labels(path: str | Path = DEFAULT_LABELS) -> list[LabelledAnswer]:
    """Every labelled answer in ``path``; a malformed line or a repeated id is a ``DatasetError``
    naming the file, the line and the field, and so is a file that holds no labelled answer at all (the
    audit on real answers would otherwise be left out without a word)."""
    path = Path(path)
    out, seen = [], {}
    for n, text in enumerate(read_label_file(path).split("\n"), 1):
        if not text.strip():
            continue
        row = parse_label_json(path, text, f"line {n}")
        item = _check_row(path, n, row)
        if item.id in seen:
            _fail(path, n, f"id {item.id!r} repeats line {seen[item.id]}")
        seen[item.id] = n
        out.append(item)
    if not out:
        raise DatasetError(str(path), "<file>", "holds no labelled answer (one JSON object a line is expected)")
    return out


def items_from_rows(rows: Iterable[Mapping], dataset, *, source: str) -> list[dict]:
    """Unlabelled items to read, from result rows of a run over ``dataset`` (answerable categories 1-4
    only): the question, gold, prediction and each gold evidence turn with its session's date, which a
    reader needs to judge a temporal answer."""
    convs = {c.id: c for c in dataset}
    items = []
    for row in rows:
        category = row.get("category")
        if category not in (1, 2, 3, 4) or row.get("error"):
            continue
        conv = convs.get(row.get("conv_id"))
        qa = next((q for q in conv.qa if q.id == row.get("qa_id")), None) if conv else None
        if qa is None:
            continue
        evidence = []
        for turn_id in qa.evidence:
            try:
                turn, session = conv.turn(turn_id), conv.session_of(turn_id)
            except KeyError:
                continue
            evidence.append({"id": turn_id, "session_date": session.date_text, "speaker": turn.speaker,
                             "text": turn.content})
        items.append({"id": f"{source}/{row['method']}/{row['qa_id']}", "source": source,
                      "dataset": row.get("dataset", ""), "conv_id": conv.id, "qa_id": qa.id, "category": category,
                      "question": qa.question, "gold": qa.answer, "prediction": str(row.get("prediction") or ""),
                      "method": row["method"], "evidence": list(qa.evidence), "evidence_turns": evidence,
                      "judge_label": row.get("judge_label"), "judge_model": row.get("judge_model")})
    return items


def relabel_agreement(labels: Sequence[LabelledAnswer]) -> dict:
    """How often a second, blind reading agreed with the first (lenient and strict verdicts, and the
    kind), over the answers that carry one."""
    twice = [a for a in labels if a.relabel]
    if not twice:
        return {"n": 0}

    def share(key):
        agree = sum(1 for a in twice if getattr(a, key) == a.relabel[key])
        return {"agree": agree, "n": len(twice), "rate": round(agree / len(twice), 3)}

    return {"n": len(twice), "lenient": share("lenient"), "strict": share("strict"), "kind": share("kind")}
