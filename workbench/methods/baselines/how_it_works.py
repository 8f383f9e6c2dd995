"""The baselines' "How it works" pages (``explain.HowItWorks``): no gallery example, as no baseline has a
signature mechanism to show; the page gives what they do and their diagram."""
from ..explain import HowItWorks, phase

FULL_CONTEXT = HowItWorks(
    summary=("Full-Context builds no memory: every question's prompt holds the whole conversation, dated. It is "
             "the reference the papers measure accuracy and token cost against."),
    phases=(phase("build", ("keep the turns", "no LLM call, no index")),
            phase("answer", ("prompt", "every turn of every session, with its date"), ("answer", "one LLM call"))),
)

NAIVE_RAG = HowItWorks(
    summary=("Naive RAG cuts the conversation into chunks, embeds them, and answers each question from the chunks "
             "most similar to it. Building its memory makes no LLM call."),
    phases=(phase("build", ("chunk", "per turn, session or window"), ("embed", "one vector per chunk")),
            phase("answer", ("retrieve", "cosine top-k chunks"), ("answer", "one LLM call over them"))),
)

EAGER_FLOOR = HowItWorks(
    summary=("One short LLM call per exchange extracts facts, which are only ever appended; questions are answered "
             "from the top-k facts. It is the cheapest form of eager extraction, the floor RecMem's cost is "
             "compared with."),
    phases=(phase("build", ("extract", "one LLM call per exchange: facts"), ("embed", "append, never edit")),
            phase("answer", ("retrieve", "cosine top-k facts"), ("answer", "one LLM call over them"))),
)

MEM0_STYLE = HowItWorks(
    summary=("Mem0-style extracts facts from each exchange, per speaker, then decides for each new fact whether to "
             "ADD it, UPDATE or DELETE a similar stored memory, or do nothing. Questions are answered from each "
             "speaker's most similar facts."),
    phases=(phase("build", ("extract", "LLM: facts per speaker and exchange"),
                  ("compare", "the most similar stored memories"),
                  ("decide", "LLM: ADD, UPDATE, DELETE or NONE")),
            phase("answer", ("retrieve", "top-k facts per speaker"), ("answer", "one LLM call over them"))),
)
