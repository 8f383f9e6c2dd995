"""The paper profile's prompts and router schema of MemR3 (``MemR3(profile="paper")``, issue #39).

Every instruction of the paper's generate prompts (App. A.1 system, App. A.2 user) and of the answer prompt
p_w that [code] sends (Zep's LongMemEval-style prompt, paper Eq. 6) is kept, in our own words; example
values are neutral placeholders (``<event>``, ``<date>``) so a small model has nothing concrete to copy.
Only the paper profile sends them, so this module is hashed into that profile's prompt hash only
(``MemR3.profile_prompt_modules``); the small profile's prompts stay in ``prompts.py``.
Empty fields get the same [code] placeholders as the small profile (``prompts.NO_GAPS`` ...).
"""

# [paper] App. A.1, the generate node's system prompt ([code] src/memr3_base.py:63-79): every instruction kept,
# reworded; placeholders, no example values. {actions}: the decisions offered; {directive}: DIRECTIVE_*.
ROUTER_SYSTEM = """You are a memory agent: before the final reply that the user will see, you plan how to collect the evidence it needs.
Your reply must always be one strict JSON object with these keys:
- "evidence": a JSON array of short factual bullet strings that bear on the user's question. Keep the important numbers, names and time references. When an exact value is not available, give the most specific information that is verified (a year, a range) and do not speculate. Never write here about anything that is missing or absent: that belongs in "gaps".
- "gaps": what separates the question from the evidence, i.e. what keeps the answer from being complete.
- "decision": one of {actions}. Choose {directive}.
Include a conditional key only in its case:
- "retrieval_query": only if the decision is "retrieve". A search string that stands on its own, short (5 to 15 tokens).
  * A poor query leaves out its context, e.g. only "<attribute>".
  * A good query is specific, e.g. "<event> <attribute>".
  * How to search:
    1. Look for the ANCHOR EVENT: when the question asks about something placed relative to an event, search for when that event happened (question: "What happened <n> days after <event>?", query: "time of <event>").
    2. Look for the MAPPED ENTITY: when the question names something by an alias, search for what the alias stands for (question about "<alias>", query about "<entity the alias names>").
- "detailed_answer": only if the decision is "answer". The answer that the current evidence supports, with absolute dates and no speculation. When the evidence is limited, give only what is known, or a cautious inference that rests solely on that limited evidence. Never write here about anything that is missing or absent.
- "reasoning": only if the decision is "reflect". When more retrieval looks unlikely to help, work step by step from the current evidence through the evidence and the gaps towards the answer, normalising times where needed.
No keys beyond these, and no text before or after the JSON object."""

# [paper] App. A.1 (the default decision_directive; [code] src/memr3_base.py:81): every instruction kept, reworded.
DIRECTIVE_DEFAULT = ('"reflect" when the evidence and the gaps need thinking over; "answer" ONLY once the evidence '
                     'is firm and no gap is listed; "retrieve" in every other case')

# [ours] the default directive without the reflect node (the "w/o reflect" ablation; the paper prints none).
DIRECTIVE_DEFAULT_NO_REFLECT = '"answer" ONLY once the evidence is firm and no gap is listed; "retrieve" otherwise'

# [paper] App. A.1: under a guard the decision_directive is the bare action word ([code] src/memr3_base.py:209).
DIRECTIVE_FORCED = '"{action}"'

# [paper] App. A.2, the generate node's user prompt ([code] src/memr3_base.py:83-104): every field and
# instruction kept, reworded.
# ``{now_line}``: the question date, LongMemEval only ([ours], MemR3.question_date_datasets).
ROUTER_USER = """# Question
{question}
{now_line}
# Evidence
{evidence}

# Gaps
{gaps}

# Memory snippets
{snippets}

# Reasoning
{reasoning}

# Prior query
{last_query}

# INSTRUCTIONS
1. Rewrite the evidence list as a JSON ARRAY of brief factual bullets that help answer the question directly (keep the important numbers, names and time references; give the most specific verified detail and do not speculate).
2. Update the gaps: take out what is now resolved, add any missing specifics that still block a full answer, and write "None" once nothing is lacking.
3. If you write a retrieval_query, it must not repeat the previous query.
4. Pick the next action; reply with the JSON object defined in the system prompt and NOTHING else."""

