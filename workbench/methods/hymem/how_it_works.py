"""HyMem's "How it works" page (``explain.HowItWorks``): read by the app, the notebook and the gallery."""
from ..explain import HowItWorks, phase

HOW_IT_WORKS = HowItWorks(
    summary=("HyMem keeps a conversation at two resolutions: short key sentences that are cheap to search, each "
             "linked to the raw topic event it came from. It answers from the key sentences first, and reads the "
             "raw events (the deep module) only when the light answer is judged not good enough."),
    phases=(
        phase("build", ("segment", "each session into topic events (Level-2, raw turns)"),
              ("summarise", "one LLM call per event: key sentences (Level-1)"),
              ("embed", "Level-1 items, each linked to its event")),
        phase("answer", ("light", "top-k Level-1 items: answer, or ask to escalate"),
              ("deep (only if asked)", "top-N candidates, LLM picks per batch, read their Level-2 events"),
              ("reflect", "accept the answer, or rewrite the query"),
              loop="a rejected answer starts the next round at the light module again (3 rounds at most by default)"),
    ),
    mechanism="light → deep escalation, with reflection",
    gallery="gallery-hymem",
    right_outcome=("The teacher is named in one session (D1:3: Mr. Okafor) and, as an aside, always wears a bright "
                   "green hat (D1:5); the next session's concert had a cellist in a bright green hat (D2:3). Key-"
                   "sentence summaries drop the hats (a casual remark, as the summary prompt asks), so the light "
                   "module cannot link teacher and cellist and should say \"insufficient\" and escalate: the deep "
                   "module reads both raw events, where the hat links them, and answers \"the cello\"; reflection "
                   "keeps that answer. The second question (the kitchen's colour, one turn) needs no escalation."),
)
