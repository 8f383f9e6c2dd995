"""Malformed label and annotation files (issue #68 item 6, and the FIFO of the last round's leftovers): every
reader of them (the labelled answers ``judge-audit --labels`` and every verdict audit read, the checker's
``entities.json``, the planted and annotated phenomena) gives one clear line naming the file and the field for
a file that is not JSON, of the wrong top-level type, with a record missing a field or holding a wrong type,
repeating a key, huge, a named pipe, or not UTF-8; the shipped ones, damaged, leave every view working."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from workbench.data import DatasetError
from workbench.eval import annotations as annmod
from workbench.eval import label_audit
from workbench.eval.annotations import ANNOTATIONS, load_annotations
from workbench.eval.label_audit import load_entities
from workbench.eval.labels import MAX_LABEL_BYTES, LabelFileWarning, label_problems, load_labels

ROOT = Path(__file__).resolve().parents[1]


def label_row(**kw) -> dict:
    base = {"id": "s/m/c/q1", "source": "s", "dataset": "d", "conv_id": "c", "qa_id": "c/q1", "category": 2,
            "question": "q?", "gold": "g", "prediction": "p", "method": "m", "lenient": "wrong", "strict": "wrong",
            "kind": "vague"}
    base.update(kw)
    return base


def _without(d: dict, key: str) -> dict:
    return {k: v for k, v in d.items() if k != key}


GOOD_LINE = json.dumps(label_row())
ANN = json.loads(ANNOTATIONS.read_text(encoding="utf-8"))
FIRST_UPDATE = ANN["conversations"]["sample-1"]["updates"][0]


def _ann(**conv) -> str:
    return json.dumps({"schema": 1, "conversations": {"sample-1": {**ANN["conversations"]["sample-1"], **conv}}})


#: reader -> case -> (file text, what the one line must name besides the file)
CASES = {
    "labels": {
        "not JSON": (GOOD_LINE + "\n{\"id\": \n", "line 2"),
        "wrong top-level type": (GOOD_LINE + "\n[1, 2]\n", "line 2: expected a JSON object"),
        "missing field": (json.dumps(_without(label_row(), "gold")) + "\n", "field 'gold' is missing"),
        "wrong field type (category)": (json.dumps(label_row(category="2")) + "\n", "field 'category'"),
        "wrong field type (question)": (json.dumps(label_row(question=["q"])) + "\n", "field 'question'"),
        "wrong field type (note)": (json.dumps(label_row(note=3)) + "\n", "field 'note'"),
        "wrong field type (judge_model)": (json.dumps(label_row(judge_model=["m"])) + "\n", "field 'judge_model'"),
        "duplicate key": (GOOD_LINE[:-1] + ', "gold": "other"}\n', "duplicate key 'gold'"),
        "NaN": (GOOD_LINE[:-1] + ', "note": NaN}\n', "NaN"),
        "repeated id": (GOOD_LINE + "\n" + GOOD_LINE + "\n", "repeats line 1"),
        "empty": ("\n\n", "holds no labelled answer"),
        "not UTF-8": (None, "not UTF-8"),
    },
    "entities": {
        "not JSON": ("{\"conv-26\": [\"Caroline\",", "not JSON"),
        "wrong top-level type": ('["Caroline"]', "top level"),
        "wrong field type": ('{"conv-26": "Caroline"}', "conv-26: must be a list"),
        "wrong item type": ('{"conv-26": ["Caroline", 7]}', "conv-26: must be a list"),
        "duplicate key": ('{"conv-26": ["A"], "conv-26": ["B"]}', "duplicate key 'conv-26'"),
        "not UTF-8": (None, "not UTF-8"),
    },
    "annotations": {
        "not JSON": ('{"schema": 1, "conversations": {', "not JSON"),
        "wrong top-level type": ("[]", "top level"),
        "missing field": (_ann(updates=[_without(FIRST_UPDATE, "new")]), "updates[0]: field 'new'"),
        "wrong field type": (_ann(updates=[{**FIRST_UPDATE, "old_turns": "D1:3"}]), "updates[0].old_turns"),
        "duplicate key": ('{"schema": 1, "conversations": {"sample-1": {}, "sample-1": {"updates": []}}}',
                          "duplicate key 'sample-1'"),
        "NaN": ('{"schema": NaN, "conversations": {}}', "NaN"),
        "not UTF-8": (None, "not UTF-8"),
    },
}
READERS = {"labels": (load_labels, "answers.jsonl"), "entities": (load_entities, "entities.json"),
           "annotations": (load_annotations, "annotations.json")}


def one_clear_line(exc: BaseException, path: Path, *needles: str) -> str:
    text = str(exc)
    assert "\n" not in text and text.startswith(f"{path}: "), text
    for n in needles:
        assert n in text, (n, text)
    return text


@pytest.mark.parametrize("reader, case", [(r, c) for r, cases in CASES.items() for c in cases])
def test_a_malformed_file_is_one_line_naming_file_and_field(tmp_path, reader, case):
    text, needle = CASES[reader][case]
    load, name = READERS[reader]
    path = tmp_path / name
    if text is None:
        path.write_bytes(b'{"id": "caf\xe9"}\n')
    else:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError) as err:
        load(path)
    one_clear_line(err.value, path, needle)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_huge_file_is_refused_by_its_size_before_reading(tmp_path, reader):
    load, name = READERS[reader]
    path = tmp_path / name
    with open(path, "wb") as f:  # sparse: no disk is spent on it
        f.truncate(MAX_LABEL_BYTES + 1)
    with pytest.raises(DatasetError) as err:
        load(path)
    one_clear_line(err.value, path, "<file>", f"{MAX_LABEL_BYTES:,}", "refused before reading")


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_is_refused_before_reading(tmp_path, reader):
    load, name = READERS[reader]
    path = tmp_path / name
    os.mkfifo(path)
    with pytest.raises(DatasetError) as err:  # before: open() waited for a writer forever
        load(path)
    one_clear_line(err.value, path, "a named pipe", "refused before reading")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_judge_audit_given_a_named_pipe_as_labels_says_so_and_does_not_hang(tmp_path):
    fifo = tmp_path / "labels.jsonl"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        got = subprocess.run([sys.executable, "-m", "workbench.cli", "judge-audit", "--data", "tiny", "--judge",
                              "checker", "--labels", str(fifo), "--cache", str(tmp_path / "cache.json"),
                              "--no-progress"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("judge-audit --labels <named pipe> hangs")
    assert got.returncode == 2, got.stdout + got.stderr
    lines = [line for line in got.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(fifo) in lines[0] and "named pipe" in lines[0], got.stderr


def test_the_shipped_files_read_as_they_did():
    assert len(load_labels()) > 1000
    assert load_entities(label_audit.ENTITIES_FILE).keys() >= {"conv-26", "sample-1"}
    assert "sample-1" in load_annotations(ANNOTATIONS)


# -- damaged shipped files: the views carry on, and say it once ---------------------------------------------
@pytest.fixture
def damaged_shipped(tmp_path, monkeypatch):
    """The shipped labelled answers, checker names and planted phenomena, each replaced by a damaged file."""
    labels, entities, planted = tmp_path / "answers.jsonl", tmp_path / "entities.json", tmp_path / "annotations.json"
    labels.write_text(GOOD_LINE + "\n{not json\n")
    entities.write_text('{"conv-26": ["A"], "conv-26": ["B"]}')
    planted.write_text("[]")
    monkeypatch.setattr(label_audit, "DEFAULT_LABELS", labels)
    monkeypatch.setattr(label_audit, "ENTITIES_FILE", entities)
    monkeypatch.setattr(annmod, "ANNOTATIONS", planted)
    monkeypatch.setattr(annmod, "LOCOMO_ANNOTATIONS", tmp_path / "absent.json")
    # the problems said about these files are this test's own: later apps in this process must not list them
    import workbench.eval.labels as labels_mod

    monkeypatch.setattr(labels_mod, "_PROBLEMS", [])
    return labels, entities, planted


def test_damaged_shipped_labels_leave_the_audits_empty_and_say_so_once(damaged_shipped):
    labels, _, _ = damaged_shipped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert label_audit.shipped_labels() == () and label_audit.shipped_labels() == ()
        assert label_audit.checker_audit() is None and label_audit.best_row_source() == "checker"
    said = [str(w.message) for w in caught if issubclass(w.category, LabelFileWarning)]
    assert len(said) == 1 and f"{labels}: line 2: not JSON" in said[0], said
    assert said[0] in label_problems()


def test_damaged_checker_names_leave_the_checker_unaudited_and_say_so(damaged_shipped, monkeypatch):
    _, entities, _ = damaged_shipped
    monkeypatch.setattr(label_audit, "DEFAULT_LABELS", label_audit.LABELS_DIR / "answers.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LabelFileWarning)
        assert label_audit.checker_audit() is None
    assert any(str(entities) in p and "duplicate key 'conv-26'" in p for p in label_problems())


def test_damaged_shipped_annotations_leave_the_views_working(damaged_shipped):
    _, _, planted = damaged_shipped
    from widgets.lifecycle import _planted_marks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LabelFileWarning)
        with pytest.raises(DatasetError, match="top level"):
            annmod.shipped_annotations()
        assert _planted_marks("sample-1") == {}  # the transcript without its marks, not a failed tab
    assert any(str(planted) in p and "top level" in p for p in label_problems())
