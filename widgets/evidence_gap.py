"""``EvidenceGapView``: MemR3's evidence and gaps, iteration by iteration.

MemR3 (router over retrieve / reflect / answer) keeps an evidence list and a gap list. Each
router step of the trace (``Step.kind == "router"``) is one iteration; this view shows what the
iteration added to the evidence, which gaps it closed (and which it opened), the router's action
and whether a guard forced it. ``Step.data`` keys are read through ``KEY_ALIASES`` so small
naming differences between trace writers do not matter.
"""
from __future__ import annotations

from typing import Any, Mapping

from .html import DisplaysWidget, box, esc, hits_html, table_html

#: canonical field -> keys accepted in ``Step.data``, first match wins
KEY_ALIASES: dict[str, tuple[str, ...]] = {
    "evidence": ("evidence", "evidences", "evidence_list"),
    "gaps": ("gaps", "gap", "missing"),
    "action": ("action", "route", "decision", "next_action"),
    "forced": ("forced", "forced_by", "guard"),
    "query": ("delta_query", "query_delta", "query", "new_query", "refined_query"),
    "reasoning": ("reasoning", "rationale", "thought"),
    "draft": ("draft_answer", "draft", "answer"),
}
ROUTER_KINDS = ("router",)


def field(data: Mapping[str, Any], name: str, default=None):
    """The value of canonical field ``name`` in ``data`` (through its aliases)."""
    for key in KEY_ALIASES[name]:
        if key in data and data[key] is not None:
            return data[key]
    return default


