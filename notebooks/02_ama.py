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
# # 02 · AMA: three memories, a judge and a refresher
#
# **AMA** (Huang et al., *AMA: Adaptive Memory via Multi-Agent Collaboration*, arXiv 2601.20352) runs four
# LLM roles over one model. The **Constructor** writes every turn into three stores: the raw turn, atomic
# facts, and (when a boundary detector fires) an episode summary. The **Retriever** rewrites the question,
# predicts which granularity it needs and how many items (`K_dyn`, capped at `k_dyn_max`=20; `k_m`=5), and
# searches one store. The **Judge** returns Pass, Retry (widen the search; at most `k_r`=2 rounds) or
# Refresh, and the **Refresher** then edits conflicting entries in place (UPDATE) or removes them (DELETE,
# only for an explicit forget request or past a retention limit). The conflict check already runs during
# ingestion, so knowledge updates in the conversation should show up as refresh events.

# %% [markdown]
# ## 0. How it works, on a conversation written for it
#
# Before the demo, the method's signature mechanism on a short conversation of the mechanism gallery, written so
# that the mechanism has one right outcome (`sample_data/gallery_conversations.json`, its planted turns in
# `sample_data/annotations.json`). The page below is the app's "How it works" page: what the method does, its
# pipeline, the conversation with the planted turns marked, the right outcome beside what the model did, and
# whether the mechanism did the right thing, checked against the planted turns. Every reply is replayed from
# `sample_data/cassettes/gallery/ama.jsonl`, recorded with Qwen2.5-Coder-1.5B; nothing is scripted.

# %% [markdown]
# **First, the designed run** (issue #64): the method's own code -- its paper profile, embedder, index, thresholds and
# control flow -- on replies a person wrote for each prompt it sends (`sample_data/reference/ama.<example>.json`).
# It is *reference replies written by hand, not a model*: it shows what the paper's path does when every reply is
# right, and it is counted in no accuracy or census of a model run. A method whose example has no reference file yet
# says so here and skips it.

# %%
from widgets.designed_view import replay

page = replay("ama")
designed = page.stepper(run="designed")
designed if designed is not None else print("No designed run yet: sample_data/reference/ has no file for this "
                                            "method's example.")

# %% [markdown]
# **Then the model's**: the same example under the small profile, replayed from the 1.5B's recording, opened at the
# step where it leaves the designed path when it leaves it while answering (the line above the stepper says where).

# %%
page.stepper(run="small")

# %% [markdown]
# The paper profile with the same model, and the whole page: the example, the right outcome, what each run did and
# where each model run first leaves the designed path, marked.

# %%
page.stepper(run="paper")

# %%
page

# %% [markdown]
# > **About the answers.** Every LLM reply below is replayed from `sample_data/cassettes/demo.jsonl`,
# > recorded once from a small offline model (the next cell names it). Small models often miss the JSON
# > formats and the judgement calls these methods lean on, so read the notebook for the mechanics (what is
# > stored, what is retrieved, which decisions are taken and what they cost), not for the scores.

# %%
# NBVAL_CHECK_OUTPUT
from workbench.demo import demo_methods, notebook_setup

# the replay LLM over the committed cassette (every call below is a recorded reply), the MiniLM embedder
# (int8 ONNX, offline), the first sessions of sample-1 and the questions recorded in the cassette
llm, emb, conv, qa, demo_qs = notebook_setup()
print("replies recorded from:", llm.model)

# %%
# NBVAL_CHECK_OUTPUT
ama = demo_methods(llm, emb, ["ama"])["ama"]
{k: ama.get_params()[k] for k in ("k_r", "k_m", "k_dyn_max", "trigger", "refresher", "refresh_on_query",
                                   "conflict_check", "conflict_stores")}

# %% [markdown]
# **How this demo checks conflicts.** In the paper the Judge reads a new turn next to the nearest stored
# entries and says whether they conflict. With this model that Judge answered Pass on every ingestion check
# of both knowledge-update slices of the sample data (`benchmarks/results/ama_refresh.json`), so the
# Refresher never ran. The demo's AMA therefore uses `conflict_check="probe"`, an addition of this workbench
# (see the AMA docstring): per nearby stored fact, the model writes the question the fact answers and answers
# it once from the fact and once from the new turn; code compares the two answers, and a disagreement sends
# the fact to the paper's Refresher. The paper's Judge runs beside it on the same conversation as
# `ama[paper-judge]` (section 5, and a row of its own in the app), so the difference is there to see.

