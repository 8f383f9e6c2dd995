"""The Conversations tab: the conversation's turns, searchable."""
from __future__ import annotations

import pandas as pd
import panel as pn

from widgets.html import box, esc
from widgets.panel_parts import (
    html_pane,
    show_frame,
    text_table,
)
from widgets.run_store import RunStore


class ConversationsView:
    """Sessions and turns of the selected conversation, searchable."""

    def __init__(self, store: RunStore):
        self.store = store
        self.search = pn.widgets.TextInput(label="search turns", placeholder="word, speaker or turn id")
        self.session = pn.widgets.Select(label="session", options=["all"])
        self.info = html_pane("")
        self.table = text_table(pd.DataFrame(columns=["session", "date", "id", "speaker", "text"]))
        self.search.param.watch(lambda e: self.refresh(), "value")
        self.session.param.watch(lambda e: self.refresh(), "value")
        store.param.watch(lambda e: self.load(), "conv_id")
        self.panel = pn.Column(pn.Row(self.search, self.session), self.info, self.table, sizing_mode="stretch_width")
        self.load()

    def load(self) -> None:
        conv = self.store.conversation()
        rows = [] if conv is None else [
            {"session": s.id, "date": s.date_text or (s.date_time.isoformat() if s.date_time else ""), "id": t.id,
             "speaker": t.speaker, "text": t.content} for s in conv.sessions for t in s.turns]
        self.frame = pd.DataFrame(rows, columns=["session", "date", "id", "speaker", "text"])
        self.session.options = ["all"] + ([s.id for s in conv.sessions] if conv else [])
        self.refresh()

    def refresh(self) -> None:
        df = self.frame
        if self.session.value not in (None, "all"):
            df = df[df["session"] == self.session.value]
        q = self.search.value.strip().lower()
        if q:
            df = df[(df["text"] + " " + df["speaker"] + " " + df["id"]).str.lower().str.contains(q, regex=False)]
        show_frame(self.table, df.reset_index(drop=True))
        conv = self.store.conversation()
        answered = len({r.get("qa_id") for r in self.store.results() if conv and r.get("conv_id") == conv.id})
        asked = (f"{len(conv.qa)} questions in the conversation, {answered} answered in this run" if conv
                 and answered != len(conv.qa) else f"{len(conv.qa) if conv else 0} questions")
        head = (f"<b>{esc(conv.id)}</b> · speakers {esc(', '.join(conv.speakers))} · {len(conv.sessions)} sessions · "
                f"{len(self.frame)} turns · {asked}" if conv else "No conversation loaded.")
        self.info.object = box(f"{head} · showing {len(df)} turns")
