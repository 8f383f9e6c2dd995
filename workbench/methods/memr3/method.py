"""MemR3: Memory Retrieval via Reflective Reasoning (Du, Li, Zhang, Song; arXiv 2512.20237).

A retrieval *controller* over any memory backend: one router LLM call per iteration rewrites an
evidence-gap state and proposes retrieve (with a refinement query), reflect (with reasoning) or
answer (with a draft); three deterministic guards bound the loop; retrieval uses ``q + delta`` and
masks everything already retrieved; the final answer is written from the question, the draft and
the evidence only. Digest: ``../shared/methods/memr3.md``; state machine: ``state.py``.

    MemR3(llm=llm, embedder=emb).ingest(conv).answer("When did Melanie paint a sunrise?")
    MemR3(llm=llm, backend=HyMem(llm=llm, embedder=emb), retriever_options={"level": "L2"})
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from .how_it_works import HOW_IT_WORKS
from ..components import PaperComponents
from .paper_tables import TABLES as PAPER_TABLES
from ...data import Conversation
from ...jsonl import read_json
from ...llm.errors import CacheMiss, LLMError, ParseError
from ...llm.jsonparse import check_schema
from ...llm.tokens import count_tokens
from ...trace import Answer, Hit
from ..answer_prompt import shared_prompt
from ..base import Ablation, MemoryMethod, StepBuilder, fair_arena_note
from ..common import question_date_line
from ..profile import PROFILE
from .census import CENSUS
from . import paper_prompts as PP
from . import prompts as P
from .state import (GUARDS, LENIENT_ACCEPT, NOTHING_LEFT_MODES, RouterState, allowed_actions, delta_fallback, guard,
                    has_more, normalize_evidence, open_gaps, read_leniently, resolve, retrieval_query, written_gaps)

# The paper's chunked-RAG backend (digest §4, §5): fixed 256-token windows, chunk size picked from
# {128, 256, 512, 1024}. Built with NaiveRAG's "window" chunking, which never splits a message.
DEFAULT_BACKEND = "naive_rag"  # looked up by name in the registry, as a plugin backend would be
DEFAULT_CHUNKING = "window"
DEFAULT_CHUNK_TOKENS = 256
BACKEND_DIR = "backend"  # where save() puts the backend's own saved memory
REJECTED_CHARS = 2000  # how much of a rejected router reply a step keeps (the replies are capped at 512 tokens)
# [code] src/memr3_rag.py:17-81 (MaskedRetriever, candidate_k=20): with a reranker, each retrieval takes the
# max(20, n_chk) most similar unmasked chunks, reranks them against q (+) delta-q and keeps the n_chk best
RERANK_POOL = 20


# Paper Table 2 (LoCoMo, RAG backend): each row removes one design choice from the full controller, the
# retriever and every hyperparameter fixed.
ABLATIONS = {
    "full": Ablation({}, "paper Table 2, MemR3 over RAG"),
    "w/o mask": Ablation({"mask": False}, "paper Table 2 'w/o mask': retrieved snippets are not masked"),
    "w/o delta-q": Ablation({"delta_query": False}, "paper Table 2 'w/o Δq_k': every retrieval uses q alone"),
    "w/o reflect": Ablation({"reflect": False}, "paper Table 2 'w/o reflect': no reflect node"),
}


@dataclass(frozen=True)
class Run:
    """Services and run constants for one question (LangGraph's ``context_schema``; not state)."""

    llm: Any
    retriever: Any
    total: int | None          # backend size when the retriever tells (len), else None
    n_chk: int
    n_max: int
    n_cap: int
    mask: bool
    delta_query: bool
    reflect: bool
    now: datetime | None
    answer_prompt: str = "native"
    prompts: str = "small"
    schema: str = "small"
    answer_style: str = "short"
    nothing_left: str = "reflect_then_answer"
    gap_fallback: bool = True
    carry: str = "clear"
    reading: str = "strict"
    reranker: Any = None


class MemR3(MemoryMethod):
    """MemR3 over a plug-in backend (any ``MemoryMethod`` with ``as_retriever()``).

    Trace: one step per node, kinds ``retrieve`` (iteration 0 is the initial retrieval with q
    alone), ``router`` (one per iteration k: directive, guard, proposed vs final action, evidence,
    gaps and payload), ``reflect`` and ``answer``. ``MemR3.summary_stats(answers)`` aggregates them.

    Construction: ``ingest`` ingests ``backend.clone()`` (the ``backend`` parameter itself is never
    built), so ``construction_usage_`` covers the backend's ingest; those ledger rows are tagged
    phase ``construct`` with the *backend's* method name, because the backend's own ``ingest`` sets
    it. ``memories()``, ``events`` and ``as_retriever()`` are the backend's.

    Ablations (paper Table 2), by name: ``MemR3.ablation("w/o mask", llm=..., embedder=...)``
    (``MemR3.ablations``: full, w/o mask, w/o delta-q, w/o reflect; one switch each, the rest fixed). A row
    sets only its switch, so it applies on top of either profile; with ``profile="paper"`` it is the paper's row
    ([code] marks the switch points: src/memr3_rag.py:143 "new query ablation", :165 "mask ablation"; it has no
    reflect switch, so "w/o reflect" follows the paper alone).

    Profiles (``profile="paper" | "small" | "auto"``; ``workbench.methods.profile``): ``paper`` is App. A's
    prompts (``paper_prompts.py``, every instruction kept, reworded, placeholders instead of example values), a
    schema that asks for each action's text (Eq. 4), replies read as leniently as [code] reads them, and [code]'s
    choices where the paper is silent; ``small`` is the
    configuration every offline recording was made with (``prompts.py``), each aid in ``profile_notes`` with its
    evidence; ``auto`` is ``small`` for the offline models and scripted test LLMs, ``paper`` for any other.
    Point-by-point status of the review: ``docs/reviews/memr3.md``.

    Departures in both profiles (the paper is silent, or the workbench contract or the offline setting forces it):
    - No LangGraph: an explicit state machine (``state``); the budget guard bounds the loop, so the [code]
      recursion limit is not needed. The behaviour is the graph's.
    - Rerank only with ``reranker=`` (a ``workbench.rerank.Reranker``; [code] and App. C.2: ms-marco-MiniLM-L-12-v2):
      each retrieval then takes the max(20, n_chk) most similar unmasked hits from the backend (``RERANK_POOL``,
      [code] ``candidate_k``), reranks them against q (+) delta-q, keeps the n_chk best with the reranker's scores
      and masks only those, as [code]'s ``MaskedRetriever`` does; the retrieve step keeps the pool, its backend
      scores and the reranker's (``rerank``). Without one (the default) hits come in the backend's own order
      (cosine for NaiveRAG) and ``param_notes`` lists the missing reranker (``components``). Over a backend other
      than RAG the same rerank applies to its hits ([code] has it in its RAG retriever only).
    - Embedder: the caller's (``embedder=``; ``workbench eval`` defaults to MiniLM-int8). The paper (App. C.2) and
      [code] (example_rag_locomo.sh) embed chunks and q (+) delta-q with OpenAI text-embedding-3-large: pass
      ``--embedder openai:text-embedding-3-large`` (and an API model) to match. A run-header warning when the paper
      profile runs on another embedder is shared work (issue #63), not this method's.
    - Default backend: NaiveRAG ``chunking="window"``: windows of up to 256 o200k tokens that never split a turn
      and never cross a session, each chunk written ``[date] Speaker: text`` lines with the session's date (no
      clock time) once at its head and with image captions; [code] flattens the conversation into one text, one
      ``timestamp | speaker: text`` line per turn (date and time), no captions, and cuts 256-token cl100k windows
      that may split a turn. A [code]-exact chunker is not offered (NaiveRAG is shared, outside this method).
    - A forced action is both put in the directive (paper App. A.1) and enforced on the reply ([code]).
      [code] shows the LLM no "answer" directive at the budget (it overwrites the decision after the call);
      both profiles follow the paper here.
    - The empty-retrieval guard (Alg. 1 l.5) fires right after a masked retrieval that came back empty, as the
      paper says; not a departure, but [code]'s RAG path never fires it (its ``retrieval_attempts`` counter is
      only incremented by the Zep path).
    - A failed backend search (LLMError) is recorded in its retrieve step (``error``) and counted
      (``backend_errors``); the batch is empty, so reflect is forced, but the backend is not marked
      exhausted. Replay-cassette misses absorbed by any fallback are flagged ``cache_miss``.
    - The mask is hard and also enforced here (a hit the backend returns despite ``exclude`` is
      dropped and recorded); [code]'s Zep soft mask (backfill) is not reproduced (no Zep backend here).
    - A failed router call (an LLMError, or a reply the reading refuses after the client's repair and retry)
      keeps the previous evidence and gaps and falls back to reflect ([code] retries 5 times with 20 s sleeps, then
      raises; the contract asks a method to answer every question); a decision outside the enum also falls back
      to reflect ([code]). Both are recorded in the step. The client's parse retry runs at temperature 0.3
      (``llm/base.py``, shared by every method; [code] retries at 0).
    - Malformed JSON is repaired by the client (``llm.local_repair``, ``json_repair``, validated after): on for API
      models, off for the offline ones, whose recordings were made without it. [code] calls ``repair_json`` on every
      reply ``json.loads`` refuses; a router step whose reply needed the repair says ``repaired_locally``
      (``summary_stats``: ``local_repairs``).
    - The LoCoMo loader keeps questions the dataset asks twice; the paper drops 12 (App., "Repeated questions").
      In the dev copy only conv-30 has one, asked as single-hop and as adversarial (the paper drops the
      adversarial copy); the workbench's category 1-4 runs leave that copy out, so its counts match there.
    - ``reflect=False`` ablation (details not in the paper): the enum drops reflect, an empty
      retrieval forces answer and the fallback is retrieve (or answer once nothing new remains).
    - ``Answer.context`` (the trace convention: the units in front of the calls that wrote what the final reader
      reads) is every batch the router read, each hit once, in retrieval order: the answer call reads only E and
      the draft (paper Eq. 6), and E is rewritten by each router call from its batch and the E before it, so
      gold evidence read in any batch can reach the answer. Evidence recall, ``turns_shown`` and the failure
      attribution are computed on it. Until turn 4 it was the last batch alone (the masked, least similar one:
      conv-30 recall 0.102 against 0.681 over every batch, turn-4 review N4); ``MemR3.last_batch(answer)`` and
      ``MemR3.batches(answer)`` give the batches apart, and the real-scale summary reports both figures.
    - ``answer_prompt="shared"`` (the fair arena, opt-in): the same inputs (evidence bullets and draft only) with
      the workbench's common six-word rule and abstention phrase instead of the method's own prompt.
    - The question date is shown to the router and the answer call on LongMemEval only
      (``question_date_datasets``): [ours], the workbench's date policy; neither the paper's prompts nor [code]
      (any commit) pass one.
    - G (``RouterState.gaps``) holds the open gaps only: "None", blanks and the prompt's own "No gaps noted."
      copied back by the model are no gap (issue #39 bug, reviews/memr3.md B3); the router step records the
      gaps as written and ``placeholder_gaps``.
    - Output bounds (``--bounded-outputs``, ``llm.output_bounds``) are a client setting, not a parameter: they cap
      the router's strings at 240 characters, arrays at 8 items and the reply at 448 tokens, which cuts the
      paper's step-by-step reasoning and drafts of a strong model. Do not use them to reproduce the paper; the
      conv-30 recording was made with them.
    - Recorded for App. D.2 and the payload check: each router step has ``snippet_tokens`` (o200k tokens of the
      snippets in front of it; a batch shown again after a reflect counts again, as in [code]'s accounting) and
      ``payload_written``; ``summary_stats`` sums them (``snippet_tokens``, ``payload_share``).

    Departures of the small profile only (each also in ``profile_notes``, so ``param_notes`` lists it):
    - ``prompts="small"``: short reworded router prompts. They drop "gaps will do that" (evidence rule),
      "missing specifics" (gaps instruction), the cautious-inference clause of ``detailed_answer`` and "if
      further retrieval is unlikely" of ``reasoning``; they show "[]" as the closed-gaps value twice (system and
      user prompt) and concrete query examples; they prefix each snippet with its id (``[chunk-3]``), where [code]
      shows raw text; the gaps are shown as the model wrote them, a copied "No gaps noted." included (the
      recordings' prompts), though G no longer counts it.
    - ``schema="small"``: only evidence, gaps and decision are required and gaps is a JSON array; under
      grammar decoding the 0.5B skipped every payload (reviews/memr3.md B1), so at real scale the run is in
      effect the paper's "w/o Δq" row with empty reflections and no drafts. Kept because the recordings were
      made with it; the paper profile requires the payload.
    - ``answer_style="short"``: the answer prompt asks for a short phrase, not visible step-by-step work, so
      token F1 compares with the other methods; its date example reads "yesterday" relative to the message
      date (the reverse of [code]'s event-time example); it says the draft comes from the same evidence and is
      kept when supported, allows a cautious inference grounded in limited evidence, has no "not mentioned"
      escape and is one user message ([code]: evidence and draft in the system message, the question apart).
    - ``nothing_left="reflect_then_answer"``: once the backend has nothing new, reflect is forced and, with the
      reflect streak at ``n_cap``, answer ([ours]): a fourth guard the paper does not have (§3.4 lists three; the
      paper profile's ``"choose"`` forces nothing and [code] leaves the choice to the LLM). Kept as an aid: on the
      demo's 9-chunk slice the forced-reflect reading (``"reflect"``) reflected until the budget with the same
      prompt (demo question "physio", reviews/memr3.md B7); answering at the cap ends that loop, and the demo
      cassette was recorded with it (``"choose"`` on the small model is not measured). ``nothing_left="reflect"``
      (reflect forced until the budget) and ``"no_retrieve"`` (retrieve not offered, review "to 10" item 5) are
      options in either profile.
    - ``gap_fallback=True``: a retrieve without a refinement query searches q plus the first open gap
      (digest §10.15); [code] searches q alone.
    - ``carry="clear"``: a reflect without reasoning clears F (the prompt shows "No prior reasoning.") and the
      "Prior query" is set on retrieve only; [code] keeps the previous F and shows the last query written under
      any decision.
    - ``reading="strict"``: only a reply that passes the router schema is read; one that breaks it is sent back
      for repair, retried and then dropped with its evidence and gaps (the previous ones stay), where [code] reads
      any JSON object (turn-4 review N1). Every recording was made so.

    Departures of the paper profile (the paper and [code] are silent, or disagree):
    - The schema sent (a JSON-schema response format, or the grammar of a local model; [code] sends none): the gaps
      are "a string or a list" and the payload is required through ``oneOf`` branches on the decision (forced
      action: its key in ``required``). ``reading="lenient"`` reads a reply as [code] does all the same
      (``state.LENIENT_ACCEPT``, ``state.read_leniently``): any JSON object whose decision, when written, is a
      string; null or missing payload keys (a retrieve then searches q alone, a reflect keeps F, an answer has
      no draft), null gaps (G closed), evidence as one string (one bullet), null bullets dropped, a mis-cased
      decision; a missing or null evidence empties E, as in [code] (the strict reading kept the previous E). What
      the schema refused is kept in the step (``lenient_read``; ``summary_stats``: ``lenient_reads``), so no
      repair or retry call is spent on it. A reply that is no JSON object, or whose decision is not a string, is
      refused, repaired and retried (where [code] raises and calls again). Until issue #63 the paper profile read
      strictly: such a reply cost a repair and a retry and was then dropped with its evidence (turn-4 review N1;
      its differential S1b, a model that writes no payload: evidence [] after 16 calls, [code] ['fact 4'] after
      6; ``tests/test_lenient_replies.py`` replays both). ``payload_share`` shows how often a reply that was read
      carried the payload (the 1.5B A/B on the demo's questions, recorded under the strict reading: every one; the
      4 steps without one were replies cut at the token cap and discarded, ``rejected_replies``,
      ``benchmarks/results/memr3_ab.json``).
    - ``nothing_left="choose"``: the paper's three guards alone (§3.4; App. A.1's "no useful retrieval remains"
      is the empty-retrieval guard). A drained backend forces nothing: the router may still choose retrieve (the
      batch comes back empty and the empty-retrieval guard forces reflect, as Alg. 1 l.5 says; [code]'s RAG path
      never fires it) or answer; the streak guard needs an opportunity, as in [code]. Until turn 4 the paper
      profile used ``"reflect"``, a fourth guard that forced reflect from the drain to the budget (turn-4 review
      N2: on an 8-chunk store [code] answered after 2 router calls, the profile after 5).
    - ``answer_style="stepwise"`` is [code]'s p_w (the paper only says "from Zep"), so the answer text holds the
      model's step-by-step work; token F1 is not meaningful for it, the paper scores only the LLM judge.

    Declined review items (docs/reviews/memr3.md): [code]-exact chunking (the chunks are
    the retrieval backend's, NaiveRAG's, not the controller's); a strong-model validation run (GPT-4o-mini, Fig. 5's
    histogram, gap and payload rates: no API model offline); the small schema's optional payload (kept: every
    offline recording was made with it, and ``payload_share`` reports how often it was written).
    """

    # The two configurations (workbench.methods.profile): "paper" is App. A's prompts and schema with [code]'s
    # choices where the paper is silent; "small" is the configuration the offline recordings were made with.
    profiles = {
        "paper": {"prompts": "paper",          # [paper] App. A.1/A.2 (paper_prompts.py)
                  "schema": "paper",           # [paper] Eq. 4: every action carries its text, so it is required
                  "answer_style": "stepwise",  # [code] src/memr3_base.py:19-60, 533-535: p_w, step by step
                  # [paper] §3.4: the three guards alone (a drained store forces nothing; [code] gates the
                  # streak guard on an opportunity, src/memr3_base.py:319-337)
                  "nothing_left": "choose",
                  # [code] src/memr3_base.py:274-275 and src/memr3_rag.py:142-143: this reply's query, else q alone
                  "gap_fallback": False,
                  # [code] src/memr3_base.py:196-197 (prior query: the last one written, any decision) and :282
                  # (a reflect without reasoning keeps the previous F)
                  "carry": "keep",
                  # [code] src/memr3_base.py:389-407: any JSON object is read, nulls and missing keys included
                  "reading": "lenient"},
        "small": {"prompts": "small", "schema": "small", "answer_style": "short", "nothing_left": "reflect_then_answer",
                  "gap_fallback": True, "carry": "clear", "reading": "strict"},
    }
    profile_notes = {
        "prompts": ("short router prompts written for the 0.5B/1.5B (16k context, 2 CPU cores): they drop App. A's "
                    "'gaps will do that', 'missing specifics', the cautious-inference clause of detailed_answer, 'if "
                    "further retrieval is unlikely' and the two query strategies' framing, show '[]' twice as "
                    "the closed gaps value and give concrete examples; each snippet is shown with its id "
                    "('[chunk-3]', [code] shows raw text) and the gaps as written, a copied 'No gaps noted.' "
                    "included; every recording (conv-30: 405 router calls, demo: 27) was made with them; on the demo's "
                    "12 questions the 1.5B wrote no open gap under "
                    "either wording, and under the paper's it looped more (24 router steps against 15) and ran into "
                    "the token cap 10 times (benchmarks/results/memr3_ab.json, reviews/memr3.md §4)"),
        "schema": ("payload keys optional and gaps a JSON array: under grammar decoding the 0.5B closed the object "
                   "after 'decision' (conv-30: no retrieval_query in 153 of 153 retrieves, no reasoning in 158 of 159 "
                   "reflects, no draft in 80 of 80 answers; gaps [] in 391 of 394 replies); kept only because the "
                   "recordings were made with it (reviews/memr3.md B1)"),
        "answer_style": ("a short phrase without visible step-by-step work, so token F1 compares with the other "
                         "methods and the small model's reply stays short; its date example is our own and reads the "
                         "reverse way of [code]'s ('yesterday' relative to the message date, where [code]'s resolves "
                         "the event's own time; the 0.5B copied it as the answer to 2 of 81 conv-30 questions)"),
        "nothing_left": ("once the backend has nothing new, reflect once and then answer: a fourth guard (the paper "
                         "has three; the paper profile forces nothing, 'choose'); on the demo's 9-chunk slice forced "
                         "reflection ('reflect') repeated the same prompt until the budget (demo question 'physio', "
                         "reviews/memr3.md B7), and the demo cassette was recorded with this rule"),
        "gap_fallback": ("a retrieve without a retrieval_query searches q plus the first open gap (digest §10.15), "
                         "[code] searches q alone; the 0.5B wrote no query in 153 of 153 retrieves (conv-30)"),
        "carry": ("a reflect without reasoning clears F and the prior query is set on retrieve only; [code] keeps "
                  "both; the 0.5B wrote no reasoning in 158 of 159 reflects (conv-30)"),
        "reading": ("a reply must pass the router schema: one that breaks it (a null key, a string for the evidence "
                    "list, a missing key) is sent back for repair, retried, and then discarded with its evidence, "
                    "where [code] reads any JSON object (turn-4 review N1); kept because every recording was made "
                    "so, and under the small schema (payload optional) few replies break it: the 11 conv-30 "
                    "router replies sent for repair were all cut at the 448-token cap, none refused for a null "
                    "(benchmarks/results/repairs.json)"),
    }
    profile_prompt_modules = {"paper": ("memr3.paper_prompts",)}
    category_labels = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "(not scored)"}
    name = "memr3"
    title = "MemR3"
    value_notes = {"answer_prompt": fair_arena_note}
    paper_tables = PAPER_TABLES  # its paper's headline tables (paper_tables.py): workbench reproduce
    components = PaperComponents("text-embedding-3-large", "text-embedding-3-large", True,
                                 "App. B, RAG retriever",
                                 reranker="ms-marco-MiniLM-L-12-v2",
                                 reranker_served="cross-encoder/ms-marco-MiniLM-L-12-v2")
    how_it_works = HOW_IT_WORKS
    structure_view = "controller_backend"  # a controller over its backend's memory
    census = CENSUS  # its mechanism counters and check (census.py), run by the generic census
    ablations = ABLATIONS  # paper Table 2 rows by name: MemR3.ablation("w/o mask", llm=..., embedder=...)
    # how the trace views summarise its steps (card kinds of widgets.trace_cards)
    step_cards = {"router": "evidence_gaps", "retrieve": "gap_retrieve", "reflect": "reflect_note",
                  "answer": "draft_answer"}
    prompt_modules = ("memr3.method", "memr3.prompts", "memr3.state", "memr3.census", "memr3.how_it_works")
    # [ours] the workbench's date policy: neither the paper's prompts nor [code] (any commit) show a question date.
    question_date_datasets = frozenset({"longmemeval"})

    def __init__(self, *, llm=None, embedder=None, reranker=None, profile: str = "auto",
                 backend: MemoryMethod | None = None,   # [ours] None: NaiveRAG, 256-token windows (paper App. C.2)
                 retriever_options: dict | None = None,  # [ours] passed to backend.as_retriever(**options)
                 n_chk: int = 5,              # paper §4.3: snippets per retrieval (swept 1..9)
                 n_max: int = 5,              # paper §4.3: max iterations = router calls (swept 1..5)
                 n_cap: int = 1,              # [code] max_reflect_streak=1; paper leaves it unspecified
                 mask: bool = True,           # paper §4.3 Table 2 "w/o mask"
                 delta_query: bool = True,    # paper §4.3 Table 2 "w/o delta-q" (retrieve with q only)
                 reflect: bool = True,        # paper §4.3 Table 2 "w/o reflect"
                 answer_prompt: str = "native",  # [ours] fair arena: "native" | "shared" (answer_prompt.py)
                 prompts=PROFILE,        # router prompts: "paper" (paper_prompts.py) | "small" (prompts.py)
                 schema=PROFILE,         # router schema: "paper" (payload required) | "small" (payload optional)
                 answer_style=PROFILE,   # native answer prompt: "stepwise" ([code] p_w) | "short" ([ours])
                 nothing_left=PROFILE,   # "choose" (§3.4) | "reflect_then_answer" | "reflect" | "no_retrieve"
                 gap_fallback=PROFILE,   # a retrieve without delta-q searches the first open gap (True) or q ([code])
                 carry=PROFILE,          # "keep" ([code]) | "clear": F and the prior query when a reply lacks them
                 reading=PROFILE):       # "lenient" ([code]: any JSON object is read) | "strict" (the schema's)
        self.llm = llm
        self.profile = profile
        self.embedder = embedder
        self.reranker = reranker  # [code] ms-marco-MiniLM-L-12-v2 over a 20-chunk pool; None: the backend's order
        self.backend = backend
        self.retriever_options = retriever_options
        self.n_chk = n_chk
        self.n_max = n_max
        self.n_cap = n_cap
        self.mask = mask
        self.delta_query = delta_query
        self.reflect = reflect
        self.answer_prompt = answer_prompt
        self.prompts = prompts
        self.schema = schema
        self.answer_style = answer_style
        self.nothing_left = nothing_left
        self.gap_fallback = gap_fallback
        self.carry = carry
        self.reading = reading
        self._apply_profile(profile, llm)

    # -- building --------------------------------------------------------------------------------
    def _validate_params(self) -> None:
        if self.backend is None:
            super()._validate_params()  # the default backend needs llm and embedder
        elif self.llm is None:
            raise ValueError("MemR3 needs llm=... (see workbench.llm.default_llm)")
        elif not isinstance(self.backend, MemoryMethod):
            raise ValueError(f"backend must be a MemoryMethod, got {type(self.backend).__name__}")
        if self.retriever_options is not None and not isinstance(self.retriever_options, dict):
            raise ValueError("retriever_options must be a dict or None")
        for name in ("n_chk", "n_max", "n_cap"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        for name, valid in (("prompts", ("paper", "small")), ("schema", ("paper", "small")),
                            ("answer_style", ("stepwise", "short")), ("nothing_left", NOTHING_LEFT_MODES),
                            ("gap_fallback", (True, False)), ("carry", ("keep", "clear")),
                            ("reading", ("lenient", "strict"))):
            if getattr(self, name) not in valid or not isinstance(getattr(self, name), type(valid[0])):
                raise ValueError(f"{name} must be one of {valid}, got {getattr(self, name)!r}")
        if self.reranker is not None and not callable(self.reranker):
            raise ValueError("reranker must be callable as reranker(query, documents) -> scores "
                             f"(workbench.rerank.Reranker), got {type(self.reranker).__name__}")

    def _reset(self) -> None:
        self.backend_: MemoryMethod | None = None

    def default_backend(self) -> MemoryMethod:
        """The paper's chunked-RAG setting (Naive RAG over 256-token windows), built from this method's llm and
        embedder; the class comes from the registry, so MemR3 imports no other method."""
        from ..registry import get_method

        return get_method(DEFAULT_BACKEND)(llm=self.llm, embedder=self.embedder, chunking=DEFAULT_CHUNKING,
                                           chunk_tokens=DEFAULT_CHUNK_TOKENS, top_k=self.n_chk)

    def _build(self, conv: Conversation) -> None:
        template = self.backend if self.backend is not None else self.default_backend()
        self.backend_ = template.clone().ingest(conv)
        self.as_retriever()  # fail at ingest, not at the first question, if the backend has no retriever

    def as_retriever(self):
        """The backend's retriever (with ``retriever_options``): what the controller drives."""
        self._check_ingested()
        return self.backend_.as_retriever(**(self.retriever_options or {}))

    def _units(self) -> list[dict]:
        return self.backend_._units()

    @property
    def events(self):
        backend = getattr(self, "backend_", None)
        return backend.events if backend is not None else ()

    # -- answering -------------------------------------------------------------------------------
    def _run(self, now: datetime | None) -> Run:
        retriever = self.as_retriever()
        total = len(retriever) if hasattr(retriever, "__len__") else None
        return Run(self.llm, retriever, total, self.n_chk, self.n_max, self.n_cap, self.mask,
                   self.delta_query, self.reflect, now, self.answer_prompt, self.prompts, self.schema,
                   self.answer_style, self.nothing_left, self.gap_fallback, self.carry, self.reading, self.reranker)

    def _node(self, steps: list, kind: str, node, state: RouterState, run: Run) -> RouterState:
        with self.step(steps, kind, kind) as s:
            changes = node(state, run, s)
        return state.apply(changes)

    def _answer(self, question: str, *, now: datetime | None) -> Answer:
        run = self._run(now)
        steps: list = []
        state = self._node(steps, "retrieve", retrieve_node, RouterState(question), run)  # START -> retrieve
        while True:
            state = self._node(steps, "router", router_node, state, run)
            if state.last_action == "answer":
                break
            state = self._node(steps, state.last_action, NODES[state.last_action], state, run)
        state = self._node(steps, "answer", answer_node, state, run)
        # the final reader sees only the evidence E, which the router calls wrote from every batch they read (each
        # rewrites E from its batch and the E before it), so the context is every batch the router read
        return Answer(question, state.answer, tuple(steps), state.retrieved)

    @staticmethod
    def batches(answer: Answer) -> list[tuple[Hit, ...]]:
        """The retrieval batches of one MemR3 answer, in order (each retrieve step's hits): every batch is read by
        the router call that follows it, the last one by the call that wrote the final evidence and draft."""
        return [tuple(s.hits) for s in answer.steps if s.kind == "retrieve"]

    @classmethod
    def last_batch(cls, answer: Answer) -> tuple[Hit, ...]:
        """The last retrieval batch alone: what ``Answer.context`` held before turn 4 (the review's N4: its recall
        is the least similar batch's, since the mask pushes each batch further from q)."""
        batches = cls.batches(answer)
        return batches[-1] if batches else ()

    # -- persistence: the backend saves itself (its services are not pickled) ----------------------
    def save(self, path: str | Path) -> Path:
        self._check_ingested()
        backend = self.__dict__.pop("backend_")
        try:
            path = super().save(path)
        finally:
            self.backend_ = backend
        backend.save(Path(path) / BACKEND_DIR)
        return path

    @classmethod
    def load(cls, path: str | Path, *, llm=None, embedder=None, reranker=None, trust: bool = False,
             **params) -> "MemR3":
        """Pass ``backend=`` to reload with your backend's services; otherwise the backend is
        rebuilt from its saved parameters with this ``llm`` and ``embedder``."""
        path = Path(path)
        saved = read_json(path / "params.json")["params"]
        if "retriever_options" not in params and isinstance(saved.get("retriever_options"), dict):
            params["retriever_options"] = saved["retriever_options"]
        obj = super().load(path, llm=llm, embedder=embedder, reranker=reranker, trust=trust, **params)
        template = params.get("backend")
        if template is not None:
            kind, services = type(template), {"llm": getattr(template, "llm", None),
                                              "embedder": getattr(template, "embedder", None)}
        else:
            from ..registry import get_method  # the backend's class by its saved name, as any plugin's

            kind = get_method(read_json(path / BACKEND_DIR / "params.json")["method"])
            services = {"llm": llm, "embedder": embedder}
        obj.backend_ = kind.load(path / BACKEND_DIR, trust=trust, **services)
        if template is None and saved.get("backend") is not None:
            obj.backend = obj.backend_.clone()  # the saved run had an explicit backend: restore the param
        return obj

    @staticmethod
    def summary_stats(answers: Sequence[Answer]) -> dict:
        """Iterations and guard use, from MemR3 traces only (paper Fig. 5 and §3.4).

        ``mean_iterations``: router calls per question; ``iterations_histogram``: questions per count;
        ``forced_share``: per guard, the share of all router steps it forced; ``budget_reached_share``:
        questions whose last router step was forced by the budget; ``fallbacks``: router steps whose
        action came from the fallback (failed call or invalid decision); ``answer_fallbacks``: answer
        steps whose call failed (the draft stood in); ``cache_misses``: steps (any kind) whose failure
        was a replay cassette's miss, absorbed by a fallback; ``backend_errors``: failed retrievals;
        ``payload_share``: per final action, the share of its router steps whose reply was read and carried that
        action's text (retrieval_query, reasoning, detailed_answer; reviews/memr3.md B1); a step whose call failed
        (a reply the client rejected, an LLM error) is not in it, since nothing was read (turn-4 N6: before, a
        discarded reply counted as a skipped payload); ``rejected_replies``: router steps whose reply the model
        wrote but the client could not read as the schema asks, after its repair and retry (their text is in the
        step, ``rejected_reply``); ``lenient_reads``: router steps whose reply the paper schema would have
        refused but the lenient reading read (``reading="lenient"``; the refusal is the step's ``lenient_read``);
        ``local_repairs``: router steps whose reply was read only after the client's local JSON repair;
        ``reranked_retrievals``: retrieve steps whose batch the reranker chose; ``snippet_tokens``: tokens
        (o200k) of the snippets in front of the router calls, per question (paper App. D.2; a batch shown again
        after a reflect counts again, as [code]'s accounting does). Steps recorded before these fields existed
        count as without payload and with 0 tokens.
        """
        routers = [[s for s in a.steps if s.kind == "router"] for a in answers]
        steps = [s for r in routers for s in r]
        n, total = len(answers), len(steps)
        forced = Counter(s.data.get("forced") for s in steps if s.data.get("forced"))
        read = [s for s in steps if not s.data.get("error")]  # a failed call read no reply: no payload to count
        acted = Counter(s.data.get("action") for s in read)
        written = Counter(s.data.get("action") for s in read if s.data.get("payload_written"))
        tokens = sum(s.data.get("snippet_tokens", 0) for s in steps)
        return {
            "questions": n,
            "mean_iterations": total / n if n else 0.0,
            "iterations_histogram": dict(sorted(Counter(len(r) for r in routers).items())),
            "router_steps": total,
            "forced_share": {g: (forced[g] / total if total else 0.0) for g in GUARDS},
            "budget_reached_share": (sum(1 for r in routers if r and r[-1].data.get("forced") == GUARDS[0]) / n
                                     if n else 0.0),
            "actions": dict(Counter(s.data.get("action") for s in steps)),
            "fallbacks": sum(1 for s in steps if s.data.get("fallback")),
            "answer_fallbacks": sum(1 for a in answers for s in a.steps
                                    if s.kind == "answer" and s.data.get("fallback")),
            "cache_misses": sum(1 for a in answers for s in a.steps if s.data.get("cache_miss")),
            "backend_errors": sum(1 for a in answers for s in a.steps if s.kind == "retrieve" and s.data.get("error")),
            "payload_share": {act: written[act] / count for act, count in acted.items()
                              if act in ("retrieve", "reflect", "answer")},
            "rejected_replies": sum(1 for s in steps if s.data.get("reply_rejected")),
            "lenient_reads": sum(1 for s in steps if s.data.get("lenient_read")),
            "local_repairs": sum(1 for s in steps if s.data.get("repaired_locally")),
            "reranked_retrievals": sum(1 for a in answers for s in a.steps
                                       if s.kind == "retrieve" and s.data.get("rerank")),
            "snippet_tokens": {"total": tokens, "per_question": tokens / n if n else 0.0},
        }



# -- nodes: node(state, run, step) -> the fields it changes ----------------------------------------
def retrieve_node(state: RouterState, run: Run, s: StepBuilder) -> dict:
    """Fetch S_k = Retrieve(q (+) delta, M minus M^ret) and grow the mask (paper Eq. 5)."""
    delta = state.delta_q if run.delta_query else None
    query = retrieval_query(state.question, delta, use_delta=run.delta_query)
    exclude = state.seen_ids if run.mask else frozenset()
    error = cache_miss = None
    fetch = run.n_chk if run.reranker is None else max(RERANK_POOL, run.n_chk)
    try:
        raw = run.retriever.search(query, fetch, exclude=exclude)
    except LLMError as exc:  # a backend whose search calls an LLM: recorded, this batch is empty
        raw, error, cache_miss = [], f"{type(exc).__name__}: {exc}", isinstance(exc, CacheMiss)
    hits, dropped = _enforce_mask(raw, exclude, fetch)
    if run.reranker is not None and hits:
        hits, s.data["rerank"] = _rerank(run.reranker, query, hits, run.n_chk)
    ids = [h.unit_id for h in hits]
    known = {h.unit_id for h in state.retrieved}
    s.title = f"Iteration {state.k}: retrieve {len(hits)} new" if state.k else f"Initial retrieval: {len(hits)} hits"
    s.hits = list(hits)
    # A failed search says nothing about what the backend still holds: it never marks it exhausted.
    exhausted = state.exhausted or (run.mask and not hits and error is None)
    s.data.update(iteration=state.k, query=query, delta_query=delta, retrieved_ids=ids,
                  masked_ids=sorted(exclude), dropped_ids=dropped, error=error, cache_miss=bool(cache_miss),
                  backend_exhausted=exhausted)
    return {"snippets": hits, "seen_ids": state.seen_ids | set(ids), "just_retrieved": True,
            "retrieved": state.retrieved + tuple(h for h in hits if h.unit_id not in known),
            "exhausted": exhausted, "backend_errors": state.backend_errors + (error is not None)}


def _enforce_mask(raw: Sequence[Hit], exclude: frozenset, k: int) -> tuple[tuple[Hit, ...], list[str]]:
    """Drop hits the backend returned despite ``exclude`` and duplicates within the batch."""
    kept, dropped, seen = [], [], set()
    for h in raw:
        if h.unit_id in exclude or h.unit_id in seen:
            dropped.append(h.unit_id)
            continue
        seen.add(h.unit_id)
        kept.append(h)
    return tuple(kept[:k]), dropped


def _rerank(reranker, query: str, pool: tuple[Hit, ...], k: int) -> tuple[tuple[Hit, ...], dict]:
    """[code] ``MaskedRetriever.retrieve``: score (q (+) delta-q, chunk) pairs, keep the ``k`` best (ties keep the
    backend's order); a kept hit's score is the reranker's, as [code] returns it. The pool, its backend scores and
    the reranker's go into the step."""
    scores = [float(x) for x in reranker(query, [h.text for h in pool])]
    if len(scores) != len(pool):
        raise ValueError(f"reranker {getattr(reranker, 'name', reranker)!r} returned {len(scores)} scores "
                         f"for {len(pool)} documents")
    order = sorted(range(len(pool)), key=lambda i: -scores[i])[:k]
    kept = tuple(Hit(pool[i].unit_id, pool[i].text, scores[i], pool[i].source_ids, pool[i].kind) for i in order)
    return kept, {"reranker": getattr(reranker, "name", type(reranker).__name__),
                  "pool_ids": [h.unit_id for h in pool], "pool_scores": [h.score for h in pool],
                  "rerank_scores": scores, "kept_ids": [h.unit_id for h in kept]}


def router_node(state: RouterState, run: Run, s: StepBuilder) -> dict:
    """Generate + router (paper Eq. 3, Alg. 1): rewrite E and G, decide, attach the payload."""
    more = has_more(state, mask=run.mask, total=run.total)
    forced, guard_name = guard(state, n_max=run.n_max, n_cap=run.n_cap, more=more, reflect=run.reflect,
                               nothing_left=run.nothing_left)
    offer_retrieve = more or run.nothing_left != "no_retrieve"
    actions = allowed_actions(run.reflect, offer_retrieve)
    reply, error, cache_miss, rejected, read = _call_router(state, run, forced, actions)
    proposed = reply.get("decision") if reply is not None else None
    action, invalid = resolve(proposed, forced, reflect=run.reflect, more=more, retrieve=offer_retrieve)
    # A failed call is a fallback even under a guard: evidence and gaps are the previous ones.
    fallback = invalid if reply is not None else "router call failed" + (" (cassette miss)" if cache_miss else "")
    reply = reply or {}
    evidence = normalize_evidence(reply["evidence"]) if "evidence" in reply else state.evidence
    # G holds the open gaps only: a copied "No gaps noted." is no gap (B3); the small prompts show what was written
    written = written_gaps(reply["gaps"]) if "gaps" in reply else _written(state)
    gaps = open_gaps(written)
    changes = {"k": state.k + 1, "evidence": evidence, "gaps": gaps, "gaps_written": written, "last_action": action,
               "just_retrieved": False, "reasoning": None, "reflect_streak": 0}
    query = _text(reply.get("retrieval_query"))
    if run.carry == "keep" and query is not None:  # [code] the prior query is the last one written, any decision
        changes["last_query"] = query
    delta = delta_source = None
    if action == "retrieve":
        delta, delta_source = query, "llm"
        if delta is None:
            delta = delta_fallback(gaps) if run.gap_fallback else None
            delta_source = "first_gap" if delta is not None else "question"
        changes["delta_q"] = delta
        if run.carry == "clear":
            changes["last_query"] = delta
    elif action == "reflect":
        reasoning = _text(reply.get("reasoning"))
        if reasoning is None and run.carry == "keep":  # [code] a reflect without reasoning keeps the previous F
            reasoning = state.reasoning
        changes.update(reasoning=reasoning or "", reflect_streak=state.reflect_streak)
    else:
        changes["draft"] = _text(reply.get("detailed_answer"))
    payload = PP.PAYLOAD_KEY[action]
    s.data["payload_written"] = _text(reply.get(payload)) is not None  # B1: did the model write the action's text
    s.title = f"Iteration {state.k + 1}: {action}" + (f" (forced: {guard_name})" if guard_name else "")
    s.data.update(iteration=state.k + 1, directive=forced or "default", forced=guard_name, proposed=proposed,
                  action=action, fallback=fallback, error=error, cache_miss=cache_miss,
                  evidence=list(evidence), gaps=list(written),  # as written; G (state) has the open gaps
                  delta_query=delta, delta_source=delta_source, reasoning=changes.get("reasoning"),
                  draft_answer=changes.get("draft"), retrieved_ids=[h.unit_id for h in state.snippets],
                  masked_ids=sorted(state.seen_ids) if run.mask else [], reflect_streak=state.reflect_streak,
                  backend_has_more=more,
                  snippet_tokens=sum(count_tokens(h.text, limit=None) for h in state.snippets))  # App. D.2
    if len(gaps) < len(written):  # shown to the small profile's router as written, but no open gap
        s.data["placeholder_gaps"] = len(written) - len(gaps)
    # turn-4 N6: a reply the model wrote but the client could not read as the schema asks is "rejected" (its text
    # kept), apart from a payload the model skipped in a reply that was read
    s.data["reply_rejected"] = rejected is not None
    if rejected is not None:
        s.data["rejected_reply"] = rejected[:REJECTED_CHARS]
    s.data.update(read)  # how the reply was read: lenient_read (what the strict schema refused), repaired_locally
    return changes


def _written(state: RouterState) -> tuple[str, ...]:
    return state.gaps if state.gaps_written is None else state.gaps_written


def _text(value) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _call_router(state: RouterState, run: Run, forced: str | None, actions: tuple[str, ...]
                 ) -> tuple[dict | None, str | None, bool, str | None, dict]:
    """One generate call: (parsed reply, None, False, None, how it was read), or (None, error text, whether the
    error was a replay cassette's miss, the last reply's text when the model replied but the reply could not be
    read, else None, {}) when the client gave up. ``run.prompts`` picks the wording (paper: App. A.1/A.2
    in ``paper_prompts``, raw snippets as [code] shows them; small: ``prompts``, snippets with their ids and
    the gaps as written), ``run.schema`` the schema sent (paper: the payload required).

    ``run.reading``: "strict" reads only a reply that passes that schema (the client repairs and retries the
    others); "lenient" still sends it but accepts any JSON object with a string decision (``LENIENT_ACCEPT``,
    [code]) and reads it with ``read_leniently``; what the strict schema would have refused is kept as
    ``lenient_read``. ``repaired_locally``: the client's ``json_repair`` made the reply readable (the client's
    ``local_repair``; [code] calls ``repair_json`` on every reply ``json.loads`` refuses)."""
    T = PP if run.prompts == "paper" else P
    if forced:
        directive = T.DIRECTIVE_FORCED.format(action=forced)
    else:
        directive = T.DIRECTIVE_DEFAULT if run.reflect else T.DIRECTIVE_DEFAULT_NO_REFLECT
    system = T.ROUTER_SYSTEM.format(actions=", ".join(f'"{a}"' for a in actions), directive=directive)
    if run.prompts == "paper":
        snippets = P.SNIPPET_SEPARATOR.join(h.text for h in state.snippets)
        gaps = state.gaps
    else:
        snippets = P.SNIPPET_SEPARATOR.join(f"[{h.unit_id}] {h.text}" for h in state.snippets)
        gaps = _written(state)
    user = T.ROUTER_USER.format(question=state.question, now_line=question_date_line(run.now),
                                evidence=_bullets(state.evidence) or P.NO_EVIDENCE,
                                gaps=_bullets(gaps) or P.NO_GAPS, snippets=snippets or P.NO_SNIPPETS,
                                reasoning=state.reasoning or P.NO_REASONING, last_query=state.last_query or P.NO_QUERY)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    schema = PP.router_schema(actions, forced) if run.schema == "paper" else P.router_schema(actions)
    lenient = run.reading == "lenient"
    try:
        done = (run.llm.complete(messages, schema=schema, accept=LENIENT_ACCEPT, role="memr3.router") if lenient
                else run.llm.complete(messages, schema=schema, role="memr3.router"))
    except LLMError as exc:  # ParseError included: recorded in the step, fallback in resolve()
        rejected = exc.raw if isinstance(exc, ParseError) else None
        return None, f"{type(exc).__name__}: {exc}", isinstance(exc, CacheMiss), rejected, {}
    parsed = done.parsed
    if not isinstance(parsed, dict):
        return None, f"reply is not a JSON object: {parsed!r}"[:300], False, repr(parsed), {}
    read = {"repaired_locally": True} if getattr(done, "repaired", "") else {}
    if lenient:
        try:
            check_schema(parsed, schema)
        except ParseError as refused:  # read as [code] reads it; what the paper schema refused is kept
            read["lenient_read"] = str(refused)
        parsed = read_leniently(parsed)
    return parsed, None, False, None, read


def _bullets(items: Sequence[str]) -> str:
    return "\n".join(f"- {x}" for x in items)


def reflect_node(state: RouterState, run: Run, s: StepBuilder) -> dict:
    """Keep the reasoning F for the next router call; the snippets stay visible ([code])."""
    s.title = f"Iteration {state.k}: reflect (streak {state.reflect_streak + 1})"
    s.data.update(iteration=state.k, reasoning=state.reasoning, reflect_streak=state.reflect_streak + 1)
    return {"reflect_streak": state.reflect_streak + 1}


def answer_node(state: RouterState, run: Run, s: StepBuilder) -> dict:
    """Final answer from q, the draft w and the evidence E only (paper Eq. 6): no raw snippets."""
    if run.answer_prompt == "shared":  # same inputs (Eq. 6), the fair-arena wording
        context = f"Evidence:\n{_bullets(state.evidence) or P.NO_EVIDENCE}\n\nDraft answer: {state.draft or P.NO_DRAFT}"
        prompt = shared_prompt(context, state.question, run.now)
        s.data["answer_prompt"] = "shared"
    elif run.answer_style == "stepwise":  # [code] p_w: evidence and draft in the system message, the question apart
        system = PP.ANSWER_SYSTEM.format(evidence=_bullets(state.evidence) or P.NO_EVIDENCE,
                                         draft=state.draft or P.NO_DRAFT, now_line=question_date_line(run.now))
        prompt = [{"role": "system", "content": system},
                  {"role": "user", "content": PP.ANSWER_USER.format(question=state.question)}]
    else:
        prompt = P.ANSWER.format(evidence=_bullets(state.evidence) or P.NO_EVIDENCE, draft=state.draft or P.NO_DRAFT,
                                 now_line=question_date_line(run.now), question=state.question)
    error = fallback = None
    cache_miss = False
    try:
        text = run.llm.complete(prompt, role="memr3.answer").text.strip()
    except LLMError as exc:  # recorded; the draft (if any) stands in for the answer
        error, cache_miss = f"{type(exc).__name__}: {exc}", isinstance(exc, CacheMiss)
        fallback = "draft answer" if state.draft else "no answer"
        text = state.draft or "Not mentioned in the conversation"
    s.title = "Answer from question, draft and evidence" + (f" (fallback: {fallback})" if fallback else "")
    s.data.update(iteration=state.k, answer=text, draft_answer=state.draft, evidence=list(state.evidence),
                  gaps=list(state.gaps), error=error, fallback=fallback, cache_miss=cache_miss,
                  backend_errors=state.backend_errors)
    return {"answer": text}


NODES = {"retrieve": retrieve_node, "reflect": reflect_node}
