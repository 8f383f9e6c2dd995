"""``ReferenceLLM``: the replies a careful, capable model would give, written by hand, one small file per
(conversation, method) (issue #64, designed runs).

Why: the only evidence that a method's ``paper`` profile behaves as its paper says used to be unit tests of single
steps and the demo model's recordings, in which a small model often misfired. A designed run replays the real method
code (its embedder, index, thresholds and control flow) on replies a person wrote for each prompt, so whether the
mechanism reaches its planted outcome is a property of the code alone.

The file (``sample_data/reference/<method>.<conversation>.json``) holds one entry per prompt::

    {"role": "ama.judge_ingest", "about": {"turn": "D2:3", "candidates": ["fact:0", "raw:D1:2"]},
     "reply": {"Action": "Refresh", ...}, "why": "the stored workplace is no longer true"}

An entry is found by its role and by what the prompt is about, never by a hash of the prompt, so it survives a prompt
being reworded. What a prompt is about is read from it by a rule written per role (``RULES``): the ids of the
conversation's turns whose words the prompt quotes in a named section, the conversation's question it asks, the memory
ids it shows. A rule that no longer finds its section, a prompt no entry covers, two entries that both cover it, and a
reply that does not satisfy the role's schema each raise ``ReferenceMiss`` naming the role and quoting the start of
the prompt: the LLM never guesses. Methods catch a failed call and fall back (that is their contract), so every miss
is also kept in ``misses``; ``workbench.designed.designed_run`` refuses a run that has any.

A file may name its path's decisions (``"decides": {role: [reply fields]}``): the fields
``workbench.designed.divergences`` compares with a model's run (by default each role's enum, boolean and integer
fields; AMA's file leaves the Retriever's ``K_dyn`` out, a tuning value, not the mechanism).

Its ``model`` says what it is ("reference-replies (written by hand)"), so every view that names the run's LLM labels a
designed run as replies written by hand, not a model.
"""
from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any, Callable, Mapping

from .base import BaseLLM, Generation
from .errors import LLMError

#: the model name every run, view and export shows for a designed run
MODEL = "reference-replies (written by hand)"
#: the file format this module reads
SCHEMA = "reference-replies/1"


class ReferenceMiss(LLMError):
    """A prompt the reference file does not cover (or covers twice), or a written reply that breaks its schema."""


class RuleError(ReferenceMiss):
    """A role's rule could not read what the prompt is about (a section it looks for is gone)."""


# ------------------------------------------------------------------------------------------------
# What a prompt is about: small readers the per-role rules are written with
# ------------------------------------------------------------------------------------------------
class Prompt:
    """One prompt's text with the conversation it is about, and the readers the rules use."""

    def __init__(self, text: str, turns: Mapping[str, str], questions: tuple[str, ...]):
        self.text, self.turns, self.questions = text, turns, questions

    def section(self, start: str, end: str | None = None, *, last: bool = False) -> str:
        """The text after the marker ``start`` (its last occurrence with ``last``) up to ``end`` (or the end)."""
        at = self.text.rfind(start) if last else self.text.find(start)
        if at < 0:
            raise RuleError(f"the prompt has no {start!r} section")
        body = self.text[at + len(start):]
        if end is not None:
            stop = body.find(end)
            if stop < 0:
                raise RuleError(f"the prompt's {start!r} section has no end marker {end!r}")
            body = body[:stop]
        return body

    def turns_in(self, text: str) -> list[str]:
        """The conversation's turns whose words ``text`` quotes, in the order quoted (a turn quoted inside a longer
        quoted turn is not counted: "Oh no." inside another turn's words is no turn of its own)."""
        spans = []
        for tid, words in self.turns.items():
            start = text.find(words)
            while start >= 0:
                spans.append((start, start + len(words), tid))
                start = text.find(words, start + 1)
        kept = [s for s in spans if not any(o[0] <= s[0] and s[1] <= o[1] and (o[1] - o[0]) > (s[1] - s[0])
                                            for o in spans)]
        return list(dict.fromkeys(tid for _, _, tid in sorted(kept)))

    def turn_in(self, text: str) -> str:
        found = self.turns_in(text)
        if len(found) != 1:
            raise RuleError(f"expected one turn of the conversation in {text.strip()[:80]!r}, found {found}")
        return found[0]

    def question_in(self, text: str) -> str | None:
        """The conversation's question that ``text`` asks (the longest one quoted), None if none."""
        found = [q for q in self.questions if q in text]
        return max(found, key=len) if found else None

    def input_about(self, text: str) -> dict:
        """``{"question": ...}`` when ``text`` asks one of the conversation's questions, else ``{"turn": id}``."""
        q = self.question_in(text)
        return {"question": q} if q is not None else {"turn": self.turn_in(text)}

    @staticmethod
    def ids(text: str, pattern: str) -> list[str]:
        """The memory ids ``[<id>]`` at the start of lines of ``text`` that match ``pattern`` (sorted)."""
        return sorted(set(re.findall(rf"^\[({pattern})\]", text, flags=re.MULTILINE)))

    @staticmethod
    def bullets(text: str) -> list[str]:
        return [line[2:].strip() for line in text.splitlines() if line.startswith("- ")]


