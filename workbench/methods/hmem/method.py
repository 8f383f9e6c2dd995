"""H-Mem: agent memory as a hybrid of a temporal-semantic tree and a knowledge graph.

Yu, Fang, Liu, Ma, "H-Mem: A Novel Memory Mechanism for Evolving and Retrieving Agent Memory via a
Hybrid Structure", arXiv:2605.15701 (2026). Digest: shared/methods/hmem.md. Not the Sun & Zeng
"H-MEM" (hierarchical memory, 2025), which is a different method.

Offline indexing (§3.2): each fragment yields LLM-extracted memory events (tree leaves, inserted
bottom-up by ``tree.HTree``) and entities/relations (``graph.EntityGraph``); salient
entities keep profiles. Online retrieval (§3.3): plan sub-queries with dependencies, scope and
temporal hints; per sub-query seed entities (lexical + vector), expand multi-hop, map to fragments
and events, search the tree by scope, score F = θ1·S + θ2·T + θ3·R (eqs. 1-3), answer (with one
missing-information follow-up when flagged), then synthesise.

Modules of this package: this one holds the parameters, offline indexing and the answering loop
(``HMem._answer``); ``retrieval`` the steps that loop runs (planning, evidence, sub-answers, synthesis)
as plain functions, and ``HMemRetriever``; ``tree`` and ``graph`` the two structures; ``prompts`` the
prompts.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import datetime
from typing import Literal, Sequence

import numpy as np

from .how_it_works import HOW_IT_WORKS
from ..components import PaperComponents
from .paper_tables import TABLES as PAPER_TABLES
from ...data import Conversation
from ...llm.errors import LLMError
from ...trace import Answer, Hit
from ..base import Ablation, MemoryMethod, fair_arena_note
from ..profile import PROFILE
from ..common import format_date, format_turn
from ..store import MemoryUnit, UnitStore
from .census import CENSUS
from .calibration import CALIBRATION, PAPER_ALPHAS, join_shares_of, join_targets
from . import paper_prompts as PP
from . import prompts as P
from .graph import EntityGraph, SubQuery, fallback_entities, normalize_name
from .retrieval import NOT_FOUND, HMemRetriever, follow_up, plan_subqueries, retrieve, sub_answer, synthesize
from .tree import EPOCH, WINDOWS, HTree, TreeNode, active_levels, event_time, naive


#: a profile update reads the last ``profile_window`` mentions of its session (ours; the paper states no cap, §3.2:
#: "both persistent and recent memory data"); over conv-30 every one of 38 updates hit it and 304 of 538 mentions
#: (57 %) ever reached a profile prompt (review turn 4, N3). Reading them all changes the profile prompts: it waits for
#: a re-recording of the H-Mem cassettes.
profile_window = 8

# Paper §4.3, Table 5 (LoCoMo), and App. A.4's fixed-Mixed scope policy; every other setting at its default.
ABLATIONS = {
    "full": Ablation({}, "paper Table 5, H-Mem (Full)"),
    "w/o tree": Ablation({"use_tree": False}, "paper Table 5: no tree, no bottom-up tree search"),
    "w/o graph": Ablation({"use_graph": False}, "paper Table 5: no entities, relations or multi-hop expansion"),
    "w/o long memory": Ablation({"use_long_memory": False},
                                "paper Table 5: no upper-level summaries; events and fragments only"),
    "w/o memory robustness": Ablation({"use_robustness": False}, "paper Table 5: no robustness term in the score"),
    "w/o missing-info query": Ablation({"use_missing_info": False}, "paper Table 5: no follow-up retrieval"),
    "w/o entity profile": Ablation({"use_profiles": False}, "paper Table 5: no entity profiles"),
    "fixed mixed": Ablation({"scope_policy": "mixed"}, "paper App. A.4: every sub-query retrieves at Mixed scope"),
}


def alpha_mapping_note(rec: dict) -> str:
    """One line for a mapping record (``calibration.paper_section``): what was mapped, onto what, to which target,
    and what the fit reached where."""
    def fmt(xs):
        return "/".join("-" if x is None else f"{float(x):.2f}" for x in xs)
    return (f"the paper's alphas {fmt(rec.get('paper_alphas') or ())} (set for {rec.get('paper_embedder', '?')}) "
            f"mapped to {rec.get('embedder', '?')} by matching Table 7's join shares "
            f"{fmt(rec.get('target_join_share') or ())}; "
            f"the fit reached {fmt(rec.get('fit_join_share') or ())} on {', '.join(rec.get('fitted_on') or ()) or '?'}")


class HMem(MemoryMethod):
    """H-Mem (Yu et al., 2026). ``tree_nodes()`` and ``graph_`` expose the two structures.

    Ablations (paper Table 5 and App. A.4), by name: ``HMem.ablation("w/o tree", llm=..., embedder=...)``
    (``HMem.ablations``: full, the six "w/o" rows of Table 5, and "fixed mixed", the fixed-Mixed scope policy).

    Profiles (issue #39, ``workbench.methods.profile``): ``profile="paper"`` is the paper's method;
    ``profile="small"`` is the configuration the offline cassettes were recorded with; ``"auto"`` (default)
    picks ``small`` for the offline local models and ``paper`` otherwise. ``profiles`` gives the values,
    ``profile_notes`` the reason and evidence for each small value, ``param_notes`` an instance's departures.

    Departures from the paper in BOTH profiles (the paper is silent, has no public code, or the workbench
    contract forces them); review ../shared/reviews/hmem.md, its §4 items in brackets:
    - One extraction call returns events, entities and relations (the paper names an extraction and a
      consolidation prompt; it may use one or two calls). The paper prints only prompt titles (App. C), so
      both prompt sets are ours, written from §3.2/§3.3/A.2/A.4/B.
    - spaCy NER fallback replaced by the speakers plus capitalised word runs (no NLP dependency);
      lemmatisation is rule-based singularisation (not applied to person names). Resolution thresholds are
      ours (token Jaccard >= ``token_overlap``, difflib >= ``fuzzy_threshold``); the type ``other`` is
      compatible with every type, and a relation endpoint that is not in the fragment's entity list is
      resolved as ``other`` [§4.6].
    - Entity span/role/metadata and a relation's ``span`` are not stored: the paper profile asks for role and
      salience (and a span for each relation) and keeps the
      salience (``graph_.nodes[n]["salience"]``) and the relation confidence (edge ``confidence``); the
      small prompt asks for name and type only, so its edges have confidence 1.0 [§4.5]. Salient = an
      important type AND at least ``profile_min_links`` linked fragments (§3.2 "together with"; the
      digest reads "or") [§4.4]; the stored LLM salience is recorded only, never read by that rule.
    - Reranker (Qwen3-Reranker-4B in the paper, A.2; Table 8): the service ``reranker=`` (``workbench.rerank``
      protocol). Our reading of where it acts (digest §10.10; the paper states neither): F (eq. 3, S = embedding
      cosine) ranks the de-duplicated candidates, the best ``retrieval.RERANK_POOL`` x ``evidence_k`` (30) are
      reordered by the reranker's score of (sub-query, evidence text with its date label), ties by F, and the chain
      is the top ``evidence_k``; the other reading (the reranker's score as S inside F) mixes a cross-encoder's
      unbounded logits with cosine-scaled T and R, so it is not taken. Applied whenever a reranker is given (either
      profile); ``reranker=None`` is Table 8's "embedding-only" configuration (-1.9 F1 / -2.2 Acc there) and
      exactly the pipeline without a reranker stage. The embedder is the harness's (MiniLM offline, not
      Qwen3-Embedding-4B) [§4.10].
    - Alphas and the embedder: the paper's 0.8/0.7/0.6 belong to Qwen3-Embedding-4B. With MiniLM at those values the
      paper profile barely consolidates: the L1->L2 join share is 0.03 on the 0.5B's conv-30 events (0.006 on
      stand-in events) against Table 7's 0.43, and each leaf still costs 3 consolidation calls.
      ``calibration.paper_section`` maps them onto the embedder in use by fitting Table 7's join shares on the paper
      profile's own build (stand-in events and summaries, ``stand_in.py``); ``--calibration auto`` (the default)
      applies that mapping to a paper build, and no other calibrated value; a calibration applied to a paper build
      sets ``alphas`` with its record ``alpha_mapping`` (paper alphas, target, fit reached, conversations fitted
      on), which the run header notes and the tree view prints beside this build's join shares. A run without a
      calibration keeps the paper's values (review turn 4, N1/N2; issue #63).
    - Levels are activated from the age of the whole history (offline indexing), digest §10.7. A week node
      straddling two months belongs to the month of its first child (calendar windows).
    - After a join, y is not re-clustered one level up; its ancestors are re-summarised (single-child
      ones included, by the LLM when ``propagate_summaries``), §3.2 "update ... until the root" [§4.3].
    - The planner's retrieval workflow (§3.3) is asked for and recorded in the plan trace
      (``workflows``, paper profile) but not executed: every sub-query runs the same fixed pipeline [§4.7].
    - Temporal hints are turned into intervals by a rule-based parser (``parse_time_hint``) rather than
      by the planner LLM; relative cues resolve against the query time. Eq. (1) takes the union as the
      convex hull and clips T to [0, 1]; eq. (2) clips a future r_m to a gap of 0; lambda = 0.5 and
      eps = 1 s are ours [§4.11]. A leaf's T uses the day its event refers to (``refers``), its place and
      R use when it was said; fragments have n_m = 0, profiles n_m = updates - 1 [§4.8].
    - The evidence chain reaches the reader in chronological order (by when it was said), not F order;
      evidence with the same text as a better-ranked item is dropped [§4.8].
    - A dependent sub-query's retrieval query also carries its prerequisites' answers (the paper uses
      them only when answering). A follow-up query that merely repeats its sub-query is skipped [§4.9].
      Synthesis is skipped when the plan has a single sub-query (digest §4 [ours]).
    - Profiles are refreshed once per session for salient entities mentioned in it (paper: unspecified); an
      update reads the last ``profile_window`` = 8 of the session's mentions (ours; §3.2 states no cap): over
      conv-30 every one of the 38 updates hit it and 304 of 538 mentions (57 %) ever reached a profile prompt. The
      census counts it (``profile_updates_over_window``, ``profile_mentions_unread``); reading every mention
      changes the profile prompts and waits for a re-recording (review turn 4, N3).
    - Profiles join the evidence under LONG and MIXED in the paper profile: an interpretation, since §3.3 puts
      profiles in no scope (N4). The planner names at most 5 entities per sub-query (ours, N6). A fragment's
      vector embeds its "[date] " prefix, events and summaries are embedded without one, which shifts S a little
      between kinds (ours, N5: removing it changes retrieval, so it waits for a re-recording).
    - ``top_k`` = ``evidence_k`` = 10, 2 hops, fan-out 10, 50 entities, ``seed_min_sim`` 0.3: ours (the
      paper sweeps k = 5-50 in Fig. 3 without naming its default).
    - With the graph or the tree switched off, vector top-k over fragments stands in for the missing
      entity -> fragment path, so every ablation still reaches the raw text. ``retrieval="flat"`` and
      ``scope_policy="short"`` / ``"long"`` are workbench ablations; ``scope_policy="mixed"`` is App.
      A.4's fixed Mixed policy. Relation edges are reached through their endpoints' fragments.
    - Answers are asked short (the paper shortens answers only for lexical F1, App. A.3; the workbench has
      no simplification step, so F1 is not protocol-comparable with Tables 2-5, review B11).
    - ``Answer.context`` (the trace convention: what the final reader saw) is the union of the final
      evidence chains of the sub-queries, the units their sub-answers were written from.
    - Fragments are one message by default (the paper's setting); ``fragment="window"`` (the demo and
      gallery) and ``"session"`` are workbench options that cut extraction calls (``value_notes``).
    - Fair arena (``answer_prompt="shared"``): the synthesis step always runs (also for one sub-query
      or ``retrieval="flat"``) with ``answer_prompt.SHARED_ANSWER`` over the sub-questions and their
      answers. The native synthesis prompt differs: it asks to combine sub-answers into one answer
      and is skipped for a single sub-query, whose sub-answer (a JSON reply that also flags missing
      information) is then final; length and abstention rules are the same in other words.
    - [ours] An event repeated within one fragment is one leaf (``dedupe_events``, review B9; both profiles).
    - A JSON reply that fails to parse gets the shared client's repair call (at the call's temperature) and, if
      that fails too, a retry at temperature >= 0.3 (``workbench.llm.base``); the paper states temperature 0 and
      says nothing of retries, so a retried call samples where the paper's would not.
    - [ours] When a call still fails (the paper describes no failure path), each is recorded in ``failures_``
      and a stand-in keeps the memory whole: a failed extraction stores one event per turn with rule-based
      entities (``fallback_entities``); a failed or empty consolidation takes its children's texts joined and
      cut to 800 characters as the parent's text; a failed profile call keeps the previous persistent part,
      with its last four mentions joined (at most 400 characters) as the recent part.

    Departures of the SMALL profile only (each in ``profile_notes`` with its evidence):
    - ``prompts="small"``: short prompts with concrete example values, entity name/type only, answers
      capped at about six words; ``cluster_similarity="max"`` (single linkage; the paper's alpha is the
      node-to-parent similarity, ``"parent"``) [§4.2]; ``summarize_single=False`` (a new single-child parent
      copies its child's text, marked ``copy_of_child``); ``max_summary_children=12`` and ``summary_words=80``
      (bounds); ``profile_scopes`` includes SHORT (profiles enter every scope; the paper's SHORT is
      fragments + leaf events) [§4.4].
    - The offline recordings bound the replies of the consolidation, extraction (at most 8 entities and 8
      relations a fragment), profile and planner roles (``--bounded-outputs`` or a demo profile's bounded roles,
      ``workbench.llm.bounds``); why each, in ``sample_data/demo_profiles.json`` (``bounded_why``).
    - ``workbench eval`` applies MiniLM-calibrated alphas to a small build whenever the embedder is MiniLM
      (``calibration.py``; ``--calibration auto`` leaves a paper build at the paper's 0.8/0.7/0.6); shown as
      ``alphas`` in ``param_notes``. On the demo they join 0.80 of leaves at L1->L2 (0.78 when the review
      read it) against Table 7's 0.43 [§4.10].

    Declined review items (../shared/reviews/hmem.md; docs/reviews/hmem.md has the full table): the reranker
    (above); copying text for single-child ancestors (B6: the paper's "update until the root" re-summarises;
    kept in both profiles, its cost shows in the token accounting); a whole-conversation LoCoMo recording
    with a capable model and a MIXED/LONG demo case (B3, to-10 #7: no such model offline); answer
    simplification and the demo's query time (B10, B11: harness, not the method); calibrating on extracted
    events with a topical-coherence check and shipping LoCoMo-only calibrations (to-10 #3: the paper profile runs
    at the paper's alphas and is never calibrated; the calibration is a small-profile aid fitted on a proxy tree,
    and coherence needs topic labels that only the planted sample has, where the census checks it: 0 of the
    demo's 9 multi-child parents hold one planted topic); executing the planner's retrieval workflow (every
    sub-query runs one fixed pipeline; the workflow is asked for and recorded, the paper gives no executor).
    """

    per_session_roles = frozenset({"profile"})  # entity profiles refresh once per session
    name = "hmem"
    title = "H-Mem"
    how_it_works = HOW_IT_WORKS
    paper_tables = PAPER_TABLES  # its paper's headline tables (paper_tables.py): workbench reproduce
    components = PaperComponents("Qwen3-Embedding-4B", "Qwen/Qwen3-Embedding-4B", False,
                                 "§5.1 Model configuration; Table 8",
                                 reranker="Qwen3-Reranker-4B", reranker_served="Qwen/Qwen3-Reranker-4B")
    calibration = CALIBRATION  # alphas from the paper's Table 7 (calibration.py)
    structure_view = "tree_and_graph"
    census = CENSUS  # its mechanism counters and check (census.py), run by the generic census
    ablations = ABLATIONS  # paper Table 5 and App. A.4 by name: HMem.ablation("w/o tree", llm=..., embedder=...)
    # how the trace views summarise its steps (card kinds of widgets.trace_cards)
    step_cards = {"plan": "subquery_plan", "retrieve": "scoped_retrieve", "subanswer": "subanswer",
                  "followup": "followup", "synthesize": "synthesis"}
    value_notes = {"fragment": {
        "window": "events are extracted from windows of fragment_turns turns, not from each message as in the "
                  "paper (fewer extraction calls for a small local model)",
        "session": "events are extracted from whole sessions, not from each message as in the paper"},
        "answer_prompt": fair_arena_note}
    # issue #39: the paper's configuration and the one tuned for the offline models (workbench.methods.profile)
    profiles = {
        "paper": {"prompts": "paper",  # paper_prompts.py: every instruction of §3.2/§3.3/A.2/A.4/B, placeholders
                  "cluster_similarity": "parent",  # §3.2: alpha_l is the node-to-parent similarity threshold
                  "summarize_single": True,  # §3.1: "each non-leaf node stores a memory summary"
                  "max_summary_children": None,  # paper sets no bound on what a summary reads
                  "summary_words": None,  # paper sets no length for a summary
                  # [ours, an interpretation] §3.3 puts profiles in no scope: read as persistent memory, they join
                  # LONG and MIXED (review turn 4, N4)
                  "profile_scopes": ("LONG", "MIXED")},
        "small": {"prompts": "small", "cluster_similarity": "max", "summarize_single": False,
                  "max_summary_children": 12, "summary_words": 80, "profile_scopes": ("SHORT", "LONG", "MIXED")},
    }
    profile_notes = {
        "prompts": "short prompts for the 0.5B/1.5B offline models (16k context): fewer instructions, entity "
                   "records of name and type only and relations without confidence, concrete example values in the "
                   "JSON templates (the planner's shows scope \"SHORT\": the 1.5B chose SHORT for 17 of 17 demo "
                   "sub-queries, sample_data/cassettes/demo.jsonl, review §2; 102 of 108 at real scale), answers "
                   "capped at about six words. The examples steer the models: the extraction template's relation "
                   "labels 'lives in' / 'sister of' label 303 of conv-30's 407 relation extractions, 299 of them from "
                   "turns that never say it (census: relations_prompt_example_unsaid); neutral examples change the "
                   "recorded prompts, so they wait for a re-recording (review turn 4, §4)",
        "cluster_similarity": "single linkage (a node joins when any member reaches alpha), the setting the MiniLM "
                              "calibration was fitted with; the paper's parent-summary similarity left the 1.5B demo "
                              "tree almost without multi-child parents before calibration (with the calibrated alphas "
                              "the demo tree joins 0.80 of leaves at L1->L2 against Table 7's 0.43; review §2 read "
                              "0.78 before the B1 fix)",
        "summarize_single": "a new single-child parent copies its child's text instead of an LLM summary: one "
                            "consolidation call less per new parent (7 of the demo tree's 19 parents are such "
                            "copies; consolidation already costs 134 calls, 75% of H-Mem's construction tokens)",
        "max_summary_children": "a summary reads at most the 12 most recent children, to keep the consolidation "
                                "prompt inside the offline model's 16k context (the demo year node has 49 updates)",
        "summary_words": "summaries capped at 80 words: the 1.5B's unbounded summaries of summaries drift and grow "
                         "(review §2: 'Priya is a drummer', single-child re-summaries of the year node 53 times)",
        "profile_scopes": "profiles join the evidence under every scope, SHORT included: the 1.5B planner chose SHORT "
                          "for 17 of 17 demo sub-queries, so profiles reach its reader only this way (15 profile "
                          "items in the demo's sub-answers, review B7); that SHORT habit is the small planner "
                          "template's own example scope, so this aid makes up for another aid (review turn 4, §4)",
        # values of ours in both profiles: another value is a change of ours, not of a paper value (review turn 4, N8)
        "top_k": "the retrieval budget k is ours (10 in both profiles): the paper names no default and sweeps "
                 "k = 5-50 (Fig. 3)",
        "evidence_k": "the evidence-chain length is ours (10 in both profiles); the paper does not give it",
        "alphas": "alpha_2..alpha_4 calibrated for the MiniLM embedder (workbench calibrate; calibration.py: Table 7's "
                  "join shares on a proxy tree) instead of the paper's 0.8/0.7/0.6 for Qwen3-Embedding-4B; on the "
                  "1.5B demo they join 0.80 of leaves at L1->L2 where Table 7 implies 0.43 (review §2, B2)",
    }
    profile_prompt_modules = {"paper": ("hmem.paper_prompts",)}
    prompt_modules = ("hmem.method", "hmem.graph", "hmem.prompts", "hmem.retrieval", "hmem.tree", "hmem.census",
                      "hmem.calibration", "hmem.how_it_works")

    def __init__(self, *, llm=None, embedder=None, reranker=None,  # reranker: workbench.rerank protocol (paper A.2)
                 profile: str = "auto",  # workbench.methods.profile
                 prompts: Literal["paper", "small"] = PROFILE,  # paper_prompts.py | prompts.py
                 fragment: Literal["turn", "window", "session"] = "turn",  # paper: a fragment is one message
                 fragment_turns: int = 4,  # [ours] window size when fragment="window"
                 # paper §3.2: a leaf is placed "according to its timestamp", i.e. when it was said (review B1);
                 # "referenced" (the date the extractor resolved) is the bug the 0.5B demo was recorded with
                 leaf_time: Literal["said", "referenced"] = "said",
                 dedupe_events: bool = True,  # [ours] an event repeated within one fragment is one leaf (B9)
                 levels: int = 4,  # paper App. A.2: four levels
                 windows: tuple = WINDOWS,  # paper App. A.2: beta = day, week, month, year
                 alphas: tuple = (0.8, 0.7, 0.6),  # paper App. A.2: alpha_2..alpha_4
                 # the record behind ``alphas`` when they are the paper's mapped onto another embedder (set with
                 # them by a calibration: calibration.paper_section); None: the alphas are as given
                 alpha_mapping: dict | None = None,
                 activate_by_age: bool = True,  # paper App. A.2: <7 d L1-L2, 7-30 d L1-L3, else L1-L4
                 window_reading: Literal["parent", "child"] = "parent",  # digest §10.2
                 # paper §3.2: "alpha_l is the similarity threshold between a node and its child node"
                 cluster_similarity: Literal["max", "parent", "centroid"] = PROFILE,
                 propagate_summaries: bool = True,  # paper §3.2: repeat "until we reach the root"
                 summarize_single: bool = PROFILE,  # paper §3.2: a new parent z gets "a memory summary"
                 max_summary_children: int | None = PROFILE,  # paper: no bound (None: every child)
                 summary_words: int | None = PROFILE,  # paper: no word limit (None)
                 fuzzy_threshold: float = 0.9,  # [ours] paper: "bounded fuzzy matching", no value (digest §10.12)
                 token_overlap: float = 0.5,  # [ours] token Jaccard (digest §10.12)
                 overlap_edges: bool = True,  # paper App. A.2: graph repair by prefix/suffix
                 use_profiles: bool = True,  # paper §3.2; Table 5 "w/o entity profile"
                 profile_scopes: tuple = PROFILE,  # scopes whose evidence includes profiles (paper: LONG, MIXED)
                 profile_types: tuple = ("person", "organization", "location"),  # paper §3.2
                 profile_min_links: int = 3,  # [ours] paper: "number of fragment-entity links", no value
                 top_k: int = 10,  # [ours] paper sweeps 5-50 (Fig. 3), default unstated; short prompts
                 evidence_k: int = 10,  # [ours] evidence-chain length, paper silent
                 seed_k: int = 5,  # [ours] vector seeds per entity name
                 seed_min_sim: float = 0.3,  # [ours] a vector seed needs at least this cosine
                 max_seeds: int = 20,  # [ours] digest §10.12
                 hops: int = 2,  # [ours] paper: "multi-hop", no value
                 fanout: int = 10,  # [ours] strongest edges followed per entity
                 max_entities: int = 50,  # [ours] cap on the expanded entity set
                 theta: tuple = (0.70, 0.15, 0.15),  # paper App. A.2: w_sem, w_time, w_mem
                 tau_days: float = 365.0,  # paper App. A.2 (converted to seconds)
                 eta: float = 0.5,  # paper App. A.2
                 lam: float = 0.5,  # [ours] paper: lambda in [0,1], no value (digest §10.9)
                 eps: float = 1.0,  # [ours] seconds; "small constant" (digest §10.9)
                 max_subqueries: int = 4,  # [ours] paper averages 1.15-1.58 per question
                 max_followups: int = 1,  # paper App. A.4: one targeted follow-up
                 # paper App. B: the follow-up query's own entities seed its retrieval (review B8); "subquery"
                 # reuses the sub-query's planner entities, as the 0.5B demo was recorded
                 followup_seeds: Literal["followup", "subquery"] = "followup",
                 retrieval: Literal["hybrid", "flat"] = "hybrid",  # [ours] ablation
                 scope_policy: Literal["planner", "short", "long", "mixed"] = "planner",  # App. A.4 fixed-MIXED
                 use_graph: bool = True,  # Table 5 "w/o graph"
                 use_tree: bool = True,  # Table 5 "w/o tree"
                 use_long_memory: bool = True,  # Table 5 "w/o long memory" (no L2+ summaries)
                 use_temporal: bool = True,  # ablation: T := 0
                 use_robustness: bool = True,  # Table 5 "w/o memory robustness": R := 0
                 use_missing_info: bool = True,  # Table 5 "w/o missing-info query"
                 answer_prompt: Literal["native", "shared"] = "native"):  # [ours] fair arena (answer_prompt.py)
        self.llm = llm
        self.embedder = embedder
        self.reranker = reranker
        self.profile = profile
        self.prompts = prompts
        self.fragment = fragment
        self.fragment_turns = fragment_turns
        self.leaf_time = leaf_time
        self.dedupe_events = dedupe_events
        self.levels = levels
        self.windows = windows
        self.alphas = alphas
        self.alpha_mapping = alpha_mapping
        self.activate_by_age = activate_by_age
        self.window_reading = window_reading
        self.cluster_similarity = cluster_similarity
        self.propagate_summaries = propagate_summaries
        self.summarize_single = summarize_single
        self.max_summary_children = max_summary_children
        self.summary_words = summary_words
        self.fuzzy_threshold = fuzzy_threshold
        self.token_overlap = token_overlap
        self.overlap_edges = overlap_edges
        self.use_profiles = use_profiles
        # a saved run's JSON list back to the tuple the profiles give (load converts only tuple-default params)
        self.profile_scopes = tuple(profile_scopes) if isinstance(profile_scopes, list) else profile_scopes
        self.profile_types = profile_types
        self.profile_min_links = profile_min_links
        self.top_k = top_k
        self.evidence_k = evidence_k
        self.seed_k = seed_k
        self.seed_min_sim = seed_min_sim
        self.max_seeds = max_seeds
        self.hops = hops
        self.fanout = fanout
        self.max_entities = max_entities
        self.theta = theta
        self.tau_days = tau_days
        self.eta = eta
        self.lam = lam
        self.eps = eps
        self.max_subqueries = max_subqueries
        self.max_followups = max_followups
        self.followup_seeds = followup_seeds
        self.retrieval = retrieval
        self.scope_policy = scope_policy
        self.use_graph = use_graph
        self.use_tree = use_tree
        self.use_long_memory = use_long_memory
        self.use_temporal = use_temporal
        self.use_robustness = use_robustness
        self.use_missing_info = use_missing_info
        self.answer_prompt = answer_prompt
        self._apply_profile(profile, llm)

    # -- parameters -----------------------------------------------------------------------------
    def _validate_params(self) -> None:
        super()._validate_params()
        choices = {"prompts": ("paper", "small"), "followup_seeds": ("followup", "subquery"),
                   "leaf_time": ("said", "referenced"),
                   "fragment": ("turn", "window", "session"), "window_reading": ("parent", "child"),
                   "cluster_similarity": ("max", "parent", "centroid"), "retrieval": ("hybrid", "flat"),
                   "scope_policy": ("planner", "short", "long", "mixed")}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if not 1 <= self.levels <= len(self.windows) or len(self.alphas) < self.levels - 1:
            raise ValueError("levels needs one window per level and one alpha per level above the leaves")
        if any(w not in WINDOWS for w in self.windows) or len(set(self.windows)) != len(self.windows) \
                or list(self.windows) != sorted(self.windows, key=WINDOWS.index):
            raise ValueError(f"windows must be increasing and taken from {WINDOWS}")
        if len(self.theta) != 3 or min(self.theta) < 0:
            raise ValueError("theta must be three non-negative weights")
        if self.prompts == "small" and self.summary_words is None:
            raise ValueError("prompts='small' states a summary length: summary_words must be a number")
        if any(s not in P.SCOPES for s in self.profile_scopes):
            raise ValueError(f"profile_scopes must be taken from {P.SCOPES}")
        positive = ("fragment_turns", "top_k", "evidence_k", "max_subqueries", "max_summary_children", "summary_words")
        if any(getattr(self, n) is not None and getattr(self, n) < 1 for n in positive) \
                or self.tau_days <= 0 or self.eps <= 0 or self.eta < 0:
            raise ValueError(f"{', '.join(positive)}, tau_days and eps must be positive; eta non-negative")
        if not 0 <= self.lam <= 1 or min(self.hops, self.seed_k, self.max_followups, self.fanout) < 0:
            raise ValueError("lam must lie in [0, 1]; hops, seed_k, fanout and max_followups must be >= 0")

        if self.alpha_mapping is not None and not (isinstance(self.alpha_mapping, dict)
                                                   and isinstance(self.alpha_mapping.get("alphas"), (list, tuple))):
            raise ValueError("alpha_mapping must be a calibration record (a dict with its 'alphas'), or None")
        if self.reranker is not None and not callable(self.reranker):
            raise ValueError("reranker must be callable as reranker(query, documents) -> scores "
                             "(workbench.rerank.Reranker), or None")

    def mapping_in_use(self) -> dict | None:
        """``alpha_mapping`` when it is the record of the alphas in use, else None (alphas set by hand after a
        calibration keep no claim to its fit)."""
        rec = self.alpha_mapping
        if isinstance(rec, dict) and [round(float(a), 4) for a in rec.get("alphas") or ()] == \
                [round(float(a), 4) for a in tuple(self.alphas)[:len(rec.get("alphas") or ())]]:
            return rec
        return None

    def config(self) -> dict:
        """As ``MemoryMethod.config``; without a mapping record the configuration (and its hash) is the one H-Mem had
        before mappings existed, so results and saved memories keyed by it stay found."""
        out = super().config()
        if self.alpha_mapping is None:
            out.pop("alpha_mapping", None)
        return out

    @classmethod
    def _departure_notes(cls, params, dataset=None):
        """As ``MemoryMethod._departure_notes``; alphas that are the paper's mapped onto the embedder in use (a
        mapping record whose alphas are these) are noted as such, with the fit the record reached."""
        out = super()._departure_notes(params, dataset)
        rec = params.get("alpha_mapping") if hasattr(params, "get") else None
        if "alphas" in out and isinstance(rec, dict) and [round(float(a), 4) for a in rec.get("alphas") or ()] == \
                [round(float(a), 4) for a in tuple(out["alphas"][0])[:len(rec.get("alphas") or ())]]:
            out["alphas"] = (out["alphas"][0], alpha_mapping_note(rec))
        return out

    @property
    def prompt_set(self):
        """The prompt module this instance sends: ``paper_prompts`` (profile "paper") or ``prompts`` ("small")."""
        return PP if self.prompts == "paper" else P

    # -- building -------------------------------------------------------------------------------
    def _reset(self) -> None:
        self.tree_ = HTree(self.windows[:self.levels], self.alphas[:self.levels - 1],
                           window_reading=self.window_reading, cluster_similarity=self.cluster_similarity,
                           leaf_time=self.leaf_time)
        self.kg_ = EntityGraph(fuzzy_threshold=self.fuzzy_threshold, token_overlap=self.token_overlap)
        self.fragments_ = UnitStore(self.embedder, "fragments")
        self.entities_ = UnitStore(self.embedder, "entities")  # entity-name vectors for seed search
        self.profiles_ = UnitStore(self.embedder, "profiles")
        self.fragment_leaves_: dict[str, list[str]] = {}
        self.failures_: list[dict] = []
        self.last_time_: datetime | None = None

    @property
    def graph_(self):
        """The knowledge graph (``networkx.MultiDiGraph``; edge key = relation label)."""
        self._check_ingested()
        return self.kg_.graph

    def _fragments(self, conv: Conversation) -> list[MemoryUnit]:
        size = {"turn": 1, "window": self.fragment_turns, "session": None}[self.fragment]
        out, last = [], EPOCH  # [ours] an undated turn takes the previous date (the epoch if none yet)
        for session in conv.sessions:
            turns = list(session.turns)
            step = size or max(1, len(turns))
            for i in range(0, len(turns), step):
                group = turns[i:i + step]
                last = naive(group[0].time or session.date_time or last)
                text = f"[{format_date(last)}] " + "\n".join(format_turn(t) for t in group)
                out.append(MemoryUnit(f"frag{len(out)}", "fragment", text, tuple(t.id for t in group), last,
                                      {"session_id": session.id, "speakers": sorted({t.speaker for t in group})}))
        return out

    def _build(self, conv: Conversation) -> None:
        frags = self.fragments_.add(self._fragments(conv))
        if not frags:
            return
        times = [datetime.fromisoformat(f.time) for f in frags]
        self.last_time_ = max(times)
        n_levels = active_levels(min(times), max(times), self.levels) if self.activate_by_age else self.levels
        self.tree_.l_max = n_levels if self.use_long_memory else 1
        session_frags: dict[str, list[MemoryUnit]] = {}
        for f in frags:
            session_frags.setdefault(f.meta["session_id"], []).append(f)
        for units in session_frags.values():
            touched: set[str] = set()
            for unit in units:
                touched |= self._index_fragment(unit)
                self._advance(len(unit.source_ids))
            if self.use_graph and self.use_profiles:
                self._refresh_profiles(sorted(touched), units)

    def _index_fragment(self, unit: MemoryUnit) -> set[str]:
        when = datetime.fromisoformat(unit.time)
        payload = self._extract(unit, when)
        if self.use_tree:
            self._add_events(unit, when, payload.get("events", []))
        return self._add_graph(unit, when, payload) if self.use_graph else set()

    @staticmethod
    def _body(unit: MemoryUnit) -> str:
        return unit.text.split("] ", 1)[1]

    def _extract(self, unit: MemoryUnit, when: datetime) -> dict:
        """LLM#1/#2 of the digest as one call. Fallback on failure: one event per turn, rule-based entities."""
        prompts = self.prompt_set
        prompt = prompts.extraction_prompt(events=self.use_tree, graph=self.use_graph).format(
            date=format_date(when), fragment=self._body(unit))
        schema = prompts.extraction_schema(events=self.use_tree, graph=self.use_graph)
        try:
            return self.llm.complete(prompt, schema=schema, role="hmem.extract").parsed
        except LLMError as exc:
            self.failures_.append({"stage": "extract", "unit": unit.id, "source_ids": list(unit.source_ids),
                                   "error": str(exc), "fallback": "one event per turn; rule-based entities"})
            return {"events": [{"text": line} for line in self._body(unit).splitlines() if line.strip()],
                    "entities": [], "relations": []}

    # -- tree -----------------------------------------------------------------------------------
    def _add_events(self, unit: MemoryUnit, when: datetime, events: list) -> None:
        items, seen = [], set()
        for e in events:
            text = " ".join(str(e.get("text", "")).split()) if isinstance(e, dict) else ""
            if text and not (self.dedupe_events and text.lower() in seen):  # [ours] a repeat is one leaf
                seen.add(text.lower())
                items.append((text, event_time(e.get("date"), when)))
        if not items:
            return
        vectors = self.embedder([t for t, _ in items])
        for (text, etime), vec in zip(items, vectors):
            ops = self.tree_.add_leaf(text, time=etime, mention_time=when, vector=vec, source_ids=unit.source_ids,
                                      fragment_ids=[unit.id], summarize=self._summarize, embed=self.embedder,
                                      propagate=self.propagate_summaries, summarize_single=self.summarize_single)
            self.fragment_leaves_.setdefault(unit.id, []).append(ops[0]["node"])
            self._emit_tree_ops(ops, unit, when)

    def _summarize(self, node: TreeNode, children: list[TreeNode]) -> str:
        """LLM#4 consolidation; fallback: the children's texts joined (recorded in ``failures_``)."""
        kids = sorted(children, key=lambda c: (c.anchor, c.id))[-(self.max_summary_children or len(children)):]
        notes = "\n".join(f"- [{format_date(c.start)}{f'; about {format_date(c.refers[0])}' if c.refers else ''}] "
                          f"{c.text}" for c in kids)
        window = self.tree_.window_name(node.level)
        if self.prompts == "paper":
            limit = PP.CONSOLIDATE_LIMIT.format(max_words=self.summary_words) if self.summary_words else ""
            prompt = PP.CONSOLIDATE.format(window=window, label=node.window, notes=notes, limit=limit)
        else:
            prompt = P.CONSOLIDATE.format(window=window, label=node.window, notes=notes, max_words=self.summary_words)
        try:
            text = " ".join(str(self.llm.complete(prompt, schema=self.prompt_set.CONSOLIDATE_SCHEMA,
                                                  role="hmem.consolidate").parsed["summary"]).split())
            if text:
                return text
            error = "empty summary"
        except LLMError as exc:
            error = str(exc)
        self.failures_.append({"stage": "consolidate", "unit": node.id, "source_ids": list(node.source_ids),
                               "error": error, "fallback": "children texts joined"})
        return "; ".join(c.text for c in kids)[:800]

    def _emit_tree_ops(self, ops: list[dict], unit: MemoryUnit, when: datetime) -> None:
        for op in ops:
            node = self.tree_.nodes[op["node"]]
            extra = {k: v for k, v in op.items() if k not in ("op", "node", "before", "after", "reason")}
            if op["op"] == "ADD":
                self._emit("ADD", node.id, after=node.text, cause=f"event extracted from {unit.id}",
                           source_ids=unit.source_ids, time=when, fragment=unit.id, window=node.window, **extra)
            elif op["op"] == "MERGE":
                self._emit("MERGE", node.id, cause=f"{op['child']} joined the cluster: similarity "
                           f"{op['similarity']} >= {op['threshold']}", source_ids=unit.source_ids, time=when, **extra)
            else:
                self._emit("SUMMARIZE", node.id, before=op["before"], after=op["after"], cause=op["reason"],
                           source_ids=unit.source_ids, time=when, **extra)

    # -- graph ----------------------------------------------------------------------------------
    def _add_graph(self, unit: MemoryUnit, when: datetime, payload: dict) -> set[str]:
        t = when.isoformat()
        ents = [e for e in payload.get("entities", []) if isinstance(e, dict) and isinstance(e.get("name"), str)
                and normalize_name(e["name"])]
        origin = "llm"
        if not ents:  # paper App. A.2: fall back when extraction fails or finds no valid entity
            ents, origin = fallback_entities(self._body(unit), unit.meta.get("speakers", ())), "fallback"
        local: dict[str, str] = {}
        for e in ents:
            node = self._entity(e["name"], e.get("type", "other"), unit, t, local, origin)
            if node and isinstance(e.get("salience"), (int, float)):  # paper profile: App. A.2's salience score
                attrs = self.kg_.graph.nodes[node]
                attrs["salience"] = max(attrs.get("salience", 0.0), min(1.0, max(0.0, float(e["salience"]))))
        for r in payload.get("relations", []):
            label = " ".join(str(r.get("relation", "")).split()) if isinstance(r, dict) else ""
            u = self._entity(r.get("source", ""), "other", unit, t, local, "relation") if label else None
            v = self._entity(r.get("target", ""), "other", unit, t, local, "relation") if u else None
            if not v or u == v:
                continue
            conf = r.get("confidence")  # paper profile: App. A.2's relation confidence; else 1.0
            conf = min(1.0, max(0.0, float(conf))) if isinstance(conf, (int, float)) else 1.0
            new = self.kg_.add_relation(u, label, v, fragment_id=unit.id, source_ids=unit.source_ids, time=t,
                                        confidence=conf)
            self._emit("LINK", f"{u}->{v}", after=label, cause=f"relation from {unit.id}", source_ids=unit.source_ids,
                       time=when, source=u, target=v, relation=label.lower(), new=new, fragment=unit.id)
        return set(local.values())

    def _entity(self, name, etype, unit: MemoryUnit, t: str, local: dict, origin: str) -> str | None:
        """Resolve a mention (once per fragment), link it to the fragment, emit LINK."""
        key = normalize_name(name or "")
        if not key or len(key) > 80:
            return None
        if key in local:
            return local[key]
        res = self.kg_.resolve(name, etype, time=t)
        if res is None:
            return None
        local[key] = res.node
        self.kg_.link(res.node, unit.id, unit.source_ids, t)
        attrs = self.kg_.graph.nodes[res.node]
        self._emit("LINK", res.node, after=attrs["name"], cause=f"{res.how} match for {name!r} in {unit.id}",
                   source_ids=unit.source_ids, time=t, surface=str(name), how=res.how, score=res.score,
                   type=attrs["type"], fragment=unit.id, origin=origin)
        if res.created:
            self.entities_.add([MemoryUnit(res.node, "entity", attrs["name"], unit.source_ids, t)])
            for other in self.kg_.overlap_candidates(res.node) if self.overlap_edges else ():
                self.kg_.add_relation(res.node, "overlap", other, fragment_id=unit.id, source_ids=unit.source_ids,
                                      time=t, kind="overlap")
                self._emit("LINK", f"{res.node}->{other}", after="overlap", cause="graph repair: name prefix/suffix",
                           source_ids=unit.source_ids, time=t, source=res.node, target=other, relation="overlap")
        return res.node

    def _refresh_profiles(self, touched: list[str], units: list[MemoryUnit]) -> None:
        ids = {u.id: u for u in units}
        for node in touched:
            if not self.kg_.is_salient(node, types=self.profile_types, min_links=self.profile_min_links):
                continue
            frags = [ids[f] for f in self.kg_.graph.nodes[node]["fragment_ids"] if f in ids]
            self._update_profile(node, frags)

    def _update_profile(self, node: str, frags: list[MemoryUnit]) -> None:
        attrs = self.kg_.graph.nodes[node]
        old = attrs["profile"] or {"persistent": "", "recent": "", "updates": 0, "source_ids": []}
        leaves = [self.tree_.nodes[x].text for f in frags for x in self.fragment_leaves_.get(f.id, [])]
        mentions = leaves or [self._body(f) for f in frags]
        when = datetime.fromisoformat(frags[-1].time)
        prompt = self.prompt_set.PROFILE.format(
            name=attrs["name"], type=attrs["type"], persistent=old["persistent"] or "(none)",
            recent=old["recent"] or "(none)", date=format_date(when),
            mentions="\n".join(f"- {m}" for m in mentions[-profile_window:]))
        try:
            parsed = self.llm.complete(prompt, schema=self.prompt_set.PROFILE_SCHEMA, role="hmem.profile").parsed
            persistent, recent = str(parsed["persistent"]).strip(), str(parsed["recent"]).strip()
        except LLMError as exc:
            self.failures_.append({"stage": "profile", "unit": node, "error": str(exc),
                                   "fallback": "previous persistent part; mentions as the recent part"})
            persistent, recent = old["persistent"], "; ".join(mentions[-4:])[:400]
        source_ids = old["source_ids"] + [s for f in frags for s in f.source_ids if s not in old["source_ids"]]
        attrs["profile"] = {"persistent": persistent, "recent": recent, "updated": when.isoformat(),
                            "updates": old["updates"] + 1, "source_ids": source_ids}
        text = f"Profile of {attrs['name']}: {persistent} Recently ({format_date(when)}): {recent}"
        before = self.profiles_[f"profile:{node}"].text if f"profile:{node}" in self.profiles_ else None
        self.profiles_.add([MemoryUnit(f"profile:{node}", "profile", text, source_ids, when,
                                       {"entity": node, "updates": old["updates"] + 1})])
        # how many of the session's mentions the prompt read (review turn 4, N3: the census counts the rest)
        self._emit("UPDATE", f"profile:{node}", before=before, after=text, cause="profile refresh after the session",
                   source_ids=[s for f in frags for s in f.source_ids], time=when, entity=node,
                   mentions=len(mentions), mentions_read=min(len(mentions), profile_window))

    # -- answering (paper §3.3; the steps are functions of ``retrieval``) --------------------------
    def _answer(self, question: str, *, now: datetime | None) -> Answer:
        t = naive(now) if now else (self.last_time_ or EPOCH)
        steps: list = []
        if self.retrieval == "flat":
            chain = retrieve(self, SubQuery(1, question), question, t, steps, "Flat retrieval (one query)")
            sq = SubQuery(1, question)
            text, _ = sub_answer(self, sq, chain, {}, {}, t, steps)
            if getattr(self, "answer_prompt", "native") == "shared":
                text = synthesize(self, question, [sq], {1: text}, t, steps)
            return Answer(question, text, tuple(steps), tuple(c.hit() for c in chain))
        plan = plan_subqueries(self, question, t, steps)
        answers: dict[int, str] = {}
        context: dict[str, Hit] = {}
        for sq in plan:
            # [ours] prerequisite answers also join the retrieval query (the paper uses them when answering)
            known = [answers[d] for d in sq.depends_on if answers.get(d, NOT_FOUND) != NOT_FOUND]
            query = " ".join([sq.text, *known])
            chain = retrieve(self, sq, query, t, steps, f"Evidence for sub-query {sq.id} ({sq.scope})")
            text, missing = sub_answer(self, sq, chain, answers, {s.id: s for s in plan}, t, steps)
            for _ in range(self.max_followups if self.use_missing_info and missing else 0):
                follow = follow_up(self, sq, chain, text, steps)
                if not follow:
                    break
                seen = {c.id for c in chain}
                # paper App. B: the follow-up query's own entities seed it (lexical + vector on its text);
                # "subquery" (the recorded small profile) reuses the sub-query's planner entities
                seed_sq = sq if self.followup_seeds == "subquery" else replace(sq, entities=())
                extra = retrieve(self, seed_sq, follow, t, steps, f"Follow-up evidence for sub-query {sq.id}")
                chain = chain + [c for c in extra if c.id not in seen]
                text, missing = sub_answer(self, sq, chain, answers, {s.id: s for s in plan}, t, steps)
                if not missing:
                    break
            answers[sq.id] = text
            for c in chain:
                context.setdefault(c.id, c.hit())
        final = synthesize(self, question, plan, answers, t, steps)
        return Answer(question, final, tuple(steps), tuple(context.values()))

    # -- inspection -----------------------------------------------------------------------------
    def tree_nodes(self) -> list[dict]:
        """The tree as plain rows: id, level, parent, children, summary, window, start, end, n_m, r_m,
        source_ids, fragment_ids."""
        self._check_ingested()
        return self.tree_.rows()

    def tree_stats(self) -> dict:
        """Tree shape: nodes per level, parents (level >= 2), the share of parents with more than
        one child, and how many parents are still a verbatim copy of their single child."""
        self._check_ingested()
        rows = self.tree_.rows()
        parents = [r for r in rows if r["level"] >= 2]
        multi = sum(1 for r in parents if len(r["children"]) > 1)
        return {"nodes": len(rows), "per_level": dict(sorted(Counter(r["level"] for r in rows).items())),
                "parents": len(parents), "multi_child_parents": multi,
                "multi_child_share": multi / len(parents) if parents else 0.0,
                "single_child_copies": sum(1 for r in parents if r["copy_of_child"])}

    def join_shares(self) -> dict:
        """Per level, the share of level-l nodes of this build that joined an existing parent (1 - N_{l+1} / N_l)
        beside the paper's (Table 7, LoCoMo), the alpha that decided it, the paper's alpha, and the mapping record
        when the alphas are the paper's mapped onto this embedder (``mapping_in_use``)."""
        self._check_ingested()
        counts = Counter(n.level for n in self.tree_.nodes.values())
        top = self.tree_.l_max
        nodes = [counts.get(lv, 0) for lv in range(1, top + 1)]
        return {"nodes": nodes, "build": join_shares_of(nodes), "paper_table7": join_targets()[:top - 1],
                "alphas": [float(a) for a in tuple(self.alphas)[:top - 1]],
                "paper_alphas": list(PAPER_ALPHAS[:top - 1]), "linkage": self.cluster_similarity,
                "embedder": getattr(self.embedder, "name", None), "mapping": self.mapping_in_use()}

    def structures(self) -> dict:
        """Plain JSON for the structure views (``widgets.tree_view``, ``widgets.graph_view``): the tree
        rows, the window name per level, and the entity graph (nodes with type, aliases, provenance
        and profile; edges with relation, kind and provenance; the extraction prompt's example relation labels).
        Saved as ``structures.json``."""
        self._check_ingested()
        g = self.kg_.graph
        nodes = [{"id": n, "name": a["name"], "type": a["type"], "aliases": list(a["aliases"]),
                  "source_ids": list(a["source_ids"]), "fragment_ids": list(a["fragment_ids"]),
                  "mentions": a["mentions"], "first_time": a["first_time"], "last_time": a["last_time"],
                  "profile": a["profile"]} for n, a in g.nodes(data=True)]
        edges = [{"source": u, "target": v, "relation": d["relation"], "kind": d["kind"],
                  "source_ids": list(d["source_ids"]), "fragment_ids": list(d["fragment_ids"]), "count": d["count"],
                  "confidence": d["confidence"], "time": d["time"], "last_time": d["last_time"]}
                 for u, v, d in g.edges(data=True)]
        return {"tree": self.tree_nodes(),
                "levels": {str(lv): self.tree_.window_name(lv) for lv in range(1, self.tree_.l_max + 1)},
                "join_shares": self.join_shares(),
                # the extraction prompt's example relation labels (none in the paper profile): the graph view flags
                # a relation carrying one that its turns never say
                "graph": {"nodes": nodes, "edges": edges,
                          "prompt_examples": list(getattr(self.prompt_set, "EXAMPLE_RELATIONS", ()))}}

    def _units(self) -> list[dict]:
        rows = self.fragments_.rows()
        for r in self.tree_.rows():
            rows.append({"id": r["id"], "kind": "event" if r["level"] == 1 else "summary", "text": r["summary"],
                         "source_ids": r["source_ids"], "time": r["start"],
                         **{k: r[k] for k in ("level", "parent", "children", "window", "start", "end", "n_m",
                                              "r_m", "fragment_ids", "copy_of_child", "refers_to")}})
        for node, a in self.kg_.graph.nodes(data=True):
            profile = a["profile"]
            rows.append({"id": node, "kind": "entity", "text": a["name"], "source_ids": list(a["source_ids"]),
                         "time": a["first_time"], "type": a["type"], "aliases": list(a["aliases"]),
                         "fragment_ids": list(a["fragment_ids"]), "mentions": a["mentions"],
                         "profile": f"{profile['persistent']} | recent: {profile['recent']}" if profile else None})
        return rows

    def as_retriever(self) -> "HMemRetriever":
        self._check_ingested()
        return HMemRetriever(self)

    @staticmethod
    def summary_stats(answers: Sequence[Answer]) -> dict:
        """Planner and follow-up figures from traces alone (paper App. A.4: scopes, Table 9 trigger rate):
        ``followups`` counts the follow-up retrievals that ran, ``missing_info_flags`` / ``trigger_ratio`` the
        sub-answers that asked for one (a follow-up query that merely repeats its sub-query is skipped)."""
        plans = [s for a in answers for s in a.steps if s.kind == "plan"]
        subs = [q for p in plans for q in p.data.get("subqueries", [])]
        flagged = [s for a in answers for s in a.steps if s.kind == "followup"]  # a sub-answer flagged missing info
        follow = [s for s in flagged if not s.data.get("skipped")]  # review B5: a skipped query retrieves nothing
        chains = [len(s.data.get("evidence_chain", [])) for a in answers for s in a.steps if s.kind == "retrieve"]
        scopes = {sc: sum(q["scope"] == sc for q in subs) for sc in P.SCOPES}
        return {"questions": len(answers), "subqueries": len(subs),
                "subqueries_per_question": len(subs) / len(plans) if plans else 0.0,
                "scope_counts": scopes, "followups": len(follow),
                "followup_rate": len(follow) / len(subs) if subs else 0.0,
                # paper Table 9's trigger ratio: sub-queries whose first answer flagged missing information
                "missing_info_flags": len(flagged), "trigger_ratio": len(flagged) / len(subs) if subs else 0.0,
                "mean_evidence_chain": float(np.mean(chains)) if chains else 0.0}
