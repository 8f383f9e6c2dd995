"""RecMem: recurrence-based memory consolidation (Dai, Deng, Guan, Tian, Yao, Yan, Cheng; ACL 2026 Findings).

Digest: ../shared/methods/recmem.md; paper: ../shared/papers/recmem.txt; authors' code
github.com/CaiusDai/RecMem @ a84252f ("[code]" below). Three stores: the *subconscious* buffer of
raw exchanges (embedded, no LLM), *episodes* written when a topic recurs, and *facts* refined
from each episode. The pure trigger logic and its offline replay live in ``trigger``; the bodies of the
read-only views (structures, gate replay, construction accounting) in ``inspection``; prompts in ``prompts``.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from datetime import datetime
from typing import Literal, Mapping, Sequence

import numpy as np

from .how_it_works import HOW_IT_WORKS
from ..components import PaperComponents
from .paper_tables import TABLES as PAPER_TABLES
from ...data import Conversation
from ...llm.errors import LLMError
from ...llm.ledger import track
from ...trace import Answer, Hit
from ..answer_prompt import shared_prompt
from ..base import Ablation, MemoryMethod, _comparable, fair_arena_note
from ..profile import PROFILE
from ..common import exchanges, format_date, question_date_line
from ..store import MemoryUnit, MergedRetriever, UnitStore
from .census import CENSUS
from .calibration import CALIBRATION
from .structures import CLUSTER_HOOKS
from . import inspection
from . import paper_prompts as PP
from . import prompts as P
from .inspection import LAYERS
from .trigger import TriggerDecision, check_gate_k, cosines, decide

# Paper §3.6 / §4 "Implementation details" and the README runs of [code]. The cosines are those of
# text-embedding-3-small: with another encoder recalibrate (trigger.calibrate_thresholds).
DATASET_PRESETS = {"locomo": {"theta_sim": 0.7, "theta_count": 5, "answer_length": "short"},
                   "longmemeval": {"theta_sim": 0.6, "theta_count": 4, "answer_length": "free"}}
# Paper §4.3, Fig. 2 (LoCoMo, GPT-4.1-mini): each ablation disables one component, the others keep their
# retrieval budgets (construction unchanged). Direct Extraction builds as full RecMem does (episodes, merge-first)
# but extracts facts from the raw cluster alone ([code] --disable_semantic_refinement), and "at inference time
# answers using only subconscious retrieval and the extracted semantic facts" (paper §4.3).
ABLATIONS = {
    "full": Ablation({}, "paper Fig. 2, RecMem (full)"),
    "w/o subconscious": Ablation({"use_subconscious": False}, "paper §4.3, Fig. 2 'w/o subconscious'"),
    "w/o episodic": Ablation({"use_episodes": False}, "paper §4.3, Fig. 2 'w/o episodic'"),
    "w/o semantic": Ablation({"use_facts": False}, "paper §4.3, Fig. 2 'w/o semantic'"),
    "direct extraction": Ablation({"refine_with_episode": False, "use_episodes": False},
                                  "paper §4.3, Fig. 2 'Direct Extraction'; construction as [code] "
                                  "--disable_semantic_refinement, answering without episodes as the paper says"),
}
_ALIASES = {"locomo": "locomo", "longmemeval": "longmemeval", "longmemevals": "longmemeval", "lme": "longmemeval"}


def dataset_key(name: str | None) -> str | None:
    """The ``DATASET_PRESETS`` key of a run's dataset name ("longmemeval_oracle", "LoCoMo", "lme" ...); None for
    a name that is neither benchmark (the sample conversations, a user's own data)."""
    flat = re.sub(r"[^a-z]", "", str(name or "").lower())
    if flat in _ALIASES:
        return _ALIASES[flat]
    return next((k for k in DATASET_PRESETS if flat.startswith(k)), None)
# Ledger role -> construction operation ([code] keeps EPISODIC_MERGE / EPISODIC_GENERATION /
# SEMANTIC_EXTRACTION(_DURING_MERGE)).
OPERATIONS = {"recmem.merge": "merge", "recmem.consolidate": "consolidate", "recmem.refine": "refine",
              "recmem.refine_merge": "refine", "recmem.refine_direct": "refine"}


def _operation(role: str) -> str:
    return OPERATIONS.get(role.split(".repair")[0].split(".retry")[0], "other")


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def _bullets(texts) -> str:
    return "\n".join(f"- {t}" for t in texts) or "None"


def _union(*groups) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s for g in groups for s in g))


