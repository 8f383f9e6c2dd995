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
# # 07 · LoCoMo: the benchmark, retrieval without an LLM, and the whole-conversation recordings
#
# LoCoMo (Maharana et al., 2024) has 10 long two-person conversations with about 200 questions each. This
# notebook reads a local copy, shows its statistics and how papers label its question categories, and then
# measures two things that need no language model: how often Naive RAG's top-10 retrieval contains the
# gold evidence turns, and how RecMem's recurrence gate fires over a full conversation. Section 4 reads what the
# recorded whole-conversation runs of the offline model scored, how far each verdict source can be trusted on
# each method's answers, and what each method's mechanism did there.
#
# The benchmark is not part of this repository. Download the public `locomo10.json` from
# github.com/snap-research/locomo (`data/locomo10.json`) and set `LOCOMO_PATH` below to it. By default the
# notebook looks for the project's development copy next to the repository; without a file every cell
# prints a note instead of failing.

# %%
from pathlib import Path

import workbench

REPO = Path(workbench.__file__).resolve().parents[1]
LOCOMO_PATH = REPO.parent / "shared" / "data" / "locomo" / "locomo10_dev.json"   # or .../locomo10.json
CONV_ID = "conv-26"
NOTE = f"note: no LoCoMo file at {LOCOMO_PATH}; set LOCOMO_PATH to the public locomo10.json to run this cell"
print("found" if LOCOMO_PATH.exists() else NOTE)

# %%
import pandas as pd
from IPython.display import display

from workbench.data import CATEGORY_NAMES, load_locomo

data = load_locomo(LOCOMO_PATH) if LOCOMO_PATH.exists() else None
if data is None:
    print(NOTE)
else:
    stats = pd.DataFrame([{"conversation": c.id, "sessions": len(c.sessions), "turns": len(c.turns),
                           "questions": len(c.qa)} for c in data])
    display(stats.set_index("conversation"))
    print("skipped or repaired by the loader:", dict(data.skipped))

# %%
if data is None:
    print(NOTE)
else:
    cats = pd.Series([q.category for q in data.questions]).value_counts().sort_index()
    display(pd.DataFrame({"name": [CATEGORY_NAMES[c] for c in cats.index], "questions": cats.values},
                         index=cats.index.rename("category")))

# %% [markdown]
# ## 1. Which category is which
#
# The integers in the data are labelled differently across papers. The official LoCoMo code uses
# 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial; the mem0 evaluation and HyMem use
# other names for the same integers. The workbench always reports the official names.

# %%
# NBVAL_CHECK_OUTPUT
from workbench.eval.report import category_translation

category_translation().set_index("category")

# %% [markdown]
# ## 2. Retrieval-only evidence recall@10 for Naive RAG
#
# Naive RAG is built over one conversation with the MiniLM embedder. Building it needs no LLM; to make
# sure of that, it gets a replay-only client with an empty cassette, which would raise on any call. Each
# question is then only *searched* (`as_retriever().search`, top 10) and the retrieved turns are compared
# with the gold evidence.

# %%
from workbench.demo import demo_embedder
from workbench.llm import CachedLLM
from workbench.methods import NaiveRAG

emb = demo_embedder()
no_llm = CachedLLM.replay(None, model="no-llm")   # any call would raise CacheMiss
conv = data[CONV_ID] if data is not None else None
if conv is None:
    print(NOTE)
else:
    rag = NaiveRAG(llm=no_llm, embedder=emb, top_k=10).ingest(conv)
    print(CONV_ID, "|", len(conv.sessions), "sessions,", len(conv.turns), "turns,", len(conv.qa), "questions |",
          len(rag.memories()), "chunks")

# %%
from workbench.eval import evidence_recall

if conv is None:
    print(NOTE)
else:
    retriever = rag.as_retriever()
    recall = pd.DataFrame([{"category": f"{q.category} {CATEGORY_NAMES[q.category]}",
                            "recall@10": evidence_recall(q.evidence, [s for h in retriever.search(q.question, 10)
                                                                      for s in h.source_ids])}
                           for q in conv.qa if q.evidence])
    per_cat = recall.groupby("category")["recall@10"].agg(["count", "mean"])
    per_cat.loc["all"] = [len(recall), recall["recall@10"].mean()]
    display(per_cat.round(2))

# %% [markdown]
# ## 3. RecMem's recurrence gate over the whole conversation
#
# RecMem embeds each exchange (two consecutive turns) and fires a consolidation when enough earlier
# buffered exchanges are similar. `replay_triggers` runs that gate over stored embeddings alone, so
# it shows, with no LLM, how many consolidations a conversation of this length would trigger at the
# demo's MiniLM thresholds and at the paper's. (Units absorbed into an episode by merge-first cannot be
# predicted without the LLM, so every unit reaches the gate here and every consolidation succeeds.)

# %%
from workbench.demo import UNCALIBRATED
from workbench.methods import RecMem
from workbench.methods.recmem.trigger import replay_triggers, trigger_rate

RECMEM_MINILM = UNCALIBRATED["params"]["recmem"]  # the hand-set MiniLM thresholds (demo_profiles.json)

if conv is None:
    print(NOTE)
