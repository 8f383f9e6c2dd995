"""How a method works, as the method declares it: the words and the diagram a teacher shows first.

A method class sets ``how_it_works`` to a ``HowItWorks``: two plain sentences on what it does, its
pipeline as phases of stages (the boxes-and-arrows diagram ``widgets.pipeline`` draws), the name of
its signature mechanism, and, when the project wrote one, the id of its mechanism-gallery conversation
(``sample_data/gallery_conversations.json``, issue #40) with what a correct memory does there. The app's
"How it works" tab, the method notebooks' opening diagram and ``workbench.gallery`` read this one
declaration, so the three cannot tell different stories, and a plugin method gets its page by declaring
its own (nothing in the views names a method).

Pure data: no view, no widget, no model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


def _text(where: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where} must be a non-empty string, got {value!r}")
    return value


@dataclass(frozen=True)
class Phase:
    """One row of the diagram: its label (``build``, ``answer``), its stages as ``(name, detail)`` pairs in
    order, and an optional loop note (what sends control back, e.g. a rejected answer)."""

    name: str
    stages: tuple[tuple[str, str], ...]
    loop: str | None = None

    def __post_init__(self):
        _text("Phase.name", self.name)
        stages = tuple(tuple(s) for s in self.stages)
        if not stages or any(len(s) != 2 or not all(isinstance(x, str) for x in s) for s in stages):
            raise ValueError(f"Phase {self.name!r}: stages must be (name, detail) pairs of strings, "
                             f"got {self.stages!r}")
        object.__setattr__(self, "stages", stages)
        if self.loop is not None:
            _text(f"Phase {self.name!r} loop", self.loop)


@dataclass(frozen=True)
class HowItWorks:
    """What a method's "How it works" page says.

    ``summary``: two plain sentences, no jargon a first-year student would not know. ``phases``: the
    pipeline. ``mechanism``: the signature mechanism in a few words (what the gallery example shows).
    ``gallery``: the id of the method's gallery conversation, or None. ``gallery_params``: parameters the
    gallery example runs with over the demo's (e.g. MemR3 reads one chunk per retrieval there, so that
    its router has a gap to name). ``right_outcome``: what a correct memory does on that conversation,
    the standard the page holds the recorded run to (the checked census says whether it did)."""

    summary: str
    phases: tuple[Phase, ...]
    mechanism: str = ""
    gallery: str | None = None
    gallery_params: Mapping[str, Any] = field(default_factory=dict)
    right_outcome: str = ""

    def __post_init__(self):
        _text("HowItWorks.summary", self.summary)
        phases = tuple(self.phases)
        if not phases or not all(isinstance(p, Phase) for p in phases):
            raise ValueError("HowItWorks.phases must be a non-empty sequence of Phase")
        object.__setattr__(self, "phases", phases)
        if self.gallery is not None:
            _text("HowItWorks.gallery", self.gallery)
            _text("HowItWorks.right_outcome (a gallery example needs its right outcome)", self.right_outcome)
        if not isinstance(self.gallery_params, Mapping):
            raise ValueError("HowItWorks.gallery_params must be a mapping of parameter -> value")
        object.__setattr__(self, "gallery_params", dict(self.gallery_params))

    def rows(self) -> list[dict]:
        """The phases as ``widgets.pipeline.Pipeline`` rows (``phase``, ``stages``, ``loop``)."""
        return [{"phase": p.name, "stages": list(p.stages), "loop": p.loop} for p in self.phases]

    def text(self) -> str:
        """The pipeline in plain text (``build: a -> b``), for terminals and tests."""
        lines = []
        for p in self.phases:
            lines.append(f"{p.name}: " + " -> ".join(s[0] for s in p.stages))
            if p.loop:
                lines.append(f"  (loop) {p.loop}")
        return "\n".join(lines)


def phase(name: str, *stages: tuple[str, str], loop: str | None = None) -> Phase:
    """``phase("build", ("segment", "per session"), ...)``: a ``Phase`` written compactly."""
    return Phase(name, tuple(stages), loop)
