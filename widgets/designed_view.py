"""The designed run beside the model's (issue #64 item 3): what a method's paper path does on reference replies
written by hand, the demo model's recorded runs of the same example next to it, and where each leaves that path.

A designed run (``workbench.designed``) is the method's own code on replies a person wrote; it is made on demand
from the committed reference file into ``<run>/designed/<method>/`` (keyed by the file's hash) and never enters
the model run's results, census or charts. Everything here that shows one carries ``LABEL`` in the view itself.

``attach(page, run_dir)`` gives a How it works page (``widgets.how_it_works.HowItWorksPage``) its designed run:
``DesignedExample.for_run`` makes (or reuses) it and compares it with the small and paper profiles' recordings
(``workbench.designed.compare``); ``replay(name)`` is a notebook's page with all three. ``section_html`` is
the page's section: the three runs' verdicts side by side, each model run's first divergence in words and
marked, the divergences at the planted turns, and the aligned paths step by step. ``divergence_step`` finds
the answer-trace step of a divergence made while answering, so a stepper can open there.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from widgets.how_it_works import GalleryExample, HowItWorksPage, verdict_chip
from widgets.html import esc
from workbench.designed import LABEL, Comparison, reference_file, subject_words, touches

#: the label every view of a designed run shows, in the view itself
LABEL_TEXT = "reference replies written by hand, not a model"
PROFILE_WORDS = {"small": "small profile", "paper": "paper profile"}

CSS = (
    "<style>"
    ".wb-designed-label {display: inline-block; background: #f3f0ff; color: #5f3dc4; border: 1px solid #7950f2;"
    " border-radius: 10px; padding: 1px 8px; font-weight: 600; font-size: 12px;}"
    ".wb-designed-cols {display: flex; flex-wrap: wrap; gap: 12px; align-items: stretch;}"
    ".wb-designed-col {flex: 1 1 16em; min-width: 14em; border: 1px solid #ced4da; border-radius: 6px;"
    " padding: 6px 10px;}"
    ".wb-designed-col.designed {border-color: #7950f2; background: #f8f7ff;}"
    ".wb-diverge {background: #fff4e6; border-left: 4px solid #e8590c; padding: 4px 8px; margin: 4px 0;"
    " border-radius: 4px;}"
    ".wb-diverge b.mark {color: #c2410c;}"
    ".wb-path {max-height: 22em; overflow-y: auto; border: 1px solid #dee2e6; border-radius: 6px;}"
    ".wb-path tr.first td {background: #fff4e6;} .wb-path td.off {color: #c92a2a;} .wb-path td.same {color: #237032;}"
    "</style>"
)


def label_html() -> str:
    """The designed run's label, as every view of one shows it."""
    return f"<span class='wb-designed-label' title='{esc(LABEL)}'>designed run · {esc(LABEL_TEXT)}</span>"


