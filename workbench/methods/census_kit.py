"""What a method's census counters are written with, one floor below the census itself.

The census (``workbench.eval.mechanisms``) is generic: it reads a run's rows, traces and saved memories,
counts what every method has (questions, failures), then runs the counters a method declares for itself
(``MemoryMethod.census``, a ``CensusSpec``). Those counters live in the method's own folder
(``workbench/methods/<name>/census.py``) and are written with the pieces here, so a method never imports
``workbench.eval``:

- ``Trace`` (one row's answer steps as ``(kind, data)`` pairs) and ``Memory`` (one saved memory's events and
  structures), already read and checked by the census;
- ``Counts``: ``put(name, value, source, why_zero)`` records a count with where it was read and, for a zero,
  why; ``lack(name, reason)`` marks a count the run cannot support (never guessed);
- ``traced`` / ``need_memory`` / ``events_lacking``: mark counts missing when the run lacks what they need;
- small readers (``text``, ``as_int``, ``as_list``) that never raise on an unexpected shape;
- fact checks any method's census can count its written facts with (``fact_quality``, ``put_fact_quality``,
  ``source_turns``, ``prompts_of``: the census lends each memory its method's prompts): a fact that
  copies its turn or its method's own prompt, names a relation its turns never say, or speaks as "I".

A ``CensusSpec`` also names the counts the app header shows (``headline``), the model-output problems it lists
beside failures (``problems``), and how the run is checked against planted (or, for LoCoMo conv-26 and conv-41,
annotated) phenomena (``check``: one of the generic checks in ``workbench.eval.annotations``, with a function that
picks its input from the run).
"""
from __future__ import annotations

import importlib
import json
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable, Mapping

from ..words import one_line

#: the generic mechanism checks against planted or annotated phenomena (``workbench.eval.annotations``), by what they
#: judge: ``edits`` (UPDATE/DELETE events vs planted updates and forget requests), ``escalations`` (questions that
#: went deep vs planted multi-hop questions), ``recurrence`` (consolidated units vs planted recurring topics),
#: ``grouping`` (parents of a hierarchy vs planted topics and time groups), ``gaps`` (free-text gaps, listed for
#: reading)
CHECK_KINDS = ("edits", "escalations", "recurrence", "grouping", "gaps")


@dataclass(frozen=True)
class CensusSpec:
    """A method's own census: ``count(counts, rows, traces, memories, params)`` adds its counts to ``counts``
    (``memories``: conversation id -> ``Memory`` of this method; ``params``: the run's recorded parameters);
    ``headline``: ``(count name, label)`` pairs the app header and summary line show; ``problems``: counts of
    a model-output problem listed beside the failures when non-zero; ``check``: ``(kind, pick)`` where
    ``kind`` is one of ``CHECK_KINDS`` and ``pick(rows, traces, memories)`` returns that check's input (see
    ``workbench.eval.annotations.check_run``), or None when the mechanism is not checked; ``check_off(params)``:
    why the run's parameters switched off the mechanism that check judges (an ablation: AMA without its
    Refresher), or None, so a switched-off mechanism reads "not checkable", never "missed"."""

    count: Callable[..., None]
    headline: tuple[tuple[str, str], ...] = ()
    problems: tuple[tuple[str, str], ...] = ()
    check: tuple[str, Callable[..., Any]] | None = None
    check_off: Callable[[Mapping], str | None] | None = None

    def switched_off(self, params: Any) -> str | None:
        """``check_off`` of the run's parameters (None when it has none, or the parameters are not a mapping)."""
        if self.check_off is None or not isinstance(params, Mapping):
            return None
        why = self.check_off(params)
        return str(why) if why else None

    def __post_init__(self):
        if self.check is not None and self.check[0] not in CHECK_KINDS:
            raise ValueError(f"CensusSpec.check kind {self.check[0]!r} is not one of {CHECK_KINDS}")


class Trace:
    """One row's trace as plain values: ``steps`` = [(kind, data)], the answer's error and text."""

    def __init__(self, steps: list[tuple[str, dict]], error, text):
        self.steps, self.error, self.text = steps, error, text

    def of(self, *kinds: str) -> list[dict]:
        return [d for k, d in self.steps if k in kinds]