# %% [markdown]
# ## 1. Build the three stores

# %%
# NBVAL_CHECK_OUTPUT
ama.ingest(conv)
print({name: len(store) for name, store in ama.stores_.items()})
print("construction:", ama.construction_calls_, "calls,", ama.construction_usage_.total_tokens, "tokens,",
      len(ama.failures_), "recorded failures")

# %%
mem = ama.memories()
mem[mem["kind"] == "raw"][["id", "text", "related_ids", "timestamp_source"]].head(5)

# %%
mem[mem["kind"] == "fact"][["id", "text", "source_ids", "version"]].head(8)

# %% [markdown]
# Are the facts right? Each is read against the turn it was taken from, with the rules the census counts by and
# the Memories tab flags with (its "against its turns" column): a fact that is its turn word for word extracted
# nothing, an apposition ("X is Y's friend") needs the relation in the turn, and a fact that speaks as "I" no longer
# says who. At real scale the 0.5B wrote the prompt's own apposition example, "Jon is Gina's friend", into 102 of
# conv-30's turns; here the 1.5B does it once. This reads the memory as it stands: four of the six flagged facts
# (fact:12, 14, 16, 45) are the Refresher's rewrites, most of them a turn pasted in after "Priya said on <date>:",
# which the census does not count (it reads the Constructor's facts as they were written).

# %%
# NBVAL_CHECK_OUTPUT
import pandas as pd

from widgets.readability import fact_marks

said = {t.id: t.text for t in conv.turns}
flagged = [{"id": r.id, "fact": r.text, "its turn": " / ".join(said[i] for i in r.source_ids if i in said),
            "flags": "; ".join(flag for flag, _ in fact_marks(r.text, [said[i] for i in r.source_ids if i in said]))}
           for r in mem[mem["kind"] == "fact"].itertuples()]
print(f"{len(flagged)} facts, {sum(bool(f['flags']) for f in flagged)} flagged against their turns")
pd.DataFrame([f for f in flagged if f["flags"]])

# %%
mem[mem["kind"] == "episode"][["id", "title", "text", "source_ids", "boundary_reason"]]

# %% [markdown]
# ## 2. Refresh events during ingestion
#
# The timeline shows every memory event; the filter below keeps only UPDATE and DELETE, the Refresher's
# edits (hover for before/after and the cause). The demo sessions contain a fact that changes: Tomasz's
# greyhound gets a new name, the knowledge-update slice of `workbench.demo` (questions q4 and q25). The
# next cell quotes the two turns and counts the verdicts of the ingestion conflict checks (here the probes'),
# the ones at those turns included.

# %%
# NBVAL_CHECK_OUTPUT
from collections import Counter

from IPython.display import Markdown, display

from widgets.tables import probe_table
from workbench.demo import knowledge_update_slice

ku_qs = knowledge_update_slice("greyhound").qa
change = sorted({t for q in ku_qs for t in q.evidence}, key=[t.id for t in conv.turns].index)
turn = {t.id: t for t in conv.turns}
ingest_judges = {tid: [s.data["verdict"] for s in steps if s.kind == "judge"] for tid, steps in ama.turn_steps_.items()}
verdict_counts = Counter(v for vs in ingest_judges.values() for v in vs)
edits = [e for e in ama.events if e.kind in ("UPDATE", "DELETE")]
Markdown("\n".join(
    [f"- **{t}** {turn[t].speaker}: “{turn[t].content}” (the check at ingestion: {ingest_judges.get(t) or 'no check'})"
     for t in change]
    + ["", f"{sum(verdict_counts.values())} ingestion conflict checks, verdicts {dict(verdict_counts)}; "
       f"{len(edits)} UPDATE or DELETE event(s), so the filtered timeline below "
       + ("is empty." if not edits else f"shows {len(edits)}.")]))

# %%
from widgets import EventTimeline

timeline = EventTimeline(ama)
print(timeline)
timeline.set_filter(kinds=["UPDATE", "DELETE"])

# %% [markdown]
# `refresh_log()` lists every Refresher decision, including the ones that changed nothing:

