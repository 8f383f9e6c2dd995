"""The prompts of RecMem's ``paper`` profile (``RecMem(prompts="paper")``; Dai et al., App. F, Figs. 6-16).

Every instruction of the paper's figures is kept, reworded in this project's own words; concrete example
values (dates, names) are neutral placeholders such as ``<date>``, so a model has nothing to copy. Each prompt
goes as the system message, as the authors' code sends it ([code] ``recmem/rec_mem.py:234,451,484``,
``recmem/episodic_memory.py:62,206``). Only the paper profile sends these (``RecMem.profile_prompt_modules``), so
they are hashed into its rows' prompt hash only. The small profile's shorter prompts are in ``prompts``.

The schemas require every field the method reads; keys follow the paper's (``episodes``, ``facts``,
``should_merge``, ``merged_memory``).
"""

# [paper] App. F, Figs. 6-8 (episodic memory generation): every instruction kept, reworded; placeholders, no
# example values. Slot = the cluster, one "- " line per unit, after the instructions as in Fig. 8.
EPISODES = """Role: you build episodic memories for the long-term memory of an LLM-based agent.

What you receive:
- A list of message turns, each starting with '-'. Every turn holds one exchange between two speakers (one message from each), the timestamp at which the turn was written, and the text of the messages.
- All the turns are loosely tied to one broad theme, but they may hold several separate subtopics and stretch over several days or weeks.

What you do:
- Turn these messages into a few coherent episodic memories ("episodes").
- Each episode tells how ONE subtopic develops over time, across several messages and timestamps.

General principles:
- Centre on the users: the real people holding the conversation (the main user and the assistant, or the other named speakers).
- Put first what these speakers do, plan, feel or learn, not the inner details of the stories, examples or long explanations they bring up.
- Fictional, hypothetical or illustrative material (stories told inside the conversation, sample dialogues, anecdotes given as examples) is background. Include it only when it plainly shows something about the speakers' own preferences, goals, constraints or knowledge.

Instructions:
1. Find the topic threads
- Begin by grouping the messages, in your head, into topic threads.
- Messages share a thread when they concern the same continuing goal, project, problem or situation of the participants, even when days or weeks lie between them.
- Leave out, or give little weight to, one-off fictional or hypothetical stories that do not touch the speakers' own situation.
- When the input holds several independent threads, you may write one episode per thread.
- Aim for 1 to 3 episodes in total. Do NOT break the input into many tiny episodes.

2. Give each episode a temporal structure
- For every thread with enough information, put its events in chronological order.
- Bring out how the situation unfolds: the starting point, updates, changes of plan, decisions, outcomes and reflections.
- Stress how the speakers' state (plans, preferences, beliefs, emotional reactions) changes, rather than retelling long stories or explanations step by step.
- Make the progression explicit with linking words such as "Initially", "Later", "Afterwards", "Eventually", "As a result".
- Where you can, let each episode draw on at least TWO different message timestamps. Do not write episodes that merely repeat one message.

3. Treat time expressions correctly
- A message's timestamp is when the speaker said it. It is NOT necessarily when the event described took place.
- When a message uses a relative time such as "yesterday", "two days ago" or "next week", write it in the episode as an explicit expression tied to the timestamp, in forms like "the day before <date>", "two days after <date>" or "later in the same week as <date>".
- You do NOT have to work out calendar dates (turning "the day before <date>" into the actual date is not needed).
- IMPORTANT: your output must NEVER contain a vague relative time without an anchor. A word such as "tomorrow", "last week" or "in two days" may appear only together with the timestamp or date it is counted from.
- A loose span ("later that week", "in the days after <date>") is fine provided the sequence of events is unambiguous.

4. Write episodic narratives, not separate facts
- The aim is narrative episodes: what happened, how it developed, and why it matters to the user.
- Focus on the two speakers' own exchange: what they aim for, decide, like or are limited by, and what they were told.
- A long anecdote, a drawn-out example or a block of pasted text from elsewhere gets a one-line summary (in a form like "the <speaker> told a story about <topic> to illustrate <point>"), unless its details matter to the speakers' own situation.
- Do NOT try to list every lasting preference or stable fact about the user; a separate semantic memory extractor takes care of persistent facts and knowledge.
- You may mention an important preference or fact inside an episode when it helps to understand the story, but completeness is not the goal.

5. Style and output format
- Each episode is one short paragraph of three to six sentences, written plainly and without judgement.
- Episodes stay brief: a story's plot, a technical walkthrough or a long enumeration gets a one-line mention at most, never a retelling.
- Prefer combining related events into one episode over splitting them into many small ones.
- When a subtopic lacks enough coherent information, you may leave it without an episode.

Return ONLY a JSON object of this form:
{{"episodes": ["<first episode paragraph>", "<second episode paragraph>"]}}
When no meaningful episode can be formed, return:
{{"episodes": []}}

Messages:
{cluster}

Output:"""