class Memory:
    """One saved memory: its events (plain dicts) and structures; ``structures_problem`` says why
    the structures are unusable (None when fine or simply absent); ``turns``: what each turn of its conversation
    said (turn id -> text, the speaker left out), empty when the run did not save the conversation."""

    def __init__(self, events: list[dict] | None = None, structures: dict | None = None,
                 structures_problem: str | None = None, events_problem: str | None = None,
                 turns: Mapping[str, str] | None = None):
        self.events = events if events is not None else []
        self.structures = structures if structures is not None else {}
        self.structures_problem = structures_problem
        self.events_problem = events_problem
        self.turns = dict(turns or {})
        #: the prompts its method sends (``class_prompt_words``), lent by the census, to find a fact copied from them
        self.prompts: tuple[str, ...] = ()


class Counts:
    """Named counts of one method, with where each came from and why a zero or a gap."""

    def __init__(self):
        self.counts: dict[str, Any] = {}
        self.why_zero: dict[str, str] = {}
        self.missing: dict[str, str] = {}
        self.sources: dict[str, str] = {}

    def put(self, name: str, value, source: str, why_zero: str | None = None) -> None:
        self.counts[name] = value
        self.sources[name] = source
        if why_zero and is_zero(value):
            self.why_zero[name] = why_zero

    def lack(self, name: str, reason: str) -> None:
        self.counts[name] = None
        self.missing[name] = reason

    def to_dict(self) -> dict:
        return {"counts": self.counts, "why_zero": self.why_zero, "missing": self.missing, "sources": self.sources}


def is_zero(value) -> bool:
    if isinstance(value, dict):
        return not any(v for v in value.values())
    return value == 0


def fmt_counter(c: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in c.items()) or "none"


def text(value) -> str:
    return value if isinstance(value, str) else ""


