"""Prompts of the baselines (own wording)."""

# Answer prompt shared by Full-Context, Naive RAG, EagerFloor and Mem0Style. Mirrors the conventions of the
# mem0-style LoCoMo protocol (DATA.md §3): very short answers, relative dates resolved from the
# timestamps, the most recent memory wins on conflicts.
ANSWER_FROM_CONTEXT = """You answer questions about a long conversation using only the memories given below.

Memories (each line starts with its id; dates say when it was said):
{context}

{now_line}
Rules:
- Answer in as few words as possible (at most about six words); no explanations.
- If a memory uses a relative time ("last Saturday", "yesterday"), convert it to an absolute date using that memory's date.
- If memories conflict, trust the most recent one.
- If the memories do not contain the answer, say "Not mentioned in the conversation".

Question: {question}
Answer:"""

# Full-Context baseline: the whole conversation with session dates (same rules as above).
ANSWER_FROM_CONVERSATION = """Below is a complete conversation, session by session, with the date of each session.

{conversation}

{now_line}
Answer the question using only this conversation.
Rules:
- Answer in as few words as possible (at most about six words); no explanations.
- Convert relative times ("last Saturday", "yesterday") to absolute dates using the session date.
- If the conversation changes its mind about something, the latest statement wins.
- If the conversation does not contain the answer, say "Not mentioned in the conversation".

Question: {question}
Answer:"""

# EagerFloor (formerly EagerFacts): one short extraction call per exchange, in the spirit of Mem0's
# fact extraction (mem0 FACT_RETRIEVAL_PROMPT), reworded; Mem0's second "update" call is deliberately
# not made (the floor). Mem0Style's longer prompts are in baselines/mem0_style_prompts.py.
EXTRACT_FACTS = """Extract the facts worth remembering about the speakers from this exchange, which took place on {date}.

{exchange}

Write each fact as one short standalone sentence that names the person it is about. Resolve relative
times ("yesterday", "next month") to absolute dates using the exchange date. Skip greetings and
small talk. Return JSON: {{"facts": ["...", "..."]}} (an empty list if there is nothing to keep)."""

FACTS_SCHEMA = {"type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
                "required": ["facts"]}