@dataclass
class DesignedExample:
    """A method's designed run (``example``: its ``GalleryExample``, read from the designed run's directory) and
    its comparison with each recorded profile of the demo model (``comparisons``: profile -> ``Comparison``);
    ``error``: why it could not be made (the page says so instead)."""

    method: str
    example: object | None = None
    comparisons: dict = field(default_factory=dict)
    error: str = ""
    dir: Path | None = None  # the designed run's directory
    pending: bool = False  # not made yet (``for_run(make=False)``): a view offers to make it

    @classmethod
    def for_run(cls, run_dir, method: str, conv_id: str, *, embedder=None,
                make: bool = True) -> "DesignedExample | None":
        """The designed run of ``method``'s example ``conv_id`` cached under ``run_dir``, compared with the small
        and paper recordings; None when the example has no reference file (nothing to show). ``make=False``:
        only what is already made (else a ``pending`` one, for a view to offer)."""
        from workbench.designed import compare, designed_ready

        if not reference_file(method, conv_id).is_file():
            return None
        found = cls(method)
        if not make and not designed_ready(run_dir, method, conv_id):
            found.pending = True
            return found
        try:
            for profile in ("small", "paper"):
                c = compare(run_dir, method, profile, embedder=embedder)
                if c is not None:
                    found.comparisons[profile] = c
            from workbench.designed import cached_designed_run

            found.dir = cached_designed_run(run_dir, method, conv_id, embedder=embedder)
            found.example = GalleryExample.load(found.dir, method, conv_id)
        except Exception as exc:  # the designed run could not be made or read: said on the page, never hidden
            found.error = f"{type(exc).__name__}: {exc}"
        return found


    def section_html(self, page: HowItWorksPage) -> str:
        """The page's section (``section_html``) for this designed run."""
        return section_html(self, page.example, page.paper, page.example.annotations if page.example else None)

    def divergence_at(self, page: HowItWorksPage, run: str) -> tuple[str, int] | None:
        """``(qa_id, step)`` of ``run``'s first divergence when it is made while answering (``divergence_step``)."""
        c = self.comparisons.get(run)
        ex = {"small": page.example, "paper": page.paper}.get(run)
        return divergence_step(ex, c.first) if c is not None and c.first is not None else None

    def on_question(self, page: HowItWorksPage, run: str, qa_id) -> tuple[dict, int] | None:
        """The first divergence of ``run`` made while answering question ``qa_id``, and its step in that answer's
        trace (None when it answers that question as the designed run does, or never reaches a step of it)."""
        c = self.comparisons.get(run)
        ex = {"small": page.example, "paper": page.paper}.get(run)
        if c is None:
            return None
        for a in c.found:
            at = divergence_step(ex, a)
            if at is not None and at[0] == str(qa_id):
                return a, at[1]
        return None

    def intro(self, page: HowItWorksPage, run: str, qa_id) -> str:
        """A stepper's line (HTML): the designed run's label, or where ``run`` leaves the designed path."""
        from workbench.designed import WHY_CHARS, divergence_text

        if run == "designed":
            return label_html() + " the method's own code on reference replies: the paper's path"
        c = self.comparisons.get(run)
        if c is None or c.first is None:
            return ""
        at = self.divergence_at(page, run)
        first = c.first["designed"] or c.first["model"]
        where = (f"at step {at[1] + 1} of this answer" if at and at[0] == qa_id else
                 "while building the memory, before any question" if first["phase"] == "construct"
                 else "on another question")
        line = (f"<b style='color:#c2410c'>▲ The {esc(PROFILE_WORDS[run])}'s run leaves the designed path "
                f"{esc(where)}:</b> {esc(c.text)}")
        here = self.on_question(page, run, qa_id)
        if here is not None and (at is None or at[0] != str(qa_id) or here[1] != at[1]):
            line += (f"<br><b style='color:#c2410c'>▲ On this question it first leaves it at step {here[1] + 1}:</b> "
                     f"{esc(divergence_text(here[0], c.who, why_chars=WHY_CHARS))}")
        return line


def divergence_step(example, entry: dict) -> tuple[str, int] | None:
    """``(qa_id, step index)`` of the answer-trace step (in ``example``'s rows) that made the model call of a
    divergence while answering; None for one made while building the memory, or a call no step holds."""
    m = (entry or {}).get("model") or {}
    d = (entry or {}).get("designed") or {}
    call = m or d
    if call.get("phase") != "query" or example is None:
        return None
    question = (call.get("subject") or {}).get("question")
    for row in example.rows:
        steps = (row.get("answer") or {}).get("steps") or []
        for n, step in enumerate(steps):
            for c in step.get("calls") or ():
                text = "\n".join(str(x.get("content", "")) for x in c.get("messages") or ())
                if m and c.get("role") == m.get("role") and text == m.get("prompt"):
                    return str(row.get("qa_id")), n
        if not m and question and row.get("question") == question:
            # a step the model did not take: mark where its answer ended instead (its last step)
            return str(row.get("qa_id")), max(len(steps) - 1, 0)
    return None