EPISODES_SCHEMA = {"type": "object",
                   "properties": {"episodes": {"type": "array", "items": {"type": "string"}}},
                   "required": ["episodes"]}

# The blocks REFINE and REFINE_DIRECT share (the Direct Extraction ablation keeps every instruction of REFINE
# that does not read E or S): the fact kinds, the time handling and the output format.
_FACT_KINDS = """Core principles:
1) USER-CENTRIC: the user comes first: what they want, like, must work around, choose, do, and plan again and again.
2) TIME-GROUNDED: give events and changes an explicit date anchor whenever one is available.
3) COMPACT BUT USEFUL: return fewer than 10 facts. A few valuable facts beat many weak ones.

Each fact must fall under exactly one of the following kinds:
1) USER_EVENT
- Something the user did: made a request, went to an event, started or stopped something, or settled on a firm decision.
- Take a date anchor from R where possible, in a form like "On <date>, the user ...".
2) USER_CONSTRAINT_OR_PREFERENCE
- A fairly stable preference, constraint or recurring plan (for instance long-term goals, the choice of a platform, a budget range, limits on time, preferences of content or style).
3) TIME_ANCHORED_UPDATE
- A change in behaviour, preferences, tools, roles, budgets, relationships and the like.
- State the new value, the previous one too when it is known, and when the change happened.
4) ENTITY_RELATION (RELEVANT TO THE USER)
- A specific relation between named entities that concerns the user (for instance the user's roles, organisations, projects, courses, tools, places, or other people the user deals with).
- Keep such a fact only when it is specific and likely to matter for later reasoning about the user.
"""

_TIME_HANDLING = """Leave out general advice, checklists and textbook explanations, except where the conversation presents them as the user's own past, current or planned actions.

Time handling:
- Express time with explicit or anchored expressions, in forms like "in <month and year>", "on <date>", "two days after <date>", "later in the same week as <date>".
- Calendar arithmetic is NOT required; an offset such as "two days after <date>" is fine.
- IMPORTANT: the final facts must NEVER contain vague relative time words without an anchor, such as "yesterday", "tomorrow", "last week", "next week", "next month" or "in two days", unless you state clearly which date or event they are counted from.
"""

_FACTS_OUTPUT = """Output format:
Return ONLY a JSON object:
{{"facts": ["<first new fact>", "<second new fact>"]}}
When there are no new facts, return:
{{"facts": []}}
"""

# [paper] App. F, Figs. 9-11 (semantic memory generation, Eqs. 8-9): every instruction kept, reworded; placeholders,
# no example values. Slots in Fig. 11's order (E, R, S); the fact types keep the paper's "MUST be one of".
REFINE = ("""Role: you write semantic memory (lasting facts) into a long-term memory store.

Inputs:
- Subconscious memory R: the original, detailed messages on a related topic.
- Episodic memory E: a short narrative summary written from R.
- Old semantic memories S: facts already stored about the topic that E relates to.

Goal:
Extract NEW facts of HIGH UTILITY that will help to answer future questions about the users. IMPORTANT: put first the concrete details of R that E leaves out or compresses heavily.

"""
    + _FACT_KINDS
    + """
"""
    + _TIME_HANDLING
    + """
Novelty and updates:
- A fact is NOT new when it means the same as any item of S, even in other words.
- Keep a fact only when it is specific, self-contained (no unclear pronouns), plausibly useful for later reasoning, and not equivalent in meaning to an item of S.
- When a fact refines, updates or contradicts an item of S (for instance a change of preference, role, tool, relationship or budget), keep it as a TIME_ANCHORED_UPDATE that states the change clearly.

When you have more than 8 to 10 candidate facts, choose the ones that are:
- the most firmly anchored in time,
- the most clearly missing from E or compressed in it.

Style:
- One sentence per fact.
- Plain and matter-of-fact wording.
- Claim nothing that E, R and S do not back up.
- Rather than enumerating many items, fold them into one short fact where you can.

"""
    + _FACTS_OUTPUT
    + """
Episodic Memory:
{episode}

Subconscious Memory Reference:
{raw}

Old Semantic Memories:
{old_facts}""")

