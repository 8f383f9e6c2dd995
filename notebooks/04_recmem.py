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
# # 04 · RecMem: consolidate only what recurs
#
# **RecMem** (Dai et al., *RecMem: Recurrence-based Memory Consolidation*, ACL 2026 Findings; code
# github.com/CaiusDai/RecMem) avoids calling the LLM on every turn. Each exchange is embedded into a
# *subconscious* buffer with no LLM call. Only when a new exchange has enough similar buffered neighbours
# (at least `theta_count` units, itself included, above cosine `theta_sim`) is the cluster written up as
# episodes, and each episode is refined into atomic facts; a new exchange close to an existing episode is
# merged into it first. Answers draw top-k from all three stores (`k_sub`=10, `k_epi`=5, facts 2·k_epi).
# The paper's thresholds (0.7 / 5 on LoCoMo) are cosines of text-embedding-3-small; another encoder spreads
# its cosines differently, so the demo sets its own for the offline MiniLM encoder (printed below;
# section 3 replays the gate at both).

# %% [markdown]
# ## 0. How it works, on a conversation written for it
#
# Before the demo, the method's signature mechanism on a short conversation of the mechanism gallery, written so
# that the mechanism has one right outcome (`sample_data/gallery_conversations.json`, its planted turns in
# `sample_data/annotations.json`). The page below is the app's "How it works" page: what the method does, its
# pipeline, the conversation with the planted turns marked, the right outcome beside what the model did, and
# whether the mechanism did the right thing, checked against the planted turns. Every reply is replayed from
# `sample_data/cassettes/gallery/recmem.jsonl`, recorded with Qwen2.5-Coder-1.5B; nothing is scripted.

# %% [markdown]
# **First, the designed run** (issue #64): the method's own code -- its paper profile, embedder, index, thresholds and
# control flow -- on replies a person wrote for each prompt it sends (`sample_data/reference/recmem.<example>.json`).
# It is *reference replies written by hand, not a model*: it shows what the paper's path does when every reply is
# right, and it is counted in no accuracy or census of a model run. A method whose example has no reference file yet
# says so here and skips it.

# %%
from widgets.designed_view import replay

page = replay("recmem")
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
recmem = demo_methods(llm, emb, ["recmem"])["recmem"]
{k: recmem.get_params()[k] for k in ("theta_sim", "theta_count", "gate_k", "k_sub", "k_epi", "k_sem")}

# %% [markdown]
# ## 1. Build: what happened to each exchange

# %%
# NBVAL_CHECK_OUTPUT
recmem.ingest(conv)
recmem.consolidation_summary()

# %%
from IPython.display import display

mem = recmem.memories()
display(mem["kind"].value_counts().to_frame())
mem[mem["kind"] == "episode"][["id", "text", "source_ids"]]

# %%
mem[mem["kind"] == "fact"][["id", "text", "source_ids"]].head(10)

# %% [markdown]
# ## 2. Construction cost against an eager extractor
#
# `construction_breakdown()` splits RecMem's construction calls by operation. **EagerFloor** is the
# comparison point: one short fact-extraction call per exchange, whatever it contains. It is a lower bound
# on eager construction cost, not Mem0 itself (Mem0 also makes an update call per extracted fact against
# the memories it retrieves; `mem0_style` does that).

# %%
import pandas as pd

pd.DataFrame(recmem.construction_breakdown()).T

# %%
# NBVAL_CHECK_OUTPUT
eager = demo_methods(llm, emb, ["eager_floor"])["eager_floor"].ingest(conv)
rec_tokens = recmem.construction_breakdown()["total"]["total_tokens"]
eager_tokens = eager.construction_usage_.total_tokens
print(f"RecMem: {recmem.construction_calls_} calls, {rec_tokens} tokens")
print(f"EagerFloor: {eager.construction_calls_} calls, {eager_tokens} tokens")
print(f"RecMem / EagerFloor construction tokens: {rec_tokens / eager_tokens:.2f}")

# %% [markdown]
# The paper reports RecMem at a fraction of an eager extractor's construction tokens (up to 87% less than
# Mem0 on LoCoMo). RecMem makes fewer calls, but each consolidation prompt carries a whole cluster (and
# refinement its nearest facts too), so the balance also depends on how long the model's episodes are and
# how often its replies need a repair or a retry. Per prompt role, the repairs and retries show up
# separately:

# %%
from IPython.display import Markdown, display

by_role = pd.DataFrame(recmem.construction_breakdown(by="role")).T
display(by_role)
extra = by_role[[("repair" in r or "retry" in r) for r in by_role.index.astype(str)]]
Markdown(f"Here RecMem used {rec_tokens / eager_tokens:.2f}× EagerFloor's construction tokens in "
         f"{recmem.construction_calls_} calls against {eager.construction_calls_}; "
         + (f"repairs and retries took {int(extra['calls'].sum())} of its calls and "
            f"{int(extra['total_tokens'].sum())} of its tokens." if len(extra) else "no call was a repair or a retry."))

