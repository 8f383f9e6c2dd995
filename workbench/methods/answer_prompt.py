"""Fair-arena answering: one answer prompt body shared by every method (``answer_prompt="shared"``).

Every method takes ``answer_prompt="native" | "shared"``. ``native`` (the default) keeps the
method's own final prompt, so recorded calls replay unchanged. ``shared`` writes the final answer
with ``SHARED_ANSWER``: same length rule, same abstention rule and same date rules for all, so that
differences between methods come from their memory, not from the wording of their last prompt.
What goes into ``{context}`` is the method's own memory output (retrieved units, evidence, sub-answers),
formatted as the method formats it; each method's docstring says what it puts there and how its
native prompt differs from this one. ``workbench eval --fair`` sets ``shared`` for any method.
"""
from __future__ import annotations

from datetime import datetime

from .common import question_date_line

ANSWER_PROMPTS = ("native", "shared")
SHARED_ROLE_SUFFIX = ".answer"

# [ours] The fair-arena answer prompt, written for this workbench (no paper's wording). Its rules are
# the common ground of the methods' native prompts (baselines.simple_prompts.ANSWER_FROM_CONTEXT, RecMem's
# LoCoMo length rule, MemR3's conflict rule): a short answer, absolute dates, most recent wins, and
# one fixed abstention phrase (the official LoCoMo adversarial rule matches "not mentioned").
SHARED_ANSWER = """Answer a question about a long conversation from the memory shown below, and from nothing else.

Memory:
{context}

{now_line}
Rules:
- Give only the answer, as a short phrase of at most about six words, with no explanation.
- Turn relative times ("yesterday", "last month") into absolute dates using the date the memory was written or said.
- When the memory disagrees with itself, the most recent statement wins.
- If the memory does not contain the answer, reply: Not mentioned in the conversation

Question: {question}
Answer:"""


def check_answer_prompt(value) -> None:
    """Raise a clear error for an unknown ``answer_prompt`` value."""
    if value not in ANSWER_PROMPTS:
        raise ValueError(f"answer_prompt must be one of {ANSWER_PROMPTS}, got {value!r}")


def shared_prompt(context: str, question: str, now: datetime | None) -> str:
    """The shared prompt for one question; ``context`` is the method's memory text (never empty)."""
    return SHARED_ANSWER.format(context=context.strip() or "(nothing retrieved)", now_line=question_date_line(now),
                                question=question)


def shared_answer(method, context: str, question: str, now: datetime | None) -> str:
    """One call with the shared prompt, role ``<method>.answer``; LLM errors propagate to the caller."""
    prompt = shared_prompt(context, question, now)
    return method.llm.complete(prompt, role=method.name + SHARED_ROLE_SUFFIX).text.strip()
