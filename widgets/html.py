"""HTML rendering helpers shared by the ipywidgets views and the Panel app.

Every piece of conversation, memory or model text goes through ``esc`` before it becomes HTML:
a turn that says ``<script>...</script>`` is shown as that text, never run. The functions here are
pure (strings in, HTML strings out) so the notebook widgets and the app render a step, a hit list
or a diff identically, and tests can assert on the markup.
"""
from __future__ import annotations

import difflib
import html
import json
import re
from typing import Any, Iterable, Mapping, Sequence

from workbench.words import counted, when_words

CSS = """<style>
.wb-box {font-family: system-ui, sans-serif; font-size: 13px; line-height: 1.35;}
.wb-box table {border-collapse: collapse; margin: 4px 0;}
.wb-box th, .wb-box td {border: 1px solid #ddd; padding: 2px 6px; vertical-align: top; text-align: left;}
.wb-box th {background: #f4f4f4;}
.wb-box pre {white-space: pre-wrap; word-break: break-word; margin: 2px 0; max-height: 24em; overflow: auto;}
.wb-gold {background: #fff1a8; font-weight: 600;}
.wb-date {color: #5c4400; font-weight: 400; white-space: nowrap;}
.wb-refresh {background: #ffe3e3;}
.wb-badge {display: inline-block; padding: 0 6px; border-radius: 8px; background: #e8eefc; margin-right: 4px;}
.wb-forced {background: #ffd8a8;}
.wb-added {color: #2f7d32;}
.wb-closed {color: #5c636a; text-decoration: line-through;}
.wb-muted {color: #5c636a;}
.wb-box del {background: #ffd6d6; text-decoration: line-through;}
.wb-box ins {background: #d3f9d8; text-decoration: none;}
.wb-box a.wb-link {color: #1c4fd1; text-decoration: underline; cursor: pointer;}
.wb-box a.wb-link:focus {outline: 2px solid #1c4fd1; outline-offset: 1px;}
.wb-box a:focus-visible, .wb-box summary:focus-visible, .wb-box button:focus-visible,
.wb-box [tabindex]:focus-visible {outline: 3px solid #1c4fd1; outline-offset: 2px; border-radius: 2px;}
.wb-box td.wb-id, .wb-box th.wb-id {white-space: nowrap;}
.wb-progress {background: #e7f1ff; border-left: 3px solid #1c4fd1; color: #1b2a4a;}
.wb-spin {display: inline-block; width: 10px; height: 10px; margin-right: 6px; vertical-align: -1px;
  border: 2px solid #a5c0f5; border-top-color: #1c4fd1; border-radius: 50%; animation: wb-spin 0.9s linear infinite;}
@keyframes wb-spin {to {transform: rotate(360deg);}}
@media (prefers-reduced-motion: reduce) {.wb-spin {animation: none;}}
.wb-box td.wb-before {background: #fff5f5;}
.wb-box td.wb-after {background: #f4fcf5;}
</style>"""


#: the focus ring of every control, Panel's widgets and Bokeh's tab bar included (their own is a faint 1-px
#: dotted outline): ``widgets.tab_keys.TabKeys`` adopts it into each component's shadow root. Keyboard focus
#: only (``:focus-visible``); the tab headers clip anything outside them, so their ring is drawn inside.
FOCUS_CSS = """
a:focus-visible, summary:focus-visible, button:focus-visible, select:focus-visible, input:focus-visible,
textarea:focus-visible, [tabindex]:focus-visible, .bk-btn:focus-visible {
  outline: 3px solid #1c4fd1 !important; outline-offset: 2px !important;}
.bk-tab:focus-visible {outline: 3px solid #1c4fd1 !important; outline-offset: -3px !important;}
"""


#: the Content-Security-Policy of every exported page (a trace, a question): opened from disk with no server, it
#: may load nothing (no script, image, font, frame or request: a URL inside run text is never fetched), submit no
#: form, set no base URL that relative links would follow, and navigate nowhere where the browser enforces
#: ``navigate-to`` (Chromium and Firefox ignore that directive; a ``<meta http-equiv="refresh">`` that CSP cannot
#: stop never comes from run text, which is escaped like everything else). Only the page's inline styles apply.
EXPORT_CSP = ("default-src 'none'; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'; "
              "navigate-to 'none'")