# %%
import pandas as pd

log = pd.DataFrame(ama.refresh_log())
display(log["action"].value_counts(dropna=False).to_frame() if len(log) else Markdown("no refresh decisions"))
log.head(10)

# %% [markdown]
# Every probe of the conflict checks at the turns of the knowledge update, with the two answers code
# compared and its decision; then, at the renaming turn, how many stored facts were asked about, how many
# code judged in conflict, and why the others were not.

# %%
# NBVAL_CHECK_OUTPUT
probes = probe_table(ama)
rename = change[-1]  # the later gold turn: the new name
at_rename = probes[probes["turn"] == rename]
conflict = at_rename["conflict"].astype(bool)
reasons = "; ".join(f"“{why}” ({n})" for why, n in at_rename.loc[~conflict, "why"].value_counts().items())
display(probes[probes["turn"].isin(change)])
at_gold = [e for e in edits if set(str(e.cause).split()) & set(change)]  # the cause names the turn
Markdown(f"At the renaming turn {rename} the probe asked about {len(at_rename)} stored fact"
         f"{'' if len(at_rename) == 1 else 's'} and code found {int(conflict.sum())} conflict(s)"
         + (f"; the others were set aside because {reasons}" if reasons else "")
         + f". Of the {len(edits)} edit(s) the Refresher made during ingestion, {len(at_gold)} came from a gold turn "
         f"of the knowledge-update questions ({', '.join(change)}); the rest changed facts at other turns.")

# %% [markdown]
# ## 3. Answer the demo questions
#
# A Refresh verdict at question time edits memory only with `refresh_on_query=True` (off here, see the
# parameters above); the questions are asked in the recorded order all the same. The printed lines give
# each question's LoCoMo category; q4 and q25 are the knowledge-update questions about the renamed dog.

# %%
from widgets.tables import answers_frame, verdicts

from workbench.eval.harness import question_time  # the question date where the method's paper uses one
answers = [ama.answer(q.question, now=question_time(ama, q)) for q in demo_qs]
answers_frame(demo_qs, answers, verdicts=verdicts)

# %%
# NBVAL_CHECK_OUTPUT
from workbench.data import CATEGORY_NAMES

for q, a in zip(demo_qs, answers):
    print(f"{q.id:12} {CATEGORY_NAMES.get(q.category, q.category):12} {str(verdicts(a)):10} {a.text[:70]!r}")

# %% [markdown]
# ### What happened on the two knowledge-update questions
#
# Written by the cell from the traces and the stores: which store the Retriever routed to and with what
# K, whether any retrieved item came from the gold turn, the Judge's verdict next to its own stated
# reason, and the verdict of the ingestion conflict check on the turn that changed the fact. A Judge that
# finds the memories lacking returns Retry, which widens the search for at most `k_r` rounds; after that
# the answer is written from what the last round found.

# %%
# NBVAL_CHECK_OUTPUT
sources = dict(zip(mem["id"], mem["source_ids"]))
ingest_verdict = ingest_judges


def ama_story(q, a):
    lines = [f"{q.id}: {q.question!r} gold {q.answer!r} (turn {', '.join(q.evidence)}), answered {a.text[:60]!r}"]
    for t in q.evidence:
        said = ingest_verdict.get(t) or "nothing (no check ran)"
        lines.append(f"  at ingestion of {t} the conflict check said {said}")
    judges = {s.data["round"]: s.data for s in a.steps if s.kind == "judge" and s.data.get("phase") == "query"}
    for s in (s for s in a.steps if s.kind == "retrieve"):
        d = s.data
        gold_hits = [h for h in d["hit_ids"] if set(sources.get(h, ())) & set(q.evidence)]
        j = judges.get(d["round"], {})
        lines.append(f"  round {d['round']}: rewrite {d['rewrite']!r} -> store {d['store']!r}, K={d['K']}; "
                     f"{len(gold_hits)} of {len(d['hit_ids'])} hits from the gold turn {gold_hits or ''}")
        lines.append(f"    Judge: {j.get('verdict')} - reason {str(j.get('reason', ''))[:110]!r}")
    return "\n".join(lines)


for q in ku_qs:
    print(ama_story(q, answers[demo_qs.index(qa[q.id])]), "\n")

