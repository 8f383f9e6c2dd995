# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 08 · Bring your own method
#
# Can a new memory method sit beside the five? Yes, without touching the workbench. A method is a
# `MemoryMethod` subclass. `check_method` tells you whether it keeps the contract (`docs/method-contract.md`).
# Registering it makes it appear wherever a method is named: `workbench eval --method`, the census, the report
# and every view. A package registers through an entry point in the group `workbench.methods`; a notebook
# calls `register`.
#
# The example is deliberately small: a **recency buffer with BM25 retrieval**. The memory keeps only the
# newest turns and forgets the oldest ones. Retrieval scores the kept turns against the question with BM25
# keyword matching, and the workbench's shared answer prompt writes the answer. Its replies were recorded once
# with the demo model (Qwen2.5-Coder-1.5B) in `sample_data/cassettes/your_method.jsonl`, so the notebook runs
# with no model.

# %% [markdown]
# ## 1. The method
#
# Four pieces are needed. Keyword-only parameters are stored as given. `_reset` and `_build` make the memory,
# and every change is recorded as an event, an eviction included. `_answer` makes one step per decision:
# the calls made inside a step are attached to it, so the trace shows them. `_units` lists the memory.

# %%
import math
import re
from collections import Counter

from workbench.methods import MemoryMethod
from workbench.methods.answer_prompt import shared_answer
from workbench.methods.common import format_turn
from workbench.methods.store import MemoryUnit
from workbench.trace import Answer

WORDS = re.compile(r"[a-z0-9']+")


def terms(text):
    return WORDS.findall(text.lower())


def bm25(query, docs, k1=1.5, b=0.75):
    """Okapi BM25 of each document (a list of terms) for the query terms."""
    n, avg = len(docs), sum(map(len, docs)) / max(1, len(docs))
    df = Counter(t for d in docs for t in set(d))
    scores = []
    for d in docs:
        tf, s = Counter(d), 0.0
        for t in set(query):
            if tf[t]:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(d) / avg))
        scores.append(s)
    return scores


class RecencyBM25(MemoryMethod):
    """A recency buffer: keep the newest ``buffer_turns`` turns (older ones are evicted), answer from the
    BM25 top-``top_k`` of them plus the ``recent`` newest, with the workbench's shared answer prompt."""

    name = "recency_bm25"

    def __init__(self, *, llm=None, buffer_turns: int = 40, top_k: int = 6, recent: int = 2,
                 answer_prompt: str = "shared"):
        self.llm = llm
        self.answer_prompt = answer_prompt  # --fair sets "shared"; this method has no prompt of its own anyway
        self.buffer_turns = buffer_turns
        self.top_k = top_k
        self.recent = recent

    def _reset(self):
        self.buffer_ = []

    def _build(self, conv):
        for turn in conv.turns:
            unit = MemoryUnit(turn.id, "turn", format_turn(turn, with_date=True), (turn.id,), turn.time)
            self.buffer_.append(unit)
            self._emit("ADD", unit.id, after=unit.text, cause="turn arrived", source_ids=unit.source_ids,
                       time=unit.time)
            if len(self.buffer_) > self.buffer_turns:
                old = self.buffer_.pop(0)
                self._emit("DELETE", old.id, before=old.text, cause="buffer full: oldest turn evicted",
                           source_ids=old.source_ids, time=unit.time)

    def _answer(self, question, *, now):
        steps = []
        with self.step(steps, "retrieve", f"BM25 top-{self.top_k} and the {self.recent} newest turns") as s:
            scores = bm25(terms(question), [terms(u.text) for u in self.buffer_])
            ranked = sorted(range(len(self.buffer_)), key=lambda i: -scores[i])[:self.top_k]
            newest = range(max(0, len(self.buffer_) - self.recent), len(self.buffer_))
            chosen = sorted(set(ranked) | set(newest))  # shown in conversation order
            s.hits = [self.buffer_[i].hit(round(scores[i], 3)) for i in chosen]
            s.data.update(query=question, buffer=len(self.buffer_))
        with self.step(steps, "answer", "Answer from the chosen turns") as s:
            context = "\n".join(h.text for h in steps[0].hits)
            text = shared_answer(self, context, question, now)
            s.data["answer"] = text
        return Answer(question, text, tuple(steps), tuple(steps[0].hits))

    def _units(self):
        return [u.row() for u in self.buffer_]


# %% [markdown]
# ## 2. Check it against the contract
#
# `check_method` builds fresh instances with a scripted LLM and runs every check of the contract: parameters
# stored as given, no answer before ingest, every LLM call inside a step, provenance on every unit and hit, no
# gold label in any prompt, save and load, and more. A failure names the check and says what the contract asks.

# %%
# NBVAL_CHECK_OUTPUT
from workbench.testing import ContractError, check_method
from workbench.testing.check_method import CHECKS

check_method(RecencyBM25)
print(f"RecencyBM25 passes all {len(CHECKS)} contract checks")