FACTS_SCHEMA = {"type": "object",
                "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
                "required": ["facts"]}

# [code] recmem/prompt.py:370-453 (SEMANTIC_EXTRACTION_PROMPT_ABLATION, the Direct Extraction ablation of paper §4.3,
# Fig. 2; the paper prints no prompt for it): REFINE's instructions without E and S, every one kept, reworded;
# placeholders, no example values. Sent once per consolidation (the cluster R) and once per merge (the unit alone).
REFINE_DIRECT = ("""Role: you write semantic memory (lasting facts) into a long-term memory store.

Input:
- Raw reference R: the original, detailed messages on a related topic.

Goal:
Extract NEW facts of HIGH UTILITY that will help to answer future questions about the users.

"""
    + _FACT_KINDS
    + """- Do NOT store general world knowledge that is not grounded in the user.

"""
    + _TIME_HANDLING
    + """
When you have more than 8 to 10 candidate facts, choose the ones that are the most firmly anchored in time.

Style:
- One sentence per fact.
- A neutral, factual tone.
- Claim nothing that R does not back up.
- Rather than enumerating many items, fold them into one short fact where you can.

"""
    + _FACTS_OUTPUT
    + """
Raw Reference:
{raw}""")

# [paper] App. F, Figs. 12-14 (episodic merging, Eq. 6): every instruction kept, reworded; placeholders, no example
# values. Slots at the end, as in Fig. 14.
MERGE = """Role: you decide whether two episodic memories of a long-term store should become one, and write the result.

General principles:
- Centre on the users: the real people holding the conversation (the main user and the assistant, or the other named speakers).
- Put first their real-world goals, projects, constraints, decisions and emotional states.
- Fictional, hypothetical or illustrative scenarios mentioned inside the conversation are background context. Treat them as central only when they plainly matter for the speakers' own situation.

Goal:
You receive exactly TWO inputs:
- one NEW memory piece, taken from a recent part of the conversation;
- one PAST episodic memory piece, stored earlier.
Decide whether the two describe the same continuing topic or episode and, if they do, write ONE updated episodic memory that combines both.

Your tasks:
1. Decide whether the new piece and the past piece describe the same continuing topic or episode for the participants of the conversation.
2. If so, merge them into ONE coherent episodic memory and return the merged text.

When to merge:
Count the two pieces as strongly related (should_merge = "yes") when MOST of these hold:
- They describe the same continuing situation, goal, project, problem or life event of the same main person or people of the conversation (the user, the assistant, or other real participants), not merely similar fictional stories or generic examples.
- The new piece clearly continues the past one (more detail, a clarification, a correction or how it turned out) instead of starting an unrelated topic.
- A human reader who saw only these two pieces would naturally call them parts of one story about those participants, not two unrelated stories.

Special case: a new piece that comes only from the assistant
- The new piece sometimes holds mainly a long answer or explanation of the assistant, with little or no text from the user.
- If such an assistant-only piece is mostly generic background, universal tips, or a long example or story that could fit many people, and it does NOT clearly update or settle the specific situation of the past piece, do NOT merge.
- You may still merge an assistant-only piece when it plainly continues the same concrete situation as the past piece (for instance by referring to the same plan, constraint or earlier decision of the user and giving the next step, a revision or the outcome for it).
- If the two pieces share only surface elements (for instance the same domain or concept, but different problems of the user or different episodes), or if what they share is mainly look-alike anecdotes, what-if cases or general explanations that do not change the speakers' own situation, do NOT merge.
- When you are unsure whether they concern the same continuing topic, prefer "no" for should_merge.

How to merge (when related):
- Keep the important details of BOTH the past and the new piece.
- Arrange the merged memory in time order, so that the narrative is easy to follow.
- Stress how the speakers' situation, plans, beliefs or preferences change over time, rather than reproducing long inner stories or technical explanations.
- Make the logical link explicit with words such as "later", "afterwards", "as a result", "eventually".
- The merged memory stays short: a story's plot, a technical walkthrough or a long enumeration gets a brief mention at most (in a form like "the <speaker> told a story about <topic> to illustrate <point>").
- Treat time expressions with care:
  - Numeric timestamps and explicit dates are the ground truth: do not change their values.
  - Rewrite vague relative words such as "yesterday", "last week", "tomorrow", "next month" or "in two days" as expressions anchored to a date given in the input, in forms like "the day before <date>", "two days after <date>", "later in the same week as <date>".
  - Calendar arithmetic is NOT required (turning "the day before <date>" into the actual date is not needed).
- Do NOT invent events or details that neither piece supports.

Write the merged memory as a single flowing narrative paragraph, with no bullets.

Output format:
Return ONLY a JSON object of this form:
{{"should_merge": "yes" or "no", "merged_memory": "<the merged memory when should_merge is yes, otherwise an empty string>"}}

Now handle this input.

<New Memory Piece>:
{new_memory}

<Past Memory Piece>:
{past_memory}

Output:"""

