"""The paper profile's prompts of AMA (Huang et al., arXiv 2601.20352, App. C, Figs. 6-11): every instruction of
each figure kept, in our own words, with neutral placeholders (``<...>``) where a figure lists alternatives, so no
reply copies an example value. Sent only with ``prompts="paper"`` (the paper profile); hashed only for it
(``AMA.profile_prompt_modules``). The small profile's prompts are in ``prompts.py``.

Format fields are the same as ``prompts.py``'s, so the agents fill either set; a field a paper prompt does not
show is simply unused. Additions to a figure are marked ``[ours]`` in the comment above the prompt.
"""
from .prompts import ANSWER, PATTERNS  # noqa: F401  (no answer prompt in the paper: the shared one, both profiles)

# [paper] App. C, Fig. 6 (the Constructor, P_con): every instruction kept, reworded; placeholders, no example
# values. [ours]: each fact names its pattern (checked against the pattern list; S-V-O-O from §3.1's text is
# allowed too); no "source" key (the speaker comes from the data); the turn's id and date are shown.
CONSTRUCT = """You build structured long-term memory. Break the current input below into atomic facts that a
program can parse. Every fact must take one of the canonical subject-verb-object forms listed here, and every
fact must come from the current input alone.

Elements: S is the subject, V the verb, O an object, C a complement (an attribute or a state), L a location or
an explicit time.

Pattern constraint: each fact must have exactly one of these forms: S-V, S-V-O, S-V-C, S-V-O-O, S-V-O-C,
S-V-O-L. A fact in any other form is invalid.

Atomicity: one fact holds one relation and nothing more. Never join several actions, attributes, places or
roles in one fact. Split descriptive and prepositional phrases into facts of their own.

Appositions: when the input equates two things, openly or implicitly (a phrase of the kind "my <relation>
<name>" or "my <description>, <name>"), you must turn that equivalence into an explicit fact of its own
("<name> is <person>'s <relation>"). Never leave such a relation out.

Source: facts come only from the current input. The memory window and the retrieved memories are there for
reference only; never take a fact from them.

Timestamp: give a timestamp only when the input states an explicit date or time, normalised as
"YYYY-MM-DD HH:MM"; otherwise give "empty". Never work out a time from a relative expression.

related_id: the ids of the earlier turns that this input relates to.

Current input ({turn_id}, said on {date}) by {speaker}:
"{text}"

Memory window (earlier turns of the session, may be empty):
{window}

Retrieved memories (each labelled with the turn it came from, may be empty):
{memories}

Reply with exactly one JSON object:
{{"facts": [{{"content": "<atomic fact>", "pattern": "<one of the forms above>"}}],
"related_id": ["<turn id>"], "timestamp": "<YYYY-MM-DD HH:MM> or empty"}}"""

# [paper] App. C: the figures' output formats, as schemas that require every field the method reads.
CONSTRUCT_SCHEMA = {
    "type": "object",
    "properties": {
        "facts": {"type": "array", "items": {
            "type": "object",
            "properties": {"content": {"type": "string"}, "pattern": {"type": "string", "enum": PATTERNS}},
            "required": ["content", "pattern"]}},
        "related_id": {"type": "array", "items": {"type": "string"}},
        "timestamp": {"type": "string"},
    },
    "required": ["facts", "related_id", "timestamp"],
}

# [paper] App. C, Fig. 7 (the episode trigger, P_tri): every instruction kept, reworded; placeholders, no example
# values. The history is W_t under the paper profile (trigger_history="window", as Fig. 7 shows it) and the
# current episode's turns under the small one (trigger_history="buffer"; see the AMA docstring).
TRIGGER = """You decide where episodes of a conversation begin. Say whether the newly added message starts a new
episode: a binary decision T_t, 0 or 1.

Conversation history (may be empty):
{history}

Newly added message:
{new}

Set T_t to 1 when at least one of these conditions holds:
1. Topic shift: the new message brings a topic, event or task that does not depend on the current conversation,
   or the dialogue turns to an unrelated question or situation.
2. Explicit transition: the speaker says outright that they are moving on, for instance by raising a fresh
   question or switching the subject of the discussion.
3. Context saturation: the current topic has been discussed enough or has come to a close, or the dialogue now
   covers more than one coherent episode reasonably can.
Otherwise set T_t to 0.

Principles: topic independence matters more than conversational continuity. When in doubt, split (T_t = 1).
Each episode should be about one coherent topic or event. If the conversation history is empty, T_t is 0.

Reply with exactly one JSON object and nothing else:
{{"T_t": <0 or 1>, "reason": "<short justification>", "confidence": <number from 0.0 to 1.0>,
"topic_summary": "<summary of the new topic when T_t is 1, else empty>"}}"""

