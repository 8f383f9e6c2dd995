"""AMA's headline tables, as its paper reports them (``workbench reproduce ama``; the type and the
shared constants: ``workbench.methods.paper_tables``)."""
from __future__ import annotations

from ..paper_tables import (
    PaperTable,
    ACC,
    LME_S,
    LME_TYPES,
    LOCOMO_FULL,
    LOCOMO_SCORED,
    LOCOMO_SLICE,
    OVERALL,
    SH_MH_T_OD,
    locomo_rows,
)

METRICS_JUDGE_F1_BLEU = ("judge", "f1", "bleu1")  # Table 1 reports all three

TABLES: tuple[PaperTable, ...] = (
    # -- AMA (arXiv 2601.20352) -----------------------------------------------------------------------
    PaperTable(
        "ama", "1", "locomo", LOCOMO_SLICE, LOCOMO_SCORED, LOCOMO_FULL,
        ("gpt-4o-mini", "gpt-4.1-mini", "Qwen3-30B-Instruct", "Qwen3-8B-Instruct"),
        "gpt-4o-mini", "AMA's P_llm (App. C.7, Fig. 12): the mem0-style generous CORRECT/WRONG judge", True,
        METRICS_JUDGE_F1_BLEU, {"judge": 1, "f1": 1, "bleu1": 1},
        locomo_rows(SH_MH_T_OD, METRICS_JUDGE_F1_BLEU, {
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
        False, ACC, {"judge": 1},
        {"gpt-4o-mini": {"single-session-preference": {"judge": .467}, "single-session-assistant": {"judge": .964},
                         "temporal-reasoning": {"judge": .444}, "multi-session": {"judge": .624},
                         "knowledge-update": {"judge": .897}, "single-session-user": {"judge": .986},
                         OVERALL: {"judge": .698}}},
        "§4, Table 2 (LongMemEval_s, Pass@1)"),
)
