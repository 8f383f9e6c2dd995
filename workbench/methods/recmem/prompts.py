"""Prompts of RecMem (Dai et al., App. F, Figs. 6-16), reworded in this project's own words and kept
short for small local models. JSON keys follow the paper's (``episodes``, ``facts``,
``should_merge``, ``merged_memory``) so traces read like its figures. Digest: ../methods/recmem.md §6.
"""

# RecMem App. F, Figs. 6-8, episodic memory generation (reworded). Slot = the time-ordered cluster,
# one "- " line per unit (digest §3 line 18).
EPISODES = """You write episodic memories for a long-term memory system.

Below are message exchanges between the same speakers, each with the time it was written. They share a broad theme but may cover several threads over days or weeks.

{cluster}

Instructions:
- Group the exchanges into threads: the same ongoing goal, plan, problem or situation of the speakers, even if far apart in time. Write one episode per thread; prefer 1 to 3 episodes, never many tiny ones.
- Focus on the real speakers: what they do, plan, decide, feel or learn. Stories, examples and pasted text are background: mention them in a few words at most.
- Tell each episode in time order (initially, later, eventually), drawing on at least two different timestamps where possible.
- A timestamp is when something was said, not when it happened. Anchor relative times to it ("the day before 8 May 2023"); never leave "yesterday" or "next week" unanchored.
- Each episode is one neutral paragraph of 3 to 6 sentences. Do not list every stable fact; another step extracts those.
Return JSON only: {{"episodes": ["<paragraph>", ...]}} or {{"episodes": []}} if nothing coherent can be said."""

EPISODES_SCHEMA = {"type": "object", "properties": {"episodes": {"type": "array", "items": {"type": "string"}}},
                   "required": ["episodes"]}

# RecMem App. F, Figs. 9-11, semantic refinement (reworded): detail recovery (R vs E) and fact
# maintenance (against the old facts S = V, Eq. 8-9). [code] adds the ban on outside knowledge.
REFINE = """You extract facts for a long-term memory system.

Episode E (a summary written from the messages R):
{episode}

Messages R (the original exchanges):
{raw}

Old facts S (already stored, on related topics):
{old_facts}

Write NEW, useful facts about the speakers. Most important: concrete details in R that E left out or compressed (names, numbers, places, items, dates).
- Kinds of fact: an event or decision of a speaker (with its date when known); a lasting preference, constraint or plan; a change of state (new value, old value if known, and when); a specific relation between named people, places, groups or things that matters to a speaker. Use only what R and E say, no outside knowledge.
- Anchor times to the message timestamps ("on 8 May 2023", "two days after 8 May 2023"); never leave "yesterday" or "next week" unanchored.
- A fact that says the same as an item of S, even in other words, is not new: skip it. A fact that changes or contradicts an item of S is kept and states the change with its date.
- No generic tips or explanations unless they describe what a speaker did or plans.
- Fewer than 10 facts, one self-contained sentence each (names, not pronouns), neutral, no guesses.
Return JSON only: {{"facts": ["<sentence>", ...]}} or {{"facts": []}}."""

# [code] Direct Extraction ablation (paper §4.3, Fig. 2): the refiner sees only R, without E and S (RecMem
# refine_with_episode=False: sent once per consolidation and once per merge; "no_episodes": instead of episodes).
REFINE_DIRECT = """You extract facts for a long-term memory system from these message exchanges (each with the time it was written):

{raw}

Write useful facts about the speakers: their events and decisions (with dates when known), lasting preferences, constraints or plans, changes of state, and specific relations between named people, places or things. Use only what the messages say.
- Anchor times to the message timestamps ("on 8 May 2023"); never leave "yesterday" or "next week" unanchored.
- No generic tips or explanations unless they describe what a speaker did or plans.
- Fewer than 10 facts, one self-contained sentence each (names, not pronouns), neutral, no guesses.
Return JSON only: {{"facts": ["<sentence>", ...]}} or {{"facts": []}}."""

FACTS_SCHEMA = {"type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
                "required": ["facts"]}

# RecMem App. F, Figs. 12-14, episodic merge (reworded). Eq. 6.
MERGE = """You maintain episodic memories. Decide whether a NEW piece of conversation continues a PAST episode, and if so merge them.

NEW piece:
{new_memory}

PAST episode:
{past_memory}

Say "yes" only if most of these hold: both are about the same ongoing situation, goal or event of the same people; the new piece adds follow-ups, corrections or outcomes rather than starting a new topic; a reader would see one story. Sharing only a domain, a similar example or generic advice is "no". A piece that is mostly generic information from one speaker is "no" unless it moves the speakers' own situation forward. When unsure, say "no".
If "yes": write ONE compact paragraph in time order (later, afterwards, eventually) keeping the important details of both; keep explicit dates unchanged, anchor relative times to a date from the input, invent nothing.
Return JSON only: {{"should_merge": "yes" or "no", "merged_memory": "<paragraph, or empty if no>"}}"""

# "no" first: the enum's first value is what a schema-only fake answers, and the paper says
# "when uncertain, prefer no".
MERGE_SCHEMA = {"type": "object",
                "properties": {"should_merge": {"type": "string", "enum": ["no", "yes"]},
                               "merged_memory": {"type": "string"}},
                "required": ["should_merge", "merged_memory"]}

# RecMem App. F, Figs. 15-16, answer prompt (reworded); the three retrieved lists as separate
# sections, each sorted by relevance (digest §4).
ANSWER = """You answer a question about a long conversation from three kinds of memories.
- Episodes: summaries of related exchanges on one topic.
- Facts: short facts extracted from the conversation. Episodes and facts may repeat each other; do not count the same evidence twice.
- Raw exchanges: unprocessed snippets; their timestamp is when it was said, not necessarily when the event happened.
Each list is sorted by relevance.

Episodes:
{episodic}

Facts:
{semantic}

Raw exchanges:
{subconscious}

Rules:
- For who/what/where/when questions, look for explicit evidence. For advice or preferences, build on what the speakers themselves said, and use general knowledge only if nothing relevant exists.
- Watch the timestamps. If memories conflict, trust the most recent one.
- Turn relative times into dates using the memory's timestamp (said on 4 May 2022, "last year" means 2021).
- Only say the information is not available if nothing relevant is there.
- {length_rule}
{now_line}
Question: {question}
Answer:"""

# [code] the LoCoMo answer variant limits the length (paper App. E.4); the LongMemEval one does not.
LENGTH_RULES = {"short": "Answer in as few words as possible (about five or six), no explanation.",
                "free": "Answer concisely and directly."}