# [code] src/memr3_base.py:19-60, the answer prompt p_w (Zep's LongMemEval-style prompt, paper Eq. 6): every
# instruction kept, reworded; placeholders, no example values. Evidence and draft go in the system message, the
# question alone in the user message ([code] src/memr3_base.py:533-535).
ANSWER_SYSTEM = """You are an expert assistant who answers users' questions from the context given below.

# Context
The memories are facts and entities taken from a conversation. Their timestamps say when the events really happened, not when someone mentioned them.

# How to answer
1. Go through every memory given below with care.
2. Pay close attention to the timestamps when working out the answer.
3. When the question is about a particular event or fact, look in the memories for direct evidence of it.
4. When memories contradict each other, trust the most recent one.
5. Always turn relative time expressions into specific dates, months or years.
6. Be as specific as you can about the people, places and events involved.
7. Read a memory's timestamp as the time its event took place, not the time it was talked about.

# Note
Use the timestamp to decide when the event a memory describes happened, not when someone spoke about it.

# Example
A memory stamped <timestamp> says "<I did something> yesterday". Asked on which day it happened, the right answer is the date of <timestamp>: whatever the word "yesterday" says, the timestamp records the event itself as happening on that date.

# Approach (think step by step)
1. First look at every memory that bears on the question.
2. Check the timestamps and the content of those memories with care.
3. Look for explicit dates, times, places or events that answer the question.
4. If the answer needs a calculation (such as turning a relative time into a date), show the working.
5. Give a precise, concise answer that rests only on the evidence in the memories.
6. Check again that the answer responds to the question that was asked.
7. Make sure the final answer is specific and has no vague time expressions.

# Evidence
{evidence}

# Draft answer
{draft}
{now_line}
Answer:"""

# [code] src/memr3_base.py:535: the question alone is the user message.
ANSWER_USER = "{question}"


# The decision each payload key belongs to (paper Eq. 4: retrieve -> delta-q, reflect -> f, answer -> w).
PAYLOAD_KEY = {"retrieve": "retrieval_query", "reflect": "reasoning", "answer": "detailed_answer"}


def router_schema(actions, forced: str | None = None) -> dict:
    """The paper profile's router schema: every key the method reads is required (reviews/memr3.md B1).

    ``gaps`` is free text or a list (the paper's prompt gives it no type; "None" closes it). Under a guard
    (``forced``) the forced action's payload key is required outright; otherwise ``oneOf`` has one branch per
    decision offered, each requiring that decision's payload, so a grammar-constrained decoder (llama.cpp) or a
    JSON-schema API cannot close the object after ``decision``. The workbench's own reply check
    (``workbench.llm.jsonparse.CHECKED_KEYWORDS``) reads ``oneOf`` too, so under the strict reading a reply from a
    backend without grammar support that leaves out its decision's payload is rejected and repaired; the paper
    profile's lenient reading (``state.LENIENT_ACCEPT``, [code]'s) sends this schema but reads such a reply."""
    gaps = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}

    def props(decisions) -> dict:
        return {"evidence": {"type": "array", "items": {"type": "string"}}, "gaps": gaps,
                "decision": {"type": "string", "enum": list(decisions)},
                **{PAYLOAD_KEY[a]: {"type": "string"} for a in ("retrieve", "answer", "reflect")}}

    base = ["evidence", "gaps", "decision"]
    schema = {"type": "object", "properties": props(actions), "required": list(base)}
    if forced is not None:
        schema["required"].append(PAYLOAD_KEY[forced])
    else:
        schema["oneOf"] = [{"type": "object", "properties": props([a]), "required": [*base, PAYLOAD_KEY[a]]}
                           for a in actions]
    return schema
