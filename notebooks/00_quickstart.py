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
# # 00 · Quickstart
#
# This notebook walks through the workbench's basic loop on the project's own sample conversation:
# load a conversation, build a memory, ask a question, and look at what the method did to answer it.
# It uses the two baselines, **Full-Context** (the whole conversation goes into every prompt) and
# **Naive RAG** (one embedded chunk per turn, cosine top-10, one answer call). The method notebooks
# (01-05) then do the same for HyMem, AMA, H-Mem, RecMem and MemR3.

# %% [markdown]
# > **About the answers.** Everything here replays replies of the offline model, Qwen2.5-Coder-1.5B-Instruct,
# > recorded once in `sample_data/cassettes/demo.jsonl`; the same model is the reader, every method's agent
# > and the judge. A 1.5B model still answers poorly and sometimes breaks a method's intended behaviour in
# > small ways, so do not read the scores as the methods' merit. What the notebook is for is the mechanics:
# > what gets stored, what is retrieved, which decisions are taken and what they cost.

# %% [markdown]
# ## 1. Data
#
# `demo_conversation()` is the first sample conversation (Priya and Tomasz), cut to its first few sessions
# (`DEMO.sessions` of the active demo profile, `workbench.demo.DEMO`) so that the offline model could record
# every method's demo on a 2-core machine in an afternoon.

# %%
# NBVAL_CHECK_OUTPUT
from workbench.demo import DEMO, demo_conversation, demo_embedder, demo_llm, demo_methods

llm = demo_llm(mode="replay")   # the committed cassette: every call below is a recorded reply
emb = demo_embedder()           # all-MiniLM-L6-v2 (int8 ONNX), runs offline on the CPU
conv = demo_conversation()      # the first sessions of sample-1 (DEMO.sessions)
qa = {q.id: q for q in conv.qa}
demo_qs = [qa[i] for i in DEMO.questions if i in qa]   # the questions recorded in the cassette
print(conv.id, "|", len(conv.sessions), "sessions,", len(conv.turns), "turns |", len(demo_qs), "demo questions")

# %%
import pandas as pd

pd.DataFrame([{"session": s.id, "date": s.date_text, "turns": len(s.turns)} for s in conv.sessions])

# %% [markdown]
# Every turn keeps its dataset id (`D<session>:<turn>`); methods store these ids as provenance.

# %%
pd.DataFrame([{"id": t.id, "speaker": t.speaker, "text": t.content} for t in conv.sessions[0].turns[:8]])

# %% [markdown]
# The demo questions, with their gold answers and evidence turns (methods never see these):

# %%
# NBVAL_CHECK_OUTPUT
for q in demo_qs:
    gold = q.answer or "(adversarial: not mentioned)"
    print(f"{q.id:12} cat {q.category}  {q.question}  ->  {gold}  {list(q.evidence)}")

# %% [markdown]
# ## 2. Build two memories
#
# `demo_methods(llm, emb)` returns every registered method configured as the demo recorded it: each paper
# method's `small` profile (tuned for the offline models; `profile="paper"` is the paper's own method, the
# default for any other model) with the demo's overrides. Building a method with the same parameters is what
# makes its prompts match the recorded ones.
# `ingest(conversation)` builds the memory (the gold QA is stripped before the method sees it).

# %%
# NBVAL_CHECK_OUTPUT
methods = demo_methods(llm, emb, ["full_context", "naive_rag"])
fc = methods["full_context"].ingest(conv)
rag = methods["naive_rag"].ingest(conv)
print(rag)
print(len(rag.memories()), "chunks,", rag.construction_calls_, "LLM calls to build")

# %% [markdown]
# ## 3. Ask a question
#
# `answer(question, now=...)` returns an `Answer`: the text, the trace steps, the context it was written from
# and the token usage.

# %%
# NBVAL_CHECK_OUTPUT
q = qa["sample-1/q16"]
from workbench.eval.harness import question_time  # the question date where the method's paper uses one
ans = rag.answer(q.question, now=question_time(rag, q))
print("Q:", q.question)
print("A:", ans.text)
print("steps:", [s.kind for s in ans.steps], "| tokens:", ans.usage.total_tokens, "| calls:", ans.usage.calls)
print("gold evidence", list(q.evidence), "retrieved:", [e for e in q.evidence if e in ans.source_ids])

# %%
# NBVAL_CHECK_OUTPUT
ans_fc = fc.answer(q.question, now=question_time(fc, q))
print("A:", ans_fc.text)
print("tokens:", ans_fc.usage.total_tokens, "(the whole conversation is in the prompt)")

# %% [markdown]
# ## 4. The trace
#
# `TraceStepper` steps through the answer's decisions. For Naive RAG there are two: the retrieval
# (hits with scores and their source turns; gold evidence is highlighted) and the answer call (open
# the accordion to read the exact prompt and reply).

# %%
from widgets import TraceStepper

TraceStepper(ans, conversation=conv, qa=q)

# %% [markdown]
# ## 5. What is stored
#
# `memories()` has one row per stored unit, always with its source turn ids.

# %%
rag.memories().head()

# %% [markdown]
# ## 6. What it cost
#
# Every call goes through a ledger tagged with the method, the phase (`construct`, `query`, `judge`) and
# the prompt's role. Replayed calls keep the token counts of the recording.

# %%
llm.ledger.summary().drop(columns="latency_s")

# %% [markdown]
# ## 7. Using a real model
#
# The offline model is only there so that everything runs without a network. For results you care
# about, point the workbench at an OpenAI model or any OpenAI-compatible server (vLLM, Ollama, a
# llama.cpp server). Wrap it in `CachedLLM` so reruns are free and reproducible:
#
# ```python
# from workbench.llm import CachedLLM, default_llm
#
# llm = CachedLLM(default_llm("openai:gpt-4.1-mini"), ".cache/llm.jsonl")                  # needs OPENAI_API_KEY
# llm = CachedLLM(default_llm("openai:qwen2.5@http://127.0.0.1:8000/v1"), ".cache/llm.jsonl")  # local server
# ```
#
# Setting `WORKBENCH_LLM=openai:gpt-4.1-mini` in the environment does the same for `default_llm()` and
# the command line. Changing the model changes every prompt's cache key, so the committed demo cassette
# is not used then. (Those cells are not run here: they would need a network.)

# %% [markdown]
# The last cell is a guard. A cache miss means a prompt changed since the cassette was recorded; the
# method records the failed call and takes its fallback, so its results would drift away from the
# recording without an error. Re-record with `workbench demo --record` after changing a method.

# %%
# NBVAL_CHECK_OUTPUT
calls = llm.ledger.frame()
misses = int(calls["error"].fillna("").str.startswith("CacheMiss").sum())
print(f"{int(calls['cached'].sum())} LLM calls replayed from the cassette, {misses} cache misses")
