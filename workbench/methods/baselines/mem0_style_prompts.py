"""Prompts of ``Mem0Style`` (own wording and own examples).

Structure follows Mem0's two phases (mem0 ``FACT_RETRIEVAL_PROMPT`` with the LoCoMo evaluation's
custom instructions, and ``DEFAULT_UPDATE_MEMORY_PROMPT``): a long few-shot extraction prompt run
once per speaker, then one decision prompt that sees the new facts beside the stored memories most
similar to them. Neither text nor examples are copied; only the shape (JSON lists, the four events,
small integer ids in place of real ids) is taken from Mem0.
"""

# Phase 1, Mem0's extraction (FACT_RETRIEVAL_PROMPT + the LoCoMo eval's "use the person's name"
# instructions), reworded, with our own few-shot examples. Run once per speaker per exchange. Every
# variable part comes last, so a local model reuses the evaluated instructions across calls.
EXTRACT = """You keep a personal memory about one person, named at the end. Read the latest messages of a
conversation and write down the facts about that person that are worth remembering later.

What to keep:
- personal details: name, family, pets, home, job, studies, health, possessions;
- preferences and opinions: likes, dislikes, favourite things, values;
- events and plans: what the person did, is doing or will do, with when and where;
- relationships: who the person knows and how they relate;
- feelings and reactions that say something lasting about the person.

Rules:
- Only facts about that person: what they say about themselves, or what others say about them.
- Each fact is one short standalone sentence that starts with the person's name (never "I", "user" or "he").
- Turn relative times ("yesterday", "last week", "next month") into dates using the message date.
- Skip greetings, thanks, small talk and questions that state nothing.
- If nothing is worth keeping, return an empty list.

Examples (the person in brackets):

[Dana] Messages on 3 May 2023:
Dana: Hi! How was your weekend?
Sam: Good, thanks. You?
Output: {{"facts": []}}

[Dana] Messages on 3 May 2023:
Dana: I finally adopted a cat yesterday, a grey one called Miso.
Sam: Congratulations!
Output: {{"facts": ["Dana adopted a grey cat called Miso on 2 May 2023."]}}

[Sam] Messages on 3 May 2023:
Dana: I finally adopted a cat yesterday, a grey one called Miso.
Sam: Congratulations! I'm allergic, so I stick to my goldfish.
Output: {{"facts": ["Sam is allergic to cats.", "Sam has a goldfish."]}}

[Ravi] Messages on 10 June 2023:
Ravi: I start my new job at the hospital in Leeds next month, as a night nurse.
Lena: That's a big change from teaching!
Output: {{"facts": ["Ravi will start working as a night nurse at a hospital in Leeds in July 2023.", "Ravi used to work as a teacher."]}}

[Lena] Messages on 10 June 2023:
Ravi: How is your marathon training going?
Lena: Slowly. My knee hurts, so I switched to swimming for now. I still want to run Berlin in September.
Output: {{"facts": ["Lena is training for a marathon.", "Lena has a sore knee and is swimming instead of running for now.", "Lena plans to run the Berlin marathon in September 2023."]}}

Now the real messages, between {speakers}. Write the facts about {speaker} only.

[{speaker}] Messages on {date}:
{exchange}
Return JSON only: {{"facts": ["...", "..."]}}"""

EXTRACT_SCHEMA = {"type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
                  "required": ["facts"]}

# Phase 2, Mem0's update decision (DEFAULT_UPDATE_MEMORY_PROMPT), reworded: new facts are compared
# with the stored memories retrieved for them; the ids shown are small integers, as in Mem0.
DECIDE = """You maintain the memory about {speaker}. New facts were just learned. For each new fact,
compare it with the stored memories below and choose one event:
- ADD: the fact is new information; store it (give its text).
- UPDATE: the fact changes or adds detail to a stored memory about the same thing; give that
  memory's id and the new full text that replaces it (keep the more informative, more recent version).
- DELETE: the fact contradicts a stored memory that is no longer true; give that memory's id.
  (Store the new fact with its own ADD when it should be kept as well.)
- NONE: the fact is already stored or is not worth keeping.

Stored memories (id: text):
{memories}

New facts (learned on {date}):
{facts}

Example: stored 0: "Dana has a dog called Rex."; new fact "Dana's dog is now called Max." ->
{{"actions": [{{"fact": 1, "event": "UPDATE", "id": "0", "text": "Dana has a dog called Max (formerly Rex)."}}]}}

Return JSON only: {{"actions": [{{"fact": <number of the new fact>, "event": "ADD" | "UPDATE" | "DELETE" | "NONE", "id": "<stored id for UPDATE or DELETE, else empty>", "text": "<memory text for ADD or UPDATE, else empty>"}}]}}
One action per new fact (a fact may have an ADD after a DELETE)."""

DECIDE_SCHEMA = {
    "type": "object",
    "properties": {"actions": {"type": "array", "items": {
        "type": "object",
        "properties": {"fact": {"type": "integer"}, "event": {"type": "string", "enum": ["ADD", "UPDATE", "DELETE", "NONE"]},
                       "id": {"type": "string"}, "text": {"type": "string"}},
        "required": ["event"]}}},
    "required": ["actions"]}