class Forgetful(RecencyBM25):
    """A broken variant: it forgets where its units came from."""

    name = "forgetful"

    def _units(self):
        return [{**u.row(), "source_ids": []} for u in self.buffer_]


try:
    check_method(Forgetful)
except ContractError as err:
    print(err)

# %% [markdown]
# ## 3. Register it
#
# A package would declare `recency_bm25 = "my_package.recency:RecencyBM25"` under
# `[project.entry-points."workbench.methods"]`. Here the class lives in the notebook, so `register` adds it
# for this kernel. (`replace=True` lets the cell run twice.)

# %%
# NBVAL_CHECK_OUTPUT
from workbench.methods import REGISTRY, get_method, register

register(RecencyBM25, replace=True)
print(get_method("recency_bm25").__name__, "|", ", ".join(REGISTRY))

# %% [markdown]
# ## 4. Evaluate it beside the five
#
# The demo's methods replay the demo cassette, and the new one replays its own. Everything goes into one run
# directory, as `workbench eval` would write it. The headline is the deterministic checker (notebook 06 says
# why the 1.5B judge is not trusted).

# %%
# NBVAL_CHECK_OUTPUT
import tempfile
from pathlib import Path

from workbench.data import SAMPLE_DIR
from workbench.demo import DEMO, demo_dataset, demo_embedder, demo_llm, demo_methods
from workbench.eval import LLMJudge, evaluate, load_results, summary_table

run = Path(tempfile.mkdtemp()) / "run"
llm, emb = demo_llm(mode="replay"), demo_embedder()
mine = demo_llm(mode="replay", cassette=SAMPLE_DIR / "cassettes" / "your_method.jsonl")
five = demo_methods(llm, emb, ["full_context", "naive_rag", "hymem", "ama", "hmem", "recmem", "memr3"])
for method, reader in [*((m, llm) for m in five.values()), (RecencyBM25(llm=mine), mine)]:
    evaluate(method, demo_dataset(), judge=LLMJudge(reader), store=run / "results.jsonl", questions=DEMO.questions,
             save_memories_dir=run, progress=False)
table = summary_table(load_results([run / "results.jsonl"]))
cols = ["method", "n", "metric", "accuracy", "evidence_recall", "turns_shown", "query_tokens", "fc_token_ratio"]
table[table["category"] == "overall"][cols].round(3).set_index("method")

# %% [markdown]
# The buffer keeps 40 of the slice's 66 turns, so the first sessions are gone when the questions come. For each
# question: the checker's verdict (None: an adversarial question, scored apart), the answer, and the gold evidence
# turns the buffer had already evicted.

# %%
# NBVAL_CHECK_OUTPUT
import json

conv = demo_dataset()[0]
gold = {q.id: q for q in conv.qa}
rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
kept = set(RecencyBM25(llm=mine).ingest(conv).memories()["id"])
for r in rows:
    if r["method"] == "recency_bm25":
        gone = [t for t in gold[r["qa_id"]].evidence if t not in kept]
        print(f"{r['qa_id']:13} checker {r['scores'].get('checker')}  {r['prediction'][:34]!r:38}"
              f" evicted evidence: {', '.join(gone) or '-'}")

# %% [markdown]
# ## 5. Every view shows it
#
# The census gives every method its common counts (questions, failures). A method that wants its own
# mechanism counted declares a `CensusSpec` in its folder (`workbench/methods/<name>/census.py` shows five).
# The views need nothing from the method: its trace, its events and its memory are enough.

# %%
# NBVAL_CHECK_OUTPUT
from workbench.eval.mechanisms import census, census_text

value = census(run)
print(census_text({**value, "methods": {"recency_bm25": value["methods"]["recency_bm25"]}}))

# %%
from widgets import QuestionView

QuestionView.from_run(run)

# %% [markdown]
# Its trace for one question: the retrieval step (with the BM25 scores as hit scores), then the answer step.

# %%
from widgets import TraceStepper
from workbench.trace import Answer as _Answer

q = next(r for r in rows if r["method"] == "recency_bm25" and r["qa_id"] == "sample-1/q4")
TraceStepper(_Answer.from_dict(q["answer"]), conversation=conv, qa=gold[q["qa_id"]])

# %% [markdown]
# Its events on the conversation's time axis: an ADD per turn, and a DELETE for each turn evicted.

# %%
from widgets import EventTimeline

built = RecencyBM25(llm=mine).ingest(conv)
EventTimeline({"recency_bm25": list(built.events)}, conversation=conv)

# %% [markdown]
# The same run directory opens in the app: `workbench app --run <run>`, where the method appears in every tab.
# The last cell is the guard: every call replayed, no cache miss in either cassette.

# %%
# NBVAL_CHECK_OUTPUT
misses = 0
for reader in (llm, mine):
    calls = reader.ledger.frame()
    misses += int(calls["error"].fillna("").str.startswith("CacheMiss").sum())
print(f"{misses} cache misses")