def as_items(value) -> list[str]:
    """Evidence/gap values as a list of strings: lists, newline-separated text, or dicts with text."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [line.strip(" -•\t") for line in value.splitlines() if line.strip(" -•\t")]
    if isinstance(value, Mapping):
        value = [value]
    out = []
    for v in value:
        if isinstance(v, Mapping):
            v = v.get("text") or v.get("content") or v.get("evidence") or v.get("gap") or str(v)
        v = str(v).strip()
        if v:
            out.append(v)
    return out


def forced_info(data: Mapping[str, Any]) -> tuple[bool, str]:
    """(was the action forced by a guard, which guard) from ``forced``/``forced_by``/``guard``."""
    by = data.get("forced_by") or data.get("guard") or ""
    forced = data.get("forced")
    if isinstance(forced, str):
        by, forced = by or forced, bool(forced)
    return bool(forced) or bool(by), str(by or "")


def _new(items: list[str], before: list[str]) -> list[str]:
    seen = set(before)
    return [x for x in items if x not in seen]


def iterations_of(answer) -> list[dict]:
    """One dict per router iteration, with set differences against the previous iteration.

    Hits of the steps that follow a router step (until the next one) belong to that iteration.
    Falls back to any step whose data carries evidence or gaps when there are no router steps.
    """
    steps = list(answer.steps)
    idx = [i for i, s in enumerate(steps) if s.kind in ROUTER_KINDS]
    if not idx:
        idx = [i for i, s in enumerate(steps)
               if field(s.data, "evidence") is not None or field(s.data, "gaps") is not None]
    out, prev_ev, prev_gaps = [], [], []
    for n, i in enumerate(idx):
        s, end = steps[i], (idx[n + 1] if n + 1 < len(idx) else len(steps))
        ev, gaps = as_items(field(s.data, "evidence")), as_items(field(s.data, "gaps"))
        forced, by = forced_info(s.data)
        out.append({
            "iteration": n + 1, "step_index": i, "title": s.title, "action": str(field(s.data, "action", "")),
            "forced": forced, "forced_by": by, "query": field(s.data, "query"), "reasoning": field(s.data, "reasoning"),
            "draft": field(s.data, "draft"), "evidence": ev, "gaps": gaps,
            "added": _new(ev, prev_ev), "dropped": _new(prev_ev, ev),
            "closed": _new(prev_gaps, gaps), "opened": _new(gaps, prev_gaps),
            "hits": [h for st in steps[i:end] for h in st.hits],
        })
        prev_ev, prev_gaps = ev, gaps
    return out


def iteration_html(it: dict) -> str:
    """One iteration: action (and guard), query, evidence with additions marked, gaps with closures struck."""
    forced = (f'<span class="wb-badge wb-forced">forced by guard: {esc(it["forced_by"] or "yes")}</span>'
              if it["forced"] else '<span class="wb-badge">router choice</span>')
    added, none = set(it["added"]), '<li class="wb-muted">(none)</li>'
    ev = "".join(f'<li class="{"wb-added" if e in added else ""}">{"+ " if e in added else ""}{esc(e)}</li>'
                 for e in it["evidence"]) or none
    dropped = "".join(f'<li class="wb-closed">{esc(e)}</li>' for e in it["dropped"])
    opened = set(it["opened"])
    gaps = "".join(f'<li class="{"wb-added" if g in opened else ""}">{esc(g)}</li>' for g in it["gaps"]) or none
    closed = "".join(f'<li class="wb-closed">closed: {esc(g)}</li>' for g in it["closed"])
    extra = "".join(f"<p><b>{label}:</b> {esc(it[k])}</p>" for k, label in
                    (("query", "query"), ("reasoning", "reasoning"), ("draft", "draft answer")) if it.get(k))
    title = it["title"] or ""
    if not title.lower().startswith(("iteration", "initial")):  # MemR3 titles already name their iteration
        title = f"Iteration {it['iteration']}: {title}"
    return box(f"<h4>{esc(title)}</h4>"
               f"<p><span class=\"wb-badge\">action: {esc(it['action'] or '?')}</span>{forced}</p>{extra}"
               f"<h5>Evidence ({len(it['evidence'])}, +{len(it['added'])})</h5><ul>{ev}{dropped}</ul>"
               f"<h5>Gaps ({len(it['gaps'])}, closed {len(it['closed'])})</h5>"
               f"<ul>{gaps}{closed}</ul>"
               f"<h5>Retrieved in this iteration ({len(it['hits'])})</h5>{hits_html(it['hits'])}")


def summary_html(iterations: list[dict]) -> str:
    rows = [{"#": it["iteration"], "action": it["action"], "forced": it["forced_by"] or ("yes" if it["forced"] else ""),
             "evidence": len(it["evidence"]), "added": len(it["added"]), "gaps": len(it["gaps"]),
             "closed": len(it["closed"]), "opened": len(it["opened"])} for it in iterations]
    return box(table_html(rows, ["#", "action", "forced", "evidence", "added", "gaps", "closed", "opened"]))


class EvidenceGapView(DisplaysWidget):
    """Slider over MemR3 iterations. State: ``iterations`` (list of dicts), ``index``, ``current_html``."""

    def __init__(self, answer):
        import ipywidgets as W

        self.answer = answer
        self.iterations = iterations_of(answer)
        self.index = 0
        self.current_html = ""
        last = max(len(self.iterations) - 1, 0)
        self.slider = W.IntSlider(value=0, min=0, max=last, description="iteration",
                                  disabled=len(self.iterations) < 2, continuous_update=False)
        self.slider.observe(lambda ch: self.goto(ch["new"]), names="value")
        self.body = W.HTML()
        head = W.HTML(summary_html(self.iterations) if self.iterations else
                      box("<p>No router iterations in this trace (is it a MemR3 answer?).</p>"))
        self.widget = W.VBox([head, self.slider, self.body])
        self.goto(0)

    def goto(self, i: int) -> "EvidenceGapView":
        self.index = max(0, min(int(i), max(len(self.iterations) - 1, 0)))
        self.current_html = iteration_html(self.iterations[self.index]) if self.iterations else ""
        if self.slider.value != self.index:
            self.slider.value = self.index
        self.body.value = self.current_html
        return self

    def __repr__(self) -> str:
        return f"EvidenceGapView({len(self.iterations)} iterations)"
