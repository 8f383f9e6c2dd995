"""The mechanism census as a compact block for the app header: a small table, one row per method
(what fired, what did not, failures), each zero visibly marked as not fired with its evidence (the
``why_zero`` text read from the run) as a tooltip and listed below the table; collapsible. Below it, one
click away, each method's steps' own decisions checked against the questions' gold (the census's ``decisions``).

The counts come from ``<run>/mechanisms.json`` (written by ``workbench demo``, ``workbench eval``
and ``workbench mechanisms``); a run without that file, or with a damaged one, is counted on the
fly from its own files (``workbench.eval.mechanisms.census``), and the block says so. Everything
shown is escaped: the file belongs to the run, and a run may come from someone else.
"""
from __future__ import annotations

import os
import re
import threading
from pathlib import Path

from widgets.html import box, esc, method_title_html
from workbench.eval.decisions import tally_text
from workbench.eval.mechanisms import census, headline, item_text, read_census
from workbench.words import counted
from workbench.jsonl import DamagedFile
from workbench.methods import display_name

NOT_FIRED = ' <span class="wb-forced" title="{why}">&nbsp;not fired&nbsp;</span>'


def load_census(run_dir) -> tuple[dict | None, str]:
    """(census, where it came from) — the run's ``mechanisms.json``, else computed now; (None, why)
    when neither is possible (no run directory)."""
    run = Path(run_dir)
    if not run.is_dir():
        return None, f"no run directory at {run}"
    try:
        found = read_census(run)
    except DamagedFile as exc:
        return census(run), f"computed from the run's files ({exc.reason} in mechanisms.json)"
    if found is not None:
        return found, "mechanisms.json"
    return census(run), "computed from the run's files (no mechanisms.json)"


def _item_html(item: dict) -> str:
    text = esc(item_text(item))
    if item["fired"] is False:
        return text + NOT_FIRED.format(why=esc(item["note"] or "zero in this run"))
    if item["fired"] is None:
        return f'<span class="wb-muted" title="{esc(item["note"])}">{text} (not recorded)</span>'
    return text


def census_html(value: dict | None, source: str = "", *, links: bool = False) -> str:
    """The header block: a small table, one row per method — what fired, what did not (each zero
    marked "not fired", its evidence as a tooltip and listed under "why the zeros"), and failures."""
    if value is None:
        return box(f'<p class="wb-muted">Mechanisms: {esc(source)}</p>')
    rows, notes = [], []
    for h in headline(value):
        fired = [_item_html(i) for i in h["items"] if i["fired"] is True]
        idle = [_item_html(i) for i in h["items"] if i["fired"] is not True]
        failures = [f'<span class="wb-refresh">{esc(item_text(f))}</span>' for f in h["failures"]]
        if not fired and not idle and not failures:
            continue
        checked = esc(h.get("checked") or "—")
        # its title (the run's name beside it in grey); in the app the title opens its How it works page
        name = method_title_html(h["method"], link=links) if links else f"<b>{method_title_html(h['method'])}</b>"
        rows.append(f"<tr><td>{name}</td><td>{', '.join(fired) or '—'}</td>"
                    f"<td>{', '.join(idle) or '—'}</td><td>{', '.join(failures) or '—'}</td>"
                    f"<td><small>{checked}</small></td></tr>")
        notes += [f"{esc(h['method'])} · {esc(i['label'])}: {esc(i['note'])}" for i in h["items"]
                  if i["fired"] is not True and i["note"]]
    if rows:
        body = ("<table><tr><th>method</th><th>fired</th><th>did not fire (zero in this run)</th>"
                "<th>failures</th><th>right? (against the planted or annotated phenomena)</th></tr>"
                + "".join(rows) + "</table>")
    else:
        body = '<span class="wb-muted">no method mechanism recorded in this run</span>'
    scripted = ('<b>Scripted run</b>: these counts show the plumbing, not a model. ' if value.get("scripted") else "")
    problems = value.get("problems") or []
    extra = (f'<details><summary>why the zeros, from the run ({len(notes)})</summary><ul>'
             + "".join(f"<li>{n}</li>" for n in notes) + "</ul></details>") if notes else ""
    decided = [(m, e["decisions"]) for m, e in (value.get("methods") or {}).items()
               if isinstance(e, dict) and isinstance(e.get("decisions"), dict) and e["decisions"]]
    if decided:  # each step's own decision against the gold (workbench.eval.decisions), per method
        extra += ("<details><summary>were the steps' own decisions right? (against each question's gold answer "
                  "or gold evidence)</summary><ul>"
                  + "".join(f"<li>{method_title_html(m)}: {esc(tally_text(d))}</li>" for m, d in decided)
                  + "</ul></details>")
    if problems:
        extra += (f'<details><summary>{counted(len(problems), "problem")} reading the run '
                  'for the census</summary><ul>'
                  + "".join(f"<li>{esc(p)}</li>" for p in problems[:20]) + "</ul></details>")
    line = _right_line(headline(value))
    # collapsed: one line on a projected page; the whole table one click away (issue: explorer, content first)
    return box(f"<details><summary><b>Mechanisms fired</b> <small class='wb-muted'>({esc(source)}) counted "
               f"from what the run recorded</small>{line}</summary>{scripted}{body}{extra}</details>")


