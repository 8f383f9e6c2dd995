"""TopicBuckets: each turn joins the topic bucket whose centroid is nearest, and each bucket keeps a running
summary an LLM rewrites as turns arrive. A question reads the summaries of its nearest buckets and its nearest
raw turns. Written against the public contract only (docs/method-contract.md, docs/plugin-checklist.md)."""
from __future__ import annotations

import numpy as np

from workbench.methods import MemoryMethod
from workbench.methods.answer_prompt import shared_answer
from workbench.methods.common import format_date, format_turn
from workbench.methods.explain import HowItWorks, Phase
from workbench.methods.store import MemoryUnit
from workbench.structures import clusters_part
from workbench.trace import Answer

from .census import CENSUS

SUMMARIZE = ("You keep a short running summary of one topic of a conversation.\nSummary so far: {summary}\n"
             "New turns:\n{turns}\nRewrite the summary in at most three sentences, keeping names, dates and "
             "numbers. Reply with the summary only.")
ANSWER = ("Topic summaries:\n{summaries}\nConversation turns:\n{turns}\nToday is {now}. Answer the question in a "
          "few words from the notes above.\nQuestion: {question}\nAnswer:")


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n else v


class TopicBuckets(MemoryMethod):
    """Embedding buckets with a running LLM summary per bucket (see the module docstring)."""

    name = "topic_buckets"
    title = "TopicBuckets"
    resources = "topic_buckets.resources"  # gallery example, annotations, cassettes, cost profile
    prompt_modules = ()
    census = CENSUS
    how_it_works = HowItWorks(
        summary=("Every turn goes into the topic bucket it is closest to in meaning, opening a new bucket when "
                 "none is close. Each bucket keeps a short summary that a language model rewrites as turns arrive."),
        phases=(Phase("build", (("embed", "embed the turn"), ("route", "nearest bucket, or a new one"),
                                ("summarize", "rewrite the bucket's summary every few turns"))),
                Phase("answer", (("route", "the question's nearest buckets"), ("retrieve", "its nearest turns"),
                                 ("answer", "one call over summaries and turns")))),
        mechanism="one running summary per recurring topic",
        gallery="gallery-topic-buckets",
        right_outcome=("The allotment turns of all three sessions share one bucket, whose summary follows the "
                       "tomatoes from seedlings to harvest; the Portuguese lessons get a bucket of their own."))

    def __init__(self, *, llm=None, embedder=None, new_bucket_distance: float = 0.75, summary_every: int = 3,
                 k_buckets: int = 2, k_turns: int = 4, answer_prompt: str = "native"):
        self.llm = llm
        self.embedder = embedder
        self.new_bucket_distance = new_bucket_distance
        self.summary_every = summary_every
        self.k_buckets = k_buckets
        self.k_turns = k_turns
        self.answer_prompt = answer_prompt

    def _reset(self) -> None:
        self.turns_: list[MemoryUnit] = []
        self.turn_vecs_: list[np.ndarray] = []
        self.buckets_: list[dict] = []  # id, members (turn ids), pending (turn ids), summary, centroid, summaries

    def _build(self, conv) -> None:
        for turn in conv.turns:
            unit = MemoryUnit(turn.id, "turn", format_turn(turn, with_date=True), (turn.id,), turn.time)
            vec = _unit(np.asarray(self.embedder([turn.content])[0], dtype=float))
            self.turns_.append(unit)
            self.turn_vecs_.append(vec)
            self._emit("ADD", unit.id, after=unit.text, cause="turn arrived", source_ids=(turn.id,), time=turn.time)
            dists = [1.0 - float(vec @ _unit(b["centroid"])) for b in self.buckets_]
            if not dists or min(dists) > self.new_bucket_distance:
                bucket = {"id": f"bucket-{len(self.buckets_) + 1}", "members": [], "pending": [], "summary": "",
                          "centroid": np.zeros_like(vec), "summaries": 0}
                self.buckets_.append(bucket)
                self._emit("ADD", bucket["id"], after="", cause="no bucket close enough: a new topic",
                           source_ids=(turn.id,), time=turn.time)
            else:
                bucket = self.buckets_[int(np.argmin(dists))]
            bucket["members"].append(turn.id)
            bucket["pending"].append(turn.id)
            bucket["centroid"] = bucket["centroid"] + vec
            self._emit("LINK", bucket["id"], cause=f"{turn.id} joins {bucket['id']}", source_ids=(turn.id,),
                       time=turn.time)
            if len(bucket["pending"]) >= self.summary_every:
                self._summarize(bucket, turn.time)
        for bucket in self.buckets_:  # the conversation ends: what is still pending is summarised once more
            if bucket["pending"]:
                self._summarize(bucket, self.turns_[-1].time if self.turns_ else None)

    def _summarize(self, bucket: dict, time) -> None:
        by_id = {u.id: u for u in self.turns_}
        turns = "\n".join(by_id[t].text for t in bucket["pending"])
        before = bucket["summary"]
        prompt = SUMMARIZE.format(summary=before or "(empty)", turns=turns)
        after = self.llm.complete(prompt, role=f"{self.name}.summarize").text.strip()
        bucket["summary"], bucket["pending"] = after, []
        bucket["summaries"] += 1
        self._emit("UPDATE", bucket["id"], before=before, after=after, cause="summary rewritten",
                   source_ids=tuple(bucket["members"]), time=time)

    def _summary_units(self) -> list[MemoryUnit]:
        return [MemoryUnit(b["id"], "topic_summary", b["summary"], tuple(b["members"]), None,
                           {"turns": len(b["members"]), "summaries_written": b["summaries"]})
                for b in self.buckets_ if b["summary"]]

    def _answer(self, question, *, now):
        steps = []
        q = _unit(np.asarray(self.embedder([question])[0], dtype=float))
        with self.step(steps, "bucket_route", f"The {self.k_buckets} nearest topic buckets") as s:
            units = {u.id: u for u in self._summary_units()}
            scored = sorted(((float(q @ _unit(b["centroid"])), b["id"]) for b in self.buckets_ if b["id"] in units),
                            reverse=True)[:self.k_buckets]
            s.hits = [units[i].hit(round(score, 3)) for score, i in scored]
            s.data.update(buckets=len(self.buckets_), chosen=[i for _, i in scored])
        with self.step(steps, "retrieve", f"The {self.k_turns} nearest turns") as s:
            sims = [float(q @ v) for v in self.turn_vecs_]
            top = sorted(range(len(sims)), key=lambda i: -sims[i])[:self.k_turns]
            s.hits = [self.turns_[i].hit(round(sims[i], 3)) for i in sorted(top)]
        hits = tuple(steps[0].hits) + tuple(steps[1].hits)
        with self.step(steps, "answer", "Answer from the summaries and turns") as s:
            if self.answer_prompt == "shared":
                text = shared_answer(self, "\n".join(h.text for h in hits), question, now)
            else:
                prompt = ANSWER.format(summaries="\n".join(h.text for h in steps[0].hits) or "(none)",
                                       turns="\n".join(h.text for h in steps[1].hits) or "(none)",
                                       now=format_date(now) if now else "unknown", question=question)
                text = self.llm.complete(prompt, role=f"{self.name}.answer").text.strip()
            s.data["answer"] = text
        return Answer(question, text, tuple(steps), hits)

    def _units(self) -> list[dict]:
        rows = [{**u.row(), "bucket": next((b["id"] for b in self.buckets_ if u.id in b["members"]), None)}
                for u in self.turns_]
        return rows + [u.row() for u in self._summary_units()]

    def structures(self) -> dict:
        """Plain JSON (``structures.json``): each bucket with its member turns and summary (the census reads it),
        and the same buckets as a declared ``clusters`` part, which the Structures tab draws as a scatter of the
        turns' vectors, one colour per bucket, with no view code of this package's own."""
        self._check_ingested()
        bucket_of = {t: b["id"] for b in self.buckets_ for t in b["members"]}
        members = [{"id": u.id, "text": u.text, "cluster": bucket_of.get(u.id), "source_ids": list(u.source_ids),
                    "time": u.time, "vector": [round(float(x), 4) for x in v]}
                   for u, v in zip(self.turns_, self.turn_vecs_)]
        clusters = [{"id": b["id"], "label": (b["summary"] or b["id"])[:80]} for b in self.buckets_]
        return {"buckets": [{"id": b["id"], "source_ids": list(b["members"]), "summary": b["summary"],
                             "summaries_written": b["summaries"]} for b in self.buckets_],
                "parts": [clusters_part(members, clusters, title="topic buckets")]}