TRIGGER_SCHEMA = {
    "type": "object",
    "properties": {"T_t": {"type": "integer", "enum": [0, 1]}, "reason": {"type": "string"},
                   "confidence": {"type": "number"}, "topic_summary": {"type": "string"}},
    "required": ["T_t", "reason", "confidence", "topic_summary"],
}

# [paper] App. C, Fig. 8 (episodic memory synthesis, P_epi): every instruction kept, reworded; placeholders, no
# example values.
EPISODE = """You write episodic memory. Turn the finished conversation episode below into one structured memory
entry: a coherent narrative in the third person.

Conversation episode (each line: [date] speaker: text):
{conversation}

Why the episode boundary was triggered:
{boundary_reason}

Principles:
1. The episode is one coherent event or topic.
2. Keep the facts accurate and the order of events chronological.
3. Add nothing that the conversation does not contain.

Time:
- Take the episode's time from the explicit timestamps in the dialogue.
- Turn relative time expressions into absolute dates from the context, and keep the converted times consistent
  across the whole episode.
- When there is no reliable time information, infer a plausible time for the episode from the dialogue.
- The timestamp is when the episode took place, not the current system time.

Content:
- Write in the third person.
- Say clearly who took part, what was discussed, what was decided or concluded, and any intentions, plans or
  outcomes that were expressed.
- State the time explicitly in the narrative.
- Keep cause and time order coherent.

Reply with exactly one JSON object and nothing else:
{{"title": "<short title naming the core event or topic>", "content": "<the third-person narrative>",
"timestamp": "<YYYY-MM-DDTHH:MM:SS>"}}"""

EPISODE_SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "content": {"type": "string"}, "timestamp": {"type": "string"}},
    "required": ["title", "content", "timestamp"],
}

# [paper] App. C, Fig. 9 (the Retriever, P_ret): every instruction kept, reworded; placeholders, no example values
# (the small prompt's filled-in example was copied by all 22 recorded Retriever replies, reviews/ama.md §2.1).
RETRIEVE = """You prepare memory retrieval. From the current input and the short-term context window, rewrite the
query and infer its intent, so that retrieval is routed to the right memory granularity.

Short-term context window (may be empty):
{window}

Current input: {user_input}

Produce all four of these at once:
1. rewrite_query: a standalone rewrite of the input in which every reference is resolved.
2. intent_vector: four binary intent bits.
3. K_dyn: a dynamic retrieval budget.
4. memory_type: the memory type to search.

Intent bits (each one is 0 or 1, nothing else):
- b_fine is 1 when the input needs fine-grained or exact details.
- b_abs is 1 when the input is abstract or asks for a summary.
- b_event is 1 when the input spans several turns or times, or concerns whole events.
- b_atomic is 1 when the input is short, about a single point, and factual.

Routing by the bits:
- b_fine is 1: the raw text memory ("raw").
- otherwise, b_abs or b_event is 1: the episode memory ("episode").
- otherwise: the fact knowledge memory ("fact").

Rewriting:
- The rewrite must stand on its own and be unambiguous.
- Resolve references from the context window where needed.
- Keep the explicit entities and identities.
- Add no information that neither the input nor the context window contains.

Budget: K_dyn is a small integer that reflects how much has to be retrieved; broader queries, and queries that
span several events, get a larger K_dyn.

Reply with exactly one JSON object and nothing else:
{{"rewrite_query": "<the rewritten query>",
"intent_vector": {{"b_fine": <0 or 1>, "b_abs": <0 or 1>, "b_event": <0 or 1>, "b_atomic": <0 or 1>}},
"memory_type": "<raw, fact or episode>", "K_dyn": <integer>}}"""

