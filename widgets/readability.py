"""What makes a model's text hard to read as it stands, flagged beside the text (never rewritten): a Markdown code
fence, a raw JSON object, a sentence the model looped on, letters of a writing system the rest does not use (which
a page without that font draws as boxes). One rule for every view that shows model output: the Question tab's
answers, the H-Mem tree's summaries, the Events tab's texts and the Memories table (usability review B17, T3)."""
from __future__ import annotations

import re
from collections import Counter

from .html import esc, short


def _scripts(text: str) -> dict[str, list[str]]:
    """The writing systems of ``text``'s letters (the first word of each letter's Unicode name: LATIN, CJK,
    CYRILLIC, ...), each with up to five of its letters."""
    import unicodedata

    out: dict[str, list[str]] = {}
    for ch in text:
        if ch.isalpha():
            letters = out.setdefault(unicodedata.name(ch, "UNKNOWN").split()[0], [])
            if len(letters) < 5 and ch not in letters:
                letters.append(ch)
    return out


def unreadable_marks(answer: str, question: str = "", *, than: str = "the question's") -> list[tuple[str, str]]:
    """What makes an answer hard to read as an answer, each as (flag, why): a code fence, a raw JSON object, one
    sentence written ``LOOP_TIMES`` times or more (the model looped), letters of a writing system the question does
    not use (the 0.5B wrote "可爱" into four English HyMem answers over
    conv-26). A view shows the model's text as it is; these say so instead of leaving a reader to guess (usability
    review B17)."""
    marks = []
    if "```" in answer:
        marks.append(("code fence", "the answer holds a Markdown code fence"))
    head = answer.lstrip()
    if head.startswith("{") and '":' in head:
        marks.append(("raw JSON", "the answer is a JSON object, not a sentence"))
    asked = set(_scripts(question)) or {"LATIN"}
    for script, letters in _scripts(answer).items():
        if script not in asked:
            marks.append((f"{script.lower()} script", f"letters of another writing system than {than}: "
                                                      f"{' '.join(letters)} ({script})"))
    looped = repeated_sentence(answer)
    if looped:
        sentence, times = looped
        marks.append(("repeats itself", f'"{short(sentence, 80)}" is written {times} times: the model looped'))
    return marks


#: a sentence written this many times in one text is a loop, not emphasis
LOOP_TIMES = 3


def repeated_sentence(text: str) -> tuple[str, int] | None:
    """The most repeated sentence of three or more words in ``text`` and its count, when it is written
    ``LOOP_TIMES`` times or more (a small model that loops repeats a sentence word for word); else None."""
    sentences = [" ".join(p.split()) for p in re.split(r"(?<=[.!?])\s+", text or "")]
    counts = Counter(p.lower() for p in sentences if len(p.split()) >= 3)
    if not counts:
        return None
    top, times = counts.most_common(1)[0]
    return (next(p for p in sentences if p.lower() == top), times) if times >= LOOP_TIMES else None


def flags_html(text, *, than: str = "the conversation's") -> str:
    """The flags of ``text`` as inline HTML (`` ⚠ code fence``, why on hover); "" for a clean text."""
    return "".join(f" <span class='wb-flag' style='color:#a04a00' title='{esc(why)}'>⚠ {esc(flag)}</span>"
                   for flag, why in unreadable_marks(str(text or ""), than=than))


def flags_words(text, *, than: str = "the conversation's") -> str:
    """The flags of ``text`` as plain words for a table cell ("code fence; raw JSON"); "" for a clean text."""
    return "; ".join(flag for flag, _ in unreadable_marks(str(text or ""), than=than))