def export_head(title: str, styles: str = "") -> str:
    """The head of an exported page: its charset, its CSP (``EXPORT_CSP``, first, before any content) and its
    title (escaped: it comes from the run), then ``styles`` (the page's own ``<style>``)."""
    return (f"<head><meta charset='utf-8'><meta http-equiv='Content-Security-Policy' content=\"{EXPORT_CSP}\">"
            f"<title>{esc(title)}</title>{styles}</head>")


def esc(value: Any) -> str:
    """HTML-escape any value (``None`` -> empty). Quotes are escaped too, so it is safe in attributes."""
    if value is None:
        return ""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def short(text: Any, n: int = 160) -> str:
    """Plain-text truncation (escape the result separately)."""
    s = "" if text is None else str(text)
    return s if len(s) <= n else s[: n - 1] + "…"


#: characters of a text shown before the rest is folded behind an expand control
TEXT_LIMIT = 4000


def _more(rest: str, total: int, tag: str) -> str:
    return (f'<details class="wb-more"><summary>show the rest ({len(rest):,} more of {total:,} characters)</summary>'
            f"<{tag}>{esc(rest)}</{tag}></details>")


#: a text at most this much longer than its limit is shown whole (folding "Biscui…" to hide 2 characters helps
#: nobody): a share of the limit, at most 40 characters (a 160-character answer may run to 200, not to 200 + 40 %)
FOLD_SHARE, FOLD_SLACK = 0.25, 40


def fold_slack(limit: int) -> int:
    """How many characters past ``limit`` a text may run and still be shown whole."""
    return min(FOLD_SLACK, int(limit * FOLD_SHARE))


def pre(text: Any, *, limit: int = TEXT_LIMIT) -> str:
    """Escaped preformatted text; past ``limit`` characters the rest is folded in a ``<details>``
    (one 216 KB turn must not make a page tens of thousands of pixels tall)."""
    s = "" if text is None else (text if isinstance(text, str) else str(text))
    if len(s) <= limit + fold_slack(limit):
        return f"<pre>{esc(s)}</pre>"
    return f"<pre>{esc(s[:limit])}…</pre>" + _more(s[limit:], len(s), "pre")


def clip(text: Any, *, limit: int = TEXT_LIMIT) -> str:
    """Escaped inline text, the part past ``limit`` characters folded in a ``<details>`` (a text less than
    at most ``fold_slack(limit)`` longer than the limit is shown whole)."""
    s = "" if text is None else (text if isinstance(text, str) else str(text))
    if len(s) <= limit + fold_slack(limit):
        return esc(s)
    return esc(s[:limit]) + "…" + _more(s[limit:], len(s), "span")


def box(inner: str) -> str:
    """Wrap rendered HTML with the shared stylesheet."""
    return f'{CSS}<div class="wb-box">{inner}</div>'


def json_html(value: Any, *, limit: int = 20000) -> str:
    """Pretty JSON of any value, escaped, truncated to ``limit`` characters."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit} more characters)"
    return pre(text)


def table_html(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *, row_class=None,
               raw: Iterable[str] = (), ids: Iterable[str] = (), headers: Mapping[str, str] | None = None) -> str:
    """A generic escaped table. ``raw`` names columns whose values are already-rendered HTML
    (built by helpers here from escaped text); ``row_class(row)`` may return a CSS class; ``ids`` names
    columns of ids, which never wrap (``chunk-10`` is not broken into ``chunk-`` / ``10``); ``headers`` gives a
    column its heading in words where the row key is a field name (``{"f1": "token F1"}``)."""
    raw, ids, headers = set(raw), set(ids), headers or {}

    def td(c, v):
        return f'<td class="wb-id">{v}</td>' if c in ids else f"<td>{v}</td>"

    head = "".join(f'<th class="wb-id">{esc(headers.get(c, c))}</th>' if c in ids
                   else f"<th>{esc(headers.get(c, c))}</th>" for c in columns)
    body = []
    for r in rows:
        cls = row_class(r) if row_class else ""
        cells = "".join(td(c, r.get(c, '') if c in raw else esc(r.get(c, ''))) for c in columns)
        body.append(f'<tr class="{esc(cls)}">{cells}</tr>' if cls else f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def when_text(value) -> str:
    """An ISO datetime with its time of day ("14 Mar 2023, 19:40"; ``workbench.words.when_words``, the one
    style of every view); midnight is left out; anything else unchanged."""
    return when_words(value)


def session_when(session) -> str:
    """When a session took place, as the dataset writes it (else formatted from its datetime; "" when undated)."""
    return session.date_text or (when_words(session.date_time) if session.date_time else "")


def session_dates(conversation) -> dict[str, str]:
    """Turn id -> its session's ``session_when``, for a conversation (empty when none is given)."""
    out: dict[str, str] = {}
    for s in getattr(conversation, "sessions", None) or ():
        when = session_when(s)
        out.update({t.id: when for t in s.turns if when})
    return out


