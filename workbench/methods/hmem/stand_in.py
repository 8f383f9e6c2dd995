"""A deterministic stand-in for H-Mem's two construction LLM calls: event extraction and consolidation.

Why it exists: the alpha mapping (``calibration.py``) must be fitted on the tree the paper profile really builds,
whose leaves are extracted events and whose parents are embedded LLM summaries, yet ``workbench calibrate`` runs
without an LLM. These two functions produce event-like leaves and summary-like parents from the conversation text
alone, and ``scripted_llm()`` answers H-Mem's own prompts with them, so a fitted replay (``calibration.replay_build``)
and a real ``HMem(profile="paper")`` build over the scripted LLM make the same tree (``tests/test_hmem_join_shares``).

How representative they are (measured on the recorded real-scale build, ``sample_data/cassettes/locomo/hmem-conv-30
.jsonl``, 0.5B model, read as data; MiniLM int8):
- Events. The 0.5B wrote 404 events for 369 turns (1.09 a turn), each one sentence naming the speaker, mostly a
  paraphrase of the turn; the paper reports 1.67 events a fragment on LoCoMo (Table 7: 995.1 / 596.5). The stand-in
  cuts a turn into its sentences, drops greetings and fragments under four words, joins neighbours into pieces of at
  least ``EVENT_MIN_WORDS`` words and names the speaker: ``"Gina: I lost my job at Door Dash this month."``.
- Summaries. What the join test reads is cos(new node, parent vector). Over 130 week-level joins in the cassette
  whose parent summary before the join is also recorded, the median of cos(joining event, parent) was 0.575 for the
  0.5B's summaries, 0.539 for this stand-in (dated children, first ``SUMMARY_WORDS`` words; 10th-90th percentile
  0.378-0.667 against 0.437-0.706), 0.643 for the mean of the children's vectors (the old proxy's parent) and
  0.658 for the best single member (the old proxy's max linkage). A real summary is a paraphrase, less similar to
  what joins it than the children's mean; the stand-in is slightly below the real one, so an alpha fitted on it errs
  towards joining a little more with a real LLM. Known limit: its text stops at the first ``SUMMARY_WORDS`` words,
  so a large month or year node is summarised by its earliest children (an LLM summary covers all of them); the
  cap keeps one embedding per change cheap and leaves a full node's text, and so its vector, unchanged.
"""
from __future__ import annotations

import json
import re
from typing import Sequence

EVENT_MIN_WORDS = 8  # a sentence shorter than this joins its neighbour (one topic per event, not one per clause)
SUMMARY_WORDS = 60  # the stand-in summary's length cap (see the module docstring)
_GREETING = re.compile(r"^(hey|hi|hello|wow|thanks|thank you|bye|good to see you|yeah|yes|no|oh|ok|okay|haha|lol)\b",
                       re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def script_events(speaker: str, text: str) -> list[str]:
    """The events the stand-in extracts from one turn: sentence groups of at least ``EVENT_MIN_WORDS`` words,
    greetings and scraps left out, each prefixed with the speaker's name; [] for a turn with nothing left."""
    pieces, current = [], []
    for sentence in _SENTENCE.split(" ".join(str(text).split())):
        words = sentence.split()
        if len(words) < 4 and (not words or _GREETING.match(sentence)):
            continue
        current += words
        if len(current) >= EVENT_MIN_WORDS:
            pieces.append(" ".join(current))
            current = []
    if current:
        if pieces and len(current) < EVENT_MIN_WORDS:
            pieces[-1] += " " + " ".join(current)
        else:
            pieces.append(" ".join(current))
    return [f"{speaker}: {p}" for p in pieces]


def script_summary(notes: Sequence[tuple[str, str]]) -> str:
    """The stand-in consolidation of ``notes`` ((date text, child text) in the order the prompt lists them): the
    children, dated, joined and cut at ``SUMMARY_WORDS`` words."""
    words = " ".join(f"On {date}, {text}" for date, text in notes).split()
    return " ".join(words[:SUMMARY_WORDS])


# -- answering H-Mem's own prompts (paper and small prompt sets) ------------------------------------------------
_NOTE = re.compile(r"^- \[([^\];]*)(?:;[^\]]*)?\] (.*)$", re.M)
_TURN = re.compile(r"^([^:\n]{1,60}): (.*)$", re.M)


def _prompt(messages) -> str:
    return "\n".join(m["content"] for m in messages)


def fragment_events(body: str) -> list[str]:
    """The stand-in events of a fragment as H-Mem formats it (``Speaker: text`` lines), in order."""
    return [e for m in _TURN.finditer(body) for e in script_events(m.group(1), m.group(2))]


def extract_reply(messages) -> str:
    """An extraction reply for H-Mem's paper extraction prompt: the stand-in events of each turn of the fragment,
    no date, no entities or relations (the method then takes its rule-based entity fallback)."""
    prompt = _prompt(messages)
    body = prompt.split("Fragment:\n", 1)[1].split("\n\n", 1)[0] if "Fragment:\n" in prompt else prompt
    return json.dumps({"events": [{"text": e, "date": ""} for e in fragment_events(body)], "entities": [],
                       "relations": []})


def consolidate_reply(messages) -> str:
    """A consolidation reply: ``script_summary`` of the notes the prompt lists."""
    notes = [(m.group(1).strip(), m.group(2).strip()) for m in _NOTE.finditer(_prompt(messages))]
    return json.dumps({"summary": script_summary(notes)})


def scripted_llm():
    """A ``ScriptedLLM`` that extracts and consolidates with the stand-in and answers every other H-Mem call with
    the minimal reply its schema allows (``default="auto"``); taken as a capable model (``small_model=False``)."""
    from ...llm.fake import ScriptedLLM

    llm = ScriptedLLM({"hmem.extract": extract_reply, "hmem.consolidate": consolidate_reply}, default="auto",
                      model="hmem-stand-in")
    llm.small_model = False
    return llm