# "no" first, as in the small profile's schema: a schema-only fake answers the first enum value.
MERGE_SCHEMA = {"type": "object",
                "properties": {"should_merge": {"type": "string", "enum": ["no", "yes"]},
                               "merged_memory": {"type": "string"}},
                "required": ["should_merge", "merged_memory"]}

# [paper] App. F, Figs. 15-16 (answering, §3.5): every instruction kept, reworded; placeholders, no example values.
# The paper's section order (episodic, subconscious, semantic) after the instructions; {length_step} is
# [code] recmem/prompt.py:47 (the LoCoMo variant's length step, paper App. E.4), empty for LongMemEval.
ANSWER = """Role: you are a capable memory assistant who answers questions from the memories of a conversation.

CONTEXT
You can read memories of a conversation between two speakers. They carry timestamps and may bear on the question.

The memories are of three types:
1. Episodic Memories: refined summaries of related turns of the conversation on one topic.
2. Semantic Memories: short, fact-like items extracted from the conversation.
3. Subconscious Memories: raw, unprocessed excerpts of what the two speakers said.

Context rules:
1. Episodic and semantic memories may cover the same content (a summary of an event against single facts). Do not count the same evidence twice.
2. Read all three types of memory closely and pick out what actually helps to answer the question.
3. Within each type the memories are sorted by relevance.

INSTRUCTIONS
1. Read every memory given carefully.
2. Pay close attention to the timestamps whenever time matters.
3. For a question about one particular event or fact (who, where, when, what), search the memories for a passage that states it outright.
4. When the question asks for advice, recommendations, or the kind of response the user would prefer:
   - first find the user's own preferences, habits, constraints or past actions in the memories,
   - then ground the suggestion mainly on these signals about the user,
   - and give generic advice only when the memories hold nothing about the user that is relevant.
5. When memories contradict each other, give priority to the most recent one.
6. Turn relative time references (such as "last year" or "two months ago") into concrete dates from the memory's timestamp: a memory dated <date> that says something happened "last year" places it in the year before <date>'s year, so answer with that year or with "the year before <year>", never with "last year" alone.
7. In subconscious memories, the final timestamp is when the conversation took place. Do not confuse when something was said with when the event happened, where the text tells them apart.
8. Do not answer "no information found" when related memories can reasonably support a personalised answer. Abstain only when there is really no relevant evidence.

APPROACH (reason step by step, silently)
1. Decide whether the question is (a) a factual question or (b) a question of advice, preference or recommendation.
2. Collect every memory that is clearly related to the question.
3. Use timestamps and content to find the most reliable and most recent information.
4. For a factual question, locate the explicit dates, times, places, entities or events that answer it directly.
5. For a question of advice or preference, work out the user's own history (what they did, bought, enjoyed, disliked or ruled out), and build a tailored answer on these.
6. When temporal reasoning or a simple calculation is needed, do it silently and give the result as a concrete, explicit date or span of time.
7. Write a precise, concise answer that addresses the question directly and rests fully on the memories and on reasonable inferences from them.{length_step}

- Episodic Memories:
{episodic}
- Subconscious Memories:
{subconscious}
- Semantic Memories:
{semantic}
- Question: {question}
- Answer:"""

# [code] recmem/prompt.py:47 (LoCoMo: a length step, paper App. E.4) and the LongMemEval variant without one.
LENGTH_STEPS = {"short": "\n8. Keep the answer shorter than five or six words.",
                "free": ""}
