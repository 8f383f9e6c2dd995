"""What makes a model's text hard to read as it stands, flagged beside the text (never rewritten): a Markdown code
fence, a raw JSON object, a sentence the model looped on, letters of a writing system the rest does not use (which
a page without that font draws as boxes). One rule for every view that shows model output: the Question tab's
answers, the H-Mem tree's summaries, the Events tab's texts and the Memories table (usability review B17, T3)."""
from __future__ import annotations

import re
from collections import Counter

from workbench.methods.census_kit import (class_prompt_words, copies_prompt, copies_turn, ends_mid_sentence,
                                          first_person, looping_run, scripts, unstated_relation)

from .html import esc, short


def unreadable_marks(answer: str, question: str = "", *, than: str = "the question's",
                     source: str | None = None) -> list[tuple[str, str]]:
    """What makes an answer hard to read as an answer, each as (flag, why): a code fence, a raw JSON object, one
    sentence written ``LOOP_TIMES`` times or more, or a run of words written over and over without a sentence's end
    (``census_kit.looping_run``: the model looped), letters of a writing system the question does
    not use (the 0.5B wrote "可爱" into four English HyMem answers over
    conv-26). A view shows the model's text as it is; these say so instead of leaving a reader to guess (usability
    review B17)."""
    marks = []
    if "```" in answer:
        marks.append(("code fence", "the answer holds a Markdown code fence"))
    head = answer.lstrip()
    if head.startswith("{") and '":' in head:
        marks.append(("raw JSON", "the answer is a JSON object, not a sentence"))
    asked = set(scripts(question)) or {"LATIN"}
    for script, letters in scripts(answer).items():  # the census's rule
        if script not in asked:
            marks.append((f"{script.lower()} script", f"letters of another writing system than {than}: "
                                                      f"{' '.join(letters)} ({script})"))
    looped = repeated_sentence(answer, source) or looping_run(answer, source)  # a sentence, or a run never ended
    if looped:
        sentence, times = looped
        marks.append(("repeats itself", f'"{short(sentence, 80)}" is written {times} times: the model looped'))
    return marks


#: a sentence written this many times in one text is a loop, not emphasis
LOOP_TIMES = 3


#: what a line of conversation text starts with before the words said: "[21 May 2023] " and "Tomasz: "
_SAID_PREFIX = re.compile(r"^(?:\[[^\]]{1,40}\]\s*)?(?:[\w .'’-]{1,40}:\s+)?")


def _sentences(text) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"(?<=[.!?])\s+", str(text or "")) if p.strip()]


def _said(sentence: str) -> str:
    """A sentence as compared: without a date or speaker prefix, lower case."""
    return _SAID_PREFIX.sub("", sentence, count=1).lower()


def repeated_sentence(text: str, source: str | None = None) -> tuple[str, int] | None:
    """The most repeated sentence of three or more words in ``text`` and its count, when it is written
    ``LOOP_TIMES`` times or more (a small model that loops repeats a sentence word for word); else None.
    ``source``: the conversation text the unit was made from (its source turns), whose own repeats are the
    people's, not a loop: a raw excerpt holding "John: Thanks, Maria!" three times, because John said it three
    times, is not flagged; a fact that copies one turn's sentence three times still is."""
    sentences = _sentences(text)
    counts = Counter(_said(p) for p in sentences if len(p.split()) >= 3)
    said = Counter(_said(p) for p in _sentences(source)) if source else Counter()
    loops = [(k, n) for k, n in counts.most_common() if n >= LOOP_TIMES and n > said[k]]
    if not loops:
        return None
    top, times = loops[0]
    return next(p for p in sentences if _said(p) == top), times


def _spans(marks: list[tuple[str, str]]) -> str:
    """(flag, why) pairs as inline HTML flags, why on hover."""
    return "".join(f" <span class='wb-flag' style='color:#a04a00' title='{esc(why)}'>⚠ {esc(flag)}</span>"
                   for flag, why in marks)


def flags_html(text, *, than: str = "the conversation's", source: str | None = None) -> str:
    """The flags of ``text`` as inline HTML (`` ⚠ code fence``, why on hover); "" for a clean text. ``source``:
    the conversation text it was made from (``repeated_sentence``)."""
    return _spans(unreadable_marks(str(text or ""), than=than, source=source))


def summary_marks(text, *, source: str | None = None) -> list[tuple[str, str]]:
    """``unreadable_marks`` of a model-written summary, and "cut off" when it stops mid-sentence (``census_kit.
    ends_mid_sentence``: a summary ends its sentences; H-Mem's bounded summaries stop mid-word at their length cap,
    which the census counts as ``summaries_cut``)."""
    marks = unreadable_marks(str(text or ""), than="the conversation's", source=source)
    if ends_mid_sentence(text):
        marks.append(("cut off", "the summary stops mid-sentence: the model wrote past its length limit"))
    return marks