#: how many characters of checked results the one-line summary over the census table holds
RIGHT_LINE_CHARS = 150


def _right_line(heads) -> str:
    """One line over the census table: per method whose mechanism was checked, the first clause of its check
    ("AMA: 0 of 7 edits match a planted update or forget request"), whole entries only, then how many more the
    table holds. A check with nothing to check ("0 of 0 edits") is left to the table: on one line it reads as a
    score (usability review)."""
    entries = []
    for h in heads:
        checked = str(h.get("checked") or "")
        if not checked or "not checkable" in checked or re.match(r"\s*0 of 0\b", checked):
            continue
        entries.append(f"{display_name(h['method'])}: {checked.split(';')[0].strip()}")
    shown = []
    for e in entries:
        if shown and len(" · ".join(shown + [e])) > RIGHT_LINE_CHARS:
            break
        shown.append(e)
    if not shown:
        return ""
    more = f" · {len(entries) - len(shown)} more in the table" if len(entries) > len(shown) else ""
    return f" <small class='wb-muted'>· right? {esc(' · '.join(shown))}{more}</small>"


#: census blocks by (run directory, links?, the run's file fingerprint): every session of a served app
#: shows the same block, and computing it was half of a new session's cost (0.09 of 0.17 s on the demo)
_BLOCKS: dict[tuple, str] = {}
_BLOCKS_MAX = 8
_BLOCKS_LOCK = threading.Lock()


def run_fingerprint(run_dir) -> tuple:
    """What identifies a run directory's content cheaply: every file's relative path, size and
    modification time (a changed, added or removed file changes it). Symlinks are not followed; lock
    files (``*.lock``, made by readers of an events log) are not content."""
    run, seen = Path(run_dir), []
    stack = [run]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif not entry.name.endswith(".lock"):
                    st = entry.stat(follow_symlinks=False)
                    seen.append((os.path.relpath(entry.path, run), st.st_size, st.st_mtime_ns))
            except OSError:
                continue
    return tuple(sorted(seen))


def census_block(run_dir, *, links: bool) -> str:
    """The header block's HTML for ``run_dir``, computed once per content of the run and shared."""
    key = (str(Path(run_dir).resolve()), links, run_fingerprint(run_dir))
    with _BLOCKS_LOCK:
        if key in _BLOCKS:
            return _BLOCKS[key]
    try:
        value, source = load_census(run_dir)
    except (OSError, ValueError) as exc:  # shown in the header like every other read problem
        value, source = None, f"the census could not be computed: {type(exc).__name__}: {exc}"
    html = census_html(value, source, links=links)
    with _BLOCKS_LOCK:
        if len(_BLOCKS) >= _BLOCKS_MAX:
            _BLOCKS.pop(next(iter(_BLOCKS)))
        _BLOCKS[key] = html
    return html


def census_pane(run_dir, on_link=None):
    """The block as a Panel pane (the app puts it in its header); with ``on_link``, each method's name is a link
    whose target (``("method", name)``) goes to ``on_link``."""
    from widgets.panel_parts import LinkHTML

    return LinkHTML(census_block(run_dir, links=on_link is not None), on_link=on_link)