# the per-role rules: prompt -> what it is about. Markers are the prompts' own headings; a reworded heading makes the
# rule fail loudly (``RuleError``) rather than read the wrong section.
_AMA_IDS = r"(?:raw|fact|episode):[^\]]+"


def _ama_judge_ingest(p: Prompt) -> dict:
    return {"turn": p.turn_in(p.section("Current input", "Checks:")),
            "candidates": p.ids(p.section("Retrieved memories", "Current input"), _AMA_IDS)}


def _ama_judge(p: Prompt) -> dict:
    return {**p.input_about(p.section("Current input:", "Checks:")),
            "candidates": p.ids(p.section("Retrieved candidates", "Current input:"), _AMA_IDS)}


def _ama_refresh(p: Prompt) -> dict:
    return {**p.input_about(p.section("Current input:", "Only the entries")),
            "conflicts": p.ids(p.section("Detected conflicts", "Other memory entries"), _AMA_IDS)}


def _hymem_pool(p: Prompt) -> list[str]:
    marker = "Intermediate answer(s) from the previous round(s):"
    if marker not in p.text:
        return []
    return p.bullets(p.section(marker, "Question:", last=True))


def _question(p: Prompt, where: str) -> str:
    q = p.question_in(where)
    if q is None:
        raise RuleError(f"no question of the conversation in {where.strip()[:80]!r}")
    return q


def _memr3_router(p: Prompt) -> dict:
    """A MemR3 router call is about its question, the turns of the batch it shows (S_k: one question asks the router
    once per batch, and again after a reflect with the same batch, which the directive or the gaps then tell apart),
    the open gaps it shows (the router's own previous ones) and the decision directive: a forced action's word, or
    "default"."""
    forced = re.search(r'Choose "(\w+)"\.', p.section('- "decision":', "\n"))
    return {"question": _question(p, p.section("# Question", "# Evidence")),
            "snippets": p.turns_in(p.section("# Memory snippets", "# Reasoning")),
            "gaps": p.bullets(p.section("# Gaps", "# Memory snippets")),
            "directive": forced.group(1) if forced else "default"}


def _hmem_consolidate(p: Prompt) -> dict:
    """An H-Mem consolidation call is about its tree node (the window's label: "2023-W24") and the child memories it
    shows (their words, without the date prefix): a node is consolidated again each time a child joins it."""
    node = re.search(r"The node covers the \w+ (\S+), and its child memories", p.text)
    if node is None:
        raise RuleError("the prompt names no node window ('The node covers the <window> <label>, and its child "
                        "memories')")
    notes = p.bullets(p.section("with their dates) are:", "\n\nConsolidate"))
    return {"node": node.group(1), "children": [re.sub(r"^\[[^\]]*\]\s*", "", n) for n in notes]}


def _hmem_profile(p: Prompt) -> dict:
    """An H-Mem profile call is about its entity and the session whose memories it shows (by that session's date)."""
    who = re.search(r"salient entity of a long conversation: (.+?) \((\w+)\)\.", p.text)
    when = re.search(r"from the session on ([^:\n]+):", p.text)
    if who is None or when is None:
        raise RuleError("the prompt names no entity ('salient entity ...: <name> (<type>).') or no session date "
                        "('from the session on <date>:')")
    return {"entity": who.group(1), "session": when.group(1)}


