"""A paper's headline tables as data (``PaperTable``): what ``workbench reproduce`` runs and compares against.

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

Each method declares its paper's tables in its folder (``<method>/paper_tables.py``, ``MemoryMethod.paper_tables``);
``workbench.eval.paper_tables`` finds them through the registry.
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
        from .components import same_model

        for b in self.backbones:
            if model and same_model(model, b):
                return b, self.rows[b]
        return self.backbones[0], self.rows[self.backbones[0]]


def _plain(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def locomo_rows(order: tuple, metrics: tuple, values: dict) -> dict:
    """``{backbone: [per row in order: one figure, or a tuple of figures in metrics order]}`` as nested dicts."""
    out = {}
    for backbone, cells in values.items():
        if len(cells) != len(order):
            raise ValueError(f"{backbone}: {len(cells)} cells for {len(order)} rows")
        out[backbone] = {row: dict(zip(metrics, cell if isinstance(cell, tuple) else (cell,)))
                         for row, cell in zip(order, cells)}
    return out


ACC = ("judge",)  # a table of LLM-judge accuracy alone
SH_MH_T_OD = (4, 1, 2, 3, OVERALL)  # a LoCoMo column order: single-hop, multi-hop, temporal, open-domain
MH_T_OD_SH = (1, 2, 3, 4, OVERALL)  # the official order
LOCOMO_SLICE = "LoCoMo, all 10 conversations, categories 1-4 (adversarial excluded): 1,540 questions"