# %%
# NBVAL_CHECK_OUTPUT
from workbench.eval.mechanisms import census

rows = [{"method": "ama", "qa_id": q.id, "answer": a.to_dict(), "params": ama.get_params()}
        for q, a in zip(demo_qs, answers)]
entry = census(rows)["methods"]["ama"]
counts, why = entry["counts"], entry["why_zero"]
all_ingest = Counter(v for vs in ingest_verdict.values() for v in vs)
print(f"question time: Judge verdicts {counts['query_verdicts']}; {counts['retry_expansions']} retries, "
      f"{counts['updates_at_question']} updates, {counts['deletes_at_question']} deletes")
print(f"ingestion: conflict-check verdicts {dict(all_ingest)} over {sum(all_ingest.values())} checks")
if set(counts["query_verdicts"]) == {"Pass"} and set(all_ingest) <= {"Pass"}:
    print("-> the Judge answered Pass on every check, so Retry and the Refresher never ran: every answer came from "
          "the first retrieval, and the renamed dog was never updated in memory")
elif set(counts["query_verdicts"]) == {"Retry"}:
    print(f"-> the Judge passed no retrieval: every question ran its {ama.k_r} Retry rounds, and each answer was "
          "written from what the last round found")

# %%
q = qa["sample-1/q4"]
a = answers[demo_qs.index(q)]
from widgets import TraceStepper

TraceStepper(a, conversation=conv, qa=q, memories=ama.memories())

# %% [markdown]
# ## 4. Judge verdicts, retries and refreshes
#
# `AMA.summary_stats` counts them from the traces alone.

# %%
# NBVAL_CHECK_OUTPUT
from workbench.methods import AMA

AMA.summary_stats(answers)

# %%
query_log = [r for r in ama.refresh_log(answers) if r["phase"] == "query"]
pd.DataFrame(query_log) if query_log else "no Refresh verdict at question time"

# %% [markdown]
# The full timeline, construction and question time together:

# %%
EventTimeline(ama)

# %% [markdown]
# ## 5. The paper's Judge on the same conversation
#
# `ama[paper-judge]` is the same AMA with the paper's ingestion Judge (`conflict_check="judge"`), built from
# the same recording. The cell counts both runs' ingestion verdicts and Refresher edits, then asks the
# questions in the recorded order (a Refresh at question time edits memory, so the order matters) and sets
# the two runs' answers to the knowledge-update questions side by side.

# %%
# NBVAL_CHECK_OUTPUT
paper = demo_methods(llm, emb, ["ama[paper-judge]"])["ama[paper-judge]"].ingest(conv)
paper_verdicts = Counter(s.data["verdict"] for steps in paper.turn_steps_.values() for s in steps
                         if s.kind == "judge")
paper_edits = [e for e in paper.events if e.kind in ("UPDATE", "DELETE")]
print(f"paper's Judge:   {sum(paper_verdicts.values())} ingestion checks, verdicts {dict(paper_verdicts)}, "
      f"{len(paper_edits)} UPDATE/DELETE")
print(f"question probes: {sum(verdict_counts.values())} ingestion checks, verdicts {dict(verdict_counts)}, "
      f"{len(edits)} UPDATE/DELETE")
paper_answers = [paper.answer(q.question, now=question_time(paper, q)) for q in demo_qs]
for q in ku_qs:
    i = demo_qs.index(qa[q.id])
    print(f"{q.id} {q.question!r} gold {q.answer!r}\n  probes: {answers[i].text[:80]!r}"
          f"\n  paper's Judge: {paper_answers[i].text[:80]!r}")

# %%
EventTimeline(paper).set_filter(kinds=["UPDATE", "DELETE"]) if paper_edits else "the paper's Judge made no edit"

# %% [markdown]
# The last cell is a guard. A cache miss means a prompt changed since the cassette was recorded; the
# method records the failed call and takes its fallback, so its results would drift away from the
# recording without an error. Re-record with `workbench demo --record` after changing a method.

# %%
# NBVAL_CHECK_OUTPUT
calls = llm.ledger.frame()
misses = int(calls["error"].fillna("").str.startswith("CacheMiss").sum())
print(f"{int(calls['cached'].sum())} LLM calls replayed from the cassette, {misses} cache misses")