def _decision(entry: dict | None) -> str:
    if not entry:
        return ""
    values = ", ".join(f"{k}={v}" for k, v in (entry.get("decision") or {}).items())
    return values or "free text"


def _column(title: str, ex, extra: str, *, designed: bool = False) -> str:
    if ex is None:
        return (f"<div class='wb-designed-col'><b>{esc(title)}</b><p class='wb-muted'>not recorded</p>{extra}"
                "</div>")
    word, line = ex.verdict
    ok, n = ex.answers_right()
    return (f"<div class='wb-designed-col{' designed' if designed else ''}'><b>{esc(title)}</b>"
            f"{'<br>' + label_html() if designed else ''}"
            f"<p><b>The mechanism:</b> {verdict_chip(word)} <small>{esc(line)}</small></p>"
            f"<p><b>The answers:</b> {ok} of {n} right (checker)</p>{extra}</div>")


def _first_html(c: Comparison, marks: dict, questions) -> str:
    from workbench.designed import WHY_CHARS, divergence_text

    first = c.first
    where = ""
    if first is not None:
        d = first["designed"] or first["model"]
        where = (" (while building the memory)" if d["phase"] == "construct" else " (while answering)")
    off = sum(a["at"] is not None for a in c.found)
    extra = len(c.found) - off
    absent = set(c.absent)
    planted = [a for a in c.found if touches(a, marks, questions)
               and (a["designed"] is None or (a["designed"]["role"], a["designed"]["phase"]) not in absent)]
    at_planted = ""
    if planted:
        items = "".join(f"<li>{esc(divergence_text(a, c.who, why_chars=WHY_CHARS))}</li>" for a in planted[:4])
        more = f"<li>and {len(planted) - 4} more</li>" if len(planted) > 4 else ""
        at_planted = f"<p><b>At the planted turns and questions</b> ({len(planted)}):</p><ul>{items}{more}</ul>"
    elif c.found:
        at_planted = "<p>No divergence at the planted turns or questions.</p>"
    lacks = ""
    if absent:
        names = ", ".join(f"{r} ({'building' if ph == 'construct' else 'answering'})" for r, ph in c.absent)
        lacks = f"<p><b>Steps of the designed path its run never takes:</b> {esc(names)}</p>"
    return (f"<div class='wb-diverge'><b class='mark'>▲ first divergence{esc(where)}:</b> {esc(c.text)}</div>{lacks}"
            f"<p class='wb-muted'>{off} of {len(c.designed)} designed steps taken otherwise or not at all"
            f"{f'; {extra} call(s) beyond the designed path' if extra else ''}</p>{at_planted}")


