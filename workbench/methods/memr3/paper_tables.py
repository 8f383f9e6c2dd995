"""MemR3's headline tables, as its paper reports them (``workbench reproduce memr3``; the type and the
shared constants: ``workbench.methods.paper_tables``)."""
from __future__ import annotations

from ..paper_tables import (PaperTable, ACC, LOCOMO_FULL, LOCOMO_SCORED, MH_T_OD_SH, locomo_rows)

TABLES: tuple[PaperTable, ...] = (
    # -- MemR3 (arXiv 2512.20237) ---------------------------------------------------------------------
    PaperTable(
        "memr3", "1", "locomo", "LoCoMo, all 10 conversations, categories 1-4 (adversarial excluded), repeated "
        "questions dropped: 1,529 questions (single-hop 830)", LOCOMO_SCORED, {**LOCOMO_FULL, "questions": 1529},
        ("gpt-4o-mini", "gpt-4.1-mini"), "gpt-4.1",
        "mem0's CORRECT/WRONG judge prompt (Chhikara et al., 2025)", True, ACC, {"judge": 100},
        locomo_rows(MH_T_OD_SH, ACC, {"gpt-4o-mini": (71.39, 76.22, 61.11, 89.44, 81.55),
                                         "gpt-4.1-mini": (81.20, 82.14, 71.53, 92.17, 86.75)}),
        "§4, Table 1 (the MemR3 rows over the RAG retriever); §4.1 metrics; Table 3 category ids",
        row_labels={1: "Multi-hop", 2: "Temporal", 3: "Open-domain", 4: "Single-hop"},
        notes=("the paper's figures are the mean of three runs; one run is compared here",
               "MemR3 over Zep (the paper's other backbone) is not reproducible here: the workbench has no Zep",
               "the ablations use GPT-4o-mini, hence it is the main backbone here"),
        dedupe_questions=True),
)
