"""Prompts of H-Mem (Yu et al., arXiv:2605.15701). The paper's Appendix C gives only the titles
(memory extraction, memory consolidation, sub-query planner, missing-information query); every
text below is written for the workbench from the method description in §3 and App. A.2/A.4/B.
Prompts stay short: the offline model is a 0.5B model with a 16k context.
"""
import re

from .graph import ENTITY_TYPES, SCOPES

# -- construction ---------------------------------------------------------------------------------
# H-Mem App. C.1 "Memory extraction prompt" (title only; own text from §3.2 and App. A.2). One call
# returns events (tree leaves) and entities/relations (graph): the parts are joined by
# ``extraction_prompt`` according to which structures are being built.
EXTRACT_HEAD = """Turn this part of a conversation into memory records. It took place on {date}.

{fragment}

"""
EXTRACT_EVENTS = """"events": each separate thing that happened or was said, one topic per event, as one short sentence
that names the people involved (never "I" or "you"). If the event has a time ("last Saturday", "next month"),
put the calendar date it refers to in "date" as YYYY-MM-DD; otherwise leave "date" out. Skip greetings.
"""
EXTRACT_GRAPH = """"entities": the people, organizations, places, events, products, works (books, films, songs),
dates and other named things mentioned, each with a "name" and a "type" (one of: {types}).
"relations": facts that link two of those entities, each as "source", "relation" (a short label such as
"lives in" or "sister of") and "target".
"""
EXTRACT_FORMAT = "Return JSON only, like: {example}"
#: the relation labels EXTRACT_GRAPH gives as examples ("lives in", "sister of"), read from its text: the census counts
#: relations extracted with them from turns that never say them, and the graph view flags such a relation (a tuple:
#: not part of the prompt hash, which reads string constants)
EXAMPLE_RELATIONS = tuple(re.findall(r'"([a-z]+(?: [a-z]+)*)"', EXTRACT_GRAPH.split("such as", 1)[1].split(")")[0]))

_EVENT_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}, "date": {"type": "string"}},
                 "required": ["text"]}
_ENTITY_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"},
                                                   "type": {"type": "string", "enum": list(ENTITY_TYPES)}},
                  "required": ["name", "type"]}
_RELATION_SCHEMA = {"type": "object", "properties": {"source": {"type": "string"}, "relation": {"type": "string"},
                                                     "target": {"type": "string"}},
                    "required": ["source", "relation", "target"]}


def extraction_prompt(*, events: bool, graph: bool) -> str:
    """The extraction template for the structures being built (a ``str.format`` template)."""
    parts, example = [EXTRACT_HEAD], []
    if events:
        parts.append(EXTRACT_EVENTS)
        example.append('"events": [{{"text": "...", "date": "YYYY-MM-DD"}}]')
    if graph:
        parts.append(EXTRACT_GRAPH.replace("{types}", ", ".join(ENTITY_TYPES)))
        example.append('"entities": [{{"name": "...", "type": "person"}}], '
                       '"relations": [{{"source": "...", "relation": "...", "target": "..."}}]')
    return "".join(parts) + EXTRACT_FORMAT.replace("{example}", "{{" + ", ".join(example) + "}}")


def extraction_schema(*, events: bool, graph: bool) -> dict:
    props: dict = {}
    if events:
        props["events"] = {"type": "array", "items": _EVENT_SCHEMA}
    if graph:
        props["entities"] = {"type": "array", "items": _ENTITY_SCHEMA}
        props["relations"] = {"type": "array", "items": _RELATION_SCHEMA}
    return {"type": "object", "properties": props, "required": list(props)}


# H-Mem App. C.1 "Memory consolidation prompt" (title only; own text from §3.2: keep persistent facts,
# abstract recurring patterns over the window).
CONSOLIDATE = """These memory notes all fall in the {window} {label}:
{notes}

Merge them into one summary of at most {max_words} words. Keep lasting facts (who did what, preferences,
relationships, plans) and say what recurs. Name people explicitly and keep important dates.
Return JSON: {{"summary": "..."}}"""
CONSOLIDATE_SCHEMA = {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}