def path_table_html(comparisons: dict) -> str:
    """The designed path step by step, each recorded profile's step beside it: ``same``, the decision it took
    otherwise, or "not taken"; each profile's first divergence row marked."""
    if not comparisons:
        return ""
    profiles = [p for p in ("small", "paper") if p in comparisons]
    base = comparisons[profiles[0]]
    firsts = {p: (comparisons[p].first or {}).get("at") for p in profiles}
    head = "".join(f"<th>{esc(PROFILE_WORDS[p])} ({esc(comparisons[p].who)})</th>" for p in profiles)
    rows = []
    for i, d in enumerate(base.designed):
        cells = []
        for p in profiles:
            a = comparisons[p].aligned[i]
            mark = " ▲ first divergence" if firsts[p] == i else ""
            if a["kind"] == "same":
                cells.append(f"<td class='same'>✓ same ({esc(_decision(a['model']))}){esc(mark)}</td>")
            elif a["kind"] == "missing":
                cells.append(f"<td class='off'>✗ not taken{esc(mark)}</td>")
            else:
                cells.append(f"<td class='off'>✗ {esc(_decision(a['model']))}{esc(mark)}</td>")
        first = any(firsts[p] == i for p in profiles)
        phase = "build" if d["phase"] == "construct" else "answer"
        rows.append(f"<tr{' class=first' if first else ''}><td>{i + 1}</td><td>{phase}</td><td><code>"
                    f"{esc(d['role'])}</code></td><td>{esc(subject_words(d['subject']))}</td>"
                    f"<td>{esc(_decision(d))}</td>{''.join(cells)}</tr>")
    extras = {p: sum(a["kind"] == "extra" for a in comparisons[p].aligned) for p in profiles}
    extra = "; ".join(f"{PROFILE_WORDS[p]}: {n} call(s) beyond the designed path" for p, n in extras.items() if n)
    return ("<details open><summary>The designed path, step by step, beside each profile "
            f"({len(base.designed)} steps)</summary><div class='wb-path'><table><tr><th>#</th><th>phase</th>"
            f"<th>role</th><th>about</th><th>designed run ({esc(LABEL_TEXT)})</th>{head}</tr>{''.join(rows)}"
            f"</table></div>{'<p class=wb-muted>' + esc(extra) + '</p>' if extra else ''}</details>")


def section_html(designed: DesignedExample | None, small, paper, annotations=None) -> str:
    """The How it works page's section: the designed run, the small and the paper profile's runs side by side
    (verdict, answers, first divergence marked and said), then the aligned paths. Empty without a reference file."""
    if designed is None:
        return ""
    from workbench.eval.annotations import planted_marks

    head = (f"<h4>The designed run beside the model's {label_html()}</h4><p>The method's own code (its paper "
            "profile: embedder, index, thresholds, control flow) on replies a person wrote for each prompt it sends "
            "(<code>sample_data/reference/</code>): what the paper's path does when every reply is right. It is not "
            "a model and is counted in no accuracy, census figure or chart of the run.</p>")
    if designed.pending:
        return (CSS + head + "<p class='wb-muted'>Not made yet for this run: it takes the method's code some tens "
                "of seconds (the button below makes it; a notebook's <code>widgets.designed_view.replay</code> makes "
                "it at once).</p>")
    if designed.error:
        return (CSS + head + f"<p class='wb-how-damage' role='alert'>The designed run could not be made: "
                f"{esc(designed.error)}</p>")
    marks = planted_marks(annotations)
    questions = [m.get("question") for m in getattr(annotations, "multi_hop", ()) or () if m.get("question")]
    cols = [_column(f"Designed run ({LABEL_TEXT})", designed.example, "", designed=True)]
    for profile, ex in (("small", small), ("paper", paper)):
        c = designed.comparisons.get(profile)
        who = c.who if c else "the model"
        extra = _first_html(c, marks, questions) if c else ""
        cols.append(_column(f"{PROFILE_WORDS[profile]} ({who}, recorded)", ex, extra))
    return (CSS + head + "<div class='wb-designed-cols'>" + "".join(cols) + "</div>"
            + path_table_html(designed.comparisons))



def attach(page: HowItWorksPage, run_dir, *, make: bool = True, embedder=None) -> HowItWorksPage:
    """Give ``page`` its designed run, made (or reused) under ``run_dir`` (``<run>/designed/<method>``), when its
    example has a reference file; ``make=False``: only one already made (else a ``pending`` one). Returns it."""
    if page.how.gallery and page.example is not None:
        page.designed = DesignedExample.for_run(run_dir, page.name, page.how.gallery, make=make, embedder=embedder)
    return page


def replay(name: str, out=None) -> HowItWorksPage:
    """``HowItWorksPage.replay`` (the recorded runs replayed from the committed cassettes into ``out``) with the
    designed run made beside them: a notebook's first cell."""
    import tempfile

    out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix=f"how-{name}-"))
    return attach(HowItWorksPage.replay(name, out), out)
