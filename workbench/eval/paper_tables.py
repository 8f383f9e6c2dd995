"""The headline tables of the five seed papers, as data: what ``workbench reproduce`` runs and compares against.

Each ``PaperTable`` holds one table (or the part of one that is about one dataset) as its paper reports it: the
dataset and the slice of it that was scored, the backbone models with a row for the paper's method, the judge
model and whose judge prompt, the metrics, and the method's figures per row (category or question type, and
overall) in the paper's own scale (per cent or a fraction). Only the paper's own method is kept, not its
baselines. Every figure was read from the paper's text (``../shared/papers/<paper>.txt``) and checked against
the method digests (``../shared/methods/<paper>.md``), where the LoCoMo category of each column was
back-solved from the question counts.

Rows are keyed the way the workbench stores a question's category: the LoCoMo integer (1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop; DATA.md §1.5) or the LongMemEval question type, plus ``"overall"``. A paper's own
column names are kept in ``row_labels``, since three papers name the integers differently (HyMem's "Single Hop"
column holds category 1, the official multi-hop).
"""
from __future__ import annotations

from dataclasses import dataclass, field

OVERALL = "overall"
LOCOMO_SCORED = (1, 2, 3, 4)  # the mem0-style protocol: category 5 (adversarial) is not scored
LME_TYPES = ("single-session-user", "single-session-assistant", "single-session-preference", "temporal-reasoning",
             "knowledge-update", "multi-session")

#: how a metric is named in print, and the column of the workbench's summary it is compared with
METRICS = {"judge": "LLM-judge accuracy", "f1": "F1", "bleu1": "BLEU-1"}

#: the full public datasets' sizes (DATA.md §1.3, §2.3): what a run on the paper's slice covers
LOCOMO_FULL = {"conversations": 10, "sessions": 272, "turns": 5882, "questions": 1540}
LME_S = {"conversations": 500, "sessions": None, "turns": None, "questions": 500}

PROJECT_JUDGE_LOCOMO = "the workbench's mem0-style CORRECT/WRONG prompt (judge_prompts.LOCOMO_JUDGE)"
PROJECT_JUDGE_LME = "the workbench's LongMemEval per-type yes/no prompts (judge_prompts.LME_TEMPLATES)"


@dataclass(frozen=True)
class PaperTable:
    """One headline table of a paper (see the module docstring).

    ``rows``: backbone -> row key -> metric -> figure, in ``scale`` (100: per cent; 1: a fraction);
    ``backbones``: the models with a row, the paper's main one first (``--llm`` defaults to it);
    ``judge_model``: None when the paper does not name it (``judge_stand_in`` is then used, and said);
    ``judge_as_ours``: True when the paper's judge prompt follows the protocol the workbench's prompt rewords
    (mem0's ACCURACY_PROMPT on LoCoMo, LongMemEval's official prompts), False when the paper wrote its own;
    ``dedupe_questions``: the paper drops repeated questions (same text, same conversation; the first is kept);
    ``size``: the full slice (conversations, sessions, turns, questions) a run as the paper's covers."""

    paper: str
    table: str
    dataset: str  # "locomo" | "longmemeval_s"
    slice: str
    categories: tuple
    size: dict
    backbones: tuple[str, ...]
    judge_model: str | None
    judge_prompt: str
    judge_as_ours: bool
    metrics: tuple[str, ...]
    scale: dict
    rows: dict
    source: str
    row_labels: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    dedupe_questions: bool = False
    judge_stand_in: str = "gpt-4o-mini"

    @property
    def key(self) -> tuple[str, str]:
        return self.paper, self.table

    @property
    def data_kind(self) -> str:
        """The ``--data`` kind the table's dataset is loaded with (``locomo:`` or ``longmemeval:``)."""
        return "locomo" if self.dataset == "locomo" else "longmemeval"

    @property
    def judge(self) -> str:
        """The judge model a reproduction uses: the paper's, or the stand-in when it names none."""
        return self.judge_model or self.judge_stand_in

    def row_label(self, key) -> str:
        """A row in words: the official name, and the paper's own column name where it differs."""
        from ..data import CATEGORY_NAMES

        official = CATEGORY_NAMES.get(key, str(key)) if isinstance(key, int) else str(key)
        own = self.row_labels.get(key)
        if isinstance(key, int):
            official = f"{key} {official}"
        same = own and _plain(own) == _plain(str(CATEGORY_NAMES.get(key, key)))
        return f"{official} (paper: {own})" if own and not same else official

    def backbone_rows(self, model: str | None) -> tuple[str, dict]:
        """(the backbone compared with, its rows): ``model``'s rows when the paper has them, else the main one's."""
        from ..methods.components import same_model

        for b in self.backbones:
            if model and same_model(model, b):
                return b, self.rows[b]
        return self.backbones[0], self.rows[self.backbones[0]]