_BIT = {"type": "integer", "enum": [0, 1]}
RETRIEVE_SCHEMA = {
    "type": "object",
    "properties": {
        "rewrite_query": {"type": "string"},
        "intent_vector": {"type": "object",
                          "properties": {"b_fine": _BIT, "b_abs": _BIT, "b_event": _BIT, "b_atomic": _BIT},
                          "required": ["b_fine", "b_abs", "b_event", "b_atomic"]},
        "memory_type": {"type": "string", "enum": ["raw", "fact", "episode"]},
        "K_dyn": {"type": "integer"},
    },
    "required": ["rewrite_query", "intent_vector", "memory_type", "K_dyn"],
}

# [paper] App. C, Fig. 10 (the Judge, P_jud): every instruction kept, reworded; placeholders, no example values.
# [ours]: relevant_ids (H_r) and conflict_ids (C_err), the two sets §3.3 passes on and the figure's output omits.
JUDGE = """You are the judge of retrieved memory. Check whether the retrieved candidates are enough to answer the
current input, and whether any of them contradict each other. Then choose exactly one action: Pass, Retry or
Refresh.

Retrieved candidates (id, date, text; may be empty):
{information}

Current input: {user_input}

Checks:
1. Relevance and sufficiency: the candidates are sufficient only if they meet the granularity the input needs.
   - Who or what: the exact entity or attribute asked about must be stated explicitly.
   - Where: the place must be concrete and at the level asked for (a city, a country, a region...).
   - When: the time must be at least as precise as the input requires; a relative expression counts only if it
     can be normalised to a single value.
   - How many: a number or an explicitly bounded range is needed.
   When any required element is missing or under-specified, the candidates are insufficient.
2. No proxies or vague answers: generic or stand-in expressions (a place named only by its role, a time named
   only as "recently" or "around then", "somewhere") do not make the candidates sufficient; when only such
   expressions are available, treat the candidates as insufficient.
3. Controlled inference: allow only a minimal single step of inference that keeps the answer as specific. Do not
   infer states, time validity or present conditions that are not stated.
4. Conflicts: there is a conflict when two or more candidates assert incompatible facts about the same event,
   entity or time span. Differences of wording or tone alone are not a conflict.

Action:
- a conflict was found: Refresh;
- otherwise, the candidates are insufficient: Retry;
- otherwise: Pass.
relevant_ids: the ids of the candidates that help answer the input. conflict_ids: the ids of the candidates in
conflict (empty unless the action is Refresh).

Reply with exactly one JSON object and nothing else:
{{"Action": "<Pass, Retry or Refresh>", "reason": "<short justification>", "confidence": <number from 0.0 to 1.0>,
"relevant_ids": ["<candidate id>"], "conflict_ids": ["<candidate id>"]}}"""

JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"Action": {"type": "string", "enum": ["Pass", "Retry", "Refresh"]},
                   "reason": {"type": "string"}, "confidence": {"type": "number"},
                   "relevant_ids": {"type": "array", "items": {"type": "string"}},
                   "conflict_ids": {"type": "array", "items": {"type": "string"}}},
    "required": ["Action", "reason", "confidence", "relevant_ids", "conflict_ids"],
}