def as_int(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def as_list(value) -> list:
    return value if isinstance(value, list) else []


def traced(c: Counts, traces, names: Iterable[str]) -> bool:
    """False (and the names marked missing) when no row kept its trace."""
    if any(t is not None for t in traces):
        return True
    for n in names:
        c.lack(n, "no result row of this method kept its answer trace (failed rows, or keep_answers=False)")
    return False


def need_memory(c: Counts, mems: dict[str, Memory], names: Iterable[str], method: str) -> bool:
    if mems:
        return True
    for n in names:
        c.lack(n, f"no saved memory of {method} in this run (memories/{method}/<conversation>/; "
                  "`workbench eval --save-memories` or the demo saves it)")
    return False


def events_lacking(c: Counts, mems: dict[str, Memory], names: Iterable[str]) -> bool:
    """True (and ``names`` marked missing) when a saved memory has no events.jsonl: its event-based
    counts would read as 0 without being 0."""
    gone = [m.events_problem for m in mems.values() if m.events_problem]
    for n in names if gone else ():
        c.lack(n, "; ".join(gone[:3]))
    return bool(gone)


def step_cause(data: dict) -> str:
    """What decided a controller step's action: the guard that forced it (its ``forced`` field), else
    ``fallback`` when the model's reply was unusable, else ``choice``. The census and the trace views read a
    step's cause through this one rule (MemR3's router steps carry these fields)."""
    forced = data.get("forced")
    if isinstance(forced, str) and forced:
        return forced
    return "fallback" if data.get("fallback") else "choice"


router_cause = step_cause  # the name the census and the views have used

#: a gaps-list entry that only says there is no gap: a controller prompt's own placeholder copied back
#: ("No gaps noted.", MemR3's), "none", "n/a", "nothing missing" (the same rule as ``memr3/census.py``)
NO_GAP = re.compile(r"^\W*(no( \w+)? gaps?( \w+)?|none|n/?a|nothing( missing)?)\W*$", re.IGNORECASE)


#: a sentence of a controller's free-text reasoning that states something is missing ("The gaps are that the question
#: asks about long-distance running, which is not mentioned in the evidence", "It is unclear when she moved", "There
#: is no information about the date"); bare "gap" or "missing" is not enough ("the time gap between the sessions",
#: "her dog went missing")
GAP_SAID = re.compile(
    r"\bthe (?:main |only |remaining |open |key )?gaps? (?:is|are|remains?|would be|includes?|lies?)\b|"
    r"\b(?:is|are|was|were) (?:not|never) (?:explicitly |directly |clearly )?"
    r"(?:mentioned|stated|given|provided|specified|said)\b|"
    r"\b(?:does|do|did)(?: not|n['’]t) (?:explicitly |directly |clearly )?"
    r"(?:mention|say|state|provide|include|specify|tell)\b(?! anything that contradicts)|"
    r"\bno (?:information|mention|details?|evidence|data) (?:about|of|on|regarding|as to)\b|"
    r"\b(?:it is|it's|it remains) (?:unclear|not clear|unknown)\b|"
    r"\b(?:information|details?|date|time|year|name|place|answer)\b(?: [\w'’]+){0,4} (?:is|are) (?:still )?missing\b|"
    r"\b(?:is|are) (?:still )?missing (?:from|in) the (?:evidence|memory|memories|context)\b", re.IGNORECASE)
#: a sentence that denies a gap ("There are no further information gaps", "All gaps have been filled", "Nothing
#: appears to be missing", "The gaps list is empty")
NO_GAP_SAID = re.compile(
    r"\bno (?:\w+ ){0,3}gaps?\b|\bgaps?\W+(?:none|n/?a|\[\s*\])|\bgaps? (?:list )?(?:is|are) "
    r"(?:now )?(?:empty|none|closed|filled|resolved|answered)\b|"
    r"\b(?:all|every|each) (?:\w+ ){0,2}gaps? (?:ha(?:ve|s) been|are|is|were|was) (?:now )?"
    r"(?:filled|closed|resolved|answered|covered)\b|"
    r"\b(?:nothing|none)\b[^.!?]*\bmissing\b|\bnot missing\b|"
    r"\bno (?:information|details?) (?:is |are )?(?:missing|lacking)\b", re.IGNORECASE)


def gap_in_reasoning(reasoning) -> str | None:
    """The first sentence of a router's reasoning that names something missing, when the reasoning has one (None
    otherwise). Seen in the demo: MemR3's 1.5B router wrote "The gaps are that the question is asking about
    long-distance running, which is not mentioned in the evidence" and an empty gaps list; a view that only read
    the list said "the router wrote no gap"."""
    for sentence in re.split(r"(?<=[.!?])\s+", str(reasoning or "")):
        if GAP_SAID.search(sentence) and not NO_GAP_SAID.search(sentence):
            return " ".join(sentence.split())
    return None


def open_gaps(values) -> tuple[list[str], int]:
    """(the entries of a gaps list that name something missing, distinct and in order; how many entries are
    empty or only say there is no gap). The trace views' gap diff reads gaps through this rule, so a copied
    placeholder is never a gap opened (nor, when it goes, a gap closed)."""
    gaps, placeholders = [], 0
    for g in (str(v).strip() for v in as_list(values)):
        if not g or NO_GAP.match(g):
            placeholders += 1
        elif g not in gaps:
            gaps.append(g)
    return gaps, placeholders


# ------------------------------------------------------------------------------------------------
# Facts a model extracted from a turn, read against that turn (AMA's Constructor; any fact extractor)
# ------------------------------------------------------------------------------------------------

#: "I", "me", "my", "myself" outside quoted speech: a stored fact in the first person no longer says who "I" is once
#: it is read apart from its turn (AMA's extraction prompts ask for a named subject). "mine" is left out (a gold
#: mine), an "I" after a capitalised word is a numeral ("World War I", "Episode I"), not the speaker, and a
#: capitalised "Me" or "My" inside a sentence is a title's word ("read Me Before You").
FIRST_PERSON = re.compile(r"\bI\b|\b(?i:me|my|myself)\b")
#: what may stand before a sentence's first word: nothing, or a sentence's end (or a bracketed date's) and spaces
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\]]\s*|\n\s*)$")
#: quoted speech: double quotes, curly quotes, and single quotes that open after a non-letter and close before one
#: (so the apostrophes of "I'm" and "'cause" never open a quote); an apostrophe between letters may stand inside a
#: quote that opens after a space or punctuation and closes after a sentence's punctuation ("Jon said, 'I'm feeling
#: better today.'": H-Mem's leaves at real scale), so "the '90s, I'm at my friends' place" is no quote
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|‘[^’]*’|(?<!\w)'[^']*'(?!\w)|"
                     r"(?<![^\s(\[{,:])'(?:[^']|(?<=\w)'(?=\w))*(?<=[.!?,])'(?!\w)")