def turn_index(conversation) -> dict:
    """``turn id -> Turn`` for a Conversation (empty when none is given)."""
    if conversation is None:
        return {}
    return {t.id: t for t in conversation.turns}


def method_title_html(name: Any, *, link: bool = False) -> str:
    """A run's method as people read it (``display_name``: "AMA (paper judge)"), followed, when that differs,
    by the run's own name in small grey code (``ama[paper-judge]``): what the command line, result files and
    notebooks call it, so a researcher can still find it. ``link`` (the app): the title opens the method's How
    it works page."""
    from workbench.methods import display_name

    shown = display_name(str(name))
    head = link_html(shown, "method", str(name), title=f"how {shown} works") if link else esc(shown)
    if shown == str(name):
        return head
    return f"{head} <code style='font-size:0.75em;color:#777;font-weight:normal'>{esc(name)}</code>"


def link_html(label: Any, *target: str, title: str = "") -> str:
    """An in-app link: ``target`` is ``("turn", turn_id)``, ``("unit", method, unit_id)`` or
    ``("question", qa_id, method)``. The target travels as JSON in ``data-link`` (escaped, so an id
    with quotes or markup stays data); the app's link-aware pane turns a click on it into navigation.
    Where no such pane listens (a notebook), callers render plain ids instead (``links=False``)."""
    tip = f' title="{esc(title)}"' if title else ""
    return (f'<a class="wb-link" role="link" tabindex="0" data-link="{esc(json.dumps(list(target)))}"{tip}>'
            f"{esc(label)}</a>")


def source_ids_html(ids: Iterable[str], gold: Iterable[str] = (), *, limit: int | None = None,
                    links: bool = False) -> str:
    """Source ids, gold evidence marked. With ``limit``, at most that many ids plus every gold one are
    listed and the rest counted ("+41 more"), so a Full-Context row does not list all its turns.
    ``links``: each id is a link to that turn's lifecycle (``link_html``)."""
    gold, ids = set(gold), list(ids)
    shown = ids if limit is None or len(ids) <= limit else [
        i for n, i in enumerate(ids) if n < limit or i in gold]

    def one(i):
        text = link_html(i, "turn", i, title="this turn's lifecycle") if links else esc(i)
        return f'<span class="wb-gold" title="gold evidence">{text}</span>' if i in gold else text

    out = " ".join(one(i) for i in shown)
    rest = len(ids) - len(shown)
    return out + (f' <span class="wb-muted">(+{rest} more)</span>' if rest else "")


def turns_html(ids: Iterable[str], turns: Mapping[str, Any], gold: Iterable[str] = (),
               dates: Mapping[str, str] | None = None) -> str:
    """The text of source turns (escaped), gold evidence marked with when its session took place (``dates``:
    ``session_dates``; without them, the turn's own time)."""
    gold = set(gold)
    out = []
    for i in ids:
        t = turns.get(i)
        if t is None:
            continue
        cls = ' class="wb-gold"' if i in gold else ""
        when = None
        if i in gold:  # gold evidence: when it was said (temporal questions)
            t_time = getattr(t, "time", None)
            when = (dates or {}).get(i) or (when_words(t_time) if t_time else None)
        date = f' <small class="wb-date">({esc(when)})</small>' if when else ""
        out.append(f"<div{cls}><b>{esc(i)}</b>{date} {esc(t.speaker)}: {clip(t.content)}</div>")
    return "".join(out)


