"""AMA's "How it works" page (``explain.HowItWorks``): read by the app, the notebook and the gallery."""
from ..explain import HowItWorks, phase

HOW_IT_WORKS = HowItWorks(
    summary=("AMA writes every turn into three stores (raw turns, facts, episodes) and checks each new turn against "
             "what is already stored: a Judge flags a conflict and a Refresher updates or deletes the stale entry. "
             "At question time a Retriever picks the store and how many items to read, and the Judge can send it "
             "back for a wider search."),
    phases=(
        # the paper profile's order (Fig. 2); the small profile runs the Constructor first and skips the Retriever
        phase("build", ("Retriever", "paper profile: pick the store the turn is checked against (the small profile "
                                     "skips it and checks the nearest entries of every store)"),
              ("Judge", "does the turn conflict with a stored entry?"),
              ("Refresher", "UPDATE or DELETE the entries in conflict"),
              ("Constructor", "the turn into raw, fact and episode stores (the small profile writes first, then "
                              "checks)")),
        phase("answer", ("Retriever", "rewrite the question, pick a store and how many items to fetch"),
              ("Judge", "Pass, Retry or Refresh"),
              ("answer", "from the items the Judge passed"),
              loop="Retry searches again, more widely (2 rounds in all by default); Refresh edits memory first"),
    ),
    mechanism="Judge → Refresher: a knowledge update at ingestion",
    gallery="gallery-ama",
    right_outcome=("In session 2 Dev says she left the library at the end of May (D2:1) and now works at Spoke & "
                   "Chain (D2:3). The Judge should flag the stored facts from D1:2/D1:4 as out of date, the "
                   "Refresher should update Dev's workplace (and only that), and \"Where does Dev work now?\" "
                   "should be answered from the new fact. Every other stored fact should stay as it was said."),
)
