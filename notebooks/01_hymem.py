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
# # 01 · HyMem: two memory levels and a light/deep scheduler
#
# **HyMem** (Zhao et al., *HyMem: Hybrid Memory Architecture with Dynamic Retrieval Scheduling*,
# arXiv 2602.13933) keeps a conversation at two resolutions. The dialogue is cut into topic events whose
# raw text is **Level-2**; an LLM condenses each event into short key-information sentences, the
# embedded **Level-1**, each linked back to its event. Answering is a loop of at most `max_rounds` (T)
# rounds: a cheap **light** module answers from the cosine top-`top_k` (k=10) Level-1 items or asks to
# escalate; only then a **deep** module takes the top-`deep_top_n` (N=30) candidates, lets the LLM pick
# the relevant ones in batches of `batch_size` (d=10), and answers from their raw Level-2 events; a
# **reflection** step decides whether to stop or to retry with a rewritten query. In the paper about 78% of
# LoCoMo questions never reach the deep module (deep ratio 0.22 at k=10); section 4 measures it here.

# %% [markdown]
# ## 0. How it works, on a conversation written for it
#
# Before the demo, the method's signature mechanism on a short conversation of the mechanism gallery, written so
# that the mechanism has one right outcome (`sample_data/gallery_conversations.json`, its planted turns in
# `sample_data/annotations.json`). The page below is the app's "How it works" page: what the method does, its
# pipeline, the conversation with the planted turns marked, the right outcome beside what the model did, and
# whether the mechanism did the right thing, checked against the planted turns. Every reply is replayed from
# `sample_data/cassettes/gallery/hymem.jsonl`, recorded with Qwen2.5-Coder-1.5B; nothing is scripted.

# %% [markdown]
# **First, the designed run** (issue #64): the method's own code -- its paper profile, embedder, index, thresholds and
# control flow -- on replies a person wrote for each prompt it sends (`sample_data/reference/hymem.<example>.json`).
# It is *reference replies written by hand, not a model*: it shows what the paper's path does when every reply is
# right, and it is counted in no accuracy or census of a model run. A method whose example has no reference file yet
# says so here and skips it.

# %%
from widgets.designed_view import replay

page = replay("hymem")
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
hymem = demo_methods(llm, emb, ["hymem"])["hymem"]
{k: hymem.get_params()[k] for k in ("top_k", "deep_top_n", "batch_size", "max_rounds", "segmentation", "levels")}

# %% [markdown]
# ## 1. Build
#
# Segmentation (one call per session) and one summary call per event.

# %%
# NBVAL_CHECK_OUTPUT
from IPython.display import display

hymem.ingest(conv)
mem = hymem.memories()
print("construction:", hymem.construction_calls_, "calls,", hymem.construction_usage_.total_tokens, "tokens")
display(mem["kind"].value_counts().to_frame())

# %% [markdown]
# ### Level-2: the raw topic events

# %%
level2 = mem[mem["kind"] == "L2"]
level2[["id", "topic", "segment", "source_ids", "level1_ids"]]

# %% [markdown]
# ### Level-1: key information, each linked to one event
#
# The link is many-to-one: several Level-1 items point to the same event.

# %%
level1 = mem[mem["kind"] == "L1"]
level1[["id", "event_id", "text"]].head(12)

# %%
event = level2.iloc[1]
print(event["id"], "| turns", event["source_ids"], "\n")
print(event["text"][:600], "\n")
for _, row in level1[level1["event_id"] == event["id"]].iterrows():
    print(" ", row["id"], "->", row["text"])

# %% [markdown]
# **What the recorded model wrote.** The summary prompt asks for short key-information sentences, under
# the JSON key the paper's prompt B.1 uses, `keywords`. Counted from the recording: how many Level-1 items
# are bare keywords (three words or fewer after the date). A keyword such as "Tomasz" or "allotment" says
# little on its own, so the light module answers from topics and names, and the words of the turn itself
# are read only on the deep path, from the Level-2 event.

# %%
# NBVAL_CHECK_OUTPUT
words = level1["text"].str.replace(r"^\[[^\]]*\]\s*", "", regex=True).str.split().str.len()
print(f"{len(level1)} Level-1 items from {len(level2)} events: {int((words <= 3).sum())} of three words or fewer, "
      f"median {words.median():.0f} words, longest {words.max()}")