def _hit_get(h, name, default=None):
    return h.get(name, default) if isinstance(h, Mapping) else getattr(h, name, default)


def hits_html(hits: Sequence[Any], *, conversation=None, gold_evidence: Iterable[str] = ()) -> str:
    """Retrieved hits with scores, kind, text and source turn ids; gold evidence highlighted."""
    if not hits:
        return '<p class="wb-muted">(no hits in this step)</p>'
    gold, turns, dates = set(gold_evidence or ()), turn_index(conversation), session_dates(conversation)
    rows = []
    for rank, h in enumerate(hits, start=1):
        ids = tuple(_hit_get(h, "source_ids", ()) or ())
        cls = ' class="wb-gold"' if gold & set(ids) else ""
        src = source_ids_html(ids, gold)
        text = clip(_hit_get(h, "text", ""))
        shown = turns_html(ids, turns, gold, dates)
        if shown:
            text += f"<details><summary>source turns</summary>{shown}</details>"
        rows.append(f"<tr{cls}><td>{rank}</td><td>{esc(_hit_get(h, 'unit_id', ''))}</td>"
                    f"<td>{float(_hit_get(h, 'score', 0.0) or 0.0):.3f}</td><td>{esc(_hit_get(h, 'kind', ''))}</td>"
                    f"<td>{text}</td><td>{src}</td></tr>")
    head = "<tr><th>#</th><th>unit</th><th>score</th><th>kind</th><th>text</th><th>source turns</th></tr>"
    return f"<table class=\"wb-hits\">{head}{''.join(rows)}</table>"


def message_text(messages: Sequence[Any]) -> str:
    """An LLM call's messages as plain text (role headers when there are several)."""
    parts = []
    for m in messages or ():
        if isinstance(m, Mapping):
            parts.append((m.get("role", ""), str(m.get("content", ""))))
        else:
            parts.append(("", str(m)))
    if len(parts) == 1:
        return parts[0][1]
    return "\n\n".join(f"[{r}]\n{c}" for r, c in parts)


def call_title(call) -> str:
    tokens = call.prompt_tokens + call.completion_tokens
    flags = " · replayed" if call.cached else ""  # the waterfall's word: from a recording, not a live call
    flags += " · ERROR" if call.error else ""
    return f"{call.role or '(no role)'} · {tokens:,} tok{flags}"


def call_html(call) -> str:
    """One LLMCall: role, model, prompt, response, tokens, cached, error — all escaped."""
    err = f"<p><b>error:</b> {esc(call.error)}</p>" if call.error else ""
    return (f"<div class=\"wb-call\"><span class=\"wb-badge\">{esc(call.role)}</span>"
            f"<span class=\"wb-badge\">{esc(call.model)}</span>"
            f"<span class=\"wb-badge\">prompt {esc(call.prompt_tokens)} + completion {esc(call.completion_tokens)}"
            " tok</span>"
            f"<span class=\"wb-badge\">{'replayed' if call.cached else 'live'}</span>{err}"
            f"<div><b>prompt</b>{pre(message_text(call.messages))}</div>"
            f"<div><b>response</b>{pre(call.response)}</div></div>")


def calls_html(calls: Sequence[Any]) -> str:
    """All calls of a step as collapsible sections (the app's stand-in for an Accordion)."""
    if not calls:
        return '<p class="wb-muted">(no LLM calls in this step)</p>'
    return "".join(f"<details><summary>{esc(call_title(c))}</summary>{call_html(c)}</details>" for c in calls)


def running_tokens(steps: Sequence[Any]) -> list[int]:
    """Cumulative tokens (prompt + completion) after each step."""
    total, out = 0, []
    for s in steps:
        total += sum(c.prompt_tokens + c.completion_tokens for c in s.calls)
        out.append(total)
    return out