_NUMERAL_BEFORE = re.compile(r"\b[A-Z][\w-]*\s+$")
#: an apposition fact, "<name> is <person>'s <relation>" (the form both AMA prompts ask for when a turn says
#: "my <relation> <name>"); both sides are names (capitalised words, an honorific's full stop allowed: "Dr. Okafor"),
#: or "a <noun>" ("Jon is a dancer's friend"), so "Jon is proud of Gina's efforts" is no apposition (the Mem0-style
#: reference's facts at real scale); the relation is one to three lower-case words ("best friend", "sister-in-law")
_NAME = r"(?:(?:Dr|Mrs?|Ms|Mx|Prof|St)\.\s+)?[A-Z][\w-]*(?:\s+[A-Z][\w-]*){0,3}"
APPOSITION = re.compile(rf"^\s*(?P<name>{_NAME})\s+is\s+(?P<whose>{_NAME}|(?:a|an|the)\s+[a-z-]+)['’]s\s+"
                        r"(?P<relation>(?:[a-z-]+\s+){0,2}[a-z-]+)\s*\.?\s*$")
#: plurals that an "s" does not make, for reading a relation word against a turn
_PLURALS = {"wife": "wives", "child": "children", "man": "men", "woman": "women", "person": "people",
            "grandchild": "grandchildren"}


def plain_words(value) -> str:
    """Case-folded words joined by single spaces: punctuation, quotes and spacing do not make two texts differ
    (letters of any script are kept)."""
    return " ".join(re.sub(r"[\W_]+", " ", text(value).casefold()).split())


def first_person(fact) -> bool:
    """The fact speaks as "I" (or "me", "my", "myself") outside quoted speech; an "I" right after a capitalised
    word is read as a numeral, a capitalised "Me" or "My" inside a sentence as a word of a title."""
    said = _QUOTED.sub(" ", text(fact))
    for m in FIRST_PERSON.finditer(said):
        before = said[:m.start()]
        if m.group() == "I":
            if not _NUMERAL_BEFORE.search(before):
                return True
        elif not m.group()[0].isupper() or _SENTENCE_START.search(before):  # "Me Before You" mid-sentence: a title
            return True
    return False


#: a bracketed note in a turn's text, such as LoCoMo's "[shares an image: ...]" caption
_BRACKETED = re.compile(r"\[[^\]]*\]")


#: a speaker's label before a copied line of dialogue ("Priya: ")
_SPEAKER_LABEL = re.compile(r"^\s*[\w .'’-]{1,40}:\s+")


def copies_turn(fact, said: str) -> bool:
    """The fact is its turn word for word: nothing was extracted. ``said``: what the turn says (no "Speaker: "
    before it, which would make "Jon agreed!" a copy of "Jon: Agreed!"); on the fact's side a speaker's label and a
    date in brackets are the copy's dressing ("[14 March 2023] Priya: Tomatoes first, ..." copies Priya's turn),
    and bracketed notes (LoCoMo's image caption) count on neither side."""
    bare = _BRACKETED.sub(" ", text(fact))
    turn = plain_words(_BRACKETED.sub(" ", text(said)))
    return bool(turn) and turn in (plain_words(bare), plain_words(_SPEAKER_LABEL.sub("", bare, count=1)))


