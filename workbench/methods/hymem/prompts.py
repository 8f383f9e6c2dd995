"""Prompts of HyMem (arXiv 2602.13933, App. B), reworded in this project's own words and kept
short for small local models. The JSON keys follow the paper's (``keywords``, ``finished``,
``answer``, ``keywords_list``, ``new_question``) so traces read like the paper's figures.
"""

# [ours] The paper has no segmentation prompt (§3.1 only says "partitions ... based on discussed
# topics"); digest §10.1 proposes one LLM call per session returning topic spans.
SEGMENT = """Split this conversation session into events by topic. The turns are numbered.

{turns}

Group consecutive turns about the same topic into one event (roughly 8 to 20 turns each when the
session is long enough). Every turn should be in an event.
Return JSON only:
{{"events": [{{"start": <first turn number>, "end": <last turn number>, "topic": "<a few words>"}}]}}"""

SEGMENT_SCHEMA = {
    "type": "object",
    "properties": {"events": {"type": "array", "items": {
        "type": "object",
        "properties": {"start": {"type": "integer"}, "end": {"type": "integer"}, "topic": {"type": "string"}},
        "required": ["start", "end", "topic"]}}},
    "required": ["events"],
}

# HyMem App. B.1, summary module (reworded). [ours] the session date is prefixed (digest §10.3):
# B.1 receives no date, yet the f_gamma index (B.4) shows one.
SUMMARIZE = """This is part of a conversation held on {date}.

{dialogue}

Write down all the key information in it as short sentences; they will be the memory an assistant
later answers questions from. Keep every important detail: times and dates, places, the people involved
and notable events. Leave out greetings, pleasantries and small talk. Merge related facts into one
sentence instead of splitting them into many tiny ones.
Return JSON only: {{"keywords": ["<sentence>", "<sentence>"]}}"""

SUMMARY_SCHEMA = {"type": "object", "properties": {"keywords": {"type": "array", "items": {"type": "string"}}},
                  "required": ["keywords"]}

# HyMem App. B.3, light generator G_theta (reworded). finished: 0 = answerable, 2 = escalate.
LIGHT = """You answer questions from summaries of past conversations.

Memory summaries (the date in brackets is when it was said):
{memories}
{pool}{now_line}
Question: {question}

Decide whether the summaries clearly contain the answer. Be strict: if they do not fit the question,
are incomplete, vague or off-topic, or you are unsure, set "finished" to 2 (a more thorough search will
follow). If the answer is clearly there, set "finished" to 0 and give a complete, specific answer; tie
any relative time ("last year") to its reference date.
Return JSON only: {{"finished": 0 or 2, "answer": "..."}}"""

LIGHT_SCHEMA = {"type": "object",
                "properties": {"finished": {"type": "integer", "enum": [0, 2]}, "answer": {"type": "string"}},
                "required": ["finished", "answer"]}

# HyMem App. B.4, retriever f_gamma (reworded; our own one-shot example, not the paper's).
SELECT = """You pick memory entries for a question. Each entry is a short summary of part of a past conversation,
with an id and the date it was said. Return the ids of the entries most likely to help answer the question.

Example
Question: Which city did Tom move to?
Entries:
id:0, [2 March 2023] Tom adopted a dog named Rex.
id:1, [9 April 2023] Tom got a job offer in Leeds.
id:2, [9 April 2023] Maria started painting classes.
id:3, [1 May 2023] Tom packed up his flat and moved for the new job.
Result: {{"keywords_list": [1, 3]}}

Question: {question}
Entries:
{entries}
Result (JSON only):"""

SELECT_SCHEMA = {"type": "object",
                 "properties": {"keywords_list": {"type": "array", "items": {"type": "integer"}}},
                 "required": ["keywords_list"]}

# HyMem App. B.5, deep generator G_gamma (reworded).
DEEP = """You answer a question from memories of past conversations.

Memories (conversation excerpts, each starting with its date):
{memories}
{pool}{now_line}
Question: {question}

An answer is not always unique: give every plausible answer and aim to be complete. Tie any relative
time ("last year") to its reference date. If the memories are incomplete, still infer the most likely
answer from them instead of refusing.
Return JSON only: {{"answer": "..."}}"""

DEEP_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}

# HyMem App. B.2, reflection R (reworded). finished: 1 = done, 0 = rewrite and search again.
REFLECT = """Check whether an answer meets its question.

Question: {question}
Answer: {answer}

If the answer is irrelevant to the question or goes against what it asks, set "finished" to 0 and
write in "new_question" a sharper question aimed at what is missing, to be used for another memory
search. If the answer is broadly complete and sensible, set "finished" to 1.
Return JSON only: {{"finished": 0 or 1, "new_question": "..."}}"""

REFLECT_SCHEMA = {"type": "object",
                  "properties": {"finished": {"type": "integer", "enum": [0, 1]}, "new_question": {"type": "string"}},
                  "required": ["finished", "new_question"]}

# [ours] how the memory pool M (Alg. 1) is shown to both generators (digest §10.6).
POOL_HEADER = "Intermediate answers from earlier rounds:"
