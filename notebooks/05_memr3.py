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
# # 05 · MemR3: a reflective retrieval loop over any memory
#
# **MemR3** (Du, Li, Zhang, Song, *MemR3: Memory Retrieval via Reflective Reasoning*, arXiv 2512.20237) stores
# nothing itself: it drives the retriever of another memory. One router call per iteration updates an
# *evidence-gap state* (verified facts and what is still missing) and picks retrieve (with a refinement
# query Δq), reflect, or answer. Retrieval uses q + Δq and masks everything already seen; three guards bound
# the loop: at most `n_max`=5 iterations, at most `n_cap`=1 reflect in a row, and a forced reflect after an
# empty retrieval. Each retrieval returns `n_chk`=5 snippets. The final answer is written from the evidence
# and the draft only. The default backend is Naive RAG over 256-token windows, the paper's chunked-RAG setting.

# %% [markdown]
# ## 0. How it works, on a conversation written for it
#
# Before the demo, the method's signature mechanism on a short conversation of the mechanism gallery, written so
# that the mechanism has one right outcome (`sample_data/gallery_conversations.json`, its planted turns in
# `sample_data/annotations.json`). The page below is the app's "How it works" page: what the method does, its
# pipeline, the conversation with the planted turns marked, the right outcome beside what the model did, and
# whether the mechanism did the right thing, checked against the planted turns. Every reply is replayed from
# `sample_data/cassettes/gallery/memr3.jsonl`, recorded with Qwen2.5-Coder-1.5B; nothing is scripted.

# %% [markdown]
# **First, the designed run** (issue #64): the method's own code -- its paper profile, embedder, index, thresholds and
# control flow -- on replies a person wrote for each prompt it sends (`sample_data/reference/memr3.<example>.json`).
# It is *reference replies written by hand, not a model*: it shows what the paper's path does when every reply is
# right, and it is counted in no accuracy or census of a model run. A method whose example has no reference file yet
# says so here and skips it.

# %%
from widgets.designed_view import replay

page = replay("memr3")
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
memr3 = demo_methods(llm, emb, ["memr3"])["memr3"]
{k: memr3.get_params()[k] for k in ("n_chk", "n_max", "n_cap", "mask", "delta_query", "reflect")}

# %% [markdown]
# ## 1. Build
#
# Ingesting MemR3 ingests (a clone of) its backend; here that needs no LLM.

# %%
# NBVAL_CHECK_OUTPUT
memr3.ingest(conv)
print(memr3.backend_, "|", len(memr3.memories()), "chunks")

# %% [markdown]
# ## 2. Answer the demo questions

# %%
from widgets.tables import answers_frame, router_actions as actions

from workbench.eval.harness import question_time  # the question date where the method's paper uses one
answers = [memr3.answer(q.question, now=question_time(memr3, q)) for q in demo_qs]
answers_frame(demo_qs, answers, actions=actions)

# %%
# NBVAL_CHECK_OUTPUT
for q, a in zip(demo_qs, answers):
    print(f"{q.id:12} {' '.join(map(str, actions(a))):40} {a.text[:70]!r}")

# %% [markdown]
# ### What happened, question by question
#
# The lines below are written by the cell from the recorded traces, not typed in: for each question,
# which router steps the model decided and which a guard decided (`router_cause`, the rule the census
# uses), what the retrievals added, whether the chunk holding the gold turn was ever seen, and what ended
# the loop. Read them next to the guards in the introduction: with `n_cap`=1 a reflect is followed by a
# forced retrieve whenever unseen chunks remain, and once every chunk of the backend is masked the
# `nothing_left` guard decides instead of the model.

# %%
# NBVAL_CHECK_OUTPUT
from collections import Counter

from workbench.eval.mechanisms import router_cause

chunks = memr3.memories()
holders = {r.id: set(r.source_ids) for r in chunks.itertuples()}