# %% [markdown]
# ## 3. The recurrence gate
#
# `replay()` re-runs the gate from the stored exchange embeddings without any LLM. With the live thresholds
# (and the live run's merges and failures taken as given) it should reproduce the recorded decisions; the
# cell checks that it does.

# %%
# NBVAL_CHECK_OUTPUT
replayed = recmem.replay()
print("replay matches the live run:", [d.outcome for d in replayed] == [d.outcome for d in recmem.trigger_log_])
decisions = pd.DataFrame([d.to_dict() for d in replayed])
decisions["outcome"].value_counts().to_frame()

# %%
decisions[decisions["fired"]][["unit_id", "position", "count", "relevant_ids", "outcome"]]

# %% [markdown]
# With other thresholds the replay shows what the gate alone would do (every unit reaches the gate and
# every consolidation succeeds: merges cannot be re-decided without the LLM). The demo's (the shipped MiniLM
# calibration), one step between, and the paper's (set for text-embedding-3-small):

# %%
# NBVAL_CHECK_OUTPUT
from workbench.methods.recmem.trigger import trigger_rate

for theta_sim, theta_count in [(recmem.theta_sim, recmem.theta_count), (0.65, 5), (0.7, 5)]:
    gate = recmem.replay(theta_sim, theta_count, live_merges=False, live_failures=False)
    print(f"theta_sim={theta_sim} theta_count={theta_count}: {sum(d.fired for d in gate)} triggers, "
          f"rate {trigger_rate(gate):.2f}")

# %% [markdown]
# ## 4. Answer a question
#
# One prompt with hits from all three stores.

# %%
# NBVAL_CHECK_OUTPUT
q = qa["sample-1/q0"]
from workbench.eval.harness import question_time  # the question date where the method's paper uses one
ans = recmem.answer(q.question, now=question_time(recmem, q))
print("Q:", q.question, "| gold:", q.answer)
print("A:", ans.text)
print({s.data.get("layer"): len(s.hits) for s in ans.steps if s.kind == "retrieve"})

# %% [markdown]
# ### What happened to the gold turn
#
# Written by the cell from the trigger log and the trace: did the exchange holding the gold turn recur
# often enough to be consolidated, and from which stores did the answer prompt get material from that
# turn (rank per store)? An exchange the gate never fires on can still be found, but only as raw buffer
# text; the episode and fact layers know nothing of it.

# %%
# NBVAL_CHECK_OUTPUT
src = {r.id: set(r.source_ids) for r in mem.itertuples()}
gold = set(q.evidence)
print(f"{q.id}: {q.question!r} gold {q.answer!r} (turn {', '.join(q.evidence)}), answered {ans.text[:70]!r}")
for d in recmem.trigger_log_:
    if src.get(d.unit_id, set()) & gold:
        print(f"  gate at {d.unit_id}: {d.count} similar buffered unit(s) against theta_count={recmem.theta_count} "
              f"-> {'fired' if d.fired else 'did not fire'}, outcome {d.outcome!r}")
for kind in ("episode", "fact"):
    holders = sorted(i for i, t in src.items() if t & gold and mem.loc[mem["id"] == i, "kind"].iloc[0] == kind)
    print(f"  {kind}s built from the gold turn: {holders or 'none'}")
for s in (s for s in ans.steps if s.kind == "retrieve"):
    ranks = [k for k, h in enumerate(s.hits, 1) if set(h.source_ids) & gold]
    print(f"  {s.data.get('layer')}: {len(s.hits)} hits, gold-turn hits at rank(s) {ranks or 'none'}")

# %%
from workbench.methods import RecMem

RecMem.summary_stats([ans])

# %% [markdown]
# ## 5. Clusters and thresholds
#
# `ClusterView` projects the exchange embeddings and colours them by outcome; the sliders move
# `theta_sim` and `theta_count` and replay the gate (no LLM).

# %%
from widgets import ClusterView

clusters = ClusterView(recmem)
clusters.set_thresholds(0.7, 5)
print("triggers at 0.7 / 5:", clusters.trigger_count)
clusters.set_thresholds(recmem.theta_sim, recmem.theta_count)
print(f"triggers at {recmem.theta_sim} / {recmem.theta_count}:", clusters.trigger_count)
clusters

# %% [markdown]
# The last cell is a guard. A cache miss means a prompt changed since the cassette was recorded; the
# method records the failed call and takes its fallback, so its results would drift away from the
# recording without an error. Re-record with `workbench demo --record` after changing a method.

# %%
# NBVAL_CHECK_OUTPUT
calls = llm.ledger.frame()
misses = int(calls["error"].fillna("").str.startswith("CacheMiss").sum())
print(f"{int(calls['cached'].sum())} LLM calls replayed from the cassette, {misses} cache misses")
