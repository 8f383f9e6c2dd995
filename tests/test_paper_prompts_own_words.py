"""The paper profiles' prompts are in our own words (project standard: papers are references for facts, never a
source of sentences). Each prompt constant of a ``paper_prompts`` module is compared with its paper's text: no run
of ``MAX_SHARED`` or more consecutive words may be the paper's, except the output formats the methods parse (field
names and the paper's sentence patterns, listed with why). Skipped when ``../shared/papers`` is absent."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

PAPERS = Path(__file__).resolve().parents[1].parent / "shared" / "papers"
MAX_SHARED = 13
#: constants whose shared runs are formats the method parses, not prose
FORMATS = {("ama", "RETRIEVE"): "the Retriever's output fields (intent vector b_fine/b_abs/..., memory types)",
           ("ama", "CONSTRUCT"): "the sentence patterns S-V, S-V-O, S-V-C, S-V-O-O the paper's Constructor writes"}


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def longest_shared_run(prompt: str, paper: str) -> tuple[int, str]:
    """The longest run of consecutive words of ``prompt`` that also occurs in ``paper`` (both lower-cased words)."""
    words, text = _words(prompt), " " + " ".join(_words(paper)) + " "
    best = (0, "")
    for i in range(len(words)):
        n = best[0] + 1
        while i + n <= len(words) and f" {' '.join(words[i:i + n])} " in text:
            best = (n, " ".join(words[i:i + n]))
            n += 1
    return best


@pytest.mark.parametrize("method", ["hymem", "ama", "hmem", "recmem", "memr3"])
def test_no_paper_prompt_copies_a_sentence_of_its_paper(method):
    paper = PAPERS / f"{method}.txt"
    if not paper.exists():
        pytest.skip(f"{paper} absent")
    text = paper.read_text(errors="ignore")
    module = importlib.import_module(f"workbench.methods.{method}.paper_prompts")
    for name, value in vars(module).items():
        if name.isupper() and isinstance(value, str) and (method, name) not in FORMATS:
            n, run = longest_shared_run(value, text)
            assert n < MAX_SHARED, f"{method}.paper_prompts.{name} shares {n} words with the paper: {run!r}"


def test_the_check_finds_a_copied_sentence():
    paper = "Memory systems must decide what to keep. The agent writes each episode as a short paragraph today."
    assert longest_shared_run("Please: the agent writes each episode as a short paragraph!", paper)[0] == 9
