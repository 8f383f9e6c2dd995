"""Damage the app survives, in the views that read on their own (issue #68, the last round's leftovers): damaged
gallery rows and cassette lines are counted and listed on the "How it works" page, never skipped in silence, and
the notebook ``QuestionView`` and ``LifecycleView`` carry on past one damaged conversation file as the app does
(the rest shown, the damaged file named) instead of raising."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("panel")

from widgets.how_it_works import HowItWorksPage  # noqa: E402
from workbench import gallery as gallerymod  # noqa: E402
from workbench.methods import get_method  # noqa: E402

METHOD = "memr3"  # the smallest gallery cassette: a replay takes seconds
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> Path:
    if not gallerymod.cassette(METHOD).exists():
        pytest.skip("the gallery cassette is not recorded")
    return gallerymod.run_gallery(tmp_path_factory.mktemp("gallery") / "gallery", [METHOD])


def _page(run: Path) -> HowItWorksPage:
    return HowItWorksPage.from_run(METHOD, get_method(METHOD), run)


def test_the_clean_gallery_shows_no_problem(replayed):
    page = _page(replayed)
    assert page.example is not None and page.problems == [] and "wb-how-damage" not in page.html()


def test_damaged_gallery_rows_are_counted_and_listed_by_file_and_line(replayed, tmp_path):
    run = Path(shutil.copytree(replayed, tmp_path / "gallery"))
    results = run / "results.jsonl"
    lines = results.read_text().splitlines()
    kept = sum(1 for line in lines if json.loads(line).get("method") == METHOD)
    results.write_text("\n".join([*lines, "{torn", "[1, 2]", "not json either"]) + "\n")
    memories = next(run.glob(f"memories/{METHOD}/*/memories.jsonl"))
    memories.write_text(memories.read_text() + "not json\n")
    page = _page(run)
    assert page.example is not None and len(page.example.rows) == kept  # the good rows all still shown
    problems = page.problems
    assert len(problems) == 4, problems
    assert sum(f"{results}:{len(lines) + i}:" in p for p in problems for i in (1, 2, 3)) == 3, problems
    assert any(str(memories) in p for p in problems)
    html = page.html()
    assert "wb-how-damage" in html and "4 problems" in html and "results.jsonl:" in html


def test_a_gallery_whose_every_row_is_damaged_says_so_not_only_that_it_is_missing(replayed, tmp_path):
    run = Path(shutil.copytree(replayed, tmp_path / "gallery"))
    results = run / "results.jsonl"
    n = len(results.read_text().splitlines())
    results.write_text("{damaged\n" * n)
    page = _page(run)
    assert page.example is None and len(page.problems) == n
    assert "wb-how-damage" in page.html() and f"{n} problems" in page.html()


def test_damaged_lines_of_a_gallery_cassette_are_said_at_replay_and_on_the_page(replayed, tmp_path, monkeypatch):
    """Before: ``run_gallery`` replays quietly into a buffer it throws away, so the cassette's "skipped N
    unusable lines" warning vanished with it, and the page said nothing of the calls the replay missed."""
    tapes = tmp_path / "cassettes"
    shutil.copytree(gallerymod.CASSETTES, tapes, ignore=shutil.ignore_patterns("*.lock"))
    tape = tapes / f"{METHOD}.jsonl"
    tape.write_text(tape.read_text() + "{not a cassette line\n")
    # a replay as `workbench demo` runs it, in a process of its own: what reaches its stderr
    code = (f"from pathlib import Path\nfrom workbench import gallery as g\ng.CASSETTES = Path({str(tapes)!r})\n"
            f"g.run_gallery({str(tmp_path / 'gallery')!r}, [{METHOD!r}])")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    got = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert got.returncode == 0, got.stderr[-3000:]
    assert "unusable line" in got.stderr and f"{tape}:" in got.stderr, got.stderr
    monkeypatch.setattr(gallerymod, "CASSETTES", tapes)
    page = _page(tmp_path / "gallery")
    assert any(p.startswith(f"{tape}:") for p in page.cassette_problems), page.cassette_problems
    assert "wb-how-damage" in page.html()


# -- the notebook views over a run with one damaged conversation file --------------------------------------
@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    from scripts.make_demo_run import make_demo_run

    return make_demo_run(tmp_path_factory.mktemp("run") / "run", n_conversations=2, max_questions=3)


@pytest.fixture
def damaged_run(demo_run, tmp_path) -> tuple[Path, str, str]:
    """The demo run with its first conversation file damaged: (run, damaged id, readable id)."""
    run = Path(shutil.copytree(demo_run, tmp_path / "run"))
    first, second = sorted(p.stem for p in (run / "conversations").glob("*.json"))[:2]
    (run / "conversations" / f"{first}.json").write_text('{"id": "' + first + '", "sessions": [')
    return run, first, second


def test_question_view_carries_on_past_a_damaged_conversation_file(damaged_run):
    from widgets import QuestionView

    run, bad, good = damaged_run
    view = QuestionView.from_run(run)  # before: raised DamagedFile
    assert set(view.conversations) == {good}
    assert {r["conv_id"] for r in view.rows} >= {bad, good}  # every answer still listed
    assert len(view.problems) == 1 and f"conversations/{bad}.json" in view.problems[0]
    assert "Problem reading the run" in view.body.value and f"{bad}.json" in view.body.value
    for conv in (good, bad):  # a question of each: the damaged one's without its transcript, not an error
        qa_id = next(r["qa_id"] for r in view.rows if r["conv_id"] == conv)
        view.select(qa_id)
        assert view.state is not None and view.state.rows
        view.select(qa_id, view.state.methods[0])
        assert view.selected == view.state.methods[0] and "Problem reading the run" in view.body.value


def test_lifecycle_view_carries_on_past_a_damaged_conversation_file(damaged_run):
    from widgets import LifecycleView

    run, bad, good = damaged_run
    view = LifecycleView.from_run(run)  # before: raised DamagedFile on the first conversation
    assert view.index.conv_id == good and view.target[0] == "turn" and view.index.turns
    assert any(f"conversations/{bad}.json" in p for p in view.problems)
    assert "Problem reading the run" in view.body.value
    named = LifecycleView.from_run(run, bad)  # asked for by name: an empty view saying why
    assert named.index.turns == {} and any(f"{bad}.json" in p for p in named.problems)
    assert "Problem reading the run" in named.body.value
    with pytest.raises(KeyError, match="no conversation"):
        LifecycleView.from_run(run, "no-such-conversation")