def unstated_relation(fact, turn: str) -> str | None:
    """The relation word of an apposition fact ("Jon is Gina's friend", "... best friend") that its turn never says
    (None when the fact is not an apposition or the turn has the word, singular or plural). Bracketed notes (an
    image caption) are not what the turn says. Seen at real scale: the 0.5B filled the small prompt's apposition
    example into turns about dance studios."""
    m = APPOSITION.match(_BRACKETED.sub(" ", text(fact)))  # a date in brackets before it (Eager floor's facts)
    if not m:
        return None
    head = m.group("relation").split()[-1]
    relation = plain_words(head)
    said = f" {plain_words(_BRACKETED.sub(' ', text(turn)))} "
    singular = relation[:-1] if relation.endswith("s") and not relation.endswith("ss") else relation
    forms = {relation, singular, singular + "s", _PLURALS.get(singular, singular),
             *(k for k, v in _PLURALS.items() if v == relation)}
    return None if any(f" {f} " in said for f in forms if f) else head.lower()


#: words of a relation label that say nothing about it on their own
_LINK_WORDS = {"in", "of", "at", "on", "to", "with", "for", "from", "by", "the", "a", "an", "is"}


def relation_said(label, said) -> bool:
    """Whether the turns ``said`` use a relation label's own words ("lives in": "live", "lived", "living"; "sister
    of": "sister", "sisters"), each read as a word's start (so leniently: "liver" says "lives"); a label of link
    words only is read as said. Form, not truth: "Tomasz lives in Manchester" is true in the demo, though no turn
    says "live", and "Tomasz sister of Anjali" is false, though a turn says "my sister Anjali". H-Mem's census and the
    graph view read the relations that carry the extraction prompt's example labels by it."""
    words = [w for w in plain_words(label).split() if w not in _LINK_WORDS]
    stems = [w[:-1] if w.endswith("s") and not w.endswith("ss") else w for w in words]
    stems = [w[:-1] if w.endswith("e") and len(w) > 3 else w for w in stems]  # "live" -> "liv": "living" says it
    return not stems or any(re.search(rf"\b{re.escape(w)}", plain_words(said)) for w in stems)


#: a fact of at least this many words found word for word in its method's own prompts was copied from them (shorter
#: ones, "Jon likes dance", could be in an example by chance)
PROMPT_COPY_WORDS = 4


def prompt_constants(module) -> dict[str, str]:
    """What a module's prompts are: its UPPER_CASE string constants, and its UPPER_CASE dicts of strings (as sorted
    JSON). One reader for the two uses: the run manifest hashes them (``eval.manifest.method_prompt_hashes``: a
    changed prompt re-answers) and the census finds a fact copied from them (``prompt_words``)."""
    out = {}
    for name, value in vars(module).items():
        if name.isupper() and isinstance(value, str):
            out[name] = value
        elif name.isupper() and isinstance(value, dict) and value and all(isinstance(v, str) for v in value.values()):
            out[name] = json.dumps(value, sort_keys=True)
    return out


@lru_cache(maxsize=None)
def prompt_words(*modules: str) -> tuple[str, ...]:
    """The prompts a method sends, as ``plain_words``: the string constants (``prompt_constants``, dicts of strings
    read as their values) of ``modules`` (full dotted names), for ``copies_prompt``."""
    out = []
    for name in modules:
        module = importlib.import_module(name)
        for key in prompt_constants(module):
            value = getattr(module, key)
            out += [plain_words(t) for t in ([value] if isinstance(value, str) else value.values())]
    return tuple(w for w in out if w)


def class_prompt_words(cls) -> tuple[str, ...]:
    """``prompt_words`` of a method class: its ``prompt_modules`` and every profile's own prompt modules (named under
    ``workbench.methods``), or, for a class that names none (a plugin method), its own module: the modules the run
    manifest hashes as its prompts (``eval.manifest.prompt_modules``)."""
    extra = [m for mods in (getattr(cls, "profile_prompt_modules", None) or {}).values() for m in mods]
    names = {f"{__package__}.{m}" for m in (*getattr(cls, "prompt_modules", ()), *extra)}
    return prompt_words(*sorted(names or {cls.__module__}))


def prompts_of(mems: Mapping[str, Memory]) -> tuple[str, ...]:
    """The prompts the census lent a method's memories (``Memory.prompts``; one method's, so the first found)."""
    return next((m.prompts for m in mems.values() if m.prompts), ())


