"""Kill -9 and resume (issue #68, item 8): a real ``workbench eval`` killed three times at seeded moments (its last
results line cut in half after each kill that finds one whole) and rerun into the same ``--out`` ends with the
reference's rows, no row lost, repeated or changed, every damaged line reported
(``benchmarks.kill_resume``; ``docs/foreign-inputs.md`` holds the 20-kill figures). The comparison itself is
checked on a doctored copy, so a measurement that could not see a lost row would fail here too."""
from __future__ import annotations

import json
import shutil

import pytest

from benchmarks.kill_resume import Invocation, compare, markdown, measure, read_state

METHODS = ("naive_rag", "eager_floor")


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    work = tmp_path_factory.mktemp("kill-resume")
    summary = measure(kills=3, seed=0, per_run=3, methods=METHODS, questions=4, tear=1, work=work,
                      progress=lambda _: None)
    return work, summary


def test_kill_9_then_resume_loses_repeats_and_changes_no_row(measured):
    _, s = measured
    assert s.kills == 3 and s.resumes == 3 and s.reference_rows == 16
    assert [k.resume_started for k in s.per_kill] == [True] * 3  # each resume got past its resume check
    assert (s.rows_lost, s.rows_repeated, s.rows_extra, s.rows_differing) == (0, 0, 0, 0), s.per_run
    assert s.resume_failures == [] and s.damaged_unreported == 0 and s.damaged_other_files == 0, s.to_dict()
    assert s.reports_differing == 0  # `workbench report` of each resumed run reads as the reference's
    assert s.problems == []  # manifest whole and naming both methods, every saved memory whole and signed
    # a last line cut in half after a kill (as a power cut leaves it): reported by the resume, its row answered again
    assert s.torn_lines >= 1 and s.damaged_lines >= s.torn_lines and s.damaged_reported == s.damaged_lines
    table = markdown(s)
    assert "| rows lost | 0 |" in table and "| rows differing from the reference (prediction, verdicts) | 0 |" in table
    assert table.count("\n| ") >= 3 + 16  # one line per kill below the outcome counts


def test_the_comparison_sees_a_lost_a_repeated_a_changed_row_a_torn_line_and_a_temp_file(measured, tmp_path):
    work, s = measured
    ref_dir = work / "reference"
    ref = read_state(ref_dir, whole=True)
    got = tmp_path / "run"
    shutil.copytree(work / f"run{s.runs}", got)
    results = got / "results.jsonl"
    good, bad = [], []  # the whole lines, and those the kills' cut lines left
    for line in results.read_bytes().splitlines(keepends=True):
        try:
            good.append((json.loads(line), line))
        except ValueError:
            bad.append(line if line.endswith(b"\n") else line + b"\n")
    row = good[2][0]
    row["prediction"] = f"not {row['prediction']}"
    changed = (json.dumps(row) + "\n").encode()
    # the first row dropped, the second on two lines, the third answered otherwise, a torn last line
    results.write_bytes(b"".join([good[1][1], good[1][1], changed, *(ln for _, ln in good[3:]), *bad,
                                  b'{"method": "naive_r']))
    (got / ".manifest.json.abc123.tmp").write_text("{")
    state = read_state(got, whole=True)
    diff = compare(ref, state, ref_dir, got)
    assert len(diff["lost"]) == 1 and len(diff["repeated"]) == 1 and len(diff["differing"]) == 1, diff
    assert diff["differing"][0]["resumed"]["prediction"].startswith("not ")
    assert len(state.damaged["results.jsonl"]) == len(bad) + 1 and diff["temp_files"] == [".manifest.json.abc123.tmp"]


def test_what_a_resume_said_is_read_from_its_stderr():
    inv = Invocation(1.0, False, 0, "resuming runs/x/results.jsonl: 7 rows kept; 2 damaged or partial line(s) skipped "
                                    "(their questions run again):\n  results.jsonl:8: invalid JSON\n"
                                    "estimate for naive_rag (scripted): 2 conversation(s), 30 turns, 5 questions "
                                    "(5 judged)\n")
    assert inv.notice == {"kept": 7, "damaged": 2} and inv.left == {"naive_rag": 5} and inv.started_work
    assert Invocation(1.0, True, None, "").notice is None and not Invocation(1.0, True, None, "").started_work