# [paper] App. C, Fig. 10 and §3.3 (the Judge, P_jud) on a new dialogue turn: Judge(u_t, H_t, W_t || P_jud), the
# relevance assessment (Retry, which widens the search to the remaining granularities and the relation indices R_t,
# within K_r rounds) and then the conflict check on H_r; every instruction kept, reworded; placeholders, no example
# values. [ours]: a turn is a statement, not a question, so relevance asks whether the memories are about what the
# turn is about (Fig. 10's sufficiency rules are for questions); a request to forget counts as a conflict, the only
# way the Refresher's Delete rule 1 (§3.4) can be reached; relevant_ids (H_r) and conflict_ids (C_err) as in JUDGE.
# W_t is shown because §3.3 gives it to the Judge (Fig. 10 has no slot for it). (Review turn 4, N2 and N7.)
JUDGE_INGEST = """You are the judge of retrieved memory. A new turn was just said in a conversation; the memories
below were retrieved for it. Check whether the memories are relevant to the turn, and whether the turn and the
memories contradict each other. Then choose exactly one action: Pass, Retry or Refresh.

Short-term context window (earlier turns of the session, may be empty):
{window}

Retrieved memories (id, date, text; may be empty):
{information}

Current input (said on {date}) {speaker}: {text}

Checks:
1. Relevance: a memory is relevant when it is about the same people, things, events or time as the current input.
   When too few of the retrieved memories are relevant to check the input against what is stored, the retrieval
   is insufficient: the search will then be widened to other memory granularities and related turns.
2. Conflicts: there is a conflict when the input and a memory, or two memories, assert incompatible facts about
   the same event, entity or time span, or when the speaker explicitly asks to forget, remove, cancel or
   invalidate something a memory holds. Differences of wording or tone alone are not a conflict, and neither is
   new information about something else.

Action:
- a conflict was found: Refresh;
- otherwise, the retrieval is insufficient: Retry;
- otherwise: Pass.
relevant_ids: the ids of the relevant memories. conflict_ids: the ids of the memories in conflict (empty unless
the action is Refresh).

Reply with exactly one JSON object and nothing else:
{{"Action": "<Pass, Retry or Refresh>", "reason": "<short justification>", "confidence": <number from 0.0 to 1.0>,
"relevant_ids": ["<memory id>"], "conflict_ids": ["<memory id>"]}}"""

JUDGE_INGEST_SCHEMA = {
    "type": "object",
    "properties": {"Action": {"type": "string", "enum": ["Pass", "Retry", "Refresh"]}, "reason": {"type": "string"},
                   "confidence": {"type": "number"},
                   "relevant_ids": {"type": "array", "items": {"type": "string"}},
                   "conflict_ids": {"type": "array", "items": {"type": "string"}}},
    "required": ["Action", "reason", "confidence", "relevant_ids", "conflict_ids"],
}

# [paper] App. C, Fig. 11 and §3.4 (the Refresher, P_ref): Refresher(C_err, H_t || P_ref), "given detected conflicts
# C_err and the corresponding memory entries H_t": both are shown, C_err first and then the rest of H_t, so a newer
# value the Judge did not name still reaches the Refresher (review turn 4, N1). Every instruction kept, reworded;
# placeholders, no example values. [ours]: the line saying that only the conflicting entries are edited (the code
# ignores ids outside C_err, §3.4's "targeted updates" of "the specific memory entries identified as contradictory").
REFRESH = """You keep stored memory consistent in time and logic. Given the detected conflicts and the memory
entries concerned, decide whether to update or to delete memory records. You may edit any granularity: raw
text, fact knowledge or episodic memory.

Detected conflicts: the memory entries found in conflict (id, date, text; may be empty):
{memory_entries}

Other memory entries retrieved for the current input (id, date, text; may be empty):
{retrieved}

Current input: {user_input}

Only the entries listed as detected conflicts can be edited; the other entries are shown for what they say.

Editing principles:
1. Scope: change only entries about the same entity or event as the current input. When the input is about
   something unrelated, change nothing.
2. Update when the same entity or event is referred to, the facts disagree in state, time, quantity or
   outcome, and the input gives a more recent or more correct value. Change only the attributes in conflict and
   keep all other information.
3. Delete only when the user explicitly asks to remove, cancel or invalidate something, or when an explicit
   instruction from the user has made the entry invalid.
4. Conservative default: when the situation is ambiguous, change nothing ("No-Op").

Timestamp: give one only when the current input states an explicit date or time, normalised where possible;
otherwise give "empty".

Reply with exactly one JSON object and nothing else:
{{"Action": "<Update, Delete or No-Op>", "memory_type": "<raw, fact or episode>",
"datalist": [{{"id": "<memory id>", "new_content": "<the updated entry>"}}],
"timestamp": "<normalised date and time> or empty", "reason": "<short justification>"}}"""

# the Refresher replies in the same fields under both profiles: one schema (prompts.py), required there too
from .prompts import REFRESH_SCHEMA  # noqa: E402,F401