def copies_prompt(fact, prompts: Iterable[str]) -> bool:
    """The fact is a piece of its method's own prompt word for word (an instruction or an example, not something
    anyone said): seen at real scale, RecMem's refinement stored "Anchor times to the message timestamps (" and
    "Kinds of fact: an event or decision of a speaker ..." as facts. ``prompts``: ``class_prompt_words`` of the method;
    a fact of fewer than ``PROMPT_COPY_WORDS`` words is never read as a copy."""
    words = plain_words(fact)
    return len(words.split()) >= PROMPT_COPY_WORDS and any(words in p for p in prompts)


def turn_texts(turn) -> list[str] | None:
    """What a fact's source turns said, as a list: ``turn`` is one text, a list of texts (a fact taken from an
    exchange or a cluster of turns), or None (its turns are unknown, also when a list holds no text)."""
    if turn is None:
        return None
    said = [text(t) for t in ([turn] if isinstance(turn, str) else as_list(turn))]
    said = [t for t in said if t]
    return said or None


def fact_quality(pairs: Iterable[tuple[str, Any]], prompts: Iterable[str] = ()) -> dict[str, Any]:
    """Counts over ``(fact, what its source turns said)`` pairs in the order they were written (the turns: one text,
    a list of texts, or None when unknown; ``turn_texts``): ``written``, ``repeated`` (the same words as an earlier
    fact), ``first_person``, ``copying_prompt`` (a piece of the method's own ``prompts``, ``copies_prompt``), and,
    over the ``turn_known`` facts, ``copying_turn`` (word for word one of its turns)
    and ``unstated_relation`` (a relation none of its turns says; ``unstated_relation_words``: how many per relation
    word); ``repeated_top``: up to three ``(text, times)`` of the facts written most often (each cut to 60
    characters). The views flag one fact unit with the same rules (``widgets.readability.fact_marks``)."""
    pairs = list(pairs)
    times: dict[str, int] = {}
    shown: dict[str, str] = {}
    words: dict[str, int] = {}
    prompts = tuple(prompts)
    out = {"written": len(pairs), "repeated": 0, "first_person": 0, "copying_prompt": 0, "turn_known": 0,
           "copying_turn": 0, "unstated_relation": 0}
    for fact, turn in pairs:
        key = plain_words(fact)
        out["repeated"] += bool(key) and key in times  # an empty fact repeats nothing
        times[key] = times.get(key, 0) + 1
        shown.setdefault(key, one_line(text(fact), 60))
        out["first_person"] += first_person(fact)
        out["copying_prompt"] += copies_prompt(fact, prompts)
        said = turn_texts(turn)
        if said is not None:
            out["turn_known"] += 1
            out["copying_turn"] += any(copies_turn(fact, t) for t in said)
            relation = unstated_relation(fact, " ".join(said))
            if relation is not None:
                out["unstated_relation"] += 1
                words[relation] = words.get(relation, 0) + 1
    out["unstated_relation_words"] = dict(sorted(words.items(), key=lambda kv: -kv[1]))
    top = sorted((k for k, n in times.items() if n > 1 and k), key=lambda k: -times[k])[:3]
    out["repeated_top"] = [(shown[k], times[k]) for k in top]
    return out


#: the counts ``put_fact_quality`` writes (a census marks them missing together when it cannot read the facts;
#: ``facts_written_most`` is written only when a fact repeats)
FACT_COUNTS = ("facts_repeated", "facts_first_person", "facts_copying_prompt", "facts_copying_turn",
               "facts_unstated_relation", "facts_unstated_relation_words")


