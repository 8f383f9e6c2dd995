"""The project's one Markdown table writer, on its own so that every report module can use it
(``report``, ``mechanisms``, the benchmarks) without importing each other."""
from __future__ import annotations

from typing import Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool]) -> str:
    """GitHub-style table, columns padded to their widest cell, ``numeric`` columns right-aligned.
    Cells arrive as formatted text (each caller formats its own)."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]

    def line(cells):
        return "| " + " | ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if num else ("-" * (w + 2)) for w, num in zip(widths, numeric)) + "|"
    return "\n".join([line(header), sep] + [line(r) for r in rows])
