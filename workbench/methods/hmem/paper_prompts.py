"""Prompts of H-Mem's ``paper`` profile (``HMem(prompts="paper")``; issue #39).

The paper's Appendix C prints only the titles of its prompts (C.1 memory extraction and consolidation, C.3
sub-query planner and missing-information query); the authors' code is not public. So every instruction below
is one the paper states for that step in §3.2, §3.3, App. A.2, A.4 or App. B, written in our own words. Unlike
``prompts`` (the ``small`` profile's short prompts for the offline models), these keep every such instruction,
ask for the whole record App. A.2 describes (entity role and salience, relation confidence and span), use
neutral placeholders in their JSON templates instead of example values, set no word limits, and their schemas
require every field the method reads. Hashed only for the paper profile (``HMem.profile_prompt_modules``).
"""
from .graph import ENTITY_TYPES, SCOPES
# the replies read the same fields in both profiles: one schema each, defined with the small prompts
from .prompts import CONSOLIDATE_SCHEMA, MISSING_INFO_SCHEMA, PROFILE_SCHEMA, SUB_ANSWER_SCHEMA  # noqa: F401

# -- construction ---------------------------------------------------------------------------------
# [paper] App. C.1 "Memory extraction prompt" (title only): instructions from §3.2 (atomic memory events,
# one fine-grained topic each, timestamped) and App. A.2 (entity and relation records, the 9-type set).
EXTRACT_HEAD = """You read one fragment of a long conversation between a user and others (speakers, a timestamp and
what was said) and turn it into memory records. The fragment's timestamp is {date}.

Fragment:
{fragment}

"""
EXTRACT_EVENTS = """"events": the memory events of the fragment. Each event keeps exactly one fine-grained topic (a
preference, a fact about someone, something that happened or is planned, an opinion); split a turn that covers
several topics into several events. Write each as one self-contained sentence that names the people involved
instead of pronouns, so it can be read without the fragment. "date": the calendar day (YYYY-MM-DD) the event
refers to when the fragment gives or implies one, resolving relative expressions against the fragment's
timestamp; "" when there is none.
"""
EXTRACT_GRAPH = """"entities": every entity mentioned in the fragment, each as a record with its surface "name" as written,
its "type" (exactly one of: {types}), its "role" in the fragment (for example the speaker, the subject or an
object of an action), a "salience" score between 0 and 1 (how central it is to the fragment), and the
optional "span" (the words of the fragment that mention it).
"relations": every relation the fragment states between two of those entities, each as a record with the
"source" entity name, a short "relation" label, the "target" entity name, a "confidence" score between 0
and 1 (how clearly the fragment states it), and the optional "span" that states it.
"""
EXTRACT_FORMAT = "Reply with one JSON object of this form only: {example}"

_EVENT_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}, "date": {"type": "string"}},
                 "required": ["text", "date"]}
_ENTITY_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string"}, "type": {"type": "string", "enum": list(ENTITY_TYPES)}, "role": {"type": "string"},
    "salience": {"type": "number"}, "span": {"type": "string"}}, "required": ["name", "type", "role", "salience"]}
_RELATION_SCHEMA = {"type": "object", "properties": {
    "source": {"type": "string"}, "relation": {"type": "string"}, "target": {"type": "string"},
    "confidence": {"type": "number"}, "span": {"type": "string"}},
    "required": ["source", "relation", "target", "confidence"]}


def extraction_prompt(*, events: bool, graph: bool) -> str:
    """The extraction template for the structures being built (a ``str.format`` template)."""
    parts, example = [EXTRACT_HEAD], []
    if events:
        parts.append(EXTRACT_EVENTS)
        example.append('"events": [{{"text": "<event sentence>", "date": "<YYYY-MM-DD or empty>"}}]')
    if graph:
        parts.append(EXTRACT_GRAPH.replace("{types}", ", ".join(ENTITY_TYPES)))
        example.append('"entities": [{{"name": "<name>", "type": "<type>", "role": "<role>", "salience": <0-1>, '
                       '"span": "<words>"}}], "relations": [{{"source": "<name>", "relation": "<label>", '
                       '"target": "<name>", "confidence": <0-1>, "span": "<words>"}}]')
    return "".join(parts) + EXTRACT_FORMAT.replace("{example}", "{{" + ", ".join(example) + "}}")


def extraction_schema(*, events: bool, graph: bool) -> dict:
    props: dict = {}
    if events:
        props["events"] = {"type": "array", "items": _EVENT_SCHEMA}
    if graph:
        props["entities"] = {"type": "array", "items": _ENTITY_SCHEMA}
        props["relations"] = {"type": "array", "items": _RELATION_SCHEMA}
    return {"type": "object", "properties": props, "required": list(props)}


# [paper] App. C.1 "Memory consolidation prompt" (title only): instructions from §3.2 (a parent consolidates the
# events or summaries of its children; upper levels keep abstract or persistent long-term memory) and App. A.2
# (the window per level). No word limit: the paper states none.
CONSOLIDATE = """You maintain one node of a memory tree. The node covers the {window} {label}, and its child memories
(events or summaries of a lower level, with their dates) are:
{notes}

Consolidate the child memories into one memory summary for this node. Keep the persistent information
(lasting facts about people, their relationships and preferences, ongoing situations and plans), abstract what
recurs across the children into a pattern instead of repeating it, keep the dates that matter, and name people
explicitly. Use only what the children say.{limit}
Reply with one JSON object of this form only: {{"summary": "<summary>"}}"""
CONSOLIDATE_LIMIT = " Use at most {max_words} words."  # only when summary_words is set (the paper sets none)