class RecMem(MemoryMethod):
    """RecMem (paper §3). ``RecMem.for_dataset("locomo" | "longmemeval", llm=..., embedder=...)``.

    Per exchange unit: merge-first into the nearest episode (Eq. 6), else the recurrence gate
    (Eq. 5); a fired cluster is written as 1-3 episodes (Eq. 7), each refined into facts against
    the nearest stored ones (Eqs. 8-9). Answering takes top-k from each store into one prompt.

    Inspect: ``trigger_log_`` (one ``TriggerDecision`` per unit), ``merge_log_``, ``refinements_``,
    ``failures_``, ``events``; ``replay(theta_sim, theta_count)`` re-runs the gate from the stored
    unit embeddings (``unit_vectors_`` in ``unit_order_``) with no LLM; ``construction_breakdown()``.

    Ablations (paper §4.3, Fig. 2), by name: ``RecMem.ablation("w/o episodic", llm=..., embedder=...)``
    (``RecMem.ablations``: full, w/o subconscious, w/o episodic, w/o semantic, direct extraction).
    ``use_subconscious`` / ``use_episodes`` / ``use_facts`` drop a store from the answer context only
    (construction unchanged, other budgets fixed, as in the paper). ``refine_with_episode=False`` is the
    construction of Direct Extraction as in [code]: episodes are still written and merge-first still
    runs; only the facts change, extracted from the raw cluster R alone (from the merged unit alone after
    a merge), one call per consolidation, and an empty fact list is no failure; the named ablation also
    answers without episodes (paper §4.3). ``refine_with_episode="no_episodes"`` keeps the workbench's
    earlier variant (no episodes, hence no merges; the fact call replaces the episode call and an empty
    fact list is a failed consolidation): not the paper's, since the gate then sees other clusters.

    Profiles (issue #39, ``workbench.methods.profile``): ``profile="paper"`` is the paper's method with its
    hyperparameters, the App. F prompts (``paper_prompts``) and, where the paper is silent, the authors' code;
    ``profile="small"`` is the configuration tuned for the offline 0.5B/1.5B (``prompts``), each aid in
    ``profile_notes`` with the recorded evidence; ``"auto"`` (default) is ``small`` for the offline models and
    scripted test LLMs and ``paper`` otherwise. ``param_notes`` lists what an instance changes from the paper
    profile (empty for ``profile="paper"``). Review: ../shared/reviews/recmem.md; closure: docs/reviews/recmem.md.

    Departures from the paper (and the authors' code):

    Paper profile: only where the paper is silent or contradicts itself (decided as [code] decides, each a switch
    for the other reading) or where the workbench forces it.
    - [code] over the paper's text: the count is |R_i|+1 (Eq. 5 writes |R_i|; Fig. 3 and [code] count the new
      unit, ``count_self``); the gate keeps cos > theta_sim (Eq. 5 writes >=; ``strict_gate``); consolidated units
      leave S_sub and the trigger or merged unit is never indexed (Eq. 4 and §6 keep every unit;
      ``retain_consolidated``); the gate's top-k is 2 * theta_count (unstated; ``gate_k``); merge-first has its own
      threshold, None = theta_sim as in the README runs (``theta_merge``); a merged episode is refined again with
      R = the merged unit (paper silent; ``refine_after_merge``); the refiner's old-fact budget is the QA fact
      budget and its floor the QA floor (one --semantic_memory_topk / _threshold; ``refine_k=None``,
      ``refine_min_score``).
    - [code] where the paper is silent: units dated ISO on LoCoMo and "YYYY/MM/DD HH:MM (Day)" on LongMemEval,
      the question date appended to the question as "YYYY/MM/DD (Day) HH:MM", image captions as
      "[Showing Image]: ..." (``text_format``); a cluster is R in similarity order stably sorted by time with
      s_i last (``cluster_order``); every embedded text has its newlines as spaces (``embed_text``); a failed
      episode call loses the trigger unit and leaves R (``on_failure="drop"``); a merged episode gets a new id
      (``stable_episode_ids=False``, lineage kept as metadata); every prompt is a system message; a failed merge
      call counts as "no", "yes" with no text is no merge, a failed refinement keeps its episode without facts
      (all as [code]; recorded in ``failures_``).
    - Forced by the workbench: the gate searches the buffer exactly in numpy ([code] exact qdrant search: same
      result) and all units are embedded in one batch up front; episodes and facts carry source turns, times and
      lineage as metadata (provenance contract; no prompt sees them); JSON replies get the shared client's one
      repair and one retry at temperature >= 0.3 ([code]: json_repair once, 3 retries on API errors only);
      ``OpenAIChat`` caps replies at its ``max_tokens`` (1024 by default; [code] sets none) and
      ``OpenAIEmbedder`` does not truncate a text past 8191 tokens ([code] does); the workbench's default
      embedder is MiniLM, whose thresholds come from a calibration file (the paper's cosines are
      text-embedding-3-small's: pass ``--embedder openai:text-embedding-3-small`` for the paper's); a paper run
      must leave ``--bounded-outputs`` off (its 300-character, 8-item caps are the small runs' aid); dataset
      presets and calibration reach every path alike (thread and Ray executors, ``build``, ``ask``, the app;
      ``eval.settings.build_method``, reviews/recmem.md B2), and ``--calibration auto`` leaves a paper build's
      thresholds alone.
    - The "direct extraction" ablation answers without episodes, as the paper says (§4.3); [code]'s
      ``--disable_semantic_refinement`` changes construction only and still retrieves episodes. Its
      construction is [code]'s (above); ``refine_with_episode="no_episodes"`` is the workbench's earlier,
      non-paper variant (``value_notes``).

    Small profile: the paper profile's choices above, and these aids (``profile_notes`` gives each one's evidence):
    - ``prompts="small"``: the short reworded prompts of ``prompts`` as user messages (the answer's sections in
      the order episodes, facts, raw, the rules after the memories, "asked on <date>" for the question date).
    - ``text_format="workbench"``: dates as "9:00 am on 5 June 2023" for units and questions (the weekday and, for
      questions, the time are lost), captions as every method sees them ("[shares an image: ...]").
    - ``cluster_order="time_arrival"``: a cluster in (session time, arrival) order (digest §10.6).
    - ``embed_text="units"``: only unit texts are embedded on one line; episodes, facts and questions as written.
    - ``on_failure="buffer"``: a failed or empty episode call keeps the trigger unit in the buffer.
    - ``stable_episode_ids=True``: a merged episode keeps its id.
    - ``dedupe_facts=True``: an exact restatement (after case and punctuation) of a stored fact is not stored
      again; the old fact's provenance is extended instead (UPDATE event).
    - ``refine_k=10``: the refiner's old-fact budget does not follow ``k_sem`` (same value at the defaults).
    - Not a profile value but what shapes the small runs most (review turn 4, §3): the recorded cassettes were made
      with ``--bounded-outputs``, whose grammar closes a consolidation reply at 8 items of 300 characters. A reply
      that loops on one paragraph is cut at the 8th item and parses, so its copies are stored and refined (as the
      authors' code stores every returned string); unbounded, the same reply runs to the token cap and does not
      parse. conv-30: 18 of 26 replies stop at exactly 8 items and hold 93 of the 95 verbatim copies, which fill
      150 of the 405 episode slots of the answer prompts (58 of 81 answers). Episode copies are not deduplicated
      (facts are, ``dedupe_facts``); an aid that stores one copy changes the refinement and answer prompts, so it
      waits for a re-recording of the recmem cassettes. A calibrated ``theta_sim`` (MiniLM) is listed by
      ``param_notes`` against the paper's value for the run's dataset.
    - Paper profile, unmeasured: the App. F prompts are reworded (project rule) with ``<date>`` placeholders for
      the paper's concrete examples (ISO dates such as "2025-02-03", "On 2023-05-22, the user ..."), so a model
      sees no example of the date format, and "INSTRUCTIONS (THINK STEP BY STEP)" is not kept; no paper-profile
      recording with a strong model exists (review turn 4, N2). Old facts are shown to the refiner as "- "
      bullets (or "None"), [code] renders a Python list literal (N3).

    Native answer prompt vs the fair-arena one (``answer_prompt="shared"``, ``answer_prompt.py``):
    the native prompt (the paper profile's keeps every instruction of Figs. 15-16; the small profile's is
    shorter) describes the three stores (episodes may repeat facts, raw timestamps are when it was said),
    asks to build on the speakers' words for advice questions,
    allows general knowledge when nothing relevant exists, abstains only if nothing relevant is
    there, and takes its length rule from ``answer_length`` ("free" for LongMemEval). The shared
    prompt gets the same three lists under bare headings, one fixed length rule (about six words)
    whatever ``answer_length`` says, and abstains whenever the memory lacks the answer.
    ``Answer.context`` is every listed unit (all are shown); an episode covers its whole cluster's turns.
    """

    category_labels = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
    name = "recmem"
    title = "RecMem"
    # issue #39: the paper's method (its hyperparameters; where it is silent the authors' code, cited [code]) and
    # the configuration tuned for the offline 0.5B/1.5B, whose every departure profile_notes explains.
    profiles = {
        "paper": {"prompts": "paper",  # App. F, Figs. 6-16 (paper_prompts.py), sent as system messages [code]
                  "text_format": "code",  # [code] run_experiments.py:422-424 (LoCoMo ISO), conv_loader.py:13-20,170-173
                  "cluster_order": "time_similarity",  # [code] rec_mem.py:281-291: stable sort on time, s_i last
                  "embed_text": "all",  # [code] embedding/openai.py:70,116: every embedded text on one line
                  "on_failure": "drop",  # [code] rec_mem.py:298-302: the trigger unit is lost, R stays
                  "stable_episode_ids": False,  # [code] episodic_memory.py:189-230: delete + insert a new uuid
                  "dedupe_facts": False,  # paper §3.4 append-only; [code] semantic_memory.py add_memories
                  "refine_k": None},  # [code] rec_mem.py:183-188,427-431: one --semantic_memory_topk for both
        "small": {"prompts": "small", "text_format": "workbench", "cluster_order": "time_arrival",
                  "embed_text": "units", "on_failure": "buffer", "stable_episode_ids": True, "dedupe_facts": True,
                  "refine_k": 10},
    }
    profile_notes = {
        "prompts": "short reworded prompts (prompts.py, a fifth to a third of the paper profile's length: 1,148 vs "
                   "4,770 characters for the episode prompt; user messages) so the 0.5B/1.5B keep to the JSON within "
                   "their context; no comparison with the paper prompts was recorded. With them the 0.5B needed a "
                   "repair and a retry for 2 of 26 consolidation replies (sample_data/cassettes/locomo/"
                   "recmem-conv-30.jsonl). Its 95 word-for-word copies among 158 episodes are no evidence about "
                   "prompt length: they are loops that the --bounded-outputs grammar (recmem.consolidate: 8 items "
                   "of 300 characters) closed at the 8th item, so they parsed and were stored (18 of the 26 replies "
                   "stop at exactly 8 items and hold 93 of the 95 copies; unbounded, both prompts looped in the "
                   "turn-4 review's probe, reviews/recmem.md §3); dropped: the "
                   "single-message, merge-preference, skip-a-thin-subtopic, coarse-range and long-list rules "
                   "(Figs. 6-8), 'MUST be one of' the fact types and the 8-10 candidate selection (Figs. 9-11), "
                   "the APPROACH block and the paper's section order (Figs. 15-16)",
        "text_format": "unit and question dates in the workbench's spelled-out form ('4:04 pm on 20 January 2023', "
                       "the form the small prompts' own examples use) instead of [code]'s ISO (LoCoMo) / "
                       "'YYYY/MM/DD HH:MM (Day)' (LongMemEval), and image captions as the workbench's "
                       "'[shares an image: ...]' (every method's form) instead of [code]'s '[Showing Image]: ...'; "
                       "every recorded small cassette's prompts carry these texts",
        "cluster_order": "ties of one session's time are told in conversation order (ours, digest §10.6), not "
                         "[code]'s similarity order with the trigger last, so a small model reads a session's "
                         "exchanges as they were said; the recorded cassettes' clusters are in this order",
        "embed_text": "only unit texts are embedded with newlines as spaces; episodes, facts and questions as "
                      "written ([code] flattens every text): the recorded runs retrieved with these embeddings",
        "on_failure": "a cluster whose episode call fails keeps its trigger unit in the buffer ([code] loses it): "
                      "the 0.5B's consolidation replies failed the first parse in 2 of 26 calls "
                      "(recmem.consolidate.repair/.retry in sample_data/cassettes/locomo/recmem-conv-30.jsonl)",
        "stable_episode_ids": "a merged episode keeps its id and lineage ([code] re-inserts it under a new uuid), "
                              "so the app's traces, lineage and census follow one episode through its merges; "
                              "retrieval is identical (reviews/recmem.md run 2)",
        "dedupe_facts": "an exact restatement (after case and punctuation) of a stored fact is not stored again, "
                        "its provenance is extended: the 0.5B's 85 recorded refinement replies return 626 facts of "
                        "which 88 are distinct (sample_data/cassettes/locomo/recmem-conv-30.jsonl), which would "
                        "fill the k_sem=10 fact slots with copies",
        "refine_k": "the refinement's old-fact budget is fixed at 10 instead of following the QA fact budget "
                    "k_sem as [code]'s one --semantic_memory_topk does (the same value at the defaults; a budget "
                    "sweep moves only the answer's budget)",
    }
    value_notes = {
        "refine_with_episode": {"no_episodes": "the workbench's earlier Direct Extraction (no episodes, hence no "
                                               "merge-first): not the paper's nor the authors' ablation"},
        "answer_prompt": fair_arena_note}
    profile_prompt_modules = {"paper": ("recmem.paper_prompts",)}  # hashed for the paper profile only
    how_it_works = HOW_IT_WORKS
    paper_tables = PAPER_TABLES  # its paper's headline tables (paper_tables.py): workbench reproduce
    components = PaperComponents("text-embedding-3-small", "text-embedding-3-small", True,
                                 "§4.1, Implementation details")
    calibration = CALIBRATION  # theta_sim from a documented trigger rate (calibration.py)
    structure_view = "clusters"
    structure_hooks = CLUSTER_HOOKS  # the clusters view's gate replay (structures.py)
    census = CENSUS  # its mechanism counters and check (census.py), run by the generic census
    ablations = ABLATIONS  # paper §4.3, Fig. 2, by name: RecMem.ablation("w/o episodic", llm=..., embedder=...)
    step_cards = {"retrieve": "tiered_retrieve", "answer": "tier_answer"}  # how the trace views summarise its steps
    prompt_modules = ("recmem.method", "recmem.inspection", "recmem.prompts", "recmem.trigger", "recmem.census",
                      "recmem.structures", "recmem.calibration",
                      "recmem.how_it_works")
    question_date_datasets = frozenset({"longmemeval"})  # [code] appends the question date on LongMemEval only

    def __init__(self, *, llm=None, embedder=None, profile: str = "auto",
                 prompts: Literal["paper", "small"] = PROFILE,  # paper: App. F Figs. 6-16 (paper_prompts.py)
                 text_format: Literal["code", "workbench"] = PROFILE,  # dates, captions: [code] conv_loader.py
                 cluster_order: Literal["time_similarity", "time_arrival"] = PROFILE,  # [code] rec_mem.py:281-291
                 embed_text: Literal["all", "units"] = PROFILE,  # [code] embedding/openai.py:70,116: newlines -> spaces
                 theta_sim: float = 0.7,  # paper §4: 0.7 LoCoMo / 0.6 LongMemEval (text-embedding-3-small)
                 theta_count: int = 5,  # paper §4: 5 LoCoMo / 4 LongMemEval
                 theta_merge: float | None = None,  # paper Eq. 6: None = theta_sim; [code] separate arg
                 gate_k: int | None = None,  # [code]: None = 2 * theta_count (paper: "top-k", unspecified)
                 count_self: bool = True,  # [code] + Fig. 3: count = |R|+1; False = |R| (Eq. 5 as written)
                 strict_gate: bool = True,  # [code] cos > theta_sim; False = paper Eq. 5 ">="
                 strict_merge: bool = False,  # paper Eq. 6 and [code]: cos >= theta_merge
                 retain_consolidated: bool = False,  # [code] deletes promoted units; paper §6 keeps them
                 refine_after_merge: bool = True,  # [code]; paper silent (digest §10.5)
                 refine_with_episode: bool | Literal["no_episodes"] = True,  # False = Direct Extraction [code]
                 on_failure: Literal["buffer", "drop"] = PROFILE,  # "drop" = [code] rec_mem.py:298-302
                 stable_episode_ids: bool = PROFILE,  # False = [code] episodic_memory.py: new id per merge
                 dedupe_facts: bool = PROFILE,  # False = [code] semantic_memory.py: every fact appended
                 refine_k: int | None = PROFILE,  # [code] --semantic_memory_topk; None = the QA fact budget
                 refine_min_score: float = 0.0,  # [code] --semantic_memory_threshold, cos > 0.0 (refine and QA)
                 k_sub: int = 10,  # paper §3.6, App. C.2
                 k_epi: int = 5,  # paper §3.6, App. C.2
                 k_sem: int | None = None,  # paper §3.5: None = 2 * k_epi
                 use_subconscious: bool = True,  # ablation, paper Fig. 2
                 use_episodes: bool = True,  # ablation, paper Fig. 2
                 use_facts: bool = True,  # ablation, paper Fig. 2
                 answer_length: Literal["short", "free"] = "short",  # [code] LoCoMo variant; LME "free"
                 answer_prompt: Literal["native", "shared"] = "native"):  # [ours] fair arena (answer_prompt.py)
        self.llm = llm
        self.embedder = embedder
        self.profile = profile
        self.prompts = prompts
        self.text_format = text_format
        self.cluster_order = cluster_order
        self.embed_text = embed_text
        self.theta_sim = theta_sim
        self.theta_count = theta_count
        self.theta_merge = theta_merge
        self.gate_k = gate_k
        self.count_self = count_self
        self.strict_gate = strict_gate
        self.strict_merge = strict_merge
        self.retain_consolidated = retain_consolidated
        self.refine_after_merge = refine_after_merge
        self.refine_with_episode = refine_with_episode
        self.on_failure = on_failure
        self.stable_episode_ids = stable_episode_ids
        self.dedupe_facts = dedupe_facts
        self.refine_k = refine_k
        self.refine_min_score = refine_min_score
        self.k_sub = k_sub
        self.k_epi = k_epi
        self.k_sem = k_sem
        self.use_subconscious = use_subconscious
        self.use_episodes = use_episodes
        self.use_facts = use_facts
        self.answer_length = answer_length
        self.answer_prompt = answer_prompt
        self._apply_profile(profile, llm)

    @classmethod
    def _departure_notes(cls, params: Mapping, dataset: str | None = None) -> dict:
        """As every method's, except that the paper's own setting for the run's dataset when it is not the
        defaults' LoCoMo (``DATASET_PRESETS``: LongMemEval 0.6 / 4 / "free", as ``for_dataset`` gives) is the
        paper's, not a departure. Each key is read on its own against that dataset's value: a LongMemEval run with
        a calibrated theta_sim lists theta_sim alone, noted with LongMemEval's 0.6 (review turn 4, N5: the whole
        preset had to match, so theta_count 4 and answer_length "free", the paper's own LongMemEval values, were
        listed as departures from LoCoMo's). LongMemEval's values on LoCoMo, or on a dataset the run does not
        name, are still flagged."""
        out = super()._departure_notes(params, dataset)
        key = dataset_key(dataset)
        preset = DATASET_PRESETS.get(key) if isinstance(params, Mapping) else None
        for k, v in (preset or {}).items():
            if k not in params:
                continue
            value = _comparable(params.get(k))
            if value == v:
                out.pop(k, None)
            else:  # also a value that is LoCoMo's (the defaults'), and so not flagged above, on LongMemEval
                out[k] = (value, f"the paper's {key} value is {v!r}")
        return out

    @classmethod
    def for_dataset(cls, dataset: str, **params) -> "RecMem":
        """The paper's per-dataset settings (LoCoMo 0.7/5, LongMemEval 0.6/4), overridable by ``params``.

        The cosine thresholds belong to text-embedding-3-small; with another encoder pass a
        ``theta_sim`` from ``trigger.calibrate_thresholds``.
        """
        key = _ALIASES.get(re.sub(r"[^a-z]", "", dataset.lower()))
        if key is None:
            raise ValueError(f"unknown dataset {dataset!r}; expected one of {sorted(DATASET_PRESETS)}")
        method = cls(**{**DATASET_PRESETS[key], **params})
        method.dataset_preset_ = key  # its param_notes read the preset as the paper's for this dataset
        return method

    def _validate_params(self) -> None:
        super()._validate_params()
        for name in ("theta_sim", "theta_merge"):
            value = getattr(self, name)
            if value is not None and not -1.0 <= value <= 1.0:
                raise ValueError(f"{name} is a cosine in [-1, 1], got {value}")
        if int(self.theta_count) != self.theta_count or self.theta_count < 1:
            raise ValueError(f"theta_count must be a positive integer, got {self.theta_count}")
        check_gate_k(self.theta_count, self.gate_k, self.count_self)
        for name, allowed in (("prompts", ("paper", "small")), ("text_format", ("code", "workbench")),
                              ("cluster_order", ("time_similarity", "time_arrival")), ("embed_text", ("all", "units"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if min(self.k_sub, self.k_epi, 0 if self.refine_k is None else self.refine_k,
               self.k_sem if self.k_sem is not None else 0) < 0:
            raise ValueError("k_sub, k_epi, k_sem and refine_k must be >= 0")
        if self.answer_length not in P.LENGTH_RULES:
            raise ValueError(f"answer_length must be one of {sorted(P.LENGTH_RULES)}, got {self.answer_length!r}")
        if self.refine_with_episode not in (True, False, "no_episodes"):
            raise ValueError("refine_with_episode must be True, False or 'no_episodes', "
                             f"got {self.refine_with_episode!r}")
        if self.on_failure not in ("buffer", "drop"):
            raise ValueError(f"on_failure must be 'buffer' or 'drop', got {self.on_failure!r}")
        if not (self.use_subconscious or self.use_episodes or self.use_facts):
            raise ValueError("at least one of use_subconscious, use_episodes, use_facts must be True")

    # -- construction ----------------------------------------------------------------------------
    def _reset(self) -> None:
        self.sub_ = UnitStore(self.embedder, "subconscious")
        self.epi_ = UnitStore(self.embedder, "episodes")
        self.sem_ = UnitStore(self.embedder, "facts")
        self.units_: dict[str, MemoryUnit] = {}  # every unit ever made, whatever became of it
        self.unit_order_: list[str] = []
        self.unit_vectors_ = np.zeros((0, 0), dtype=np.float32)
        self.unit_fate_: dict[str, dict] = {}
        self.pool_: list[int] = []  # positions of the units the gate can still count (the buffer)
        self.trigger_log_: list[TriggerDecision] = []
        self.merge_log_: list[dict] = []
        self.refinements_: list[dict] = []
        self.failures_: list[dict] = []
        self.construction_ledger_: list[dict] = []
        self.fact_keys_: dict[str, str] = {}
        self.counters_ = Counter()

    def subconscious_units(self, conv: Conversation) -> list[MemoryUnit]:
        """The units ``ingest`` would store for ``conv``: one per exchange, with the stored text ([code]
        template, timestamp first, digest §2). Needs no LLM and no embedder, so tools (threshold
        calibration, notebook 07) can embed exactly what RecMem embeds."""
        units, code = [], self.text_format == "code"
        for s in conv.sessions:
            when = self._stamp(s.date_time, conv) if code else format_date(s.date_time, clock=True)
            for ex in exchanges(s):
                body = "\n".join(f"[{t.speaker}]: {self._said(t) if code else t.content}" for t in ex)
                units.append(MemoryUnit(f"unit-{len(units)}", "subconscious",
                                        f"[Message Timestamp]: {when} [Message]: {body}",
                                        tuple(t.id for t in ex), s.date_time, {"session_id": s.id}))
        return units

    @staticmethod
    def _said(turn) -> str:
        """A turn's text as [code] writes it: an image's caption after " [Showing Image]: " (conv_loader.py:13-20),
        where the workbench's ``Turn.content`` appends " [shares an image: ...]"."""
        caption = turn.extras.get("blip_caption") if turn.extras else None
        return f"{turn.text} [Showing Image]: {caption}" if caption else turn.text

    @staticmethod
    def _stamp(when, conv: Conversation | None = None, *, question: bool = False) -> str:
        """A date as [code] writes it: ISO on LoCoMo (run_experiments.py:422-424); on LongMemEval (a user/assistant
        conversation) "YYYY/MM/DD HH:MM (Day)" for units (conv_loader.py:170-173) and the dataset's own
        "YYYY/MM/DD (Day) HH:MM" for the question date (run_experiments.py:505-506)."""
        if isinstance(when, str):
            try:
                when = datetime.fromisoformat(when)
            except ValueError:
                return when
        if when is None:
            return "unknown date"
        chat = question or (conv is not None and {t.speaker for t in conv.turns} <= {"user", "assistant"})
        if not chat:
            return when.isoformat()
        day, clock = when.strftime("%Y/%m/%d"), when.strftime("%H:%M")
        return f"{day} ({when.strftime('%a')}) {clock}" if question else f"{day} {clock} ({when.strftime('%a')})"

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed as [code] does: newlines become spaces, for every text (``embed_text="all"``) or, in the small
        profile, for unit texts only (the caller flattens them; other texts go as written)."""
        texts = [t.replace("\n", " ") for t in texts] if self.embed_text == "all" else list(texts)
        return np.asarray(self.embedder(texts), dtype=np.float32)

    def _send(self, prompt: str):
        """The paper profile sends each prompt as the system message, as [code] does (rec_mem.py:234,451,484,
        episodic_memory.py:62,206); the small profile as the user message."""
        return [{"role": "system", "content": prompt}] if self.prompts == "paper" else prompt

    @property
    def _P(self):
        return PP if self.prompts == "paper" else P

    def _build(self, conv: Conversation) -> None:
        units = self.subconscious_units(conv)
        if not units:
            return
        # [code] newlines become spaces before embedding; no LLM call here.
        self.unit_vectors_ = np.asarray(self.embedder([u.text.replace("\n", " ") for u in units]), dtype=np.float32)
        for pos, unit in enumerate(units):
            self.units_[unit.id] = unit
            self.unit_order_.append(unit.id)
            with track() as calls:
                decision = self._ingest_unit(pos, unit)
            self.trigger_log_.append(decision)
            self._advance(len(unit.source_ids))
            self.construction_ledger_.extend(
                {"unit_id": unit.id, "role": c.role, "operation": _operation(c.role), "prompt_tokens": c.prompt_tokens,
                 "completion_tokens": c.completion_tokens, "cached": c.cached, "error": c.error} for c in calls)

    def _ingest_unit(self, pos: int, unit: MemoryUnit) -> TriggerDecision:
        """Digest §3: merge-first, else gate, else consolidate (strictly sequential)."""
        if self._try_merge(pos, unit):
            return TriggerDecision(unit.id, pos, outcome="merged")
        d = decide(unit.id, pos, cosines(self.unit_vectors_, self.pool_, pos),
                   [self.unit_order_[j] for j in self.pool_], theta_sim=self.theta_sim, theta_count=self.theta_count,
                   k=self.gate_k, strict=self.strict_gate, count_self=self.count_self)
        if not d.fired:
            self._buffer(pos, unit, d, f"no recurrence yet: count {d.count} < {self.theta_count}")
            return d
        return self._consolidate(pos, unit, d)

    def _buffer(self, pos: int, unit: MemoryUnit, d: TriggerDecision, cause: str, **data) -> None:
        self.pool_.append(pos)
        self.sub_.add([replace(unit, meta={**unit.meta, "status": "buffered"})], self.unit_vectors_[pos:pos + 1])
        self.unit_fate_[unit.id] = {"status": "buffered"}
        self._emit("BUFFER", unit.id, after=unit.text, cause=cause, source_ids=unit.source_ids, time=unit.time,
                   count=d.count, theta_count=self.theta_count, relevant_ids=list(d.relevant_ids), **data)

    def _retain(self, pos: int, unit: MemoryUnit, status: str, into: list[str]) -> None:
        """Record what absorbed a unit; keep it retrievable in S_sub if ``retain_consolidated``."""
        self.unit_fate_[unit.id] = {"status": status, "into": list(into)}
        if not self.retain_consolidated:
            return
        meta = {**unit.meta, "status": status, "into": list(into)}
        if unit.id in self.sub_:
            self.sub_.update(unit.id, meta=meta)
        else:
            self.sub_.add([replace(unit, meta=meta)], self.unit_vectors_[pos:pos + 1])

    # -- merge-first (paper §3.3, Eq. 6) ---------------------------------------------------------
    def _try_merge(self, pos: int, unit: MemoryUnit) -> bool:
        if not len(self.epi_):
            return False
        hit = self.epi_.search_vector(self.unit_vectors_[pos], 1)[0]
        theta = self.theta_sim if self.theta_merge is None else self.theta_merge
        passed = hit.score > theta if self.strict_merge else hit.score >= theta
        attempt = {"unit_id": unit.id, "episode_id": hit.unit_id, "cos": hit.score, "passed": passed,
                   "should_merge": None, "merged": False, "before": hit.text, "after": None, "error": None}
        self.merge_log_.append(attempt)
        if not passed:
            return False
        try:
            out = self.llm.complete(self._send(self._P.MERGE.format(new_memory=unit.text, past_memory=hit.text)),
                                    schema=self._P.MERGE_SCHEMA, role="recmem.merge").parsed
        except LLMError as exc:  # recorded; the unit goes on to the gate as if the answer were "no"
            attempt["error"] = str(exc)
            self.failures_.append({"stage": "merge", "unit_id": unit.id, "episode_id": hit.unit_id, "error": str(exc)})
            return False
        attempt["should_merge"] = str(out.get("should_merge", "")).strip().lower()
        merged = str(out.get("merged_memory") or "").strip()
        if attempt["should_merge"] != "yes" or not merged:  # [code]: "yes" with empty text is no merge
            return False
        episode = self._apply_merge(pos, unit, self.epi_[hit.unit_id], merged, hit.score, theta)
        attempt.update(merged=True, after=merged, episode_id=episode.id)
        if self.refine_after_merge:  # [code]: refinement with R = the unit alone (Direct Extraction: R only)
            self._refine(episode if self.refine_with_episode else None,
                         {"id": None, "members": [unit.id], "text": unit.text, "source_ids": unit.source_ids,
                          "time": unit.time}, mode="after_merge" if self.refine_with_episode else "direct_merge")
        return True

    def _apply_merge(self, pos, unit, old: MemoryUnit, text: str, cos: float, theta: float) -> MemoryUnit:
        meta = {**old.meta, "version": old.meta["version"] + 1, "raw_ids": [*old.meta["raw_ids"], unit.id],
                "last_time": unit.time}
        # copy_of stays: it names what the consolidation wrote (a copy), which the census and the clusters view's
        # recurrence check judge alike after a merge (review turn 4, N8: declined, docs/reviews/recmem.md)
        source_ids = _union(old.source_ids, unit.source_ids)
        vector = self._embed([text]) if self.embed_text == "all" else None
        if self.stable_episode_ids:
            new = self.epi_.update(old.id, text=text, source_ids=source_ids, time=unit.time or old.time, meta=meta)
            if vector is not None:
                self.epi_.index.add([old.id], vector)
        else:  # [code]: the merged episode replaces the old point under a new id
            self.epi_.delete(old.id)
            new = self.epi_.add([MemoryUnit(self._next_id("epi"), "episode", text, source_ids, unit.time or old.time,
                                            {**meta, "replaces": old.id})], vector)[0]
        self._emit("MERGE", new.id, before=old.text, after=text,
                   cause=f"{unit.id} merged (cos {cos:.3f}, theta {theta})",
                   source_ids=unit.source_ids, time=unit.time, unit=unit.id, cos=cos, lineage=meta["lineage"],
                   replaced=None if new.id == old.id else old.id)
        self._retain(pos, unit, "merged", [new.id])
        return new

    # -- recurrence-triggered consolidation (paper §3.2-3.3, Eq. 7) --------------------------------
    def _consolidate(self, pos: int, unit: MemoryUnit, d: TriggerDecision) -> TriggerDecision:
        if self.cluster_order == "time_similarity":  # [code] stable sort of R (similarity order) on time, s_i last
            members = sorted([self.units_[i] for i in d.relevant_ids], key=lambda u: u.time or "") + [unit]
        else:
            members = sorted([self.units_[i] for i in d.relevant_ids] + [unit],
                             key=lambda u: (u.time or "", self.unit_order_.index(u.id)))
        cluster = {"id": self._next_id("cluster"), "trigger": unit.id, "members": [m.id for m in members],
                   "cosines": {i: c for i, c in d.neighbours if i in d.relevant_ids},
                   "text": "\n".join(f"- {m.text}" for m in members),
                   "source_ids": _union(*(m.source_ids for m in members)), "time": members[-1].time,
                   "first_time": members[0].time}
        if self.refine_with_episode == "no_episodes":
            return self._consolidate_direct(pos, unit, d, cluster)
        texts, error = self._generate_episodes(cluster)
        if not texts:
            return self._fail(pos, unit, d, cluster, error)
        new = [self._episode(t, cluster) for t in texts]
        # a reply that repeats a paragraph: each copy is kept and refined (as the authors' code does), and named
        copies = inspection.repeated_episodes([{"id": e.id, "text": e.text} for e in new])
        new = [replace(e, meta={**e.meta, "copy_of": copies[e.id]}) if e.id in copies else e for e in new]
        episodes = self.epi_.add(new, self._embed([e.text for e in new]) if self.embed_text == "all" else None)
        for e in episodes:
            self._emit("CONSOLIDATE", e.id, after=e.text, cause=f"recurrence: count {d.count} >= {self.theta_count}",
                       source_ids=e.source_ids, time=e.time, cluster=cluster["id"], trigger=unit.id,
                       members=cluster["members"], cosines=cluster["cosines"], count=d.count)
        self._promote(pos, unit, d, [e.id for e in episodes])
        if not self.refine_with_episode:  # [code] Direct Extraction: one extraction from R alone
            self._refine(None, cluster, mode="direct_cluster")
            return d
        for e in episodes:
            self._refine(e, cluster, mode="new_episode")
        return d

    def _episode(self, text: str, cluster: dict) -> MemoryUnit:
        eid = self._next_id("epi")  # lineage = the first id; survives merges (digest §10.13)
        return MemoryUnit(eid, "episode", text, cluster["source_ids"], cluster["time"],
                          {"lineage": eid, "version": 1, "raw_ids": cluster["members"], "cluster": cluster["id"],
                           "first_time": cluster["first_time"], "last_time": cluster["time"]})

    def _generate_episodes(self, cluster: dict) -> tuple[list[str], str]:
        try:
            out = self.llm.complete(self._send(self._P.EPISODES.format(cluster=cluster["text"])),
                                    schema=self._P.EPISODES_SCHEMA, role="recmem.consolidate").parsed
        except LLMError as exc:
            return [], str(exc)
        texts = [str(e).strip() for e in out.get("episodes", []) if str(e).strip()]
        return texts, "" if texts else "no episodes returned"

    def _consolidate_direct(self, pos, unit, d, cluster) -> TriggerDecision:
        record = self._refine(None, cluster, mode="direct")
        if record["error"] or not record["returned"]:
            return self._fail(pos, unit, d, cluster, record["error"] or "no facts returned")
        self._emit("CONSOLIDATE", cluster["id"], after=_bullets(self.sem_[i].text for i in record["new_fact_ids"]),
                   cause=f"recurrence: count {d.count} >= {self.theta_count} (direct extraction)",
                   source_ids=cluster["source_ids"], time=cluster["time"], cluster=cluster["id"], trigger=unit.id,
                   members=cluster["members"], cosines=cluster["cosines"], count=d.count)
        self._promote(pos, unit, d, record["new_fact_ids"])
        return d

    def _promote(self, pos: int, unit: MemoryUnit, d: TriggerDecision, into: list[str]) -> None:
        """The cluster leaves the buffer ([code] deletes R_i; the trigger unit is never inserted)."""
        members = set(d.relevant_ids)
        self.pool_ = [j for j in self.pool_ if self.unit_order_[j] not in members]
        for uid in d.relevant_ids:
            old = self.units_[uid]
            if not self.retain_consolidated:
                self.sub_.delete(uid)
                self._emit("DELETE", uid, before=old.text, cause=f"consolidated into {', '.join(into)}",
                           source_ids=old.source_ids, time=old.time, trigger=unit.id)
            self._retain(self.unit_order_.index(uid), old, "consolidated", into)
        self._retain(pos, unit, "consolidated", into)

    def _fail(self, pos, unit, d, cluster, error: str) -> TriggerDecision:
        """Consolidation failed: the cluster stays; the unit joins the buffer (or is dropped, [code])."""
        self.failures_.append({"stage": "consolidate", "unit_id": unit.id, "cluster": cluster["id"],
                               "members": cluster["members"], "error": error})
        if self.on_failure == "drop":
            self.unit_fate_[unit.id] = {"status": "dropped"}
            self._emit("DELETE", unit.id, before=unit.text, cause=f"consolidation failed, unit dropped: {error}",
                       source_ids=unit.source_ids, time=unit.time)
            return replace(d, outcome="dropped")
        self._buffer(pos, unit, d, f"consolidation failed, kept in the buffer: {error}", consolidation_failed=error)
        return replace(d, outcome="failed")

    # -- semantic refinement (paper §3.4, Eqs. 8-9) -----------------------------------------------
    def _refine(self, episode: MemoryUnit | None, cluster: dict, *, mode: str) -> dict:
        """Detail recovery + fact maintenance against the nearest stored facts V; returns the record."""
        role = {"new_episode": "recmem.refine", "after_merge": "recmem.refine_merge", "direct": "recmem.refine_direct",
                "direct_cluster": "recmem.refine_direct", "direct_merge": "recmem.refine_direct"}
        if episode is not None:
            old = [h for h in self.sem_.search_vector(self.epi_.vector(episode.id), self._refine_k())
                   if h.score > self.refine_min_score]
            prompt = self._P.REFINE.format(episode=episode.text, raw=cluster["text"],
                                           old_facts=_bullets(h.text for h in old))
        else:  # [code] Direct Extraction: neither E nor S
            old, prompt = [], self._P.REFINE_DIRECT.format(raw=cluster["text"])
        record = {"episode_id": episode.id if episode else None, "mode": mode, "cluster": cluster["id"],
                  "source_unit_ids": list(cluster["members"]), "V": [[h.unit_id, h.score] for h in old],
                  "returned": 0, "new_fact_ids": [], "duplicates": [], "tokens": 0, "error": None}
        self.refinements_.append(record)
        with track() as calls:
            try:
                out = self.llm.complete(self._send(prompt), schema=self._P.FACTS_SCHEMA, role=role[mode]).parsed
            except LLMError as exc:  # recorded; the episode stays, without facts from this call
                out, record["error"] = None, str(exc)
        record["tokens"] = sum(c.prompt_tokens + c.completion_tokens for c in calls)
        if out is None:
            if mode != "direct":  # in the "no_episodes" variant the consolidation failure records it
                self.failures_.append({"stage": "refine", "mode": mode, "episode_id": record["episode_id"],
                                       "cluster": cluster["id"], "error": record["error"]})
            return record
        facts = [str(f).strip() for f in out.get("facts", []) if str(f).strip()]
        record["returned"] = len(facts)
        self._store_facts(facts, cluster, record)
        return record

    def _refine_k(self) -> int:
        """Old facts V shown to the refiner: ``refine_k``, or with None the QA fact budget ([code] uses one
        --semantic_memory_topk for both, rec_mem.py:183-188,427-431)."""
        return self._k_sem() if self.refine_k is None else self.refine_k

    def _k_sem(self) -> int:
        return 2 * self.k_epi if self.k_sem is None else self.k_sem

    def _store_facts(self, facts: list[str], cluster: dict, record: dict) -> None:
        new: list[MemoryUnit] = []
        for text in facts:
            key = _norm(text)
            if self.dedupe_facts and key in self.fact_keys_:
                record["duplicates"].append([text, self.fact_keys_[key]])
                self._extend_provenance(self.fact_keys_[key], cluster)
                continue
            unit = MemoryUnit(self._next_id("fact"), "fact", text, cluster["source_ids"], cluster["time"],
                              {"episode": record["episode_id"], "mode": record["mode"], "cluster": cluster["id"]})
            self.fact_keys_.setdefault(key, unit.id)
            new.append(unit)
        for u in self.sem_.add(new, self._embed([u.text for u in new]) if self.embed_text == "all" and new else None):
            record["new_fact_ids"].append(u.id)
            self._emit("ADD", u.id, after=u.text, cause=f"refined ({record['mode']}) from "
                       f"{record['episode_id'] or cluster['id']}", source_ids=u.source_ids, time=u.time,
                       episode=record["episode_id"], cluster=cluster["id"], mode=record["mode"])

    def _extend_provenance(self, fact_id: str, cluster: dict) -> None:
        if fact_id not in self.sem_:  # a duplicate within the same reply: nothing stored yet
            return
        old = self.sem_[fact_id]
        added = [s for s in cluster["source_ids"] if s not in old.source_ids]
        if added:
            self.sem_.update(fact_id, source_ids=_union(old.source_ids, added))
            self._emit("UPDATE", fact_id, before=old.text, after=old.text, cause="restated by a later refinement",
                       source_ids=added, time=cluster["time"], added_source_ids=added)

    def _next_id(self, kind: str) -> str:
        self.counters_[kind] += 1
        return f"{kind}-{self.counters_[kind] - 1}"

    # -- answering (paper §3.5) -------------------------------------------------------------------
    def _answer(self, question: str, *, now: datetime | None) -> Answer:
        steps = []
        when = now and (self._stamp(now, question=True) if self.text_format == "code" else format_date(now))
        query = question if now is None else f"{question}\nThe date of the question is {when}"  # [code]
        qvec = self._embed([query])[0]
        plan = [("episode", self.epi_, self.k_epi, self.use_episodes, None),
                # [code] rec_mem.py:183-188: facts need cos > --semantic_memory_threshold (refine_min_score, 0.0)
                ("fact", self.sem_, self._k_sem(), self.use_facts, self.refine_min_score),
                ("subconscious", self.sub_, self.k_sub, self.use_subconscious, None)]
        hits: dict[str, list[Hit]] = {}
        for layer, store, k, used, floor in plan:
            hits[layer] = []
            if not used or k <= 0:
                continue
            with self.step(steps, "retrieve", f"{layer}: cosine top-{k}") as s:
                found = store.search_vector(qvec, k)
                hits[layer] = [h for h in found if floor is None or h.score > floor]
                s.hits = hits[layer]
                s.data.update(layer=layer, k=k, query=query)
        with self.step(steps, "answer", "Answer from episodes, facts and raw exchanges") as s:
            if self.answer_prompt == "shared":  # same three lists, headed only (no native instructions)
                context = "\n\n".join(f"{head}:\n{_bullets(h.text for h in hits[layer])}" for layer, head in
                                      (("episode", "Episodes"), ("fact", "Facts"), ("subconscious", "Raw exchanges")))
                prompt = shared_prompt(context, question, now)
                s.data["answer_prompt"] = "shared"
            elif self.prompts == "paper":  # [code] rec_mem.py:225-234: the question carries its date (LongMemEval)
                prompt = self._send(PP.ANSWER.format(
                    episodic=_bullets(h.text for h in hits["episode"]),
                    subconscious=_bullets(h.text for h in hits["subconscious"]),
                    semantic=_bullets(h.text for h in hits["fact"]), question=query,
                    length_step=PP.LENGTH_STEPS[self.answer_length]))
            else:
                prompt = P.ANSWER.format(episodic=_bullets(h.text for h in hits["episode"]),
                                         semantic=_bullets(h.text for h in hits["fact"]),
                                         subconscious=_bullets(h.text for h in hits["subconscious"]),
                                         length_rule=P.LENGTH_RULES[self.answer_length],
                                         now_line=question_date_line(now), question=question)
            text = self.llm.complete(prompt, role="recmem.answer").text.strip()
            s.data.update(answer=text, counts={layer: len(h) for layer, h in hits.items()})
        return Answer(question, text, tuple(steps), tuple(hits["episode"] + hits["fact"] + hits["subconscious"]))

    # -- inspection (read-only, no LLM; bodies in ``inspection``) ----------------------------------
    def _units(self) -> list[dict]:
        return self.sub_.rows() + self.epi_.rows() + self.sem_.rows()

    def as_retriever(self, layer: Literal["subconscious", "episode", "fact", "all"] = "all"):
        """One store (``subconscious`` | ``episode`` | ``fact``) or all three merged by score."""
        self._check_ingested()
        stores = {"subconscious": self.sub_, "episode": self.epi_, "fact": self.sem_}
        if layer == "all":
            return MergedRetriever(list(stores.values()), name="recmem")
        if layer not in stores:
            raise ValueError(f"layer must be one of {[*stores, 'all']}, got {layer!r}")
        return stores[layer]

    def structures(self) -> dict:
        """Plain JSON for ``widgets.cluster_view`` (saved as ``structures.json``): the units in arrival
        order with their fate, their embeddings (full, for replaying the gate at other thresholds,
        and a 2-D PCA projection), the live trigger log, episodes (with member unit ids), facts and
        the gate's parameters. No LLM."""
        self._check_ingested()
        return inspection.structures(self)

    def replay(self, theta_sim: float | None = None, theta_count: int | None = None, k: int | None = None, *,
               live_merges: bool = True, live_failures: bool = True) -> list[TriggerDecision]:
        """Replay the gate from the stored unit embeddings (no LLM; ``trigger.replay_triggers``).

        With ``live_merges``/``live_failures`` the live run's merge-first absorptions and failed
        consolidations are taken as given, so the live thresholds reproduce ``trigger_log_``
        exactly; other thresholds show what the gate alone would do (merges cannot be re-decided
        without an LLM). Without them every unit reaches the gate and every consolidation succeeds.
        """
        self._check_ingested()
        return inspection.replay(self, theta_sim, theta_count, k, live_merges=live_merges,
                                 live_failures=live_failures)

    def construction_breakdown(self, by: Literal["operation", "role"] = "operation") -> dict:
        """Construction calls and tokens per operation (merge / consolidate / refine) or per ledger role."""
        self._check_ingested()
        return inspection.construction_breakdown(self, by)

    def consolidation_summary(self) -> dict:
        """Unit outcomes, store sizes and the [code] save ratio (units out of the buffer / units)."""
        self._check_ingested()
        return inspection.consolidation_summary(self)

    @staticmethod
    def summary_stats(answers: Sequence[Answer]) -> dict:
        """From traces only: mean hits per layer in the answer context, and mean query tokens."""
        n = len(answers)
        totals = Counter()
        for a in answers:
            for s in a.steps:
                if s.kind == "retrieve" and s.data.get("layer") in LAYERS:
                    totals[s.data["layer"]] += len(s.hits)
        return {"questions": n, "mean_hits": {layer: totals[layer] / n if n else 0.0 for layer in LAYERS},
                "mean_query_tokens": sum(a.usage.total_tokens for a in answers) / n if n else 0.0}
