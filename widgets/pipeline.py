"""A small boxes-and-arrows diagram of a method's pipeline, for the top of each method notebook.

A reader meets a method's mechanism faster as a picture than as a paragraph, but a plotting library
(or a diagram service) would bring a loader script, a network fetch or a new dependency into every
notebook. This is plain HTML and CSS: a row of stage boxes joined by arrows, optionally a loop note
under the row ("repeats until ...") and a phase label per row. It renders the same in JupyterLab, in
a static export (nbconvert, GitHub) and in the Panel app, and it holds no script. All text is
escaped, like every other view (``widgets.html.esc``).

    from widgets.pipeline import pipeline_diagram
    pipeline_diagram([("segment", "one call per session"), ("summarise", "Level-1 sentences")],
                     title="HyMem build", loop=None)
"""
from __future__ import annotations

from typing import Iterable, Sequence, Union

from .html import esc

Stage = Union[str, Sequence[str]]

_CSS = (
    "<style>"
    ".wb-pipe {font-family: system-ui, sans-serif; font-size: 13px; line-height: 1.3; margin: 6px 0;}"
    # one line per phase however narrow the output: boxes share the width instead of wrapping under the label
    ".wb-pipe-row {display: flex; flex-wrap: nowrap; align-items: stretch; gap: 4px; margin: 4px 0;}"
    ".wb-pipe-phase {flex: 0 0 6em; align-self: center; font-weight: 600; color: #343a40;}"
    ".wb-pipe-stage {border: 1px solid #4263eb; border-radius: 6px; background: #edf2ff; padding: 4px 8px;"
    " flex: 1 1 0; min-width: 6em; max-width: 15em;}"
    ".wb-pipe-stage b {color: #1c2a6b;}"
    ".wb-pipe-detail {display: block; color: #495057; font-size: 12px;}"
    ".wb-pipe-arrow {flex: 0 0 auto; align-self: center; color: #343a40; font-size: 16px; padding: 0 2px;}"
    ".wb-pipe-loop {color: #495057; font-size: 12px; margin: 0 0 6px 6em;}"
    "</style>"
)


def _stage(stage: Stage) -> tuple[str, str]:
    """A stage as (name, detail): a plain string is a name without detail."""
    if isinstance(stage, str):
        return stage, ""
    parts = list(stage)
    if not parts or len(parts) > 2:
        raise ValueError(f"a stage is a name or a (name, detail) pair, not {stage!r}")
    return str(parts[0]), str(parts[1]) if len(parts) == 2 else ""


def row_html(stages: Iterable[Stage], *, phase: str = "", loop: str | None = None) -> str:
    """One row of the diagram: an optional phase label, the stage boxes joined by arrows, and an
    optional loop note under it (the mechanism that sends control back, e.g. a router's retrieve)."""
    boxes = []
    for name, detail in map(_stage, stages):
        inner = f"<b>{esc(name)}</b>" + (f"<span class='wb-pipe-detail'>{esc(detail)}</span>" if detail else "")
        boxes.append(f"<div class='wb-pipe-stage'>{inner}</div>")
    if not boxes:
        raise ValueError("a pipeline row needs at least one stage")
    label = f"<div class='wb-pipe-phase'>{esc(phase)}</div>" if phase else ""
    arrows = "<div class='wb-pipe-arrow' aria-hidden='true'>&rarr;</div>".join(boxes)
    note = f"<div class='wb-pipe-loop'>&#8634; {esc(loop)}</div>" if loop else ""
    return f"<div class='wb-pipe-row' role='list'>{label}{arrows}</div>{note}"


class Pipeline:
    """The diagram as an object Jupyter displays (``_repr_html_``); ``html`` is the markup and
    ``text`` a plain-text rendering (``name -> name``), for terminals and tests."""

    def __init__(self, rows: Sequence[dict], title: str = ""):
        self.rows = list(rows)
        self.title = title
        parts = [row_html(r["stages"], phase=r.get("phase", ""), loop=r.get("loop")) for r in self.rows]
        heading = f"<div><b>{esc(title)}</b></div>" if title else ""
        label = esc(title or "pipeline")
        self.html = f"{_CSS}<div class='wb-pipe' aria-label='{label}'>{heading}{''.join(parts)}</div>"

    @property
    def text(self) -> str:
        lines = [self.title] if self.title else []
        for r in self.rows:
            chain = " -> ".join(_stage(s)[0] for s in r["stages"])
            lines.append((f"{r['phase']}: " if r.get("phase") else "") + chain)
            if r.get("loop"):
                lines.append(f"  (loop) {r['loop']}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text


def pipeline_diagram(stages: Sequence[Stage] | None = None, *, title: str = "", loop: str | None = None,
                     phases: Sequence[tuple[str, Sequence[Stage]]] | Sequence[tuple[str, Sequence[Stage], str]]
                     | None = None) -> Pipeline:
    """A method's pipeline: either one row of ``stages`` (with an optional ``loop`` note), or several
    ``phases`` given as ``(phase, stages)`` or ``(phase, stages, loop)`` (e.g. build, then answer)."""
    if (stages is None) == (phases is None):
        raise ValueError("give either stages or phases")
    if stages is not None:
        rows = [{"stages": list(stages), "loop": loop}]
    else:
        rows = []
        for p in phases:
            if len(p) not in (2, 3):
                raise ValueError(f"a phase is (name, stages) or (name, stages, loop), not {p!r}")
            rows.append({"phase": p[0], "stages": list(p[1]), "loop": p[2] if len(p) == 3 else None})
    return Pipeline(rows, title)