def memr3_story(q, a):
    routers = [s.data for s in a.steps if s.kind == "router"]
    causes = [router_cause(d) for d in routers]
    seen = [i for s in a.steps if s.kind == "retrieve" for i in s.data.get("retrieved_ids", [])]
    gold = sorted(c for c, turns in holders.items() if turns & set(q.evidence))
    later = [s.data for s in a.steps if s.kind == "retrieve" and s.data.get("iteration", 0)]
    lines = [f"{q.id}: {q.question!r} gold {q.answer!r}, answered {a.text[:60]!r}"]
    chose = Counter(d["action"] for d, c in zip(routers, causes) if c == "choice")
    forced = [f"{c} -> {d['action']}" for d, c in zip(routers, causes) if c != "choice"]
    lines.append(f"  {len(routers)} router steps: the model chose {dict(chose) or 'nothing'}; "
                 f"decided for it: {', '.join(forced) or 'none'}")
    failed = [d for d in routers if d.get("error")]
    if failed:
        guarded = sum(router_cause(d) != "fallback" for d in failed)
        lines.append(f"  {len(failed)} router call(s) returned no usable JSON ({failed[0]['error'].split(':')[0]}) "
                     f"and kept the previous evidence; {len(failed) - guarded} took the fallback action (reflect), "
                     f"{guarded} the action a guard imposed anyway")
    lines.append(f"  retrievals: the first brought {len(seen) - sum(len(d['retrieved_ids']) for d in later)} chunks, "
                 f"{len(later)} later one(s) {[len(d['retrieved_ids']) for d in later]} more; "
                 f"{len(set(seen))} of {len(holders)} chunks seen")
    if gold:
        rank = next((k for k, c in enumerate(seen, 1) if c in gold), None)
        lines.append(f"  gold turn(s) {list(q.evidence)} lie in {gold}: "
                     + (f"seen as chunk #{rank} of this question" if rank else "never retrieved"))
    evidence = routers[-1].get("evidence", []) if routers else []
    gaps = routers[-1].get("gaps", []) if routers else []
    lines.append(f"  the answer call got {len(evidence)} evidence bullet(s) and {len(gaps)} gap(s); "
                 f"the loop ended by {causes[-1] if causes else 'no router step'}")
    return "\n".join(lines)


for q, a in list(zip(demo_qs, answers))[:2]:
    print(memr3_story(q, a), "\n")

# %% [markdown]
# The same rule over all demo questions, through the mechanism census (`workbench.eval.mechanisms.census`,
# which the app header and `workbench mechanisms RUN_DIR` use), fed the notebook's answers as result rows:

# %%
# NBVAL_CHECK_OUTPUT
from workbench.eval.mechanisms import census

rows = [{"method": "memr3", "qa_id": q.id, "answer": a.to_dict(), "params": memr3.get_params()}
        for q, a in zip(demo_qs, answers)]
counts = census(rows)["methods"]["memr3"]["counts"]
ended = Counter(router_cause([s.data for s in a.steps if s.kind == "router"][-1]) for a in answers)
decided = {k: counts[f"router_{k}"] for k in ("choice", "budget", "empty_retrieval", "reflect_streak",
                                              "nothing_left", "fallback") if counts[f"router_{k}"]}
print(f"{counts['router_steps']} router steps over {counts['questions']} questions, decided by: {decided}")
print(f"the final answer was triggered by: {dict(ended)}")
print(f"{counts['router_call_failures']} router calls failed to parse; {counts['gaps_opened']} gaps opened, "
      f"{counts['retrievals']} retrievals after the first")
if ended.get("choice", 0) < len(answers):
    print(f"-> in {len(answers) - ended.get('choice', 0)} of {len(answers)} questions the model never chose to answer: "
          "a guard ran out the loop, so these answers say more about the guards than about the router")

# %% [markdown]
# ## 3. The evidence-gap state
#
# `EvidenceGapView` is the trace stepper of the app's Traces tab, stopping only at router steps. Each stop
# is one iteration: the evidence bullets and the gaps after the router call, as a diff against the call
# before (+ added or opened, − dropped or closed), the action and whether the model or a guard chose it,
# and the query sent to the next retrieval. The waterfall above the slider lists every step, retrievals
# included; `TraceStepper` with the same arguments stops at all of them. It opens the answer with the
# most router iterations.

# %%
from widgets import EvidenceGapView

i = max(range(len(answers)), key=lambda i: len(actions(answers[i])))
print(demo_qs[i].id, demo_qs[i].question)
EvidenceGapView(answers[i], conversation=conv, qa=demo_qs[i])

# %% [markdown]
# ## 4. Iterations and guards
#
# `MemR3.summary_stats` (from the traces): iterations per question, guard use, fallbacks.

# %%
# NBVAL_CHECK_OUTPUT
from workbench.methods import MemR3

MemR3.summary_stats(answers)

# %% [markdown]
# **Did the evidence-gap state ever hold a gap?** The gaps are what makes MemR3 more than a retrieve
# loop: the router is asked to list what is still missing and to close those items with later retrievals,
# and a retrieval's refinement query Δq is meant to target a gap. The cell counts, from the recorded
# traces, the router steps that listed a gap or an evidence bullet, and where the retrieval queries came
# from (`delta_source` of each router step that retrieved: `llm` when the router wrote Δq itself,
# `first_gap` when Δq fell back to the first open gap, `question` when there was neither and q went alone).