def put_fact_quality(c: Counts, q: Mapping[str, Any], src: str, unknown_why: str) -> None:
    """``fact_quality``'s counts ``q`` as a census's ``facts_*`` counts (``FACT_COUNTS``), read from ``src``. The
    two read against the turns are marked missing when any fact's turns are unknown (``unknown_why`` says why), never
    counted over part of the facts."""
    c.put("facts_repeated", q["repeated"], src)
    if q["repeated_top"]:
        c.put("facts_written_most", {f"“{t}”": n for t, n in q["repeated_top"]}, src)
    c.put("facts_first_person", q["first_person"], src)
    c.put("facts_copying_prompt", q["copying_prompt"], src + " x the method's own prompts")
    unknown = q["written"] - q["turn_known"]
    against = src + " x the text of its source turns"
    for name, key in (("facts_copying_turn", "copying_turn"), ("facts_unstated_relation", "unstated_relation")):
        if unknown:
            c.lack(name, f"{unknown} of {q['written']} facts cannot be read against their turns: {unknown_why}")
        else:
            c.put(name, q[key], against)
    if not unknown and q["unstated_relation_words"]:
        c.put("facts_unstated_relation_words", q["unstated_relation_words"], against)


def scripts(value) -> dict[str, list[str]]:
    """The writing systems of a text's letters (the first word of each letter's Unicode name: LATIN, CJK,
    CYRILLIC, ...), each with up to five of its letters. The views flag a text with letters of a script its
    question or source does not use (``widgets.readability``); H-Mem's census counts such summaries."""
    import unicodedata

    out: dict[str, list[str]] = {}
    for ch in text(value):
        if ch.isalpha():
            letters = out.setdefault(unicodedata.name(ch, "UNKNOWN").split()[0], [])
            if len(letters) < 5 and ch not in letters:
                letters.append(ch)
    return out


def foreign_scripts(value, source) -> dict[str, list[str]]:
    """``scripts`` of ``value`` that ``source`` (what it was made from) never uses: the 0.5B wrote Chinese into
    35 of H-Mem's English conv-30 summaries. A source without letters is read as English (LATIN)."""
    said = set(scripts(source)) or {"LATIN"}
    return {k: v for k, v in scripts(value).items() if k not in said}


#: a run of this many words written ``LOOP_RUN_TIMES`` times in one text is a loop: the 0.5B's H-Mem summaries over
#: conv-30 repeat "Jon and Gina are a great team and they can do amazing things together" until the length cap,
#: without ever ending the sentence (so a repeated-sentence rule does not see it)
LOOP_RUN_WORDS = 8
LOOP_RUN_TIMES = 3


def looping_run(value, source=None) -> tuple[str, int] | None:
    """The most repeated run of ``LOOP_RUN_WORDS`` words in a text and how often it is written, when that is
    ``LOOP_RUN_TIMES`` or more and more often than in ``source`` (the turns it was made from: a person who said it
    three times is not a model's loop); else None. Words compare as ``plain_words``; the run is shown as written
    (plain words)."""
    words = plain_words(value).split()
    n = LOOP_RUN_WORDS
    if len(words) < n * LOOP_RUN_TIMES:
        return None
    runs = Counter(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))
    said = plain_words(source).split() if source is not None else []
    in_source = Counter(" ".join(said[i:i + n]) for i in range(len(said) - n + 1))
    for run, times in runs.most_common():  # the most repeated run the source does not repeat as often
        if times < LOOP_RUN_TIMES:
            return None
        if times > in_source[run]:
            return run, times
    return None


#: what ends a sentence, quotes and brackets after it allowed: a text that ends without one was cut off
_SENTENCE_END = re.compile(r"[.!?。！？…][\"'”’)\]]*\s*$")


#: a text shorter than this many words that ends without a full stop is read as a terse note ("Episode one"), not as
#: one cut off by a length cap (which stops a long reply: H-Mem's at 640 characters, about 100 words)
CUT_MIN_WORDS = 12


def ends_mid_sentence(value) -> bool:
    """The text, of ``CUT_MIN_WORDS`` words or more, stops without ending its sentence (its last letter is not
    followed by ".", "!", "?" or "…"): cut off by a length limit. H-Mem's bounded summaries (640 characters at most)
    stop mid-word when the model writes past the limit; a length check on completion tokens does not see it (the
    reply closes its JSON)."""
    return len(text(value).split()) >= CUT_MIN_WORDS and not _SENTENCE_END.search(text(value))


