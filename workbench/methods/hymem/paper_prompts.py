"""The paper profile's prompts of HyMem (``HyMem(profile="paper")``, i.e. ``prompts="paper"``).

Each keeps every instruction of its prompt in the paper's App. B, in this project's own words; the
paper's worked examples become neutral placeholders (``<date>``, ``<summary>``, ``<year>``), so a
model has no concrete value to copy. The schemas require every field the method reads (the
summary must hold at least one sentence, as the authors' code asks: hymem/core/memory_system.py:102).
The authors' released templates hold App. B almost word for word (hymem/prompts/templates.py:30-78 @ 93e2d19;
only that class's docstring, :18-20, calls them "intentionally left empty"); the paper's text is followed, and the
code's layout (question before the memories, a JSON system message, R's "new_question may be left empty") is a
departure listed in the class docstring (reviews/hymem.md, turn 4, N1). The topic-segmentation prompt is the small profile's (``prompts.SEGMENT``): neither the paper
nor the code has one. Registered in ``HyMem.profile_prompt_modules["paper"]``, so it is hashed only
into the paper profile's prompt hash.
"""

# [paper] App. B.1 (summary module): every instruction kept, reworded; placeholders, no example values.
# [code] scripts/evaluate_locomo.py:69 puts the session's start time above the dialogue, as here.
SUMMARIZE = """Your job is to pull every piece of key information out of the conversation below and to write
each piece as one concise sentence. These sentences become the memory an agent relies on when it
answers later.

Rules:
- Keep all key information of the conversation: times and dates, places, the people involved and
  notable events, so that no later answer goes wrong for want of a detail.
- A sentence should sum up something of value that the conversation contains. For efficiency, leave
  out every element that carries nothing, such as greetings, pleasantries, small talk and casual remarks.
- Be brief and spend as few characters as you can. Where you can, fold several related pieces of
  information into a single sentence so that each carries more; do not split information into many
  small pieces, which wastes characters.

The conversation (held on {date}):
{dialogue}

Reply with this JSON object and nothing else:
{{"keywords": ["<key information 1>", "<key information 2>", "<key information 3>", "..."]}}"""

SUMMARY_SCHEMA = {"type": "object",
                  "properties": {"keywords": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
                  "required": ["keywords"]}

# [paper] App. B.3 (light generator G_theta): every instruction kept, reworded; placeholders, no example values.
LIGHT = """You are an assistant that answers questions from memory. You are given a question together with
{kind_plural} drawn from related memory.

What you must do:
- From the {kind_plural} given, decide whether the question can be answered.
- Treat the question as unanswerable whenever the {kind_plural} do not match the question, are incomplete,
  vague or ambiguous, are off the point, or you are not sure you can answer. Judge strictly, so as not to
  invent facts or give wrong answers. In all of these cases set "finished" to 2: a more precise retrieval
  will then supply fuller memory.
- Only when a standard (gold) answer to the question is plainly present in the {kind_plural}, write it in
  "answer" and set "finished" to 0, giving an answer that is full and precise. For questions about time,
  say what any relative time expression is relative to, so it cannot be misread: an answer of the form
  "<relative time>" should read "The current year is <year>, so the answer is <relative time>."

{kind_title} (the date in brackets is when it was said):
{memories}
{pool}{now_line}
Question: {question}

Output format: {{"finished": 0, "answer": "..."}}
Reply with JSON only and with nothing else."""

LIGHT_SCHEMA = {"type": "object",
                "properties": {"finished": {"type": "integer"}, "answer": {"type": "string"}},
                "required": ["finished", "answer"]}

# [paper] App. B.4 (retriever f_gamma): every instruction kept, reworded; the example keeps its shape with
# placeholders instead of the paper's names, dates and ids.
SELECT = """Your job is retrieval.

Below are a question and a list of memory indices. Each index is {kind_entry} of the memory
content it points to.

Your job: from the question, find the ids of the indices most likely to give the context needed to
answer it.

Example of the format:
Question: <question>
Indices:
id:0, dialogue time:<date>, <summary>
id:1, dialogue time:<date>, <summary>
id:2, dialogue time:<date>, <summary>
Result:
{{"keywords_list": [<id>, <id>]}}

Question: {question}
Indices:
{entries}
Result:"""

SELECT_SCHEMA = {"type": "object",
                 "properties": {"keywords_list": {"type": "array", "items": {"type": "integer"}}},
                 "required": ["keywords_list"]}

# [paper] App. B.5 (deep generator G_gamma): every instruction kept, reworded; placeholders, no example values.
DEEP = """You are an assistant that answers questions from memory. You are given a question and the memories
to answer it with.

What you must do:
- The answer to a question is not always fixed: list every possible answer and make the information
  as complete as you can.
- For questions about time, say what any relative time expression is relative to, so it cannot be
  misread: an answer of the form "<relative time>" should read "The current year is <year>, and the
  answer is <relative time>."
- Not every question has memories about it (open-ended questions, for instance). Even when the memories
  are incomplete, infer the most likely answer from them with confidence, even if it is incomplete or
  not fully rigorous. Do not refuse to answer.

{deep_title}
{memories}
{pool}{now_line}
Question: {question}

Output format: {{"answer": "..."}}
Reply with JSON only and with nothing else."""

# B.5 forbids refusing, so G_gamma's answer may not be empty (a grammar-constrained server enforces minLength)
DEEP_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "minLength": 1}}, "required": ["answer"]}

# [paper] App. B.2 (reflection R): every instruction kept, reworded; placeholders, no example values.
REFLECT = """Your main job is to judge whether the current answer is up to standard, given the question and the
model's answer.

- If the answer has nothing to do with the question, or runs against what the question means, it is
  not up to standard. Then set "finished" to 0 and rewrite the question, strengthening it on the point
  the answer is missing, so that it can drive a further retrieval. Put the rewritten question in
  "new_question".
- If the answer is on the whole complete and reasonable, it meets the standard: set "finished" to 1.

Question: {question}
Answer: {answer}

Output format: {{"finished": <0 or 1>, "new_question": "..."}}"""

REFLECT_SCHEMA = {"type": "object",
                  "properties": {"finished": {"type": "integer"}, "new_question": {"type": "string"}},
                  "required": ["finished", "new_question"]}

# [ours] how the memory pool M is shown: Alg. 1 feeds M to both generators but App. B says nothing about it;
# the authors' code appends the last answer after the memories (hymem/core/memory_system.py:208, :224).
POOL_HEADER = "Intermediate answer(s) from the previous round(s):"

# [ours] what the memory items are called: summaries, or raw events under the Table 2 ablation levels="L2"
# (reviews/hymem.md §2.10: the small prompts keep calling raw events "summaries").
WORDS_SUMMARIES = {"kind_plural": "memory summaries", "kind_title": "Memory summaries",
                   "kind_entry": "a brief summary of the key information"}
WORDS_EVENTS = {"kind_plural": "conversation excerpts", "kind_title": "Conversation excerpts",
                "kind_entry": "a raw excerpt"}
# [ours] what G_gamma reads: the selected events, or the selected summaries under the ablation levels="L1"
DEEP_TITLE_EVENTS = "Memories (conversation excerpts, each starting with its date):"
DEEP_TITLE_SUMMARIES = "Memories (summaries, each starting with its date):"