else:
    # the exact unit texts RecMem stores under the small profile, the one the offline recordings ran with
    units = RecMem(llm=no_llm, embedder=emb, profile="small").subconscious_units(conv)
    vectors = emb([u.text.replace("\n", " ") for u in units])
    ids = [u.id for u in units]
    for theta_sim, theta_count in [(RECMEM_MINILM["theta_sim"], RECMEM_MINILM["theta_count"]), (0.7, 5)]:
        gate = replay_triggers(vectors, theta_sim=theta_sim, theta_count=theta_count, ids=ids)
        print(f"theta_sim={theta_sim} theta_count={theta_count}: {len(units)} units, "
              f"{sum(d.fired for d in gate)} triggers (rate {trigger_rate(gate):.2f}), "
              f"{sum(d.outcome == 'buffered' for d in gate)} buffered on arrival")

# %%
if conv is None:
    print(NOTE)
else:
    gate = replay_triggers(vectors, ids=ids, **RECMEM_MINILM)
    fired = [d for d in gate if d.fired]
    session = {u.id: u.meta["session_id"] for u in units}
    per_session = pd.Series([session[d.unit_id] for d in fired], name="triggers per session")
    display(per_session.value_counts(sort=False).to_frame())
    first = fired[0] if fired else None
    if first:
        print("\nfirst trigger:", first.unit_id, "with", list(first.relevant_ids))
        print(next(u.text for u in units if u.id == first.unit_id)[:300])

# %% [markdown]
# ## 4. Whole conversations with the offline model: what the recordings show
#
# `python -m benchmarks.record_real_scale` records one method at a time over whole LoCoMo conversations with
# Qwen2.5-Coder-0.5B on two CPU cores (hours per method), and `make bench` replays the published cassettes into
# `benchmarks/results/real_scale.json`. The cells below only read that file and the labelled answers: no model
# call. The verdict is the deterministic checker's, because the 0.5B judge fails its audit on real answers. Its
# confidence interval is a bootstrap clustered by conversation; for a method recorded on one conversation it falls
# back to resampling that conversation's questions, which says nothing of how another conversation would go (one
# method's verdict moved from 0.18 to 0.31 between conversations). With two or three conversations the clustered
# bootstrap has few clusters to draw, so its interval is itself rough. Read the per-conversation rows beside the
# pooled one.

# %%
import json

REAL_SCALE = REPO / "benchmarks" / "results" / "real_scale.json"
rs = json.loads(REAL_SCALE.read_text()) if REAL_SCALE.exists() else {}
if rs.get("status") != "ok":
    print(f"note: no replayed real-scale table at {REAL_SCALE} (run `make bench` with the LoCoMo copy present)")
else:
    rows = []
    for x in rs["table"]:
        for c, p in (x.get("per_conversation") or {}).items():
            rows.append({"method": x["method"], "conversation": c, "n": p["n"], "verdict": p["verdict"],
                         "query tokens / question": p["query_tokens"], "÷ Full-Context": p["fc_token_ratio"]})
        lo, hi = x["verdict_ci"]
        rows.append({"method": x["method"], "conversation": "pooled", "n": int(x["n"] or 0), "verdict": x["verdict"],
                     "95% CI (by conversation)": f"[{lo:.3f}, {hi:.3f}]" if lo is not None else "–",
                     "query tokens / question": x["query_tokens"], "÷ Full-Context": x["fc_token_ratio"]})
    real = pd.DataFrame(rows).set_index(["method", "conversation"])
    real["query tokens / question"] = real["query tokens / question"].round(0).astype("Int64")
    for col in ("verdict", "÷ Full-Context"):  # Python's rounding, as SUMMARY.md and the README print them
        real[col] = real[col].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    display(real.fillna(""))

# %% [markdown]
# How far each verdict source agrees with careful readers on **each method's own** labelled answers (LoCoMo
# conv-26 and conv-41, read one by one under `sample_data/labels/PROTOCOL.md`; conv-30 is never labelled, it is
# kept apart as an independent check). A judge that accepts most wrong answers makes every method look good; one
# that accepts more of one method's wrong answers than of another's can also reorder them.

# %%
from workbench.eval.label_audit import audit_by_method, shipped_labels


def share(d):
    return f"{d['k']}/{d['n']}" + (f" ({d['k'] / d['n']:.0%})" if d["n"] else "")


labels = shipped_labels()
judges = ", ".join(sorted({a.judge_model for a in labels if a.source == "real_scale" and a.judge_model}))
SOURCES = {"checker": "checker (the verdict)", "judge": f"judge {judges} (recorded)", "f1": "token F1 >= 0.5"}
per_method = audit_by_method(labels)
audit_table = pd.DataFrame({m: {("labelled", "answers"): r["n"], ("labelled", "right by the readers"): r["right"],
                                **{(name, what): share(r[s][key]) for s, name in SOURCES.items()
                                   for what, key in (("accepts wrong", "false_accept"),
                                                     ("rejects right", "false_reject"))}}
                            for m, r in per_method.items()}).T
display(audit_table)

# %% [markdown]
# What each method's own mechanism did over a whole conversation, counted from the replayed traces, and, where the
# conversation's phenomena were annotated (conv-26, conv-41), whether it fired on them.

# %%
from IPython.display import Markdown

display(Markdown(rs.get("mechanisms_markdown") or "_no replayed real-scale run_"))

# %%
# NBVAL_CHECK_OUTPUT
print("LLM calls made in this notebook:", len(no_llm.ledger))
