"""``TreeView``: H-Mem's temporal-semantic tree drawn as a tree, one node's detail beside it.

The tree is a plotly icicle (``widgets.tree_figure``): the level-4 year nodes on the left, each
level to the right of its parent, down to the level-1 leaves (one memory event each), every box
labelled with its level and time window and coloured by level, its height the number of events
under it; a caption above it says what the levels and colours mean and which time windows hold
several semantic clusters (H-Mem can start a second L4 node in the same year). Clicking a box in
the app, or picking a node in the list, shows everything about it, its source turns' text
included, and zooms the figure onto it.

Below, the same tree as a text outline (an accessible, copyable fallback): nested ``<details>``,
one line per node with its level and time window, its date range, how many children it has and the
start of its summary; opening a line shows the full summary, ``n_m`` and ``r_m``. H-Mem copies a
single child's text into a new parent instead of asking the LLM for a summary (``copy_of_child``);
a chain of such copies says the same thing on every level, so the outline draws it as one line
``L4 2023 copy → L3 2023-03 copy → L2 2023-W11 copy → L1 2023-03-14`` (each copy a dashed badge),
and the figure draws copies pale and hatched.

State and rendering are written once here (``TreeState``: no ipywidgets, no Panel); ``TreeView``
is the notebook shell and ``widgets.structure_views.TreePanel`` the app's.

    TreeView(hmem)                                    # a built HMem (uses hmem.structures())
    TreeView(run.structures("hmem", cid), conversation=run.conversation(cid))   # a saved run, no LLM
    TreeView(hmem).select("sum4")                     # shows that node
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

from .html import box, clip, esc, pre, short, source_ids_html, table_html, turn_index, turns_html, when_text
from .notebook_shell import NotebookShell
from .structures import conversation_of, structures_of
from .tree_figure import LEVEL_COLOURS, caption_html, children_of, dates_text, roots_of, tree_figure, window_text
from .view_state import Control, Part, ViewState

CSS = """<style>
.wb-tree details {margin: 1px 0 1px 14px; border-left: 1px solid #dee2e6; padding-left: 6px;}
.wb-tree > details {margin-left: 0;}
.wb-tree summary {cursor: pointer; line-height: 1.6;}
.wb-tree .wb-lv {display: inline-block; padding: 0 5px; border-radius: 6px; color: #fff; font-size: 12px;
  margin-right: 2px; white-space: nowrap;}
.wb-tree .wb-lv.wb-lv-copy {background: #fff !important; border: 1.5px dashed; font-weight: 600;}
.wb-tree .wb-copy {font-style: italic;}
.wb-tree .wb-arrow {color: #5c636a; margin: 0 2px;}
.wb-tree .wb-dates {color: #495057; font-size: 12px; margin: 0 4px; white-space: nowrap;}
.wb-tree .wb-kids {display: inline-block; padding: 0 5px; border-radius: 6px; background: #e9ecef; font-size: 12px;
  margin-right: 4px; white-space: nowrap;}
.wb-tree .wb-node-body {margin: 2px 0 4px 4px; font-size: 12px; color: #343a40;}
.wb-tree .wb-selected > summary {background: #fff3bf; outline: 2px solid #f08c00;}
.wb-tree .wb-scroll {max-height: 640px; overflow: auto;}
.wb-tree .wb-legend-line {color: #495057; margin: 2px 0 6px 0;}
</style>"""


# -- pure helpers ----------------------------------------------------------------------------------------------
def level_names(structures: Mapping) -> dict[int, str]:
    return {int(k): str(v) for k, v in (structures.get("levels") or {}).items()}


def _copy_note(r: Mapping) -> str:
    """H-Mem single-child parents whose text is their child's, copied (no LLM summary)."""
    return f"copy of child {r['copy_of_child']}" if r.get("copy_of_child") else ""


def node_label(r: Mapping, levels: Mapping[int, str] | None = None) -> str:
    """Plain-text option label (widgets render it as text), the time window as the boxes say it: "L2 · week of 13 Mar
    2023 · sum2 · ..." (the level's name where a node has no window)."""
    window = window_text(r.get("window", "")) or (levels or {}).get(r["level"], "")
    copy = f" ({_copy_note(r)})" if _copy_note(r) else ""
    return f"L{r['level']} · {window} · {r['id']}{copy} · {short(r.get('summary', ''), 60)}"


def ordered_nodes(rows) -> list[Mapping]:
    """Highest level first, then by start time and id (the order of the picker)."""
    return sorted(rows, key=lambda r: (-r["level"], str(r.get("start")), r["id"]))


def copy_chain(r: Mapping, nodes: Mapping[str, Mapping]) -> list[Mapping]:
    """``r`` and the nodes below it whose text it copies: a single-child parent marked
    ``copy_of_child`` says what its child says, so the chain down to the first node with its own
    text (or several children) is one line of the tree."""
    chain = [r]
    while True:
        kids = children_of(chain[-1], nodes)
        if len(kids) == 1 and chain[-1].get("copy_of_child") == kids[0]["id"] and kids[0]["id"] not in {
                n["id"] for n in chain}:
            chain.append(kids[0])
        else:
            return chain


def ancestors(node_id: str | None, nodes: Mapping[str, Mapping]) -> set[str]:
    """``node_id`` and every node above it."""
    out: set[str] = set()
    while node_id in nodes and node_id not in out:
        out.add(node_id)
        node_id = nodes[node_id].get("parent")
    return out


def tree_stats(nodes: Mapping[str, Mapping], levels: Mapping[int, str]) -> dict[str, Any]:
    per_level = Counter(r["level"] for r in nodes.values())
    return {"nodes": len(nodes), "roots": len(roots_of(nodes)),
            "per_level": {f"L{lv} {levels.get(lv, '')}".strip(): n for lv, n in sorted(per_level.items(),
                                                                                       reverse=True)},
            "copies": sum(1 for r in nodes.values() if r.get("copy_of_child"))}


def _level_badge(r: Mapping, levels: Mapping[int, str]) -> str:
    """``L3 Mar 2023`` (the window in words) in the level's colour; a copy is outlined (dashed) and says "copy"."""
    lv = int(r["level"])
    colour = LEVEL_COLOURS[(lv - 1) % len(LEVEL_COLOURS)]
    window = window_text(r.get("window", ""))
    title = f"{levels.get(lv, 'level')} window {window} · {r['id']}"
    if r.get("copy_of_child"):
        return (f"<span class='wb-lv wb-lv-copy' style='border-color:{colour};color:{colour}' "
                f"title='{esc(title + ' · ' + _copy_note(r))}: no LLM summary'>L{lv} {esc(window)} "
                "<span class='wb-copy'>copy</span></span>")
    return f"<span class='wb-lv' style='background:{colour}' title='{esc(title)}'>L{lv} {esc(window)}</span>"


def _marks(r: Mapping) -> str:
    """What makes a node's text hard to read, flagged beside it (``readability.flags_html``: another writing
    system's letters, which a page without that font draws as boxes, a code fence, raw JSON, a loop; for a summary
    the model wrote, also ``summary_flags_html``'s "cut off"): the text is the model's and stays as it is (usability
    review: an H-Mem summary ending in two boxes, unexplained). An event or a copy of one is not read as cut off (an
    event need not end with a full stop)."""
    from .readability import flags_html, summary_flags_html

    text = r.get("summary")
    if int(r.get("level") or 1) >= 2 and not r.get("copy_of_child"):
        return summary_flags_html(text)
    return flags_html(text, than="the conversation's")


def flagged_line(nodes: Mapping[str, Mapping]) -> str:
    """One line over the tree saying how many of the summaries the model wrote (parents that are not a copy) are
    flagged, by flag ("⚠ Of 103 summaries the model wrote: 38 cut off, 25 repeat themselves, 7 in another script"):
    the census's counts as a reader meets them (``readability.summary_flags_html``); "" when none is flagged."""
    from .readability import summary_marks

    written = [r for r in nodes.values() if int(r.get("level") or 1) >= 2 and not r.get("copy_of_child")]
    plural = {"repeats itself": "repeat themselves", "code fence": "hold a code fence", "raw JSON": "are raw JSON"}
    counts = Counter(flag for r in written for flag in {"in another script" if f.endswith(" script") else
                                                         plural.get(f, f) for f, _ in summary_marks(r.get("summary"))})
    if not counts:
        return ""
    words = ", ".join(f"{n} {flag}" for flag, n in counts.most_common())
    return (f"<p class='wb-legend-line'>⚠ Of the {len(written)} summaries the model wrote: {esc(words)} (flagged "
            "beside each; the flags read a summary's form, not whether it is true).</p>")


def _node_body(r: Mapping, chain: list[Mapping]) -> str:
    ids = list(r.get("source_ids") or [])
    # H-Mem's consolidation counters, where the node has them (a plugin's ``tree`` kind has none)
    counters = (f"n_m (times consolidated) {esc(r.get('n_m', 0))} · r_m (last consolidated) "
                f"{esc(when_text(r.get('r_m')))} · " if "n_m" in r or "r_m" in r else "")
    facts = f"{counters}{len(ids)} source turns: {source_ids_html(ids, limit=12)}"
    copies = ""
    if len(chain) > 1:
        copies = ("<br>" + esc(", ".join(f"{c['id']} (L{c['level']})" for c in chain[:-1]))
                  + esc(f" copy the text of {r['id']} (L{r['level']}): single-child parents, no LLM summary"))
    return (f"<div class='wb-node-body'>{clip(r.get('summary', ''), limit=1500)}{_marks(r)}"
            f"<br>{facts}{copies}</div>")


def _node_html(r: Mapping, nodes: Mapping[str, Mapping], levels: Mapping[int, str], *, open_ids: set[str],
               selected: str | None, seen: set[str]) -> str:
    chain = copy_chain(r, nodes)
    last = chain[-1]
    seen.update(c["id"] for c in chain)
    kids = [k for k in children_of(last, nodes) if k["id"] not in seen]
    badges = "<span class='wb-arrow'>→</span>".join(_level_badge(c, levels) for c in chain)
    count = (f"<span class='wb-kids'>{len(kids)} children</span>" if len(kids) > 1 else
             "<span class='wb-kids'>1 child</span>" if kids else
             "<span class='wb-kids'>event</span>" if int(last["level"]) == 1 else "<span class='wb-kids'>leaf</span>")
    ids_in_line = {c["id"] for c in chain}
    cls = " class='wb-selected'" if selected in ids_in_line else ""
    is_open = " open" if ids_in_line & open_ids else ""
    inner = "".join(_node_html(k, nodes, levels, open_ids=open_ids, selected=selected, seen=seen) for k in kids)
    return (f"<details{cls}{is_open} data-node='{esc(last['id'])}'><summary>{badges}"
            f"<span class='wb-dates'>{esc(dates_text(last))}</span>{count}{esc(short(last.get('summary', ''), 110))}"
            f"</summary>{_node_body(last, chain)}{inner}</details>")


def tree_html(nodes: Mapping[str, Mapping], levels: Mapping[int, str] | None = None, *,
              selected: str | None = None) -> str:
    """The whole tree as nested ``<details>`` (escaped), roots in time order; the selected node's
    line and the lines above it are open, its line marked. Empty trees say so."""
    levels = dict(levels or {})
    if not nodes:
        return box("<p class='wb-muted'>The tree is empty.</p>")
    s = tree_stats(nodes, levels)
    per_level = " · ".join(f"{esc(k)}: {n}" for k, n in s["per_level"].items())
    open_ids = ancestors(selected, nodes)
    if s["roots"] <= 3:
        open_ids |= {r["id"] for r in roots_of(nodes)}
    seen: set[str] = set()
    body = "".join(_node_html(r, nodes, levels, open_ids=open_ids, selected=selected, seen=seen)
                   for r in roots_of(nodes))
    lost = [n for n in nodes if n not in seen]  # nodes in a parent cycle: listed, never dropped
    if lost:
        body += f"<p class='wb-muted'>Not reachable from a root: {esc(' '.join(lost))}</p>"
    return box(f"{CSS}<div class='wb-tree'><p><b>Text outline</b> · <b>{s['nodes']} nodes</b>, {s['roots']} roots · "
               f"{per_level} · {s['copies']} single-child copies</p>{flagged_line(nodes)}"
               "<p class='wb-legend-line'>The same tree as text: one line per node, oldest first; click a line to "
               "open it. A dashed "
               "badge marked <i>copy</i> is a single-child parent that copies its child's text (no LLM summary): "
               "a chain of them is drawn on one line, → from parent to child.</p>"
               f"<div class='wb-scroll'>{body}</div></div>")


def node_detail_html(node_id: str, nodes: Mapping[str, Mapping], *, turns: Mapping | None = None,
                     levels: Mapping[int, str] | None = None) -> str:
    """Everything about one node, escaped: summary, interval, n_m, r_m, parent, children, source turns."""
    r = nodes[node_id]
    parent = nodes.get(r.get("parent") or "")
    kids = [nodes[c] for c in r.get("children") or [] if c in nodes]
    facts = {"level": f"L{r['level']} ({(levels or {}).get(r['level'], '?')} window "
                      f"{window_text(r.get('window', ''))})",
             "interval": f"{when_text(r.get('start'))} → {when_text(r.get('end'))}",
             "n_m (times consolidated)": r.get("n_m", 0), "r_m (last consolidated)": when_text(r.get("r_m")),
             "fragments": " ".join(r.get("fragment_ids") or []),
             "parent": f"{parent['id']}: {short(parent.get('summary', ''), 120)}" if parent else "(root)"}
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts.items())
    child_rows = [{"id": c["id"], "level": c["level"], "window": window_text(c.get("window", "")),
                   "summary": c.get("summary", "")}
                  for c in kids]
    children = (table_html(child_rows, ["id", "level", "window", "summary"]) if kids
                else '<p class="wb-muted">(a leaf: one memory event)</p>')
    ids = list(r.get("source_ids") or [])
    shown = turns_html(ids, turns or {})
    return box(f"<h4>{esc(node_id)} <span class='wb-badge'>L{esc(r['level'])}</span></h4>"
               f"<h5>Summary{esc(' (' + _copy_note(r) + ', not an LLM summary)') if _copy_note(r) else ''}"
               f"{_marks(r)}</h5>"
               f"<div class='wb-summary'>{pre(r.get('summary', ''))}</div><table>{rows}</table>"
               f"<h5>Children ({len(kids)})</h5>{children}"
               f"<h5>Source turns ({len(ids)})</h5><p>{source_ids_html(ids)}</p>"
               f"{shown or '<p class=wb-muted>(turn texts not available)</p>' if ids else ''}")


def _num(x) -> float | None:
    """A number from a saved run's record (untrusted: anything else reads as missing)."""
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and x == x else None


def _nums(xs) -> list[float | None]:
    return [_num(x) for x in xs] if isinstance(xs, (list, tuple)) else []


def _share(x) -> str:
    return "–" if _num(x) is None else f"{_num(x):.2f}"


def _realised(nodes: Mapping[str, Mapping]) -> tuple[list[int], list[float | None]]:
    counts = Counter(int(r["level"]) for r in nodes.values())
    top = max(counts) if counts else 0
    per = [counts.get(lv, 0) for lv in range(1, top + 1)]
    return per, [round(1 - per[i + 1] / per[i], 4) if per[i] else None for i in range(len(per) - 1)]


def join_share_html(structures: Mapping, nodes: Mapping[str, Mapping]) -> str:
    """Per level, the share of this build's level-l nodes that joined an existing parent (1 - N_{l+1}/N_l) beside
    the paper's (Table 7) and the alpha that decided it (the paper's beside it), with the record of the mapping
    when the alphas are the paper's mapped onto this embedder (issue #63). A run saved before the method recorded
    them shows its own shares only."""
    rec = structures.get("join_shares") if isinstance(structures.get("join_shares"), Mapping) else None
    per, shares = _realised(nodes)
    if len(per) < 2:
        return ""
    paper = _nums(rec.get("paper_table7")) if rec else []
    alphas = _nums(rec.get("alphas")) if rec else []
    paper_alphas = _nums(rec.get("paper_alphas")) if rec else []

    def at(xs, i):
        return xs[i] if i < len(xs) else None

    rows = []
    for i, share in enumerate(shares):
        target = at(paper, i)
        gap = f"{share - target:+.2f}" if share is not None and target is not None else "–"
        alpha = at(alphas, i)
        alpha_text = "–" if alpha is None else f"{alpha:.3g}"
        if at(paper_alphas, i) is not None and alpha is not None and abs(alpha - at(paper_alphas, i)) > 1e-9:
            alpha_text += f" (paper {at(paper_alphas, i):.3g})"
        rows.append(f"<tr><th>L{i + 1} → L{i + 2}</th><td>{per[i]} → {per[i + 1]}</td>"
                    f"<td><b>{_share(share)}</b></td><td>{_share(target)}</td><td>{esc(gap)}</td>"
                    f"<td>α<sub>{i + 2}</sub> = {esc(alpha_text)}</td></tr>")
    head = ("<tr><th>level</th><th>nodes</th><th>join share, this build</th><th>paper (Table 7)</th><th>gap</th>"
            "<th>threshold</th></tr>")
    mapping = rec.get("mapping") if rec else None
    if isinstance(mapping, Mapping):
        fit = " / ".join(_share(x) for x in _nums(mapping.get("fit_join_share")))
        names = [str(c) for c in mapping.get("fitted_on") or [] if isinstance(c, str)]
        held = [str(c) for c in mapping.get("held_out") or [] if isinstance(c, str)]
        note = (f"α mapped from the paper's {esc(' / '.join(_share(a) for a in _nums(mapping.get('paper_alphas'))))} "
                f"({esc(mapping.get('paper_embedder', '?'))}) to {esc(mapping.get('embedder', '?'))} by matching Table "
                f"7's join shares; the fit reached {esc(fit)} on {esc(', '.join(names))}"
                + (f" (held out: {esc(', '.join(held))})" if held else "") + ".")
    elif rec:
        note = (f"α as set, not mapped onto {esc(rec.get('embedder') or 'this embedder')} (the paper's are for "
                "Qwen3-Embedding-4B).")
    else:
        note = "The paper's figures and thresholds were not recorded with this run."
    return (f"<div class='wb-join-shares'><p><b>Join shares per level</b>: the share of a level's nodes that joined "
            f"an existing parent instead of starting one, 1 − N<sub>l+1</sub>/N<sub>l</sub>.</p>"
            f"<table style='border-spacing: 14px 2px'>{head}{''.join(rows)}</table>"
            f"<p class='wb-muted'>{note}</p></div>")


NO_SELECTION = box("<p class='wb-muted'>Pick a node above to see its whole summary, children and source "
                   "turns.</p>")


# -- state -----------------------------------------------------------------------------------------------------
class TreeState(ViewState):
    """The tree of one H-Mem memory and the selected node. ``rows``, ``nodes`` (id -> row), ``levels``,
    ``turns``, ``selected``, ``caption_html``, ``figure`` (the icicle), ``detail_html``, ``tree_html``
    (the text outline). A click on a box of the figure picks its node (``Part.select``)."""

    parts = (Part("caption"), Part("plot", "figure", select="node_select"), Part("detail"), Part("tree"))
    layout = ("caption", "node_select", "plot", ("detail", "tree"))

    def __init__(self, structures: Mapping, conversation=None):
        super().__init__()
        self.rows = list(structures.get("tree") or [])
        self.nodes = {r["id"]: r for r in self.rows}
        self.levels = level_names(structures)
        self.turns = turn_index(conversation)
        self.caption_html = caption_html(self.nodes, self.levels) + join_share_html(structures, self.nodes)
        options = (("(select a node)", ""),) + tuple((node_label(r, self.levels), r["id"])
                                                       for r in ordered_nodes(self.rows))
        self.controls = (Control("node_select", "select", "tree node", options=options),)
        self.select(None)

    def select(self, node_id: str | None) -> None:
        """Show node ``node_id`` (None or "" clears the selection); unknown ids raise ``KeyError``."""
        node_id = node_id or None
        if node_id is not None and node_id not in self.nodes:
            raise KeyError(f"no tree node {node_id!r}")
        self.selected = node_id
        self.values["node_select"] = node_id or ""
        self.detail_html = (NO_SELECTION if node_id is None else
                            node_detail_html(node_id, self.nodes, turns=self.turns, levels=self.levels))
        self.tree_html = tree_html(self.nodes, self.levels, selected=node_id)
        self.figure = tree_figure(self.nodes, self.levels, selected=node_id)

    def apply(self, name: str, value: Any) -> None:
        self.select(value)

    def part(self, name: str) -> str:
        return {"caption": self.caption_html, "plot": self.figure, "tree": self.tree_html,
                "detail": self.detail_html}[name]


# -- notebook shell --------------------------------------------------------------------------------------------
class TreeView(NotebookShell):
    """The tree in a notebook (``TreeState`` bound to ipywidgets)."""

    def __init__(self, method_or_structures: Any, *, conversation=None, select: str | None = None):
        self.structures = structures_of(method_or_structures)
        self.conversation = conversation_of(method_or_structures, conversation)
        super().__init__(TreeState(self.structures, self.conversation))
        if select is not None:
            self.select(select)

    def select(self, node_id: str | None) -> "TreeView":
        """Show node ``node_id`` (None or "" clears); unknown ids raise ``KeyError``."""
        self.state.select(node_id)
        return self.refresh()

    def __repr__(self) -> str:
        return f"TreeView({len(self.state.rows)} nodes, selected={self.state.selected!r})"