def put_summary_quality(c: Counts, name: str, pairs: Iterable[tuple[str, Any]], src: str, unknown_why: str, *,
                        limit: Any = None, no_limit_why: str | None = None, none_why: str | None = None,
                        count: bool = True, words: bool = True) -> None:
    """Counts over the texts a model wrote as summaries (``pairs``: ``(text, what its source turns said)``, the turns
    one text or None when unknown), as ``<name>`` (how many), ``<name>_cut`` (stops mid-sentence:
    ``ends_mid_sentence``), ``<name>_over_words`` (over ``limit`` words; missing with ``no_limit_why`` when the run set
    none), and, read against their turns, ``<name>_looping`` (``looping_run``) and ``<name>_foreign_script``
    (``foreign_scripts``), both missing when any text's turns are unknown (``unknown_why``), never counted over part.
    ``count=False``: the census counts the texts itself (AMA's ``episodes_written``); ``words=False``: the prompt
    asks for no length, so none is read. H-Mem's tree summaries, AMA's and RecMem's episodes are read by it: rules
    on form, not truth."""
    pairs = [(text(t), None if said is None else " ".join(turn_texts(said) or []) or None) for t, said in pairs]
    if count:
        c.put(name, len(pairs), src, none_why)
    if words and isinstance(limit, int) and not isinstance(limit, bool):
        c.put(f"{name}_over_words", sum(len(t.split()) > limit for t, _ in pairs), src + f" (over {limit} words)")
    elif words:
        c.lack(f"{name}_over_words", no_limit_why or "the run set no word limit")
    c.put(f"{name}_cut", sum(ends_mid_sentence(t) for t, _ in pairs), src)
    unknown = sum(said is None for _, said in pairs)
    if unknown:
        for missing in (f"{name}_looping", f"{name}_foreign_script"):
            c.lack(missing, f"{unknown} of {len(pairs)} cannot be read against their turns: {unknown_why}")
        return
    against = src + " x the text of its source turns"
    c.put(f"{name}_looping", sum(looping_run(t, said) is not None for t, said in pairs), against)
    c.put(f"{name}_foreign_script", sum(bool(foreign_scripts(t, said)) for t, said in pairs), against)


def source_turns(event: Mapping, turns: Mapping[str, str]) -> list[str] | None:
    """What an event's source turns said (``Memory.turns``: turn id -> text), or None when none is known."""
    ids = event.get("source_ids")
    return turn_texts([turns.get(str(i)) for i in ids]) if isinstance(ids, (list, tuple)) and turns else None


def decision_tally(decided) -> dict[str, Any]:
    """Per-fact decisions of a Mem0-like decision call, saved as entries ``{"facts": [...], "shown": {...},
    "actions": [{"event", "fact", "applied" | "skipped"}]}`` (any other shape is read as empty): ``facts``
    extracted, ``applied`` actions by event, ``none_with_nothing_shown`` (NONE while no stored memory was shown to
    compare against), ``skipped`` actions (an unknown id or event), and ``unanswered``: facts no action named (the
    prompt asks for one action per fact), with ``actions`` and ``naming_no_fact`` (actions whose fact number was
    missing or out of range). The census and the structure view count with this one rule."""
    out = {"facts": 0, "actions": 0, "naming_no_fact": 0, "applied": {}, "none_with_nothing_shown": 0, "skipped": 0,
           "unanswered": 0}
    applied: dict[str, int] = {}
    for d in as_list(decided):
        if not isinstance(d, Mapping):
            continue
        facts = [text(f) for f in as_list(d.get("facts"))]
        actions = [a for a in as_list(d.get("actions")) if isinstance(a, Mapping)]
        out["facts"] += len(facts)
        left = dict.fromkeys(facts, 0)
        for f in facts:
            left[f] += 1
        out["actions"] += len(actions)
        for a in actions:
            named = text(a.get("fact"))
            out["naming_no_fact"] += not named
            if left.get(named):
                left[named] -= 1
            if a.get("skipped"):
                out["skipped"] += 1
                continue
            event = text(a.get("event")) or "(none)"
            applied[event] = applied.get(event, 0) + 1
            out["none_with_nothing_shown"] += event == "NONE" and not d.get("shown")
        out["unanswered"] += sum(left.values())
    out["applied"] = dict(sorted(applied.items(), key=lambda kv: -kv[1]))
    return out
