"""HyMem: hybrid two-level memory with dynamic retrieval scheduling.

Zhao et al., "HyMem: Hybrid Memory Architecture with Dynamic Retrieval Scheduling",
arXiv 2602.13933 (digest: shared/methods/hymem.md). Prompts: ``prompts.py``;
segmentation and the Level-2 retriever: ``segment.py`` (both in this package).
"""
from __future__ import annotations

from datetime import datetime
from typing import Literal, Sequence

from .how_it_works import HOW_IT_WORKS
from ..components import PaperComponents
from .paper_tables import TABLES as PAPER_TABLES
from ...data import Conversation
from ...llm.errors import LLMError
from ...trace import Answer, Hit
from ..answer_prompt import shared_answer
from ..base import Ablation, MemoryMethod, fair_arena_note
from ..profile import PROFILE
from ..common import format_date, format_hits, format_turn, question_date_line
from ..store import MemoryUnit, UnitStore
from .census import CENSUS
from . import paper_prompts as PP
from . import prompts as P
from .segment import Level2Retriever, Span, clean_llm_spans, event_text, numbered_turns, window_spans

# Tier of a round whose deep generator failed: its answer is the light one (empty without light).
DEEP_FAILED = "deep_failed"


def _err(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"


# Paper §4.3, Table 2 (LoCoMo): storage columns Level-1 / Level-2 and retrieval modules L(ight) / D(eep) /
# R(eflection), one row each, named by its ticks. Without Level-2 (levels="L1") the rows also lack D; the
# Level-2-only rows (levels="L2") have no D either, and levels="L2" alone keeps deep=True (reviews/hymem.md #24).
ABLATIONS = {
    "full": Ablation({}, "paper Table 2 row 1: L1+L2 / L+D+R (89.55%)"),
    "L1 / L+R": Ablation({"levels": "L1", "deep": False}, "paper Table 2 row 2 (72.15%)"),
    "L1+L2 / D+R": Ablation({"light": False}, "paper Table 2 row 3 (91.75%): every round goes deep"),
    "L1+L2 / L+D": Ablation({"reflection": False}, "paper Table 2 row 4 (87.34%): one round, no R"),
    "L1 / L": Ablation({"levels": "L1", "deep": False, "reflection": False}, "paper Table 2 row 5 (67.98%)"),
    "L1+L2 / D": Ablation({"light": False, "reflection": False}, "paper Table 2 row 6 (91.16%)"),
    "L2 / L+R": Ablation({"levels": "L2", "deep": False}, "paper Table 2 row 7 (78.49%): raw events searched"),
    "L2 / L": Ablation({"levels": "L2", "deep": False, "reflection": False}, "paper Table 2 row 8 (77.40%)"),
}


class HyMem(MemoryMethod):
    """Level-2 = raw topic events; Level-1 = LLM key-information sentences, embedded and linked
    many-to-one to their event. Answering (Alg. 1) loops up to ``max_rounds`` rounds: the light
    module (cosine top-k Level-1 -> G_theta, which answers or asks to escalate), the deep module
    only on escalation (top-N Level-1 -> LLM selection f_gamma in batches of ``batch_size``, run
    concurrently -> backtrack to Level-2 -> G_gamma), then reflection R (done, or a rewritten
    query). Retrieval uses the current query q_i; both generators answer the original q_0 with the
    memory pool M of earlier intermediate answers.

    Ablations (paper Table 2): ``light=False`` (every round goes deep), ``deep=False``,
    ``reflection=False`` (one round, no R), ``levels="L1"`` (generators never see Level-2: the deep
    generator gets the selected Level-1 items) and ``levels="L2"`` (no summaries: raw events are
    embedded and searched directly). Each row of Table 2 by name (``HyMem.ablations``, named by its
    ticks): ``HyMem.ablation("L1 / L+R", llm=..., embedder=...)``; the rows without Level-2 and the
    Level-2-only rows also set ``deep=False``, as the table does (``levels="L2"`` alone keeps the deep
    module, which no row of Table 2 has).

    Trace per round: ``light`` (retrieved ids, scores, finished, answer, escalate), ``deep``
    (candidates, batches with the ids each selected, selected Level-1, Level-2 used), ``reflect``
    (finished, done, new query); a closing ``final`` step says which round's answer was returned.
    Construction emits ADD per event and SUMMARIZE per Level-1 unit (with ``event_id``).

    Profiles (``workbench.methods.profile``): ``profile="paper"`` is the paper's method: App. B's prompts
    with every instruction kept in our words (``paper_prompts.py``, placeholders for the paper's example
    values, schemas requiring each field read) and, where the paper is silent, the authors' released code
    (github:xiaochenzhao-svg/HyMem @ 93e2d19, ``[code]`` comments with file:line). ``profile="small"``
    is the configuration tuned for the offline 0.5B/1.5B models; ``"auto"`` picks small for those
    (and scripted test LLMs), paper for any other model. ``param_notes`` lists every departure of an
    instance from the paper profile. The released code itself, where it departs from the paper, is
    ``HyMem(profile="paper", **HyMem.authors_code_params)`` (whole sessions as events, no overlap, T=1).

    Departures of both profiles (the paper is silent, or the workbench contract needs them):

    1. Segmentation is not described: ``segmentation="llm"`` (our prompt, one call per session
       returning topic spans over turns cut to ``segment_preview_chars``, widened by
       ``overlap_turns``=2; §3.1 asks for topic events that may overlap, without a size), digest
       §10.1. Uncovered turns become their own events; a failed or empty reply falls back to
       windows. The code has no topic split: one event per session (``authors_code_params``).
       Topic spans of 8 to 20 turns follow §3.1's "based on discussed topics" over the code's
       sessions. The widening has a cost neither the paper nor the code shows: a span shorter than
       the overlap ends up inside its neighbour (spans [1-2] and [3-6] become D1:1-4 within D1:1-6),
       so identical Level-1 sentences take paired slots of the top k and of N (3 of 10 light slots
       in reviews/hymem.md turn 4, check A) and G_gamma can read the same turns twice (N6). An
       overlap that cannot nest changes the summarizer's and generators' inputs: it waits for a
       re-recording of the HyMem cassettes.
    2. The session date is put above the summarizer's input (as the code does:
       scripts/evaluate_locomo.py:69) and before every Level-1/Level-2 text the prompts show
       (B.4's index shows a date). Whether it is also embedded is ``embed_dates`` (profiles).
    3. T (``max_rounds``=3) is not given; Table 2 (R changes accuracy) implies T > 1, so the code's
       T=1 (hymem/core/memory_system.py:203) is not taken (it is in ``authors_code_params``).
       Batch ids are numbered from 0 inside each batch (the code numbers them across batches:
       the same at N <= d, the paper profile's case).
    4. Robustness kept in both (digest §10.7): a failed R reply ends the loop (as the code, :377);
       an empty ``new_question`` reuses q_0; a failed selection batch selects nothing (as the
       code, :485); unreadable JSON is repaired, then retried, by the LLM client (the code retries
       an empty summary twice instead, :133-138). Every failure is recorded (trace ``error`` or
       ``failures_``).
    5. The question date (``now``) is given to both generators on LongMemEval only (digest §10.3;
       ``question_date_datasets``: the harness passes ``now=None`` on LoCoMo).
    6. ``Answer.context`` (the trace convention: what the final reader saw) is the context of the
       generator whose answer is returned (that round's Level-1 hits, or its Level-2 events); the
       pool carries earlier rounds' answers as text only, and their hits stay in their steps. Each
       Level-1 sentence carries every turn id of its widened event (no sentence-to-turn mapping
       exists without another call), so turn-level evidence recall credits the whole event.
    7. The embedder is whatever is injected (the paper uses Qwen3-Embedding-0.6B; the authors' code
       defaults to text-embedding-3-small, ``--embedder openai:text-embedding-3-small``) and queries
       get no instruction prefix. A run on another embedder does not yet list it among its
       departures (review turn 4, N7: the shared embedder work, issue #63).
    8. G_theta and G_gamma answer q_0 (Alg. 1 l.7, l.12); the code passes them the rewritten q_i.
       R follows App. B.2 (judge, then rewrite), not §3.4's decomposition into sub-problems, which
       neither B.2 nor the code has.
    9. Identical Level-1 sentences are kept, as in the paper and the code (``dedupe_level1=True``
       stores those of one event once; flagged in ``param_notes``).
    10. Output bounds (``--bounded-outputs``, ``llm/bounds.py``) are a client option, off by
       default; when on they also bound the paper profile's ``hymem.summarize``/``hymem.segment``.
    11. Fair arena (``answer_prompt="shared"``): the loop runs unchanged (G_theta and G_gamma keep
       their prompts, which also steer it), then one extra call with ``answer_prompt.SHARED_ANSWER``
       over the returned round's units and the earlier rounds' pool writes the answer. The native
       generators differ from it: JSON replies, G_theta decides whether to escalate, G_gamma gives
       "every plausible answer" and infers rather than refuses; neither has a length rule nor an
       abstention phrase.
    12. Prompt layout (the paper gives none): instructions, memories, pool, question, reply format, all
       in one user message. The authors' code puts the question before the memories, sends the system
       message "You must respond with a JSON object." and tells R that ``new_question`` may be left
       empty (hymem/core/memory_system.py:300-301, :402-404; llm_controller.py:137; templates.py:68);
       none of this is followed (review turn 4, N1). The paper profile's G_gamma schema requires a
       non-empty answer (``minLength: 1``, ours, from B.5's "avoid refusing"; the code accepts ""), so
       an empty reply costs a repair and a retry call and still ends as "" (N9). An empty answer is
       shown to the next round's generators and to R as "(no answer)"; the code passes "" and adds
       nothing to the pool (N4). Each of these changes a prompt: they wait for a re-recording.
    13. Cost: ``summary_stats``' ``mean_query_tokens`` counts every query-phase call (R and repairs
       included); the paper's "Token" figure cannot include R (Table 2's R deltas are smaller than one R
       prompt), so ``mean_query_tokens_without_reflection`` is the figure to set beside Tables 1-3 (N5).

    The paper profile's choices where the paper is silent, from the code: d = 50 (one f_gamma
    call at N=30), the pool M holds the last answer alone, shown after the memories (Alg. 1 l.14),
    every selected event reaches G_gamma in f_gamma's order with no fallback when nothing is
    selected, an unreadable G_theta reply is an accepted empty answer and only ``finished == 2``
    escalates, an unreadable G_gamma reply is an empty answer, an event whose summary is empty
    is not stored, the sentence alone is embedded (E(s_i)), the last answer is returned when T
    runs out, temperature 0.5 (``profiles["paper"]`` cites each).

    The small profile's aids (each with its evidence in ``profile_notes``, listed by
    ``param_notes``): ``prompts="small"`` (our shorter rewording, our own B.4 example, enum-pinned
    flags), ``batch_size=10``, ``memory_pool="accumulate"`` (each round's query and answer, §3.2's
    prose reading), ``fallback_top=3``, ``max_level2=10`` in time order (``level2_order="time"``),
    ``on_failure="recover"`` (a failed G_theta reply escalates, a failed G_gamma reply keeps the
    light answer as tier ``"deep_failed"``, which ``last_deep`` skips; an empty summary keeps the
    raw event as its Level-1 item), ``embed_dates=True``, ``on_round_limit="last_deep"`` and
    ``temperature=0.0``. The small prompts keep their wording under the Table 2 level ablations (the recorded
    cassettes' keys): with ``levels="L2"`` the light and selection prompts still call the raw events they show
    "memory summaries", with ``levels="L1"`` the deep prompt still calls the summaries it shows "conversation
    excerpts"; only the paper prompts name what they show.

    Declined review items (docs/reviews/hymem.md): near-duplicate Level-1 items across overlapping events are
    kept (the paper and the code keep even identical ones; ``dedupe_level1`` drops identical ones of one event);
    the App. B prompts are not copied word for word (project rule: the paper profile keeps each instruction in
    our words); a strong-model run with the Qwen3 embedder (deep share 0.2-0.3, about 0.8k light tokens) cannot
    run offline: the 1.5B's paper-profile recording of the gallery example is what the repository holds.
    """

    category_labels = {1: "single-hop", 2: "multi-hop", 3: "open-domain", 4: "temporal", 5: "(not scored)"}
    per_session_roles = frozenset({"segment"})  # topic segmentation: one call per session
    name = "hymem"
    title = "HyMem"
    value_notes = {
        "segmentation": {"window": "events are fixed windows of window_turns turns, not topic events",
                         "session": "each whole session is one event, as in the authors' code; the paper describes "
                                    "topic events"},
        "level1_granularity": {"event": "one Level-1 item per event instead of several key sentences (Fig. 3a)"},
        # paper Table 2 ablations: flagged so a run's header says it is not the full method (reviews/hymem.md §2.9)
        "levels": {"L1": "Level-1 only: the generators never see raw events (paper Table 2 rows 2 and 5)",
                   "L2": "Level-2 only: raw events are embedded and searched (Table 2 rows 7-8, which also set "
                         "deep=False; with the deep module on this is an extension no row of Table 2 has)"},
        "light": {False: "no light module: every round goes deep (paper Table 2 rows 3 and 6)"},
        "deep": {False: "no deep module (paper Table 2 rows 2, 5, 7, 8)"},
        "reflection": {False: "no reflection R: one round (paper Table 2 rows 4, 5, 6, 8)"},
        "dedupe_level1": {True: "identical Level-1 sentences of one event are stored once (neither the paper nor "
                                "the authors' code dedupes)"},
        "answer_prompt": fair_arena_note}
    # The paper profile: the paper's values, and where the paper is silent the authors' released code's
    # (github:xiaochenzhao-svg/HyMem @ 93e2d19, cited [code] with file:line). The small profile: today's tuned
    # configuration for the offline 0.5B/1.5B models, each departure explained in profile_notes.
    profiles = {
        "paper": {
            "prompts": "paper",  # [paper] App. B.1-B.5, every instruction, schemas requiring each field read
            "batch_size": 50,  # d [code] hymem/core/memory_system.py:216 (group_size=50: one call at N=30)
            "memory_pool": "last_only",  # [paper] Alg. 1 l.14 M <- answer; [code] hymem/core/memory_system.py:227
            "fallback_top": 0,  # [code] hymem/core/memory_system.py:223-224: nothing selected, no memory
            "max_level2": None,  # [paper] Alg. 1 l.11 maps every selected item; [code] memory_system.py:269-280
            "level2_order": "rank",  # [code] hymem/core/memory_system.py:220-223, :276-280 (selection order)
            # [code] hymem/core/memory_system.py: an unreadable G_theta reply is an empty accepted answer (:431), an
            # unreadable G_gamma reply an empty answer (:327), an event whose summary stays empty is not stored
            # (:139-140)
            "on_failure": "code",
            "embed_dates": False,  # [paper] §3.1 e_i = E(s_i); [code] hymem/core/memory_system.py:157-158
            "on_round_limit": "last",  # [code] hymem/core/memory_system.py:236 returns the last answer
            "temperature": 0.5,  # [code] scripts/evaluate_locomo.py:412 (the LoCoMo script's default)
        },
        "small": {"prompts": "small", "batch_size": 10, "memory_pool": "accumulate", "fallback_top": 3,
                  "max_level2": 10, "level2_order": "time", "on_failure": "recover", "embed_dates": True,
                  "on_round_limit": "last_deep", "temperature": 0.0},
    }
    profile_notes = {
        "prompts": "our shorter rewording of App. B (prompts.py) with our own one-shot f_gamma example; the "
                   "recordings of the offline 0.5B/1.5B were made with it (sample_data/cassettes/locomo/"
                   "hymem-conv-30.jsonl, 528 calls); it drops B.3/B.5's worked 'The current year is ...' answer "
                   "format, B.1's 'minimise characters', B.3's 'to avoid hallucinations' and B.5's open-ended "
                   "questions sentence, shows the f_gamma index as 'id:n, [date] text' (B.4: 'dialogue time:'), "
                   "asks for no minimum number of summary sentences, and its LIGHT/REFLECT schemas pin the flags "
                   "with enums",
        "batch_size": "f_gamma batches of 10 (3 calls at N=30) keep each prompt short for the small model's "
                      "context; the authors' code uses 50 (one call); the cassette has 39 batches of 10. No "
                      "context overflow was measured: the recorded cassettes' batches are the reason it stays",
        "memory_pool": "the pool accumulates every round's query and answer (§3.2 prose); Alg. 1 and the code "
                       "keep the last answer only; reviews/hymem.md §2.4 saw it feed a self-confirming answer "
                       "('Last year', Door Dash question) back to G_theta in hymem-conv-30: that is evidence of "
                       "harm, and the aid stays only because the recorded cassettes' prompts carry this pool",
        "fallback_top": "when f_gamma selects nothing the events of the 3 best candidates are used, so the 0.5B's "
                        "empty selections still reach Level-2; neither the paper nor the code has a fallback",
        "max_level2": "at most 10 events reach G_gamma: the 0.5B selected 9 of 10 entries in 32 of 39 f_gamma "
                      "batches (hymem-conv-30), so an uncapped context would hold ~27 events (9 of 14 G_gamma "
                      "prompts hit the cap)",
        "level2_order": "events are shown in time order (all 14 G_gamma prompts of hymem-conv-30); the code keeps "
                        "f_gamma's selection order. No evidence that time order helps: the recorded cassettes are "
                        "the reason it stays",
        "on_failure": "failed replies are recovered: an unreadable G_theta reply escalates to the deep module (7 "
                      "of 97 light replies of the 0.5B were unreadable in hymem-conv-30), a failed G_gamma keeps the "
                      "light answer (3 in the same run), an empty summary keeps the raw event as its Level-1 item; "
                      "the code answers empty and drops the event",
        "embed_dates": "the embedded Level-1 text is '[date] sentence' (the offline recordings' vectors, the only "
                       "reason it stays: no evidence that it helps); the paper embeds E(s_i), the sentence alone, "
                       "as does the code",
        "on_round_limit": "when T runs out the last deep answer is returned (the 0.5B's R rejected 10 rounds and "
                          "failed 18 times in hymem-conv-30); the code returns the last answer",
        "temperature": "greedy decoding, so the offline recordings replay exactly; the authors' LoCoMo script "
                       "samples at 0.5",
    }
    profile_prompt_modules = {"paper": ("hymem.paper_prompts",)}
    # The authors' released code where it departs from the paper (reviews/hymem.md §2.1), on top of the paper
    # profile: HyMem(profile="paper", **HyMem.authors_code_params). Not reachable: its q_i reaches G_theta/G_gamma
    # (the paper's Alg. 1 and this class give them q_0) and its prompt layout (hymem/prompts/templates.py:30-78
    # hold App. B almost word for word; the question comes before the memories, with a JSON system message:
    # class docstring, departure 12). Not included (review turn 4, N8): the LoCoMo script's retrieve_k=15
    # (scripts/evaluate_locomo.py:458; hymem/config/settings.py:53 says 10: pass top_k=15 to match the script), R at
    # temperature 0.7 (memory_system.py:354-372 passes none, llm_controller.py:119; this class has one temperature),
    # and its embedder text-embedding-3-small (hymem/config/settings.py:38: pass --embedder, a run's service).
    authors_code_params = {
        "segmentation": "session",  # [code] scripts/evaluate_locomo.py:68-69: one event per whole session
        "overlap_turns": 0,  # [code] the same: sessions do not overlap
        "max_rounds": 1,  # T [code] hymem/core/memory_system.py:203, hymem/config/settings.py:55
    }
    paper_tables = PAPER_TABLES  # its paper's headline tables (paper_tables.py): workbench reproduce
    components = PaperComponents("Qwen3-Embedding-0.6B", "Qwen/Qwen3-Embedding-0.6B", False,
                                 "App. A, implementation details",
                                 note="the authors' code embeds with text-embedding-3-small")
    how_it_works = HOW_IT_WORKS
    structure_view = "level_links"  # Level-1 items linked to their Level-2 events
    census = CENSUS  # its mechanism counters and check (census.py), run by the generic census
    ablations = ABLATIONS  # paper Table 2 rows by name: HyMem.ablation("L1 / L+R", llm=..., embedder=...)
    # how the trace views summarise its steps (card kinds of widgets.trace_cards)
    step_cards = {"light": "light_tier", "deep": "deep_tier", "reflect": "sufficiency", "final": "tier_final"}
    prompt_modules = ("hymem.method", "hymem.prompts", "hymem.segment", "hymem.census", "hymem.how_it_works")
    question_date_datasets = frozenset({"longmemeval"})  # digest §10.3: question_date for LongMemEval only

    def __init__(self, *, llm=None, embedder=None, profile: str = "auto",  # paper | small | auto (methods.profile)
                 top_k: int = 10,  # k; paper §4.1, App. A.1
                 deep_top_n: int = 30,  # N; paper §4.1
                 batch_size: int = PROFILE,  # d; paper silent (Eq. 1); profiles
                 max_rounds: int = 3,  # T; [ours] paper silent (Alg. 1) but Table 2's R implies T > 1; digest §10.4
                 segmentation: Literal["llm", "window", "session"] = "llm",  # [ours] paper silent, digest §10.1
                 overlap_turns: int = 2,  # [ours] §3.1 allows overlap, size not given; digest §10.1
                 window_turns: int = 12,  # [ours] window segmentation, digest §10.1
                 window_stride: int = 10,  # [ours] 2 shared turns between windows, digest §10.1
                 segment_preview_chars: int = 300,  # [ours] turn text shown to the segmenter (topics only)
                 level1_granularity: Literal["sentence", "event"] = "sentence",  # [ours] Fig. 3a many-to-one, §10.2
                 levels: Literal["both", "L1", "L2"] = "both",  # paper Table 2 storage columns
                 light: bool = True,  # paper Table 2 "L"
                 deep: bool = True,  # paper Table 2 "D"
                 reflection: bool = True,  # paper Table 2 "R"
                 memory_pool: Literal["accumulate", "last_only"] = PROFILE,  # §3.2 vs Alg. 1 l.14; profiles
                 fallback_top: int = PROFILE,  # events used when f_gamma selects nothing; profiles
                 max_level2: int | None = PROFILE,  # cap on events given to G_gamma (None: no cap); profiles
                 level2_order: Literal["rank", "time"] = PROFILE,  # order of the events G_gamma reads; profiles
                 on_failure: Literal["recover", "code"] = PROFILE,  # unreadable replies (see Departures); profiles
                 embed_dates: bool = PROFILE,  # embed "[date] sentence" (True) or E(s_i) alone; profiles
                 dedupe_level1: bool = False,  # [ours] store identical sentences of one event once (review §2.5)
                 prompts: Literal["paper", "small"] = PROFILE,  # App. B prompts and schemas, or ours; profiles
                 reflect_last_round: bool = True,  # paper Alg. 1 calls R in every round, the last included
                 on_round_limit: Literal["last", "last_deep"] = PROFILE,  # Alg. 1 silent; profiles
                 max_workers: int = 4,  # [ours] concurrent LLM calls (f_gamma batches, summaries)
                 temperature: float = PROFILE,  # paper silent; profiles
                 answer_prompt: Literal["native", "shared"] = "native"):  # [ours] fair arena (answer_prompt.py)
        self.llm = llm
        self.embedder = embedder
        self.profile = profile
        self.top_k = top_k
        self.deep_top_n = deep_top_n
        self.batch_size = batch_size
        self.max_rounds = max_rounds
        self.segmentation = segmentation
        self.overlap_turns = overlap_turns
        self.window_turns = window_turns
        self.window_stride = window_stride
        self.segment_preview_chars = segment_preview_chars
        self.level1_granularity = level1_granularity
        self.levels = levels
        self.light = light
        self.deep = deep
        self.reflection = reflection
        self.memory_pool = memory_pool
        self.fallback_top = fallback_top
        self.max_level2 = max_level2
        self.level2_order = level2_order
        self.on_failure = on_failure
        self.embed_dates = embed_dates
        self.dedupe_level1 = dedupe_level1
        self.prompts = prompts
        self.reflect_last_round = reflect_last_round
        self.on_round_limit = on_round_limit
        self.max_workers = max_workers
        self.temperature = temperature
        self.answer_prompt = answer_prompt
        self._apply_profile(profile, llm)

    _CHOICES = {"segmentation": ("llm", "window", "session"), "level1_granularity": ("sentence", "event"),
                "levels": ("both", "L1", "L2"), "memory_pool": ("accumulate", "last_only"),
                "on_round_limit": ("last", "last_deep"), "level2_order": ("rank", "time"),
                "on_failure": ("recover", "code"), "prompts": ("paper", "small"),
                "embed_dates": (True, False), "dedupe_level1": (True, False)}
    _POSITIVE = ("top_k", "deep_top_n", "batch_size", "max_rounds", "window_turns", "window_stride",
                 "segment_preview_chars", "max_workers")

    def _validate_params(self) -> None:
        super()._validate_params()
        for name, options in self._CHOICES.items():
            if getattr(self, name) not in options:
                raise ValueError(f"{name} must be one of {options}, got {getattr(self, name)!r}")
        for name in self._POSITIVE + ("overlap_turns", "fallback_top", "max_level2"):
            value = getattr(self, name)
            if name == "max_level2" and value is None:  # no cap (the paper and the authors' code)
                continue
            low = 1 if name in self._POSITIVE else 0
            if name == "max_level2":
                low = 1
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if self.window_stride > self.window_turns:
            raise ValueError("window_stride must not exceed window_turns (turns would fall between windows)")
        if not (self.light or self.deep):
            raise ValueError("at least one of light and deep must be enabled")

    def _reset(self) -> None:
        self.index_ = UnitStore(self.embedder, "hymem.L2" if self.levels == "L2" else "hymem.L1")
        self.level2_: dict[str, MemoryUnit] = {}
        self.failures_: list[dict] = []
        self.segment_log_: list[dict] = []

    # -- construction ----------------------------------------------------------------------------
    def _build(self, conv: Conversation) -> None:
        spans = self._segment(conv)
        if self.levels == "L2":
            summaries = [([], None)] * len(spans)
        else:
            summaries = self._summarize(spans)
        level1: list[MemoryUnit] = []
        for n, ((session, span), (sentences, fallback)) in enumerate(zip(spans, summaries)):
            if fallback and self.on_failure == "code":  # the authors' code stores no event without a summary
                continue
            level1.extend(self._store_event(f"L2-{n}", session, span, sentences, fallback, len(level1)))
        units = list(self.level2_.values()) if self.levels == "L2" else level1
        if self.embed_dates:  # the "[date] " prefix is part of the embedded text
            self.index_.add(units)
        elif units:  # E(s_i): the sentence (or event) alone is embedded; prompts still show its date
            self.index_.add(units, vectors=self.index_.embed([_undated(u.text)[1] for u in units]))

    def _segment(self, conv: Conversation) -> list[tuple]:
        sessions = [s for s in conv.sessions if s.turns]
        if self.segmentation == "session":
            plan = {s.id: ([Span(0, len(s.turns), "", "session")], []) for s in sessions}
        elif self.segmentation == "window":
            plan = {s.id: (window_spans(len(s.turns), self.window_turns, self.window_stride), []) for s in sessions}
        else:
            plan = self._llm_segment(sessions)
        for s in sessions:
            spans, notes = plan[s.id]
            self.segment_log_.append({"session_id": s.id, "segmentation": self.segmentation, "notes": notes,
                                      "spans": [[sp.start, sp.end, sp.topic, sp.origin] for sp in spans]})
        return [(s, sp) for s in sessions for sp in plan[s.id][0]]

    def _llm_segment(self, sessions) -> dict:
        requests = [self._request(P.SEGMENT.format(turns=numbered_turns(s, self.segment_preview_chars)),
                                  P.SEGMENT_SCHEMA, "hymem.segment") for s in sessions]
        plan = {}
        for s, reply in zip(sessions, self._complete_many(requests)):
            spans, notes, error = [], [], None
            if isinstance(reply, Exception):
                error = _err(reply)
            else:
                spans, notes = clean_llm_spans(reply.parsed["events"], len(s.turns), self.overlap_turns)
                error = None if spans else "no usable span in the reply"
            if error:  # fallback: fixed windows, so the session is still stored
                self.failures_.append({"stage": "segment", "session_id": s.id, "error": error, "fallback": "window"})
                spans = window_spans(len(s.turns), self.window_turns, self.window_stride)
            plan[s.id] = (spans, notes)
        return plan

    def _summarize(self, spans) -> list[tuple[list[str], str | None]]:
        requests = []
        for session, span in spans:
            dialogue = "\n".join(format_turn(t) for t in session.turns[span.start:span.end])
            prompt = self._P.SUMMARIZE.format(date=format_date(session.date_time), dialogue=dialogue)
            requests.append(self._request(prompt, self._P.SUMMARY_SCHEMA, "hymem.summarize"))
        out = []
        for (session, span), reply in zip(spans, self._complete_many(requests)):
            turn_ids = [t.id for t in session.turns[span.start:span.end]]
            if isinstance(reply, Exception):
                error = _err(reply)
                sentences = []
            else:
                sentences = [str(x).strip() for x in reply.parsed["keywords"] if str(x).strip()]
                if self.dedupe_level1:  # identical sentences of one event: stored once (review §2.5)
                    sentences = list(dict.fromkeys(sentences))
                error = None if sentences else "empty summary"
            if error:  # fallback: the raw event text becomes its Level-1 item (event stays reachable); [code]
                # hymem/core/memory_system.py:139-140 stores no event at all (on_failure="code")
                self.failures_.append({"stage": "summarize", "turn_ids": turn_ids, "error": error,
                                       "fallback": "raw event text as Level-1" if self.on_failure == "recover"
                                       else "event not stored"})
            out.append((sentences, error))
        return out

    def _store_event(self, event_id, session, span, sentences, fallback, first) -> list[MemoryUnit]:
        ids = tuple(t.id for t in session.turns[span.start:span.end])
        raw, date = event_text(session, span), format_date(session.date_time)
        if self.levels == "L2":
            texts = []
        elif fallback:
            texts = [raw]
        elif self.level1_granularity == "event":
            texts = [f"[{date}] " + " ".join(sentences)]
        else:
            texts = [f"[{date}] {s}" for s in sentences]
        level1 = [MemoryUnit(f"L1-{first + j}", "L1", text, ids, session.date_time,
                             {"event_id": event_id, "session_id": session.id, "fallback": fallback})
                  for j, text in enumerate(texts)]
        self.level2_[event_id] = MemoryUnit(
            event_id, "L2", raw, ids, session.date_time,
            {"event_id": event_id, "session_id": session.id, "topic": span.topic, "segment": span.origin,
             "level1_ids": [u.id for u in level1]})
        self._emit("ADD", event_id, after=raw, cause=f"{span.origin} event of session {session.id}",
                   source_ids=ids, time=session.date_time, level="L2", topic=span.topic)
        for u in level1:
            self._emit("SUMMARIZE", u.id, after=u.text, cause=f"key information of event {event_id}",
                       source_ids=ids, time=session.date_time, event_id=event_id, fallback=fallback)
        return level1

    # -- answering (Alg. 1) ----------------------------------------------------------------------
    def _answer(self, question: str, *, now: datetime | None) -> Answer:
        steps, pool, rounds = [], [], []
        query, done = question, False
        for i in range(self.max_rounds if self.reflection else 1):
            text, tier, hits = self._round(i, query, question, pool, now, steps)
            rounds.append({"round": i, "answer": text, "tier": tier, "hits": hits})
            entry = {"round": i, "query": query, "tier": tier, "answer": text}
            pool = pool + [entry] if self.memory_pool == "accumulate" else [entry]
            if not self.reflection:
                done = True
                break
            if i == self.max_rounds - 1 and not self.reflect_last_round:
                break
            done, query = self._reflect(i, question, text, steps)
            if done:
                break
        return self._finish(question, rounds, pool, done, steps, now)

    def _round(self, i, query, q0, pool, now, steps) -> tuple[str, str, list[Hit]]:
        """(answer, tier, hits). Tier ``"deep"`` only when G_gamma answered; when it failed the
        round's answer is the light one (tier ``DEEP_FAILED``, with the light hits), never a
        light answer labelled deep."""
        light_answer, light_hits = "", []
        if self.light:
            ok, light_answer, light_hits = self._light(i, query, q0, pool, now, steps)
            if ok or not self.deep:
                return light_answer, "light", light_hits
        answer, hits, failed = self._deep(i, query, q0, pool, now, steps, light_answer)
        if failed:  # recover: the light answer (``_deep`` returned it) with its hits; code: an empty answer
            return answer, DEEP_FAILED, light_hits if self.on_failure == "recover" else hits
        return answer, "deep", hits

    def _light(self, i, query, q0, pool, now, steps) -> tuple[bool, str, list[Hit]]:
        with self.step(steps, "light", f"Round {i + 1}: light module, top-{self.top_k} by cosine") as s:
            hits = self.index_.search(query, self.top_k)
            prompt = self._P.LIGHT.format(memories=format_hits(hits), pool=self._pool_text(pool),
                                          now_line=self._now_text(now), question=q0, **self._words())
            try:
                parsed = self._ask(prompt, self._P.LIGHT_SCHEMA, "hymem.light")
                finished, answer, error = parsed["finished"], parsed["answer"].strip(), None
            except LLMError as exc:
                # small (digest §10.7): an unreadable G_theta reply counts as "insufficient" (2); paper profile:
                # [code] hymem/core/memory_system.py:431 reads it as answered with an empty answer (1, "")
                finished = 1 if self.on_failure == "code" else 2
                answer, error = "", _err(exc)
            # only 2 asks for the deep module ([code] hymem/core/memory_system.py:214 `if tag == 2`); the small
            # schema's enum [0, 2] makes this the same as "0 answers"
            answered = finished != 2
            s.hits = hits
            s.data.update(round=i, query=query, retrieved=[h.unit_id for h in hits],
                          scores=[round(h.score, 4) for h in hits], finished=finished, answer=answer,
                          escalate=not answered and self.deep, error=error)
        return answered, answer, hits

    def _deep(self, i, query, q0, pool, now, steps, light_answer) -> tuple[str, list[Hit], bool]:
        with self.step(steps, "deep", f"Round {i + 1}: deep module, top-{self.deep_top_n} + LLM selection") as s:
            candidates = self.index_.search(query, self.deep_top_n)
            selected, batches = self._select(query, candidates)
            fallback = not selected and bool(candidates) and self.fallback_top > 0
            if fallback:  # digest §10.7: f_gamma chose nothing -> the best few candidates
                selected = [h.unit_id for h in candidates[:self.fallback_top]]
            context, dropped = self._backtrack(selected, candidates)
            memories = "\n\n".join(f"[{h.unit_id}] {h.text}" for h in context) or "(no memories found)"
            title = PP.DEEP_TITLE_SUMMARIES if self.levels == "L1" else PP.DEEP_TITLE_EVENTS  # (paper prompts only)
            prompt = self._P.DEEP.format(memories=memories, pool=self._pool_text(pool),
                                         now_line=self._now_text(now), question=q0, deep_title=title)
            fallback_answer = None
            try:
                answer, error = self._ask(prompt, self._P.DEEP_SCHEMA, "hymem.deep")["answer"].strip(), None
            except LLMError as exc:  # the round keeps the light module's answer (possibly empty), as such;
                # [code] hymem/core/memory_system.py:327: an empty answer (on_failure="code")
                recover = self.on_failure == "recover" and self.light
                answer, error = (light_answer if recover else ""), _err(exc)
                fallback_answer = "light" if recover else "none"
            s.hits = context
            s.data.update(round=i, query=query, candidates=[h.unit_id for h in candidates],
                          candidate_scores=[round(h.score, 4) for h in candidates], batches=batches,
                          selected=selected, fallback=fallback, context_ids=[h.unit_id for h in context],
                          level2=[h.unit_id for h in context if h.kind == "L2"], dropped=dropped,
                          answer=answer, error=error, fallback_answer=fallback_answer)
            if error is not None:
                s.title += f" (generator failed: {'light answer kept' if fallback_answer == 'light' else 'no answer'})"
        return answer, context, error is not None

    def _select(self, query: str, candidates: list[Hit]) -> tuple[list[str], list[dict]]:
        """f_gamma over batches of ``batch_size`` candidates (Eq. 1), concurrently."""
        batches = [candidates[j:j + self.batch_size] for j in range(0, len(candidates), self.batch_size)]
        requests = [self._request(self._P.SELECT.format(question=query, entries="\n".join(
            self._entry(n, h) for n, h in enumerate(b)), **self._words()), self._P.SELECT_SCHEMA, "hymem.select")
            for b in batches]
        chosen, records = set(), []
        for batch, reply in zip(batches, self._complete_many(requests)):
            record = {"ids": [h.unit_id for h in batch], "selected": [], "invalid": [], "error": None}
            if isinstance(reply, Exception):  # recorded; this batch contributes nothing
                record["error"] = _err(reply)
            else:
                for n in reply.parsed["keywords_list"]:
                    if isinstance(n, int) and 0 <= n < len(batch):
                        if batch[n].unit_id not in record["selected"]:
                            record["selected"].append(batch[n].unit_id)
                    else:
                        record["invalid"].append(n)
            chosen.update(record["selected"])
            records.append(record)
        if self.level2_order == "rank":  # f_gamma's own order, batch after batch, as the authors' code keeps it
            # ([code] hymem/core/memory_system.py:220-223)
            return list(dict.fromkeys(u for r in records for u in r["selected"])), records
        return [h.unit_id for h in candidates if h.unit_id in chosen], records

    def _backtrack(self, selected: list[str], candidates: list[Hit]) -> tuple[list[Hit], list[str]]:
        """Selected Level-1 -> their events (deduplicated, best score), at most ``max_level2`` (None: all), in
        the selection's order (``level2_order="rank"``) or in time order (``"time"``)."""
        score = {h.unit_id: h.score for h in candidates}
        cap = self.max_level2
        order = (lambda ids: sorted(ids, key=_order)) if self.level2_order == "time" else list
        if self.levels != "both":  # L1: the selected Level-1 items; L2: the selected events themselves
            keep = selected if self.levels == "L1" else selected[:cap]
            dropped = [] if self.levels == "L1" or cap is None else selected[cap:]
            return [self.index_[u].hit(score[u]) for u in order(keep)], dropped
        best: dict[str, float] = {}
        for uid in selected:
            event_id = self.index_[uid].meta["event_id"]
            best[event_id] = max(best.get(event_id, float("-inf")), score[uid])
        events = list(best)
        keep = order(events[:cap])
        return [self.level2_[e].hit(best[e]) for e in keep], events[cap:] if cap is not None else []

    def _reflect(self, i, q0, answer, steps) -> tuple[bool, str]:
        with self.step(steps, "reflect", f"Round {i + 1}: reflection") as s:
            try:
                parsed = self._ask(self._P.REFLECT.format(question=q0, answer=answer or "(no answer)"),
                                   self._P.REFLECT_SCHEMA, "hymem.reflect")
                finished, new_query, error = parsed["finished"], parsed["new_question"].strip(), None
            except LLMError as exc:  # digest §10.7: an unreadable R reply ends the loop
                finished, new_query, error = 1, "", _err(exc)
            done = finished == 1
            reused = not done and not new_query
            if reused:  # digest §10.7: no rewrite given -> search again with q_0
                new_query = q0
            s.data.update(round=i, answer=answer, finished=finished, done=done,
                          new_query=None if done else new_query, reused_original=reused, error=error)
        return done, new_query

    def _finish(self, question, rounds, pool, done, steps, now=None) -> Answer:
        chosen = rounds[-1]
        if not done and self.on_round_limit == "last_deep":
            chosen = next((r for r in reversed(rounds) if r["tier"] == "deep"), chosen)
        # the returned round's light reply failed and was read as an accepted empty answer (on_failure="code", or
        # no deep module to escalate to): the answer is a fallback, said on the step the census reads (review turn
        # 4, N3: the error sat on the light step, so the empty answer was not counted among fallback answers)
        failed = chosen["tier"] == "light" and next(
            (st.data.get("error") for st in reversed(steps) if st.kind == "light"
             and st.data.get("round") == chosen["round"]), None)
        with self.step(steps, "final", "Answer returned") as s:
            s.data.update(answer=chosen["answer"], tier=chosen["tier"], round=chosen["round"], rounds=len(rounds),
                          done=done, round_limit_hit=not done, memory_pool=pool)
            if failed:
                s.data.update(fallback_answer="none", writer_error=failed)
        text = chosen["answer"]
        if self.answer_prompt == "shared":
            text = self._shared_answer(question, chosen, pool, now, steps)
        # the trace convention: context = the units in front of the generator whose answer is returned
        return Answer(question, text, tuple(steps), tuple(chosen["hits"]))

    def _shared_answer(self, question, chosen, pool, now, steps) -> str:
        """Fair arena: the returned round's units and the pool, rewritten by the shared prompt."""
        earlier = [p for p in pool if p["round"] < chosen["round"]]
        context = format_hits(chosen["hits"]) + self._pool_text(earlier).rstrip()
        with self.step(steps, "answer", "Shared answer prompt over the returned round's memories") as s:
            try:
                text, error = shared_answer(self, context, question, now), None
            except LLMError as exc:  # recorded; the loop's own answer stands
                text, error = chosen["answer"], _err(exc)
            s.hits = list(chosen["hits"])
            s.data.update(answer_prompt="shared", round=chosen["round"], answer=text, error=error)
        return text

    # -- helpers ---------------------------------------------------------------------------------
    @property
    def _P(self):
        """The prompt module this instance sends: the paper's App. B (``paper_prompts``) or ours (``prompts``)."""
        return PP if self.prompts == "paper" else P

    def _words(self) -> dict:
        """What the paper prompts call the memory items (ignored by the small prompts, which have no slot)."""
        return PP.WORDS_EVENTS if self.levels == "L2" else PP.WORDS_SUMMARIES

    def _entry(self, n: int, hit: Hit) -> str:
        """One f_gamma index line: ours ``id:n, [date] text``; the paper's ``id:n, dialogue time:<date>, text``."""
        if self.prompts != "paper":
            return f"id:{n}, {hit.text}"
        date, text = _undated(hit.text)
        return f"id:{n}, dialogue time:{date}, {text}" if date else f"id:{n}, {text}"

    def _request(self, prompt: str, schema: dict, role: str) -> dict:
        return {"messages": prompt, "schema": schema, "role": role, "temperature": self.temperature}

    def _ask(self, prompt: str, schema: dict, role: str):
        return self.llm.complete(**self._request(prompt, schema, role)).parsed

    def _complete_many(self, requests: list[dict]) -> list:
        """Independent calls, concurrently when the client can; LLM failures come back in their slot."""
        many = getattr(self.llm, "complete_many", None)
        if many is not None:
            results = many(requests, workers=self.max_workers)
        else:
            results = []
            for r in requests:
                try:
                    results.append(self.llm.complete(**r))
                except LLMError as exc:
                    results.append(exc)
        for r in results:  # only model failures are tolerated; a bug must surface
            if isinstance(r, Exception) and not isinstance(r, LLMError):
                raise r
        return results

    def _pool_text(self, pool: list[dict]) -> str:
        """The memory pool M as the generators read it: ours names each round's query; the paper profile shows
        the answers alone, as the authors' code appends them ([code] hymem/core/memory_system.py:208, :227)."""
        if not pool:
            return ""
        if self.prompts == "paper":
            lines = [f"- {p['answer'] or '(no answer)'}" for p in pool]
        else:
            lines = [f"- (round {p['round'] + 1}) {p['query']} -> {p['answer'] or '(no answer)'}" for p in pool]
        return f"\n{self._P.POOL_HEADER}\n" + "\n".join(lines) + "\n"

    @staticmethod
    def _now_text(now: datetime | None) -> str:
        return f"\n{question_date_line(now)}\n" if now else ""

    # -- inspection ------------------------------------------------------------------------------
    def _units(self) -> list[dict]:
        rows = []
        for unit in self.level2_.values():
            rows.append(unit.row())
            if self.levels != "L2":
                rows.extend(self.index_[u].row() for u in unit.meta["level1_ids"])
        return rows

    def as_retriever(self, level: Literal["L1", "L2", 1, 2] | None = None):
        """``L1``: cosine over Level-1 items. ``L2``: search Level-1, backtrack to events (deduplicated;
        hits carry the event's turn ids). ``1``/``2`` are accepted for ``L1``/``L2``.
        Default: ``L1`` (``L2`` when ``levels="L2"``)."""
        self._check_ingested()
        level = {1: "L1", 2: "L2"}.get(level, level) or ("L2" if self.levels == "L2" else "L1")
        if level not in ("L1", "L2"):
            raise ValueError(f"level must be 'L1' or 'L2', got {level!r}")
        if self.levels == "L2":
            if level == "L1":
                raise ValueError("levels='L2' stores no Level-1 memory")
            return self.index_
        return self.index_ if level == "L1" else Level2Retriever(self.index_, self.level2_)

    @staticmethod
    def summary_stats(answers: Sequence[Answer]) -> dict:
        """HyMem's report figures from traces alone (paper Table 3 "deep ratio").

        ``deep_ratio``: share of answers whose trace reached the deep module (per question);
        ``deep_round_ratio``: share of rounds that went deep (digest §10.10's other reading);
        ``mean_rounds``; ``round_limit_ratio``: share that ran out of rounds without R accepting;
        ``deep_generator_failures``: deep rounds whose G_gamma call failed (their round kept the light
        answer, tier ``deep_failed``); ``deep_answer_ratio``: share of returned answers that
        G_gamma wrote. ``mean_query_tokens``: tokens of every query-phase call per question (repairs
        included), the workbench's cost figure; ``mean_query_tokens_without_reflection``: the same
        without the reflection R's calls, the like-for-like figure for the paper's "Token" column:
        Table 2's reflection deltas (+56 to +245 tokens) are smaller than one R prompt, so the
        paper's figure cannot include R (review turn 4, N5).
        """
        n = len(answers)
        if n == 0:
            return {"n": 0, "deep_ratio": 0.0, "mean_rounds": 0.0, "deep_round_ratio": 0.0, "round_limit_ratio": 0.0,
                    "deep_generator_failures": 0, "deep_answer_ratio": 0.0, "mean_query_tokens": 0.0,
                    "mean_query_tokens_without_reflection": 0.0}
        rounds = deep_rounds = deep_answers = limit = failed = deep_final = tokens = reflect_tokens = 0
        for a in answers:
            tokens += a.usage.total_tokens if a.usage else 0
            reflect_tokens += sum(s.usage.total_tokens for s in a.steps if s.kind == "reflect")
            tiers: dict[int, set] = {}
            for s in a.steps:
                if s.kind in ("light", "deep"):
                    tiers.setdefault(s.data.get("round", 0), set()).add(s.kind)
                if s.kind == "final" and s.data.get("round_limit_hit"):
                    limit += 1
                if s.kind == "final" and s.data.get("tier") == "deep":
                    deep_final += 1
                if s.kind == "deep" and s.data.get("error"):
                    failed += 1
            rounds += len(tiers)
            deep_rounds += sum("deep" in t for t in tiers.values())
            deep_answers += any("deep" in t for t in tiers.values())
        return {"n": n, "deep_ratio": deep_answers / n, "mean_rounds": rounds / n,
                "deep_round_ratio": deep_rounds / rounds if rounds else 0.0, "round_limit_ratio": limit / n,
                "deep_generator_failures": failed, "deep_answer_ratio": deep_final / n,
                "mean_query_tokens": tokens / n, "mean_query_tokens_without_reflection": (tokens - reflect_tokens) / n}



def _undated(text: str) -> tuple[str, str]:
    """``"[8 May 2023] Jon ..."`` -> ``("8 May 2023", "Jon ...")``; a text without the prefix -> ``("", text)``."""
    if text.startswith("[") and "] " in text:
        date, rest = text[1:].split("] ", 1)
        return date, rest
    return "", text


def _order(unit_id: str) -> int:
    """Ids are numbered in conversation order ("L1-7", "L2-3")."""
    return int(unit_id.rsplit("-", 1)[1])
