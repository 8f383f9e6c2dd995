"""RecMem's "How it works" page (``explain.HowItWorks``): read by the app, the notebook and the gallery."""
from ..explain import HowItWorks, phase

HOW_IT_WORKS = HowItWorks(
    summary=("RecMem stores each exchange cheaply (embedded, no LLM call) and spends LLM calls only on topics that "
             "come back: when enough similar exchanges are buffered, they are consolidated into an episode, which "
             "is then refined into short facts. Exchanges that never recur stay in the buffer as they were said."),
    phases=(
        phase("build", ("buffer", "embed each exchange, no LLM"),
              ("recurrence gate", "enough similar buffered neighbours?"),
              ("merge or consolidate", "LLM: join an episode, or write a new one"),
              ("refine", "LLM: episode into atomic facts"),
              loop="exchanges that never recur stay in the buffer, unconsolidated"),
        phase("answer", ("retrieve", "top-k from buffer, episodes and facts"),
              ("answer", "one prompt over all three")),
    ),
    mechanism="recurrence → episode → refined facts",
    gallery="gallery-recmem",
    right_outcome=("Ben's training for the Lisbon marathon comes back in all four sessions, the long run growing "
                   "from 10 km (D1:3) to 32 km (D4:1). The gate should fire on that topic, the exchanges should be "
                   "consolidated into one episode (later ones merged into it rather than repeated), and its refined "
                   "facts should keep each distance, so \"What was Ben's longest training run?\" is answered 32 km."),
)
