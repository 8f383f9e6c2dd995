"""The papers' headline tables, found through the method registry: each method declares its own paper's tables
(``MemoryMethod.paper_tables``, in its folder's ``paper_tables.py``; the type is ``methods.paper_tables.PaperTable``),
so a plugin whose paper has a table gets ``workbench reproduce`` with no change here."""
from __future__ import annotations

from ..methods.paper_tables import METRICS, OVERALL, PaperTable


def tables() -> tuple[PaperTable, ...]:
    """Every registered method's paper tables, in registry order."""
    from ..methods import REGISTRY

    return tuple(t for cls in REGISTRY.values() for t in (getattr(cls, "paper_tables", None) or ()))


def papers() -> tuple[str, ...]:
    """The methods whose papers have tables here."""
    return tuple(dict.fromkeys(t.paper for t in tables()))


def tables_for(paper: str) -> list[PaperTable]:
    """The tables of ``paper``, headline first; ``ValueError`` naming the papers that have tables."""
    found = [t for t in tables() if t.paper == paper]
    if not found:
        raise ValueError(f"no headline table for {paper!r}; papers with tables: {', '.join(papers())}")
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


__all__ = ["PaperTable", "METRICS", "OVERALL", "tables", "papers", "tables_for", "get_table"]
