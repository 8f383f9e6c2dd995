"""MemR3's "How it works" page (``explain.HowItWorks``): read by the app, the notebook and the gallery."""
from ..explain import HowItWorks, phase

HOW_IT_WORKS = HowItWorks(
    summary=("MemR3 puts a router on top of a retriever: at every step one LLM call updates a list of the evidence "
             "found and the gaps still open, and chooses to retrieve again (with a query aimed at a gap), to "
             "reflect, or to answer. Guards: the step budget forces the answer, an empty retrieval a "
             "reflection, a reflection a retrieval while unread chunks remain (the small profile also answers once "
             "nothing is left)."),
    phases=(
        phase("build", ("backend ingest", "here: 256-token windows, embedded; no LLM")),
        phase("answer", ("retrieve", "the question's closest chunks (5 by default), none read before"),
              ("router", "one LLM call: evidence, gaps, next action"),
              ("guards", "budget, empty retrieval, reflect streak (the small profile adds: nothing left)"),
              ("answer", "written from the evidence bullets and the draft"),
              loop=("retrieve (the question plus a query aimed at a gap) or reflect sends control back to the router, "
                    "at most 5 router calls by default")),
    ),
    mechanism="a gap opened → a targeted retrieve → the gap closed",
    gallery="gallery-memr3",
    # one chunk per retrieval (the demo's memr3[one-chunk] variant): a router that starts from less has a gap to name
    gallery_params={"n_chk": 1},
    right_outcome=("The concert is on 2 September (D1:3, said in session 1) and the flight to Oslo on 9 September "
                   "(D2:2, session 2), and the router starts from one chunk. It should write the missing date as a "
                   "gap, retrieve for it, close the gap and answer 7 days."),
)
