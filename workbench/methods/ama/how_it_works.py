"""AMA's "How it works" page (``explain.HowItWorks``): read by the app, the notebook and the gallery."""
from ..explain import HowItWorks, phase

HOW_IT_WORKS = HowItWorks(
    summary=("AMA writes every turn into three stores (raw turns, facts, episodes) and checks each new turn against "
             "what is already stored: a Judge flags a conflict and a Refresher updates or deletes the stale entry. "
             "At question time a Retriever picks the store and how many items to read, and the Judge can send it "
             "back for a wider search."),
    phases=(
        phase("build", ("Constructor", "each turn into raw, fact and episode stores"),
              ("Judge", "does the turn conflict with a nearby stored entry?"),
              ("Refresher", "UPDATE or DELETE the entries in conflict")),
        phase("answer", ("Retriever", "rewrite the question, pick a store and how many items to fetch"),
              ("Judge", "Pass, Retry or Refresh"),
              ("answer", "from the items the Judge passed"),
              loop="Retry searches again, more widely (2 rounds in all by default); Refresh edits memory first"),
    ),
    mechanism="Judge → Refresher: a knowledge update at ingestion",
    gallery="gallery-ama",
    right_outcome=("In session 2 (D2:3) Dev says she has left Riverside Library and now works at Spoke & Chain. The "
                   "Judge should flag the stored facts from D1:2/D1:4 as out of date, the Refresher should update "
                   "Dev's workplace (and only that), and \"Where does Dev work now?\" should be answered from the "
                   "new fact. Every other stored fact should stay as it was said."),
)