RULES: dict[str, Callable[[Prompt], dict]] = {
    # AMA (workbench/methods/ama/paper_prompts.py)
    "ama.retrieve": lambda p: p.input_about(p.section("Current input:", "Produce all four")),
    "ama.construct": lambda p: {"turn": p.turn_in(p.section("Current input", "Memory window"))},
    "ama.trigger": lambda p: {"turn": p.turn_in(p.section("Newly added message", "Set T_t"))},
    "ama.episode": lambda p: {"turns": p.turns_in(p.section("Conversation episode", "Why the episode boundary"))},
    "ama.judge_ingest": _ama_judge_ingest,
    "ama.judge": _ama_judge,
    "ama.refresh": _ama_refresh,
    "ama.answer": lambda p: {"question": _question(p, p.section("Question:", last=True))},
    # RecMem (workbench/methods/recmem/paper_prompts.py)
    "recmem.consolidate": lambda p: {"turns": p.turns_in(p.section("Messages:", "Output:", last=True))},
    "recmem.merge": lambda p: {"turns": p.turns_in(p.section("<New Memory Piece>:", "<Past Memory Piece>:"))},
    "recmem.refine": lambda p: {"turns": p.turns_in(p.section("Subconscious Memory Reference", "Old Semantic"))},
    "recmem.refine_merge": lambda p: {"turns": p.turns_in(p.section("Subconscious Memory Reference",
                                                                    "Old Semantic"))},
    "recmem.answer": lambda p: {"question": _question(p, p.section("Question:", last=True))},
    # HyMem (workbench/methods/hymem/paper_prompts.py; the segmenter is prompts.SEGMENT in both profiles)
    "hymem.segment": lambda p: {"turns": p.turns_in(p.text)},
    "hymem.summarize": lambda p: {"turns": p.turns_in(p.section("The conversation", "Reply with"))},
    "hymem.light": lambda p: {"question": _question(p, p.section("Question:", last=True)), "pool": _hymem_pool(p)},
    "hymem.select": lambda p: {"query": p.section("Question:", "Indices:", last=True).strip()},
    "hymem.deep": lambda p: {"question": _question(p, p.section("Question:", last=True)), "pool": _hymem_pool(p)},
    "hymem.reflect": lambda p: {"question": _question(p, p.section("Question:", "Answer:", last=True)),
                                "answer": p.section("Answer:", "Output format", last=True).strip()},
    # MemR3 (workbench/methods/memr3/paper_prompts.py; the answer's user message is the question alone)
    "memr3.router": _memr3_router,
    "memr3.answer": lambda p: {"question": _question(p, p.section("Answer:", last=True))},
    # H-Mem (workbench/methods/hmem/paper_prompts.py): an extraction is about its fragment's turns, a sub-answer and a
    # missing-information query about their sub-query (free text: the planner's own), the planner and the synthesis
    # about the conversation's question
    "hmem.extract": lambda p: {"turns": p.turns_in(p.section("Fragment:", "\n\n"))},
    "hmem.consolidate": _hmem_consolidate,
    "hmem.profile": _hmem_profile,
    "hmem.plan": lambda p: {"question": _question(p, p.section("Question:", "\n"))},
    "hmem.subanswer": lambda p: {"query": p.section("\nSub-query:", "\n").strip()},
    "hmem.missing": lambda p: {"query": p.section('the sub-query "', '"\n(first-pass answer')},
    "hmem.synthesize": lambda p: {"question": _question(p, p.section("Question:", "\n"))},
}


def _select_by_text(p: Prompt, reply: dict) -> dict:
    """HyMem's f_gamma names entries by their number in this prompt's list; a reference reply may name them by their
    words instead (``{"pick": ["<words of an entry>"]}``), each of which must match exactly one listed entry."""
    if "pick" not in reply:
        return reply
    entries = re.findall(r"^id:(\d+), (.*)$", p.section("Indices:", "Result:", last=True), flags=re.MULTILINE)
    ids = []
    for words in reply["pick"]:
        hit = [int(n) for n, line in entries if words in line]
        if len(hit) != 1:
            raise ReferenceMiss(f"hymem.select reply picks {words!r}: it matches {len(hit)} of the listed entries, "
                                "not one")
        ids.append(hit[0])
    return {"keywords_list": ids}


#: replies written in words that the prompt turns into the role's JSON (see ``_select_by_text``)
REPLY_BUILDERS: dict[str, Callable[[Prompt, Any], Any]] = {"hymem.select": _select_by_text}


# ------------------------------------------------------------------------------------------------
# The LLM
# ------------------------------------------------------------------------------------------------
def load_reference(path: str | Path) -> dict:
    """Read and check a reference file (``SCHEMA``); a bad file or entry is a ``ValueError`` naming it."""
    from ..jsonl import read_json  # the project's strict reader (depth, duplicate keys, NaN refused)

    path = Path(path)
    try:
        value = read_json(path, expect=None)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable reference-replies file ({exc})") from exc
    if not isinstance(value, dict) or value.get("schema") != SCHEMA:
        raise ValueError(f"{path}: field 'schema' must be {SCHEMA!r}")
    for key in ("method", "conversation", "data"):
        if not isinstance(value.get(key), str) or not value[key]:
            raise ValueError(f"{path}: field {key!r} must be a non-empty string")
    replies = value.get("replies")
    if not isinstance(replies, list):
        raise ValueError(f"{path}: field 'replies' must be a list")
    for n, e in enumerate(replies):
        if not isinstance(e, dict) or not isinstance(e.get("role"), str) or not isinstance(e.get("about"), dict) \
                or "reply" not in e:
            raise ValueError(f"{path}: replies[{n}] needs a string 'role', an object 'about' and a 'reply'")
        if e["role"] not in RULES:
            raise ValueError(f"{path}: replies[{n}] role {e['role']!r} has no rule in workbench.llm.reference.RULES")
    if not isinstance(value.get("params", {}), dict):
        raise ValueError(f"{path}: field 'params' must be an object")
    decides = value.get("decides", {})
    if not isinstance(decides, dict) or not all(isinstance(f, list) and all(isinstance(x, str) for x in f)
                                                for f in decides.values()):
        raise ValueError(f"{path}: field 'decides' must map roles to lists of reply field names")
    return value