# %%
# NBVAL_CHECK_OUTPUT
from IPython.display import Markdown

from workbench.methods.census_kit import gap_in_reasoning
from workbench.words import counted

routers = [(q.id, s.data) for q, a in zip(demo_qs, answers) for s in a.steps if s.kind == "router"]
with_gap = [(qid, d["gaps"]) for qid, d in routers if d.get("gaps")]
with_evidence = sum(bool(d.get("evidence")) for _, d in routers)
sources = Counter(str(d.get("delta_source") or "none recorded") for _, d in routers if d.get("action") == "retrieve")
text = (f"{len(with_gap)} of the {len(routers)} router steps listed a gap and {with_evidence} listed evidence; "
        f"the census above counted {counts['gaps_opened']} gaps opened. "
        f"{'The router step' if sum(sources.values()) == 1 else f'The {sum(sources.values())} router steps'} "
        f"that retrieved took {'its' if sum(sources.values()) == 1 else 'their'} query from: "
        + ", ".join(f"{src} ({n})" for src, n in sources.most_common()) + ".")
first_seen = [len(next(s for s in a.steps if s.kind == "retrieve").data.get("retrieved_ids", [])) for a in answers]
if not with_gap:
    text += (" With no gap ever listed, no retrieval could aim at one: in this recording the evidence-gap "
             "state is an evidence list only, and the router card's gap diff stays empty. What the router had in "
             f"hand at its first step: the backend cuts this short slice into {len(chunks)} chunks of "
             f"{memr3.backend_.chunk_tokens} tokens, and the first retrieval brought up to {max(first_seen)} of them, "
             f"{max(first_seen) / len(chunks):.0%} of the conversation (on a whole LoCoMo conversation of about "
             "25,000 tokens the same five chunks are about 5 %).")
else:
    text += " First listed gaps: " + "; ".join(f"{qid}: {gaps}" for qid, gaps in with_gap[:5]) + "."
# a gap the model named in its reasoning but left out of the list (the list is what the controller acts on)
prose = [(qid, gap_in_reasoning(d.get("reasoning"))) for qid, d in routers if not d.get("gaps")]
prose = [(qid, said) for qid, said in prose if said]
if prose:
    text += (f" Yet in {counted(len(prose), 'router step')} the reasoning names a gap that the list leaves out, e.g. "
             f"{prose[0][0]}: “{prose[0][1]}”: the model saw what was missing and did not write it where the "
             "controller reads it.")
Markdown(text)

# %% [markdown]
# ## 5. The mask, without an LLM
#
# The controller asks the backend's retriever for new items only. The same search with the first hits
# excluded returns the next ones:

# %%
# NBVAL_CHECK_OUTPUT
retriever = memr3.as_retriever()
first = retriever.search(demo_qs[0].question, 3)
more = retriever.search(demo_qs[0].question, 3, exclude=frozenset(h.unit_id for h in first))
print([h.unit_id for h in first], "->", [h.unit_id for h in more])

# %% [markdown]
# ## 6. MemR3 over another memory
#
# Any method with `as_retriever()` can be the backend; `retriever_options` are passed to it. These calls are
# not in the demo cassette (other prompts), so they are shown here without being run; with a live model
# (`demo_llm()` or an API model, see notebook 00) they work as written:
#
# ```python
# from workbench.methods import MemR3, HyMem, AMA
#
# over_hymem = MemR3(llm=llm, backend=HyMem(llm=llm, embedder=emb), retriever_options={"level": "L2"})
# over_ama = MemR3(llm=llm, backend=AMA(llm=llm, embedder=emb), retriever_options={"store": "fact"})
# ans = over_hymem.ingest(conv).answer(q.question, now=q.time)
# ```
#
# The backend is built once by `ingest` (its own construction cost is counted in MemR3's), and the
# controller's masking needs only that the retriever honours `exclude`.

# %% [markdown]
# The last cell is a guard. A cache miss means a prompt changed since the cassette was recorded; the
# method records the failed call and takes its fallback, so its results would drift away from the
# recording without an error. Re-record with `workbench demo --record` after changing a method.

# %%
# NBVAL_CHECK_OUTPUT
calls = llm.ledger.frame()
misses = int(calls["error"].fillna("").str.startswith("CacheMiss").sum())
print(f"{int(calls['cached'].sum())} LLM calls replayed from the cassette, {misses} cache misses")