def _plain(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def _locomo_rows(order: tuple, metrics: tuple, values: dict) -> dict:
    """``{backbone: [per row in order: one figure, or a tuple of figures in metrics order]}`` as nested dicts."""
    out = {}
    for backbone, cells in values.items():
        if len(cells) != len(order):
            raise ValueError(f"{backbone}: {len(cells)} cells for {len(order)} rows")
        out[backbone] = {row: dict(zip(metrics, cell if isinstance(cell, tuple) else (cell,)))
                         for row, cell in zip(order, cells)}
    return out


_ACC = ("judge",)
_AMA_METRICS = ("judge", "f1", "bleu1")
_SH_MH_T_OD = (4, 1, 2, 3, OVERALL)  # the column order of AMA's and H-Mem's LoCoMo tables
_MH_T_OD_SH = (1, 2, 3, 4, OVERALL)  # RecMem's and MemR3's
LOCOMO_SLICE = "LoCoMo, all 10 conversations, categories 1-4 (adversarial excluded): 1,540 questions"

TABLES: tuple[PaperTable, ...] = (
    # -- HyMem (arXiv 2602.13933) ---------------------------------------------------------------------
    PaperTable(
        "hymem", "1", "locomo", LOCOMO_SLICE + "; the authors scored their own edited copy of locomo10.json "
        "(about 27 edits, DATA.md §1.7)", LOCOMO_SCORED, LOCOMO_FULL, ("gpt-4.1-mini",),
        "gpt-4.1-mini", "HyMem's own lenient CORRECT/WRONG prompt (App. B.6)", False, _ACC, {"judge": 100},
        _locomo_rows((1, 2, 3, 4, OVERALL), _ACC, {"gpt-4.1-mini": (85.15, 88.16, 77.08, 92.98, 89.55)}),
        "§4.1, Table 1 (LoCoMo columns); App. A.1 setup; App. B.6 judge prompt",
        row_labels={1: "Single Hop", 2: "Multi Hop", 3: "Open Domain", 4: "Temporal"},
        notes=("HyMem's column names do not follow the official categories: back-solved from the question "
               "counts, its 'Single Hop' column is category 1 (official multi-hop) and 'Temporal' is category 4 "
               "(official single-hop)",
               "the authors' code runs the judge at temperature 1.0 with a regex fallback; the paper states no "
               "temperature (this run: 0)",
               "Table 1's gpt-4o-mini block has no HyMem row")),
    PaperTable(
        "hymem", "1", "longmemeval_s", "LongMemEval-S, 500 questions, every question type", LME_TYPES, LME_S,
        ("gpt-4.1-mini",), "gpt-4.1-mini", "HyMem's judge prompt (App. B.6); no LongMemEval prompt is given",
        False, _ACC, {"judge": 100}, {"gpt-4.1-mini": {OVERALL: {"judge": 75.00}}},
        "§4.1, Table 1 (LongMemEval-s column: overall only)",
        notes=("only the overall figure is reported for LongMemEval-S; its k, N and per-type scores are not given",)),
    # -- AMA (arXiv 2601.20352) -----------------------------------------------------------------------
    PaperTable(
        "ama", "1", "locomo", LOCOMO_SLICE, LOCOMO_SCORED, LOCOMO_FULL,
        ("gpt-4o-mini", "gpt-4.1-mini", "Qwen3-30B-Instruct", "Qwen3-8B-Instruct"),
        "gpt-4o-mini", "AMA's P_llm (App. C.7, Fig. 12): the mem0-style generous CORRECT/WRONG judge", True,
        _AMA_METRICS, {"judge": 1, "f1": 1, "bleu1": 1},
        _locomo_rows(_SH_MH_T_OD, _AMA_METRICS, {
            "gpt-4o-mini": ((.849, .622, .548), (.681, .423, .303), (.748, .589, .461), (.479, .283, .228),
                            (.774, .558, .465)),
            "gpt-4.1-mini": ((.888, .636, .570), (.716, .453, .324), (.764, .608, .484), (.514, .333, .251),
                             (.805, .580, .492)),
            "Qwen3-30B-Instruct": ((.872, .625, .560), (.703, .445, .318), (.751, .597, .475), (.505, .327, .247),
                                   (.791, .570, .483)),
            "Qwen3-8B-Instruct": ((.780, .559, .500), (.628, .398, .284), (.671, .533, .424), (.482, .292, .221),
                                  (.707, .510, .432))}),
        "§4, Table 1; §4.1 metrics and judge; App. A.1 data; App. C.7 judge prompt",
        row_labels={4: "Single-Hop", 1: "Multi-Hop", 2: "Temporal Reasoning", 3: "Open Domain"},
        notes=("AMA's agents all run on the backbone that answers",)),
    PaperTable(
        "ama", "2", "longmemeval_s", "LongMemEval-S, 500 questions, every question type", LME_TYPES, LME_S,
        ("gpt-4o-mini",), "gpt-4o-mini", "an LLM judge scoring Pass@1 (the paper gives no LongMemEval prompt)",
        False, _ACC, {"judge": 1},
        {"gpt-4o-mini": {"single-session-preference": {"judge": .467}, "single-session-assistant": {"judge": .964},
                         "temporal-reasoning": {"judge": .444}, "multi-session": {"judge": .624},
                         "knowledge-update": {"judge": .897}, "single-session-user": {"judge": .986},
                         OVERALL: {"judge": .698}}},
        "§4, Table 2 (LongMemEval_s, Pass@1)"),
    # -- H-Mem (arXiv 2605.15701) ---------------------------------------------------------------------
    PaperTable(
        "hmem", "2", "locomo", LOCOMO_SLICE, LOCOMO_SCORED, LOCOMO_FULL, ("gpt-4.1-mini", "gpt-4o-mini"),
        None, "MemGPT's CORRECT/WRONG judge prompt (App. C.2); the judge model is not named", True,
        ("f1", "judge"), {"f1": 100, "judge": 100},
        _locomo_rows(_SH_MH_T_OD, ("f1", "judge"), {
            "gpt-4o-mini": ((60.20, 95.01), (47.50, 89.01), (61.00, 80.06), (28.40, 63.54), (56.06, 88.83)),
            "gpt-4.1-mini": ((57.67, 96.08), (46.81, 89.01), (64.00, 89.72), (34.90, 72.92), (55.58, 92.01))}),
        "§5, Table 2; §5.1 metrics and model configuration; App. C.2 judge and answer-simplification prompts",
        row_labels={4: "SH", 1: "MH", 2: "Temp", 3: "OD"},
        notes=("the paper's F1 is a multiset token F1 over an LLM-simplified answer (one extra call per question); "
               "this run's F1 is the mem0-style set F1 of the answer itself: the two are not the same measure",
               "the ablations (Tables 5, 8) use GPT-4.1-mini, hence it is the main backbone here")),
    PaperTable(
        "hmem", "3", "longmemeval_s", "LongMemEval-S, 500 questions, every question type", LME_TYPES, LME_S,
        ("(not stated)",), None, "MemGPT's judge prompt (App. C.2); the judge model is not named", False,
        ("f1", "judge"), {"f1": 100, "judge": 100},
        {"(not stated)": {"single-session-user": {"f1": 78.70, "judge": 98.57},
                          "multi-session": {"f1": 46.70, "judge": 83.46},
                          "single-session-preference": {"f1": 12.08, "judge": 93.33},
                          "temporal-reasoning": {"f1": 55.35, "judge": 84.96},
                          "knowledge-update": {"f1": 66.60, "judge": 91.03},
                          "single-session-assistant": {"f1": 82.35, "judge": 96.43},
                          OVERALL: {"f1": 58.50, "judge": 89.20}}},
        "§5, Table 3",
        notes=("the paper does not say which backbone produced Table 3",
               "F1 over an LLM-simplified answer, as in Table 2")),
    # -- RecMem (ACL 2026 Findings) -------------------------------------------------------------------
    PaperTable(
        "recmem", "1", "locomo", LOCOMO_SLICE, LOCOMO_SCORED, LOCOMO_FULL, ("gpt-4.1-mini", "gpt-4o-mini"),
        "gpt-4o-mini", "mem0's CORRECT/WRONG judge prompt (Chhikara et al., 2025)", True, _ACC, {"judge": 100},
        _locomo_rows(_MH_T_OD_SH, _ACC, {"gpt-4o-mini": (72.70, 57.32, 58.33, 79.79, 72.47),
                                         "gpt-4.1-mini": (78.37, 75.39, 57.29, 86.92, 81.10)}),
        "§4, Table 1; §4.1 metrics (judge GPT-4o-mini, mean of three runs)",
        row_labels={1: "Multi-Hop", 2: "Temporal", 3: "Open Domain", 4: "Single-Hop"},
        notes=("the paper's figures are the mean of three runs; one run is compared here",
               "the ablations and sensitivity studies use GPT-4.1-mini, hence it is the main backbone here")),
    PaperTable(
        "recmem", "2", "longmemeval_s", "LongMemEval-S (cleaned release), 500 questions, every question type",
        LME_TYPES, LME_S, ("gpt-4.1-mini", "gpt-4o-mini"), "gpt-4o-mini",
        "LongMemEval's official per-type prompts, as RecMem's code re-implements them", True, _ACC, {"judge": 100},
        {"gpt-4o-mini": {"single-session-user": {"judge": 91.43}, "single-session-assistant": {"judge": 85.71},
                         "single-session-preference": {"judge": 46.67}, "temporal-reasoning": {"judge": 61.65},
                         "knowledge-update": {"judge": 80.77}, "multi-session": {"judge": 56.39},
                         OVERALL: {"judge": 69.20}},
         "gpt-4.1-mini": {"single-session-user": {"judge": 95.71}, "single-session-assistant": {"judge": 96.43},
                          "single-session-preference": {"judge": 86.67}, "temporal-reasoning": {"judge": 68.42},
                          "knowledge-update": {"judge": 75.64}, "multi-session": {"judge": 65.41},
                          OVERALL: {"judge": 76.80}}},
        "§4, Table 2 (LongMemEval-S)"),
    PaperTable(
        "recmem", "3", "locomo", LOCOMO_SLICE, LOCOMO_SCORED, LOCOMO_FULL, ("gpt-4.1-mini", "gpt-4o-mini"),
        "gpt-4o-mini", "mem0's CORRECT/WRONG judge prompt (Chhikara et al., 2025)", True, ("f1", "judge"),
        {"f1": 1, "judge": 100},
        {"gpt-4o-mini": {OVERALL: {"f1": 0.385, "judge": 72.47}},
         "gpt-4.1-mini": {OVERALL: {"f1": 0.469, "judge": 81.1}}},
        "App. E.4, Table 3 (LoCoMo F1 and judge score, overall only)"),
    # -- MemR3 (arXiv 2512.20237) ---------------------------------------------------------------------
    PaperTable(
        "memr3", "1", "locomo", "LoCoMo, all 10 conversations, categories 1-4 (adversarial excluded), repeated "
        "questions dropped: 1,529 questions (single-hop 830)", LOCOMO_SCORED, {**LOCOMO_FULL, "questions": 1529},
        ("gpt-4o-mini", "gpt-4.1-mini"), "gpt-4.1",
        "mem0's CORRECT/WRONG judge prompt (Chhikara et al., 2025)", True, _ACC, {"judge": 100},
        _locomo_rows(_MH_T_OD_SH, _ACC, {"gpt-4o-mini": (71.39, 76.22, 61.11, 89.44, 81.55),
                                         "gpt-4.1-mini": (81.20, 82.14, 71.53, 92.17, 86.75)}),
        "§4, Table 1 (the MemR3 rows over the RAG retriever); §4.1 metrics; Table 3 category ids",
        row_labels={1: "Multi-hop", 2: "Temporal", 3: "Open-domain", 4: "Single-hop"},
        notes=("the paper's figures are the mean of three runs; one run is compared here",
               "MemR3 over Zep (the paper's other backbone) is not reproducible here: the workbench has no Zep",
               "the ablations use GPT-4o-mini, hence it is the main backbone here"),
        dedupe_questions=True),
)

PAPERS = tuple(dict.fromkeys(t.paper for t in TABLES))


def tables_for(paper: str) -> list[PaperTable]:
    """The tables of ``paper``, headline first; ``ValueError`` naming the papers that have tables."""
    found = [t for t in TABLES if t.paper == paper]
    if not found:
        raise ValueError(f"no headline table for {paper!r}; papers with tables: {', '.join(PAPERS)}")
    return found


def get_table(paper: str, table: str | int | None = None, data_kind: str | None = None) -> PaperTable:
    """``paper``'s table number ``table`` (default: its headline table), on the dataset of ``data_kind``
    (``locomo`` / ``longmemeval``) when the number covers two datasets (HyMem's Table 1)."""
    found = tables_for(paper)
    if table is not None:
        found = [t for t in found if t.table == str(table)]
        if not found:
            have = ", ".join(dict.fromkeys(t.table for t in tables_for(paper)))
            raise ValueError(f"{paper} has no headline table {table}; its tables here: {have}")
    if data_kind is not None:
        on_data = [t for t in found if t.data_kind == data_kind]
        if not on_data:
            raise ValueError(f"{paper} Table {found[0].table} is on {found[0].dataset}, not {data_kind} data")
        found = on_data
    return found[0]


__all__ = ["PaperTable", "TABLES", "PAPERS", "METRICS", "OVERALL", "tables_for", "get_table"]