class ReferenceLLM(BaseLLM):
    """Answers each prompt from a reference-replies file (see the module docstring); ``conversation`` is the
    ``Conversation`` the file is written for (its turns and questions are what the rules look for)."""

    small_model = False  # a method built with profile="auto" takes its paper profile

    def __init__(self, path: str | Path, conversation, *, replies: list[dict] | None = None):
        super().__init__()
        self.path = Path(path)
        self.file = load_reference(self.path)
        self.model = MODEL
        self.replies = list(self.file["replies"] if replies is None else replies)
        self.turns = {str(t.id): str(t.text) for t in conversation.turns if str(t.text).strip()}
        self.questions = tuple(str(q.question) for q in conversation.qa)
        self.asked = [0] * len(self.replies)
        self.misses: list[dict] = []
        #: role -> the schema its prompts were sent with (the designed path's decisions are read with it)
        self.schemas: dict[str, dict | None] = {}
        self._lock = threading.Lock()

    def about(self, role: str, text: str) -> dict:
        """What ``role``'s prompt ``text`` is about, by the role's rule (``RuleError`` when it cannot be read)."""
        rule = RULES.get(role)
        if rule is None:
            raise RuleError(f"no rule reads what a {role!r} prompt is about (workbench.llm.reference.RULES)")
        return rule(Prompt(text, self.turns, self.questions))

    def _miss(self, role: str, text: str, why: str, about=None) -> ReferenceMiss:
        entry = {"role": role, "about": about, "why": why, "prompt_start": text[:240]}
        with self._lock:
            self.misses.append(entry)
        shown = f" about {json.dumps(about, ensure_ascii=False)}" if about is not None else ""
        return ReferenceMiss(f"{self.path.name}: role {role!r}{shown}: {why}; the prompt starts {text[:160]!r}")

    def _generate(self, messages, *, schema, temperature, seed, max_tokens, role) -> Generation:
        text = "\n".join(m["content"] for m in messages)
        with self._lock:
            self.schemas.setdefault(role, schema)
        try:
            about = self.about(role, text)
        except RuleError as exc:
            raise self._miss(role, text, str(exc)) from None
        found = [n for n, e in enumerate(self.replies) if e["role"] == role and e["about"] == about]
        if not found:
            raise self._miss(role, text, "no reply in the file covers this prompt", about)
        if len(found) > 1:
            raise self._miss(role, text, f"replies {found} of the file all cover this prompt", about)
        n = found[0]
        reply = self.replies[n]["reply"]
        builder = REPLY_BUILDERS.get(role)
        if builder is not None and isinstance(reply, dict):
            try:
                reply = builder(Prompt(text, self.turns, self.questions), reply)
            except ReferenceMiss as exc:
                raise self._miss(role, text, str(exc), about) from None
        problem = self._invalid(reply, schema)
        if problem:
            raise self._miss(role, text, f"reply {n} does not satisfy the role's schema: {problem}", about)
        with self._lock:
            self.asked[n] += 1
        return Generation(reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False), self.model)

    @staticmethod
    def _invalid(reply, schema) -> str | None:
        """Why ``reply`` breaks ``schema`` (None when it satisfies it); free text (no schema) must be a string."""
        if schema is None:
            return None if isinstance(reply, str) and reply.strip() else "a free-text role needs a non-empty string"
        import jsonschema

        try:
            jsonschema.validate(reply, schema)
        except jsonschema.ValidationError as exc:
            return exc.message
        return None

    def unused(self) -> list[dict]:
        """The file's entries no prompt asked for (a stale entry, or a path the run did not take)."""
        return [{"index": n, "role": e["role"], "about": e["about"]} for n, e in enumerate(self.replies)
                if not self.asked[n]]

    def __repr__(self) -> str:
        return f"ReferenceLLM({self.path.name!r})"