#: the memory-unit kinds a model writes as a summary of several turns (H-Mem's tree summaries, AMA's and RecMem's
#: episodes): the Memories table reads them with ``summary_marks`` (a cut-off as well)
SUMMARY_KINDS = ("summary", "episode")


def unit_flag_words(row, source: str | None = None) -> str:
    """The flags of one saved memory unit as plain words for a table cell: ``summary_marks`` for a summary the
    model wrote (``SUMMARY_KINDS``, not a parent that copies its child: ``copy_of_child``), else ``flags_words``."""
    text = row.get("text")
    if row.get("kind") in SUMMARY_KINDS and not row.get("copy_of_child"):
        return "; ".join(flag for flag, _ in summary_marks(text, source=source))
    return flags_words(text, source=source)


def summary_flags_html(text, *, source: str | None = None) -> str:
    """``summary_marks`` as inline HTML flags (why on hover)."""
    return _spans(summary_marks(text, source=source))


def flags_words(text, *, than: str = "the conversation's", source: str | None = None) -> str:
    """The flags of ``text`` as plain words for a table cell ("code fence; raw JSON"); "" for a clean text."""
    return "; ".join(flag for flag, _ in unreadable_marks(str(text or ""), than=than, source=source))


def source_text(source_ids, turn_text) -> str | None:
    """The text of a unit's source turns (``turn_text``: turn id -> text), or None when either is missing."""
    if not turn_text or not isinstance(source_ids, (list, tuple)) or not source_ids:
        return None
    return " ".join(str(turn_text.get(str(i), "")) for i in source_ids)


def fact_marks(text, turns, prompts=()) -> list[tuple[str, str]]:
    """What a fact gets wrong against the turns it was taken from, each as (flag, why): it is a piece of its method's
    own prompt (``prompts``: ``method_prompts``; RecMem's refinement stored "Anchor times to the
    message timestamps (" at real scale), it is one of its turns word for word (nothing was extracted), it names a
    relation none of them says (the 0.5B filled AMA's apposition example, "Jon is Gina's friend", into 102 conv-30
    facts whose turns never say "friend"), or it speaks as "I" (a stored fact no longer says who "I" is). ``turns``:
    the texts of the fact's source turns; without them only the prompt and the first person are read. The rules are
    ``census_kit``'s, which the methods' censuses count their facts by (as written; a view shows any method's fact
    units as they stand now, after any edit)."""
    turns = [str(t) for t in (turns or ()) if t]
    marks = []
    if copies_prompt(text, prompts):
        marks.append(("copies its prompt", "the fact is a piece of the method's own prompt word for word (an "
                                           "instruction or example): nothing anyone said"))
    if any(copies_turn(text, t) for t in turns):
        marks.append(("copies its turn", "the fact is its source turn word for word: nothing was extracted"))
    relation = unstated_relation(text, " ".join(turns)) if turns else None
    if relation:
        marks.append((f"“{relation}” not in its turn", f"the fact says someone is a {relation}; its source turns "
                                                          "never use the word"))
    if first_person(text):
        marks.append(("first person", "the fact speaks as “I”: read apart from its turn it no longer says who"))
    return marks


def _fact_turns(source_ids, turn_text) -> list[str]:
    ids = source_ids if isinstance(source_ids, (list, tuple)) else ()
    return [t for t in (turn_text.get(str(i)) for i in ids) if t] if turn_text else []


def method_prompts(method) -> tuple[str, ...]:
    """The prompts a run's method sends (``census_kit.class_prompt_words`` of its registered class; a labelled
    variant, ``ama[paper-judge]``, is its method's), for ``fact_marks``; () for no method or one not installed here."""
    from workbench.methods import REGISTRY, method_base

    cls = REGISTRY.get(method_base(str(method))) if method else None
    return class_prompt_words(cls) if cls is not None else ()


def fact_flags_html(text, source_ids, turn_text, prompts=()) -> str:
    """``fact_marks`` of a fact unit as inline HTML flags (why on hover), as ``flags_html`` draws them."""
    return _spans(fact_marks(str(text or ""), _fact_turns(source_ids, turn_text), prompts))


def fact_words(text, source_ids, turn_text, prompts=()) -> str:
    """``fact_marks`` of a fact unit as plain words for a table cell ("copies its turn; first person"), its source
    turns looked up in ``turn_text`` (turn id -> text); "" for a fact with nothing to flag."""
    return "; ".join(flag for flag, _ in fact_marks(str(text or ""), _fact_turns(source_ids, turn_text), prompts))