# %% [markdown]
# ## 2. Answer the demo questions
#
# Each answer's trace says which modules ran. The table lists the tiers per round
# (`L` light, `D` deep) and whether reflection accepted the answer.

# %%
from widgets.tables import answers_frame, tiers

from workbench.eval.harness import question_time  # the question date where the method's paper uses one
answers = [hymem.answer(q.question, now=question_time(hymem, q)) for q in demo_qs]
answers_frame(demo_qs, answers, tiers=tiers)

# %%
# NBVAL_CHECK_OUTPUT
for q, a in zip(demo_qs, answers):
    print(f"{q.id:12} {tiers(a):8} {a.text[:90]!r}")

# %% [markdown]
# ### What happened, question by question
#
# Written by the cell from the traces: per round, the light module's verdict (`finished` 0 = answerable,
# 2 = escalate), whether the deep module ran, what reflection said and whether its rewritten query differed
# from the question; and where the Level-1 item leading to the gold turn ranked in the light retrieval.
# The light verdict is the one gate to the deep path (a model that always claims it can answer keeps HyMem
# on the cheap path whatever the context holds), and reflection is the one way out of the loop before the
# round limit.

# %%
# NBVAL_CHECK_OUTPUT
event_turns = {r.id: set(r.source_ids) for r in level2.itertuples()}
l1_event = dict(zip(level1["id"], level1["event_id"]))


def hymem_story(q, a):
    lines = [f"{q.id}: {q.question!r} gold {q.answer!r}, answered {a.text[:60]!r}"]
    gold_l1 = {i for i, e in l1_event.items() if event_turns.get(e, set()) & set(q.evidence)}
    reflections = {s.data["round"]: s.data for s in a.steps if s.kind == "reflect"}
    deeps = {s.data.get("round") for s in a.steps if s.kind == "deep"}
    for s in (s for s in a.steps if s.kind == "light"):
        d, r = s.data, s.data["round"]
        rank = next((k for k, i in enumerate(d["retrieved"], 1) if i in gold_l1), None)
        refl = reflections.get(r, {})
        if refl.get("done") is False:
            verdict = ("rejected it, new query " + ("identical to the question" if refl.get("new_query") == q.question
                                                    else repr(refl.get("new_query"))))
        else:
            verdict = "accepted it" if refl else "was not asked"
        esc_text = "escalate" if d.get("escalate") else "no escalation"
        lines.append(f"  round {r}: light finished={d['finished']} ({esc_text}), "
                     f"gold-linked Level-1 item at rank {rank or 'none'} of {len(d['retrieved'])}; "
                     f"deep {'ran' if r in deeps else 'not run'}; reflection {verdict}")
    final = next(s.data for s in a.steps if s.kind == "final")
    lines.append(f"  returned the {final['tier']} answer of round {final['round']}"
                 + (" because the round limit was hit" if final.get("round_limit_hit") else ""))
    return "\n".join(lines)


# the answer with the most rounds, and the first other one
most = max(range(len(answers)), key=lambda i: len(answers[i].steps))
for i in sorted({most, next(k for k in range(len(answers)) if k != most)}):
    print(hymem_story(demo_qs[i], answers[i]), "\n")

# %% [markdown]
# Over all demo questions, through the mechanism census (the counts the app header shows), fed the
# notebook's answers as result rows:

# %%
# NBVAL_CHECK_OUTPUT
from workbench.eval.mechanisms import census

rows = [{"method": "hymem", "qa_id": q.id, "answer": a.to_dict(), "params": hymem.get_params()}
        for q, a in zip(demo_qs, answers)]
entry = census(rows)["methods"]["hymem"]
counts, why = entry["counts"], entry["why_zero"]
print(f"{counts['deep_questions']} of {counts['questions']} questions went deep"
      + (f" ({why['deep_questions']})" if "deep_questions" in why else ""))
print(f"{counts['reflection_rounds']} reflections, {counts['reflections_continued']} asked for another round; "
      f"{counts['round_limit_hits']} questions stopped at the round limit")