# [paper] §3.2 (profiles of salient entities keep both persistent and recent memory data; no prompt printed).
PROFILE = """You maintain the profile of a salient entity of a long conversation: {name} ({type}).
Its profile so far -- persistent: {persistent} | recent: {recent}
Memories about {name} from the session on {date}:
{mentions}

Update the profile. "persistent": the stable memory data about {name} (identity, relationships, lasting
preferences, long-running situations), kept unless the new memories change it. "recent": the memory data about
{name} from these latest memories.
Reply with one JSON object of this form only: {{"persistent": "<text>", "recent": "<text>"}}"""

# -- retrieval ------------------------------------------------------------------------------------
# [paper] App. C.3 "Subquery planner prompt" (title only): instructions from §3.3 step 1 (sub-queries with
# dependencies, a scope label per sub-query, explicit temporal hints, a retrieval workflow; entities are
# extracted from each sub-query) and App. A.4 (what each scope covers). Placeholders, no example values.
PLAN = """You plan the retrieval of evidence from the memory of a long conversation to answer a question. {now_line}
Question: {question}

Decompose the question into at most {max_n} sub-queries, each answerable from memory on its own or from the
answers of the sub-queries it depends on; a question that needs no decomposition is one sub-query. For each
sub-query give:
"query": the sub-query;
"depends_on": the numbers (counting from 1) of the earlier sub-queries whose answers it needs, [] if none;
"scope": the memory scope to search -- SHORT for moment-specific evidence (a concrete event, a recent action, a
fact tied to one time: the raw fragments and the memory events), LONG for stable or persistent memory (lasting
preferences, relationships, facts that recur: the memory events and the summaries of longer periods), MIXED
when the sub-query needs both fine-grained situational evidence and higher-level summaries;
"time": the explicit temporal hint of the sub-query (a date, a period or a relative time expression as the
question states it), "" if it has none;
"entities": the entities (people, organizations, places, events, things) the sub-query mentions;
"workflow": the retrieval workflow for the sub-query, in one sentence: which entities to start from, what to
look for, and what would complete the answer.
Reply with one JSON object of this form only:
{{"subqueries": [{{"query": "<sub-query>", "depends_on": [<numbers>], "scope": "<SHORT|LONG|MIXED>", "time": "<hint>",
"entities": ["<entity>"], "workflow": "<workflow>"}}]}}"""
PLAN_SCHEMA = {"type": "object", "properties": {"subqueries": {"type": "array", "items": {
    "type": "object", "properties": {"query": {"type": "string"},
                                     "depends_on": {"type": "array", "items": {"type": "integer"}},
                                     "scope": {"type": "string", "enum": list(SCOPES)},
                                     "time": {"type": "string"},
                                     "entities": {"type": "array", "items": {"type": "string"}},
                                     "workflow": {"type": "string"}},
    "required": ["query", "depends_on", "scope", "time", "entities", "workflow"]}}}, "required": ["subqueries"]}

# [paper] §3.3 step 3 (a reasoner answers each sub-query from its evidence chain and the answers of its
# prerequisites) and App. A.4 / App. B case (B) (it flags missing information: unresolved entities, vague
# references, missing temporal anchors, underspecified events, several plausible candidates).
SUB_ANSWER = """Answer a sub-query from the memory evidence only. {now_line}
{prior}Evidence chain (each item with its date and kind: fragment, event, summary or profile):
{evidence}

Sub-query: {query}
"answer": the answer the evidence supports, stated as a short factual answer; express relative times as
calendar dates using the dates of the evidence; if the evidence does not contain it, reply "Not mentioned in
the conversation".
"missing_info": true when the evidence is insufficient to answer with the required specificity -- an entity is
described but not named, a reference stays vague, a temporal anchor is missing, the event is underspecified, or
several candidates remain plausible; otherwise false.
Reply with one JSON object of this form only: {{"answer": "<answer>", "missing_info": <true|false>}}"""
PRIOR_ANSWERS = "Answers of the sub-queries this one depends on:\n{answers}\n"

# [paper] App. C.3 "Missing-information query prompt" (title only): instructions from App. A.4 (ask for the
# missing slot, not a paraphrase; at least one concrete anchor from the first-pass evidence) and App. B case (B).
MISSING_INFO = """The first-pass evidence below is not specific enough to answer the sub-query "{query}"
(first-pass answer: {answer}).
Evidence:
{evidence}

Write one follow-up retrieval query for the missing information. It must ask for the missing slot itself (the
unnamed entity, the missing date, the bridge between two facts, the choice among candidates), not restate or
paraphrase the sub-query, and it has to name something specific (a person, object or event) found in the
first-pass evidence.
Reply with one JSON object of this form only: {{"query": "<follow-up query>"}}"""

# [paper] §3.3 step 3 (the synthesis Psi combines the sub-answers into the final answer). No word cap: the
# paper shortens answers only for lexical F1 (App. A.3), a step of its evaluation, not of the method.
SYNTHESIZE = """Combine the answers of the sub-queries into the final answer to the question. {now_line}
Question: {question}
Sub-queries and their answers (in the order they were answered):
{answers}

Give the final answer as a short factual answer, using only these answers. If they do not contain the
information, reply "Not mentioned in the conversation".
Answer:"""
