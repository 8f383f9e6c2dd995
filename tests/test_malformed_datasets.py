"""Issue #41 item 7: malformed dataset files (``workbench.testing.malformed.CASES``, 50+ of them, both
formats) end in a clear ``DatasetError`` naming the file, record and field, or a counted repair —
never silently wrong, a crash or a hang — while the real files and the samples load as before."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.data import DatasetError, load_dataset, load_locomo
from workbench.data.types import check_id, read_regular_file, visible_form
from workbench.jsonl import RefusedJson, loads_strict
from workbench.testing.malformed import BAD_OUTCOMES, CASES, markdown_table, run_all, run_case

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"  # ../shared beside the checkout


@pytest.fixture(scope="module")
def outcomes():
    return run_all(timeout_s=10.0)


def test_at_least_forty_cases_in_both_formats():
    assert len(CASES) >= 40 and {c.kind for c in CASES} == {"locomo", "longmemeval"}
    assert len({c.name for c in CASES}) == len(CASES)


def test_no_case_is_silently_wrong_a_crash_or_a_hang(outcomes):
    bad = [f"{r.case.name}: {r.outcome}: {r.detail}" for r in outcomes if r.outcome in BAD_OUTCOMES]
    assert not bad, "\n".join(bad)
    expected = {r.case.name: ("repaired" if r.case.expect.startswith("repair:") else "clear error") for r in outcomes}
    assert {r.case.name: r.outcome for r in outcomes} == expected


def test_errors_name_the_file_and_say_where(outcomes):
    for r in outcomes:
        if r.outcome == "clear error":
            assert f"{r.case.name}.json: " in r.detail, r.detail
            located = any(part in r.detail for part in ("sample[", "item[", ": JSON ["))
            assert located or "not a regular JSON file" in r.detail, r.detail  # record and field, or the file kind


def test_the_table_counts_every_outcome(outcomes):
    table = markdown_table(outcomes)
    assert "| silently wrong | 0 |" in table and table.count("\n| locomo-") + table.count("\n| lme-") == len(CASES)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_is_refused_at_once_not_waited_on(tmp_path):
    pipe = tmp_path / "data.json"
    os.mkfifo(pipe)
    with pytest.raises(DatasetError, match=r"data\.json: <file>: is a named pipe"):
        read_regular_file(str(pipe))
    (tmp_path / "case").mkdir()
    case = next(c for c in CASES if c.name == "locomo-named-pipe")
    assert run_case(case, tmp_path / "case", timeout_s=10).outcome == "clear error"


def test_visible_form_folds_invisible_and_look_alike_characters():
    assert visible_form("Ann\u200d") == "Ann" and visible_form("\uff21nn") == "Ann"
    assert visible_form(" Mary \u00a0 Ann\t") == "Mary Ann" and visible_form("Mary\tAnn") == "Mary Ann"
    assert visible_form("\u2060\ufeff") == "" and visible_form("Zoë") == "Zoë"
    assert check_id("f", "loc", "conv-26") == "conv-26" and check_id("f", "loc", "Mary Ann") == "Mary Ann"
    with pytest.raises(DatasetError, match=r"f: loc: 'conv\\u200b' holds invisible"):
        check_id("f", "loc", "conv\u200b")


def test_duplicate_keys_are_refused_only_when_asked():
    assert loads_strict('{"a": 1, "a": 2}') == {"a": 2}  # JSONL readers keep json's behaviour
    with pytest.raises(RefusedJson, match="duplicate key 'a'"):
        loads_strict('{"b": {"a": 1, "a": 2}}', unique_keys=True)
    assert loads_strict('[{"a": 1}, {"a": 2}]', unique_keys=True) == [{"a": 1}, {"a": 2}]


def test_refused_json_says_where_the_value_is():
    """A 5000-digit number, a repeated key, NaN or a lone surrogate once failed late or as "<file>";
    the refusal now carries the path to the value (a second parse, only on the error path)."""
    cases = {'[{"qa": [{"answer": 1' + "0" * 5000 + '}]}]': "[0].qa[0].answer",
             '{"a": {"b": 1, "b": 2}}': ".a",
             '{"x": [1, NaN]}': ".x[1]",
             '{"t": ["ok", "bad \\ud800"]}': ".t[1]",
             '{"k": {"\\udc00": 1}}': ".k['\\udc00'] (its key)"}
    for text, where in cases.items():
        with pytest.raises(RefusedJson) as info:
            loads_strict(text, unique_keys=True)
        assert info.value.where == where and str(info.value).endswith(f" at {where}"), (text[:40], info.value.where)


def test_a_locomo_session_a_few_days_early_is_kept_and_counted(tmp_path):
    case = next(c for c in CASES if c.name == "locomo-session-days-early")
    ds = load_locomo(case.build(tmp_path))
    assert ds.skipped == {"session_dates_out_of_order": 1} and len(ds[0].sessions) == 2


@pytest.mark.parametrize("spec,conversations,questions,turns", [
    ("sample", 2, 76, 245),
    ("tiny", 1, 5, 12),
    (f"locomo:{SHARED}/locomo/locomo10_dev.json", 7, 1347, 4124),
    (f"longmemeval:{SHARED}/longmemeval/longmemeval_oracle_dev.json", 399, 399, 8772),
])
def test_real_files_and_samples_load_as_before(spec, conversations, questions, turns):
    path = spec.partition(":")[2]
    if path and not Path(path).exists():
        pytest.skip(f"{path} is not on this machine")
    ds = load_dataset(spec)
    assert (len(ds), len(ds.questions), sum(len(c.turns) for c in ds)) == (conversations, questions, turns)
    assert "session_dates_out_of_order" not in ds.skipped


def test_sample_files_hold_no_duplicate_keys():
    from workbench.data import sample_path

    for name in ("sample_conversations", "tiny_conversation"):
        assert loads_strict(sample_path(name).read_text(), unique_keys=True)
