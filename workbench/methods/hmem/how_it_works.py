"""H-Mem's "How it works" page (``explain.HowItWorks``): read by the app, the notebook and the gallery."""
from ..explain import HowItWorks, phase

HOW_IT_WORKS = HowItWorks(
    summary=("H-Mem extracts memory events, entities and relations from the dialogue; the events become the day-level "
             "leaves of a time tree whose parents summarise a week, a month and a year, beside an entity graph. "
             "A planner splits each question into sub-queries scoped to a level of that tree, and one synthesis "
             "call joins their answers."),
    phases=(
        phase("build", ("fragment", "cut the dialogue into fragments"),
              ("extract", "LLM: memory events, entities, relations"),
              ("tree", "events as day-level leaves, summaries per week/month/year"),
              ("graph", "entities and relations with provenance")),
        phase("answer", ("planner", "sub-queries with scope and time hints"),
              ("gather", "graph seeds, multi-hop expansion, tree"),
              ("rank", "0.70 × meaning + 0.15 × time fit + 0.15 × robustness (consolidated recently and often)"),
              ("sub-answers", "then one synthesis over them")),
    ),
    mechanism="consolidation into a parent, and a planner that reads a summary above single events",
    gallery="gallery-hmem",
    right_outcome=("Ana's move runs over three sessions in one week (books packed on 11 June, D1:1; the van loaded "
                   "on 14 June, D2:1; the keys handed back on 16 June, D3:1). A correct tree puts those events under"
                   " one parent whose summary tells the move, and for \"How did Ana's move go, from packing to "
                   "handing back the keys?\" the planner reads that summary (a scope wider than single events) "
                   "rather than single leaves."),
)