def answer_html(answer) -> str:
    """The question, the answer and its totals."""
    err = f"<p><b>error:</b> {esc(answer.error)}</p>" if getattr(answer, "error", None) else ""
    return (f"<div><b>Q:</b> {clip(answer.question)}<br><b>A:</b> {clip(answer.text)}"
            f"<br><small>{method_title_html(answer.method)} · {counted(len(answer.steps), 'step')} · "
            f"{counted(len(answer.context), 'context unit')} · {counted(answer.usage.total_tokens, 'token')} in "
            f"{counted(answer.usage.calls, 'call')}</small>{err}</div>")


_WORDS = re.compile(r"\s+|[^\s]+")
DIFF_WORDS_LIMIT = 20_000  # words and spaces of before + after diffed word by word


def diff_html(before: str | None, after: str | None) -> str:
    """Word-level before/after diff (difflib), each fragment escaped; deletions in <del>, insertions in <ins>."""
    a, b = _WORDS.findall(before or ""), _WORDS.findall(after or "")
    if len(a) + len(b) > DIFF_WORDS_LIMIT:  # difflib is quadratic: very long texts are shown whole, folded
        return f"<del>{clip(before)}</del> <ins>{clip(after)}</ins>"
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(esc("".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(f"<del>{esc(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{esc(''.join(b[j1:j2]))}</ins>")
    return "".join(out)


def before_after_html(before: str | None, after: str | None) -> tuple[str, str]:
    """The two sides of a change for side-by-side cells: the old text with what was removed marked
    (``<del>``) and the new text with what was added marked (``<ins>``), each escaped. A side that
    does not exist (an ADD has no before, a DELETE no after) is a muted dash."""
    if not before or not after:
        return (clip(before) if before else '<span class="wb-muted">–</span>',
                clip(after) if after else '<span class="wb-muted">–</span>')
    a, b = _WORDS.findall(before), _WORDS.findall(after)
    if len(a) + len(b) > DIFF_WORDS_LIMIT:
        return clip(before), clip(after)
    left, right = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        old, new = "".join(a[i1:i2]), "".join(b[j1:j2])
        if op == "equal":
            left.append(esc(old))
            right.append(esc(new))
            continue
        if old:
            left.append(f"<del>{esc(old)}</del>")
        if new:
            right.append(f"<ins>{esc(new)}</ins>")
    return "".join(left), "".join(right)


def plotly_bundle(fig) -> dict:
    """A Jupyter display bundle for a plotly figure (for ipywidgets.Output without a kernel-side
    renderer): the plotly mimetype (JupyterLab, Notebook 7 and VS Code draw it) plus plain text.

    There is deliberately no ``text/html`` copy of the figure: plotly's HTML export is a loader script
    that fetches plotly.js from a CDN, which filled the saved notebooks with script noise and needs a
    network the workbench does not assume. A frontend without the plotly renderer shows the text."""
    spec = json.loads(fig.to_json())
    spec["config"] = {"displaylogo": False}
    return {"application/vnd.plotly.v1+json": spec,
            "text/plain": f"<plotly figure: {len(fig.data)} traces>"}


def show_figure(output, fig) -> None:
    """Replace an ipywidgets.Output's content with a figure."""
    output.outputs = ({"output_type": "display_data", "data": plotly_bundle(fig), "metadata": {}},)


class DisplaysWidget:
    """Jupyter display for the view classes: each owns an ipywidgets container in ``self.widget``.

    A view that can render itself as static HTML (``static_html``) is displayed with that HTML beside the live
    widget in one output: JupyterLab with a kernel shows the widget, while a page with no live widgets (a notebook
    opened untrusted, nbviewer, a code host) shows the HTML instead of a ``VBox(...)`` placeholder."""

    def static_html(self) -> str | None:
        """The view as it stands, as escaped HTML with its own styles; None when the view has no static form."""
        return None

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        html = self.static_html()
        if html and isinstance(bundle, dict):
            # the plain-text form (a terminal, a text-only page) says what this is, not ``VBox(children=...``
            bundle = {**bundle, "text/html": html,
                      "text/plain": f"{type(self).__name__}: a live widget; run the cell to use it"}
        return bundle

    def _ipython_display_(self):
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)