# Entity profile (§3.2 "profile keeping both persistent and recent memory data"; no prompt in the paper).
PROFILE = """Keep a short profile of {name} ({type}) from a long conversation.
Current profile: lasting: {persistent} | recent: {recent}
New mentions from the session on {date}:
{mentions}

Update it. "persistent": stable facts about {name} (who they are, relationships, preferences, ongoing
situations), changed only if the new mentions change them. "recent": what is new about {name} in these
mentions. At most two sentences each.
Return JSON: {{"persistent": "...", "recent": "..."}}"""
PROFILE_SCHEMA = {"type": "object", "properties": {"persistent": {"type": "string"}, "recent": {"type": "string"}},
                  "required": ["persistent", "recent"]}

# -- retrieval ------------------------------------------------------------------------------------
# H-Mem App. C.3 "Subquery planner prompt" (title only; own text from §3.3 step 1 and App. A.4 scopes).
PLAN = """Plan how to search the memory of a long conversation to answer a question. {now_line}
Question: {question}

Split it into 1 to {max_n} simple sub-queries: one if the question is simple, one per person or thing when
it asks about several. If a sub-query needs the answer of an earlier one, put that one's number (from 1)
in "depends_on". For each sub-query give:
"query": the sub-query; "depends_on": numbers of earlier sub-queries it needs;
"scope": SHORT for a specific moment, event or recent fact, LONG for stable preferences, relationships,
habits or things that recur over time, MIXED when both help;
"time": the time it asks about as a date, month, year or phrase ("May 2023", "last week"), or "" if none;
"entities": names of the people, places or things in it.
Return JSON: {{"subqueries": [{{"query": "...", "depends_on": [], "scope": "SHORT", "time": "", "entities": []}}]}}"""
PLAN_SCHEMA = {"type": "object", "properties": {"subqueries": {"type": "array", "items": {
    "type": "object", "properties": {"query": {"type": "string"},
                                     "depends_on": {"type": "array", "items": {"type": "integer"}},
                                     "scope": {"type": "string", "enum": list(SCOPES)},
                                     "time": {"type": "string"},
                                     "entities": {"type": "array", "items": {"type": "string"}}},
    "required": ["query", "depends_on", "scope", "time", "entities"]}}}, "required": ["subqueries"]}

# Sub-answer reasoner (§3.3 step 3; App. B case (B) shows its missing_info flag; no prompt in the paper).
SUB_ANSWER = """Answer the question from the memory evidence only. {now_line}
{prior}Evidence (oldest first; each line gives its date and kind):
{evidence}

Question: {query}
"answer": as few words as possible; turn relative times into dates using the evidence dates; if the evidence
does not say, write "Not mentioned in the conversation".
"missing_info": true if the evidence points towards the answer but lacks a needed detail (an unnamed person
or thing, a vague reference, a missing date, several possible candidates), else false.
Return JSON: {{"answer": "...", "missing_info": false}}"""
SUB_ANSWER_SCHEMA = {"type": "object", "required": ["answer", "missing_info"],
                     "properties": {"answer": {"type": "string"}, "missing_info": {"type": "boolean"}}}
PRIOR_ANSWERS = "Answers already found:\n{answers}\n"

# H-Mem App. C.3 "Missing-information query prompt" (title only; own text from App. A.4: ask for the
# missing slot, not a paraphrase, with at least one concrete anchor from the first-pass evidence).
MISSING_INFO = """The evidence below was not enough to answer "{query}" precisely (first attempt: {answer}).
Evidence:
{evidence}

Write one follow-up search query that asks for the missing detail itself (for example the name of something
only described, or the date of an event), not a rewording of the question. It must contain at least one
concrete name, object or event taken from the evidence.
Return JSON: {{"query": "..."}}"""
MISSING_INFO_SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}

# Synthesis Psi({A_k}) (§3.3 step 3; no prompt in the paper).
SYNTHESIZE = """Combine the answers to the sub-questions into one answer to the main question. {now_line}
Main question: {question}
Sub-questions and answers:
{answers}

Answer in as few words as possible (about six at most), without explanation. If the answers do not contain
the information, say "Not mentioned in the conversation".
Answer:"""
