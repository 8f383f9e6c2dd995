"""Prompts of MemR3 (own wording; structure after the paper's App. A and the digest §6).

Kept short on purpose: the offline model is a 0.5B model with a 16k context.
"""

# MemR3 App. A.1, generate/router system prompt (reworded). ``{actions}`` lists the allowed
# decisions, ``{directive}`` is DIRECTIVE_DEFAULT(_NO_REFLECT) or DIRECTIVE_FORCED.
ROUTER_SYSTEM = """You plan how a memory assistant gathers evidence before it answers a question about a past conversation.
Reply with one JSON object and nothing else.
- "evidence": short facts that help answer the question, taken from the snippets or the earlier evidence. Keep names, numbers and dates. If an exact value is unknown, keep the most precise thing that is known (for example the year); never guess. Do not mention missing information here.
- "gaps": what is still missing for a complete answer; [] when nothing is missing.
- "decision": one of {actions}. {directive}
Add only the field that matches the decision:
- "retrieval_query" (retrieve): a specific search phrase of 5 to 15 words, e.g. "graduation ceremony date" rather than "the date". For a time relative to another event, search for that event's date; for a nickname, use the real name.
- "detailed_answer" (answer): the answer the evidence supports, with absolute dates; no speculation and no talk of missing information.
- "reasoning" (reflect): think step by step over the evidence and gaps towards an answer, working out dates where needed."""

# MemR3 App. A.1, the default decision_directive (reworded).
DIRECTIVE_DEFAULT = ('Choose "reflect" to think over the evidence and gaps, "answer" only when the evidence is solid '
                     'and no gaps are left, and "retrieve" otherwise.')

# [ours] the same directive for the reflect=False ablation (the paper does not print one).
DIRECTIVE_DEFAULT_NO_REFLECT = 'Choose "answer" only when the evidence is solid and no gaps are left, otherwise "retrieve".'

# MemR3 App. A.1: under a guard the directive is the bare action (reworded into a sentence).
DIRECTIVE_FORCED = 'This time the decision must be "{action}".'

# MemR3 App. A.2, generate/router user prompt (reworded). Empty fields get the [code] placeholders below.
ROUTER_USER = """Question: {question}
{now_line}
Evidence so far:
{evidence}

Gaps so far:
{gaps}

Memory snippets:
{snippets}

Reasoning so far:
{reasoning}

Prior query: {last_query}

1. Rewrite the evidence as a list of short, useful facts; keep specifics and do not speculate.
2. Update the gaps: drop what is now answered, add what still blocks an answer; [] if nothing.
3. A new retrieval query must differ from the prior query.
4. Choose the next decision and reply with the JSON object only."""

# [code] placeholders for empty prompt fields (reworded where they were sentences).
NO_EVIDENCE = "No evidence yet."
NO_GAPS = "No gaps noted."
NO_SNIPPETS = "No retrieved snippets yet."
NO_REASONING = "No prior reasoning."
NO_QUERY = "None"
NO_DRAFT = "No draft answer."
SNIPPET_SEPARATOR = "\n---\n"  # [code] joins snippets with "\n---\n"


def router_schema(actions) -> dict:
    """JSON output of the router (paper App. A.1). Gaps are a list (digest §10.5); only evidence,
    gaps and decision are required, the payload keys are optional and have fallbacks."""
    return {"type": "object",
            "properties": {"evidence": {"type": "array", "items": {"type": "string"}},
                           "gaps": {"type": "array", "items": {"type": "string"}},
                           "decision": {"type": "string", "enum": list(actions)},
                           "retrieval_query": {"type": "string"},
                           "detailed_answer": {"type": "string"},
                           "reasoning": {"type": "string"}},
            "required": ["evidence", "gaps", "decision"]}


# MemR3 answer prompt p_w, which the paper takes from Zep (rasmussen2025zep); reworded, inputs are
# the question, the draft answer and the evidence only (never raw snippets, paper Eq. 6). Like
# Zep's prompt it has no "not mentioned" escape; it keeps App. A.1's permission to state what is
# known or make cautious inferences grounded in limited evidence.
# [ours] asks for a short answer instead of visible step-by-step work (see MemR3's departures).
ANSWER = """You answer a question about a long conversation from evidence gathered out of its memories. Dates in the evidence say when things happened.

Evidence:
{evidence}

Draft answer: {draft}
{now_line}
How to answer:
- Look for direct evidence; if pieces conflict, trust the most recent one.
- The draft was written from the same evidence; keep it when the evidence supports it.
- Turn relative times ("yesterday", "last week") into absolute dates, months or years. For example, "yesterday" in a message of 15 March 2023 means 14 March 2023.
- Be specific about people, places and events.
- If the evidence is limited, give what it does show, or a cautious inference grounded in it.
- Reply with the answer only, as a short phrase, without explanation.

Question: {question}
Answer:"""