same = sum(s.data.get("new_query") == q.question for q, a in zip(demo_qs, answers)
           for s in a.steps if s.kind == "reflect" and s.data.get("done") is False)
repeats = [(a.steps[k].data["retrieved"], a.steps[k].data["answer"]) for a in answers
           for k in range(len(a.steps)) if a.steps[k].kind == "light" and a.steps[k].data["round"] > 0]
unchanged = sum(r == prev for a in answers for r, prev in zip(
    [(s.data["retrieved"], s.data["answer"]) for s in a.steps if s.kind == "light"][1:],
    [(s.data["retrieved"], s.data["answer"]) for s in a.steps if s.kind == "light"]))
if counts["reflections_continued"]:
    print(f"-> {same} of the {counts['reflections_continued']} retries re-asked the original question unchanged; "
          f"{unchanged} of the {len(repeats)} repeated rounds retrieved the same Level-1 items "
          "and gave the same answer")

# %% [markdown]
# Were those decisions right? Given the questions (`conversations=`), the census checks each step's own decision
# against the question's gold (`workbench.eval.decisions`): a light round that stopped is right when its answer is
# right, an escalation when it was wrong; a reflection's "complete" likewise.

# %%
# NBVAL_CHECK_OUTPUT
from workbench.eval.decisions import tally_text

rows_c = [{**r, "conv_id": conv.id} for r in rows]
print(tally_text(census(rows_c, conversations={conv.id: conv})["methods"]["hymem"].get("decisions") or {})
      or "no decision could be checked")

# %% [markdown]
# ## 3. Step through one answer
#
# The stepper opens the first answer whose trace reached the deep module (its candidate batches, the
# Level-1 items each batch selected and the Level-2 events read), or, when none did, the answer with the
# longest trace. Every round shows the light retrieval and its verdict, then reflection; a closing `final`
# step says which round's answer was returned. Given the question (`qa=q`), the light and reflection cards
# also say whether their decision was right: the answer they decided on, checked against the gold with the
# checker every verdict uses ("✗ escalation not needed: the light answer is already right").

# %%
from IPython.display import Markdown, display

from widgets import TraceStepper

went_deep = [i for i, a in enumerate(answers) if "D" in tiers(a)]
i = went_deep[0] if went_deep else most
q, a = demo_qs[i], answers[i]
why = ("the first answer that reached the deep module" if went_deep else
       f"no answer reached the deep module, so the one with the longest trace ({len(tiers(a).split())} rounds)")
display(Markdown(f"Shown: **{q.id}** ({q.question}), {why}. Its steps: {', '.join(s.kind for s in a.steps)}."))
# memories: the deep candidates past the few whose text the trace keeps are shown with their text too
TraceStepper(a, conversation=conv, qa=q, memories=mem)

# %%
deep = next((s for s in a.steps if s.kind == "deep"), None)
{k: deep.data.get(k) for k in ("candidates", "selected", "level2")} if deep else "no deep step in this answer"

# %% [markdown]
# ## 4. How often did it go deep?
#
# `HyMem.summary_stats` reads only the traces (paper Table 3's deep ratio, plus the per-round variant).

# %%
# NBVAL_CHECK_OUTPUT
from workbench.methods import HyMem

HyMem.summary_stats(answers)

# %% [markdown]
# `as_retriever()` exposes Level-1 search (or `level="L2"`: search Level-1, return the events); MemR3 can
# drive it (notebook 05).

# %%
for h in hymem.as_retriever(level="L2").search(demo_qs[0].question, 3):
    print(h.unit_id, "turns", h.source_ids[0], "to", h.source_ids[-1])

# %% [markdown]
# The last cell is a guard. A cache miss means a prompt changed since the cassette was recorded; the
# method records the failed call and takes its fallback, so its results would drift away from the
# recording without an error. Re-record with `workbench demo --record` after changing a method.

# %%
# NBVAL_CHECK_OUTPUT
calls = llm.ledger.frame()
misses = int(calls["error"].fillna("").str.startswith("CacheMiss").sum())
print(f"{int(calls['cached'].sum())} LLM calls replayed from the cassette, {misses} cache misses")
