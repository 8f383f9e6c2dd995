"""The case finder: every question of a run against every method, to find the cases worth a case study.

A qualitative case study starts from a question on which two methods part ways ("H-Mem right, HyMem wrong on
a temporal question"). The Question tab shows one question at a time, so such a case used to be found by
reading ``results.jsonl`` in a script (usability review 4, researcher item 1). Here each question of the run is
one row and each method one column; a cell gives that method's verdict (right / wrong), the kind of error the
checker named, the failure attribution and the rank of the gold evidence in what its reader saw, all read the
way the Question tab reads them (``widgets.question.question_state``: one source, so the grid and the tab
cannot disagree). Filters narrow the rows: a category, "methods disagree" (at least one method right and one
wrong), "right with X, wrong with Y", a kind of error or an attribution, and words of the question.

    cases = build_cases(run.results(), conversations={c: run.conversation(c) for c in run.conversation_ids()})
    shown = filter_cases(cases, CaseFilter(disagree=True, right_with="hmem", wrong_with="hymem"))
    html = grid_html(shown, case_methods(cases), links=True)   # in the app a cell opens the Question tab

Pure data and escaped HTML here; the app's Results tab binds Panel widgets to it (``widgets.tabs.results``) and
``CaseFinderView`` below binds ipywidgets for a notebook (imported only when built). Every string of the run
(question, category, method names, ids, kinds) goes through ``esc``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from workbench.methods import display_name
from workbench.words import counted

from .html import DisplaysWidget, box, esc, link_html, short
from .question import ATTRIBUTION_WORDS, kind_words, question_state, rank_text

#: questions per page of the grid (a real-scale conversation has 81-152)
PAGE_SIZE = 25
#: "(any)": a filter left open
ANY = ""
#: the words the filters offer for a verdict
VERDICT_WORDS = {True: "right", False: "wrong", None: "undecided"}

CSS = """<style>
.wb-cf table {border-collapse: collapse; font-size: 12px;}
.wb-cf th, .wb-cf td {border: 1px solid #ddd; padding: 2px 4px; vertical-align: top;}
.wb-cf th.wb-cf-m {font-weight: 600; min-width: 64px; max-width: 110px; overflow-wrap: anywhere;}
.wb-cf td.wb-cf-q {min-width: 220px; max-width: 380px;}
.wb-cf td.wb-cf-right {background: #ebfbee;}
.wb-cf td.wb-cf-wrong {background: #fff0f0;}
.wb-cf td.wb-cf-none {background: #f6f6f6; color: #5c636a;}
.wb-cf .wb-cf-v {font-weight: 700; white-space: nowrap;}
.wb-cf td.wb-cf-right .wb-cf-v, .wb-cf td.wb-cf-right a.wb-link {color: #237032;}
.wb-cf td.wb-cf-wrong .wb-cf-v, .wb-cf td.wb-cf-wrong a.wb-link {color: #b02525;}
.wb-cf small {color: #5c636a; display: block; line-height: 1.2;}
.wb-cf tr.wb-cf-split > td.wb-cf-q {border-left: 3px solid #f08c00;}
.wb-cf tfoot td {background: #f4f4f4; font-weight: 600;}
</style>"""


# -- data ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CaseCell:
    """One method's answer to one question, as the grid shows it."""

    method: str
    correct: bool | None  # the verdict every view uses (``Attribution.correct``); None: undecided
    kind: str  # the kind of error, in words ("wrong date"); "" when right or when no checker named one
    attribution: str  # the attribution label ("retrieval_miss"); its words in ``ATTRIBUTION_WORDS``
    rank: str  # the gold evidence rank in full ("#3 of 10", "missed", "no trace saved")
    first_rank: int | None  # best rank of any gold turn; None when none was shown
    gold_known: bool  # the question has gold evidence ids and the answer a saved context
    fallback: bool  # the answer is a stand-in written after failed calls, not the reader's reply
    basis: str  # what decided the verdict ("checker", "judge", "abstention-question", ...)

    @property
    def verdict(self) -> str:
        return VERDICT_WORDS[self.correct]

    @property
    def attribution_words(self) -> str:
        return ATTRIBUTION_WORDS.get(self.attribution, self.attribution.replace("_", " "))

    @property
    def rank_words(self) -> str:
        """The rank, short: "gold #3", "gold missed", or "" when no rank can be given."""
        if not self.gold_known:
            return ""
        return f"gold #{self.first_rank}" if self.first_rank is not None else "gold missed"


@dataclass(frozen=True)
class Case:
    """One question of the run with every method's cell."""

    qa_id: str
    conv_id: str
    question: str
    category: str
    gold: str
    cells: Mapping[str, CaseCell] = field(default_factory=dict)

    @property
    def disagree(self) -> bool:
        """At least one method right and one wrong (undecided cells left out)."""
        verdicts = {c.correct for c in self.cells.values()}
        return True in verdicts and False in verdicts

    def right(self) -> list[str]:
        return [m for m, c in self.cells.items() if c.correct is True]


def _cell(m) -> CaseCell:
    """A ``widgets.question.MethodRow`` as a cell: the kind of error is the checker's, said when the checker
    decided the verdict and said wrong (as the Question tab writes it under the verdict), else "abstained"
    when the attribution says so."""
    a = m.attribution
    check = m.row.get("check") if isinstance(m.row.get("check"), Mapping) else None
    kind = ""
    if a.correct is False:
        if a.basis == "checker" and check and check.get("kind"):
            kind = kind_words(str(check.get("kind")))
        elif a.label == "abstained":
            kind = "abstained"
    return CaseCell(method=m.method, correct=a.correct, kind=kind, attribution=a.label, rank=rank_text(m),
                    first_rank=m.first_rank, gold_known=bool(m.ranks), fallback=m.failure.fallback, basis=a.basis)


def build_cases(rows: Iterable[Mapping[str, Any]], *,
                conversations: Mapping[str, Any] | Callable[[str], Any] | None = None,
                audits: Mapping[str, Any] | None = None, conv_id: str | None = None) -> list[Case]:
    """One ``Case`` per answered question, in run order (of ``conv_id`` only when given). ``conversations``:
    conversation id -> ``Conversation`` (a mapping or a function), for the gold evidence ranks and the
    question's own text; without one the rows' stored question and gold are used and no rank is given."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        qid, cid = r.get("qa_id"), r.get("conv_id")
        if not qid or (conv_id is not None and cid != conv_id):
            continue
        groups.setdefault((str(cid), str(qid)), []).append(r)
    get = conversations if callable(conversations) else (conversations or {}).get
    out = []
    for (cid, qid), mine in groups.items():
        state = question_state(mine, qid, conversation=get(cid), audits=audits)
        out.append(Case(qa_id=qid, conv_id=cid, question=state.question, category=state.category,
                        gold=state.gold, cells={m.method: _cell(m) for m in state.rows}))
    return out


def store_cases(store, conv_id: str | None = None) -> list[Case]:
    """The cases of one conversation (the whole run when ``conv_id`` is None) read through the app's
    ``RunStore`` (its results, conversations and audits), once per run and scope (``RunStore.cached``: a read
    problem is listed in the app's header, and no case is shown)."""
    def make():
        return build_cases(store.results(), conversations=store.conversation, audits=store.audits(), conv_id=conv_id)
    return store.cached(("cases", conv_id), "case finder (results.jsonl)", make, [])


def tally_text(case: Case) -> str:
    """"✓ 3 · ✗ 4 of 7 methods": a question's verdicts in one line (the Question tab's search lists it)."""
    right = sum(1 for c in case.cells.values() if c.correct is True)
    wrong = sum(1 for c in case.cells.values() if c.correct is False)
    return f"✓ {right} · ✗ {wrong} of {counted(len(case.cells), 'method')}"


def case_methods(cases: Sequence[Case]) -> list[str]:
    """The methods of the cases, in the order they first appear (the run's order)."""
    return list(dict.fromkeys(m for c in cases for m in c.cells))


def categories(cases: Sequence[Case]) -> list[str]:
    return list(dict.fromkeys(c.category for c in cases if c.category))


def error_kinds(cases: Sequence[Case]) -> list[str]:
    """The kinds of error some cell has, most frequent first."""
    from collections import Counter

    counts = Counter(cell.kind for c in cases for cell in c.cells.values() if cell.kind)
    return [k for k, _ in counts.most_common()]


def attributions(cases: Sequence[Case]) -> list[str]:
    """The attribution labels of wrong or undecided cells (what went wrong), most frequent first."""
    from collections import Counter

    counts = Counter(cell.attribution for c in cases for cell in c.cells.values()
                     if cell.attribution and cell.attribution != "correct")
    return [k for k, _ in counts.most_common()]


def words_match(text: str, query: str) -> bool:
    """Every word of ``query`` occurs in ``text`` (case and accents of case ignored; any order): "clothing
    store Gina" finds "When did Gina open her online clothing store?"."""
    hay = " ".join(str(text).split()).casefold()
    return all(w in hay for w in str(query).casefold().split())


@dataclass(frozen=True)
class CaseFilter:
    """What the grid shows; every field left at its default keeps every question. ``kind`` and
    ``attribution`` apply to ``wrong_with``'s cell when that is set, else to any cell."""

    conv_id: str = ANY
    category: str = ANY
    disagree: bool = False
    right_with: str = ANY
    wrong_with: str = ANY
    kind: str = ANY
    attribution: str = ANY
    words: str = ""

    def keeps(self, case: Case) -> bool:
        if self.conv_id and case.conv_id != self.conv_id:
            return False
        if self.category and case.category != self.category:
            return False
        if self.disagree and not case.disagree:
            return False
        cells = case.cells
        if self.right_with and (self.right_with not in cells or cells[self.right_with].correct is not True):
            return False
        if self.wrong_with and (self.wrong_with not in cells or cells[self.wrong_with].correct is not False):
            return False
        judged = [cells[self.wrong_with]] if self.wrong_with in cells else list(cells.values())
        if self.kind and not any(c.kind == self.kind for c in judged):
            return False
        if self.attribution and not any(c.attribution == self.attribution for c in judged):
            return False
        return not self.words or words_match(f"{case.qa_id} {case.question}", self.words)


def filter_cases(cases: Sequence[Case], flt: CaseFilter) -> list[Case]:
    return [c for c in cases if flt.keeps(c)]


# -- rendering ---------------------------------------------------------------------------------------------
def _cell_title(case: Case, cell: CaseCell) -> str:
    parts = [f"{display_name(cell.method)} on {case.qa_id}: {cell.verdict}"
             + (f" by {cell.basis}" if cell.basis not in ("none", "error") else "")]
    if cell.kind:
        parts.append(cell.kind)
    parts.append(f"attribution: {cell.attribution_words}")
    parts.append(f"gold evidence rank: {cell.rank}")
    if cell.fallback:
        parts.append("a fallback answer, not the reader's reply")
    return " · ".join(parts)


def cell_html(case: Case, cell: CaseCell | None, *, links: bool = False) -> str:
    """One cell: ✓ / ✗ with the kind of error, then the attribution and the gold rank (the rest on hover). With
    ``links`` the mark opens that method's answer on the Question tab."""
    if cell is None:
        return '<td class="wb-cf-none" title="this method has no answer to this question">·</td>'
    mark = {True: "✓ right", False: "✗ wrong", None: "– undecided"}[cell.correct]
    if cell.correct is False and cell.kind:
        mark = f"✗ {cell.kind}"
    title = _cell_title(case, cell)
    head = (link_html(mark, "question", case.qa_id, cell.method, title=title) if links
            else f'<span class="wb-cf-v">{esc(mark)}</span>')
    lines = []
    if cell.correct is not True and cell.attribution and cell.attribution_words != cell.kind:
        lines.append(cell.attribution_words)
    if cell.rank_words:
        lines.append(cell.rank_words)
    if cell.fallback:
        lines.append("⚠ fallback")
    cls = {True: "wb-cf-right", False: "wb-cf-wrong", None: "wb-cf-none"}[cell.correct]
    small = "".join(f"<small>{esc(t)}</small>" for t in lines)
    return f'<td class="{cls}" title="{esc(title)}" data-method="{esc(cell.method)}">{head}{small}</td>'


def question_cell_html(case: Case, *, links: bool = False) -> str:
    ident = (link_html(case.qa_id, "question", case.qa_id, "(none)", title="open this question") if links
             else f"<b>{esc(case.qa_id)}</b>")
    cat = f' <span class="wb-badge">{esc(case.category)}</span>' if case.category else ""
    return (f'<td class="wb-cf-q" title="{esc(case.question)}">{ident}{cat} {esc(short(case.question, 120))}'
            "</td>")


def grid_html(cases: Sequence[Case], methods: Sequence[str], *, links: bool = False, page: int = 0,
              page_size: int = PAGE_SIZE) -> str:
    """The grid of ``cases`` (one page of ``page_size`` rows) against ``methods``, with a footer row counting
    each method's right answers over every case given (all pages), as escaped HTML."""
    if not cases:
        return box('<p class="wb-muted">No question matches these filters.</p>')
    start = max(0, page) * page_size
    head = "".join(f'<th class="wb-cf-m" title="{esc(m)}">{esc(display_name(m))}</th>' for m in methods)
    body = []
    for case in cases[start:start + page_size]:
        cells = "".join(cell_html(case, case.cells.get(m), links=links) for m in methods)
        split = " wb-cf-split" if case.disagree else ""
        body.append(f'<tr class="wb-cf-row{split}" data-qa="{esc(case.qa_id)}">'
                    f"{question_cell_html(case, links=links)}{cells}</tr>")
    tally = "".join(
        f"<td>{sum(1 for c in cases if m in c.cells and c.cells[m].correct is True)}"
        f"/{sum(1 for c in cases if m in c.cells)} right</td>" for m in methods)
    return box(CSS + f'<div class="wb-cf"><table class="wb-cf-grid"><thead><tr><th>question</th>{head}</tr>'
               f'</thead><tbody>{"".join(body)}</tbody><tfoot><tr><td>over the {counted(len(cases), "question")} '
               f"that match</td>{tally}</tr></tfoot></table></div>")


def summary_text(shown: Sequence[Case], total: int) -> str:
    """"12 of 81 questions match · 7 where methods disagree"."""
    split = sum(1 for c in shown if c.disagree)
    return f"{len(shown)} of {counted(total, 'question')} match · {split} where methods disagree"


LEGEND = ("<p><small class='wb-muted'>One row per question, one column per method: ✓ right or ✗ wrong (with the "
          "kind of error when the checker named one), then why (the attribution: not retrieved, shown but misread, "
          "abstained ...) and where the gold evidence stood in what the reader saw (gold #3, gold missed). The same "
          "verdicts as the Question tab; hover a cell for what decided it. An orange edge: methods disagree on "
          "that question.</small></p>")


def pages(n: int, page_size: int = PAGE_SIZE) -> int:
    return max(1, -(-n // page_size))


def pager_text(n: int, page: int, page_size: int = PAGE_SIZE) -> str:
    if n == 0:
        return "no question"
    start = page * page_size
    return f"questions {start + 1}-{min(n, start + page_size)} of {n} · page {page + 1} of {pages(n, page_size)}"


# -- notebook shell -------------------------------------------------------------------------------------------
class CaseFinderView(DisplaysWidget):
    """The case finder in a notebook (ipywidgets): the filters above the grid, a pager, and under it a question
    and method picker (narrowed to the questions the filters keep) that opens that answer as the Question tab
    shows it (``widgets.question.question_html``, its reader's context expanded). A notebook's HTML output
    cannot call back into Python, so the grid's cells are text here and the picker opens them.

        CaseFinderView.from_run("runs/demo").filter(disagree=True)
    """

    def __init__(self, rows: Sequence[Mapping[str, Any]], *, conversations: Mapping[str, Any] | None = None,
                 audits: Mapping[str, Any] | str | None = "auto", problems: Sequence[str] = ()):
        from .cost_accuracy import resolve_audits

        self.rows = [dict(r) for r in rows]
        self.conversations = dict(conversations or {})
        self.audits = resolve_audits(self.rows, audits) if audits is not None else {}
        self.problems = list(problems)
        self.cases = build_cases(self.rows, conversations=self.conversations, audits=self.audits)
        self.methods = case_methods(self.cases)
        self.flt, self.page = CaseFilter(), 0
        self.opened: tuple[str, str | None] | None = None
        self._syncing = False
        self._build_widgets()
        self.refresh()

    @classmethod
    def from_run(cls, run_dir, **kw) -> "CaseFinderView":
        """Over a saved run directory; a damaged file or line is listed above the grid, never raised (read as
        ``QuestionView.from_run`` reads, without loading Panel into the notebook)."""
        from .question_notebook import read_run_parts

        parts = read_run_parts(run_dir, kw.pop("audits", None))
        return cls(parts.rows, conversations=parts.conversations, audits=parts.audits, problems=parts.problems,
                   **kw)

    # -- state ----------------------------------------------------------------------------------------------
    @property
    def shown(self) -> list[Case]:
        return filter_cases(self.cases, self.flt)

    def filter(self, **changes) -> "CaseFinderView":
        """Set filters (``CaseFilter`` fields) from code; the widgets follow. Unknown names raise."""
        from dataclasses import replace

        self.flt, self.page = replace(self.flt, **changes), 0
        self.refresh()
        return self

    def open(self, qa_id: str, method: str | None = None) -> "CaseFinderView":
        """Show ``qa_id`` under the grid as the Question tab shows it, ``method``'s row opened."""
        self.opened = (qa_id, method)
        self.refresh()
        return self

    def opened_html(self) -> str:
        from .question import question_html

        if self.opened is None:
            return ""
        qa_id, method = self.opened
        case = next((c for c in self.cases if c.qa_id == qa_id), None)
        if case is None:
            return box(f"<p>No question {esc(qa_id)} in this run.</p>")
        state = question_state(self.rows, qa_id, conversation=self.conversations.get(case.conv_id),
                               audits=self.audits)
        return question_html(state, selected=method if method in state.methods else None)

    @property
    def html(self) -> str:
        from .panel_parts import problems_html

        note = box(problems_html(self.problems)) if self.problems else ""
        shown = self.shown
        self.page = min(self.page, pages(len(shown)) - 1)
        return (note + box(f"<p><b>{esc(summary_text(shown, len(self.cases)))}</b> · "
                           f"{esc(pager_text(len(shown), self.page))}</p>")
                + grid_html(shown, self.methods, page=self.page) + box(LEGEND))

    def static_html(self) -> str:
        return self.html + self.opened_html()

    # -- widgets ----------------------------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        import ipywidgets as W

        def pick(label, values, words=None):
            options = [("(any)", ANY)] + [((words or {}).get(v, display_name(v) if label.endswith("with") else v), v)
                                          for v in values]
            return W.Dropdown(options=options, value=ANY, description=label, style={"description_width": "initial"})

        convs = list(dict.fromkeys(c.conv_id for c in self.cases))
        self.inputs = {
            "conv_id": pick("conversation", convs),
            "category": pick("category", categories(self.cases)),
            "right_with": pick("right with", self.methods),
            "wrong_with": pick("wrong with", self.methods),
            "kind": pick("kind of error", error_kinds(self.cases)),
            "attribution": pick("attribution", attributions(self.cases), ATTRIBUTION_WORDS),
            "disagree": W.Checkbox(value=False, description="methods disagree", indent=False),
            "words": W.Text(value="", description="question words", continuous_update=False,
                            style={"description_width": "initial"}),
        }
        self.inputs["conv_id"].layout.display = "" if len(convs) > 1 else "none"
        for name, w in self.inputs.items():
            w.observe(lambda ch, name=name: self._changed(name, ch["new"]), names="value")
        self.prev = W.Button(description="◀ previous page")
        self.next = W.Button(description="next page ▶")
        self.prev.on_click(lambda _: self._turn(-1))
        self.next.on_click(lambda _: self._turn(+1))
        self.grid = W.HTML()
        self.question = W.Dropdown(options=[("(pick a question to open)", None)], value=None, description="open",
                                   layout=W.Layout(width="60%"))
        self.method = W.Dropdown(options=[("(none)", None)] + [(display_name(m), m) for m in self.methods],
                                 value=None, description="method")
        self.question.observe(lambda ch: self._open_picked(), names="value")
        self.method.observe(lambda ch: self._open_picked(), names="value")
        self.answer = W.HTML()
        i = self.inputs
        self.widget = W.VBox([W.HBox([i["conv_id"], i["category"], i["disagree"], i["words"]]),
                              W.HBox([i["right_with"], i["wrong_with"], i["kind"], i["attribution"]]),
                              W.HBox([self.prev, self.next]), self.grid, W.HBox([self.question, self.method]),
                              self.answer])

    def _changed(self, name: str, value) -> None:
        if not self._syncing:
            self.filter(**{name: value})

    def _turn(self, step: int) -> None:
        self.page = max(0, min(pages(len(self.shown)) - 1, self.page + step))
        self.refresh()

    def _open_picked(self) -> None:
        if self._syncing:
            return
        if self.question.value is None:
            self.opened = None
            self.refresh()
        else:
            self.open(self.question.value, self.method.value)

    def refresh(self) -> "CaseFinderView":
        shown = self.shown
        self.grid.value = self.html
        self._syncing = True
        try:
            for name, w in self.inputs.items():
                if w.value != getattr(self.flt, name):
                    w.value = getattr(self.flt, name)
            options = [("(pick a question to open)", None)] + [(f"{c.qa_id}: {short(c.question, 80)}", c.qa_id)
                                                               for c in shown]
            if self.opened and self.opened[0] not in {c.qa_id for c in shown}:
                case = next((c for c in self.cases if c.qa_id == self.opened[0]), None)
                if case is not None:
                    options.append((f"{case.qa_id}: {short(case.question, 80)}", case.qa_id))
            if list(self.question.options) != options:
                self.question.options = options
            want_q = self.opened[0] if self.opened else None
            if self.question.value != want_q and want_q in [v for _, v in options]:
                self.question.value = want_q
            want_m = self.opened[1] if self.opened else None
            if want_m in self.methods and self.method.value != want_m:
                self.method.value = want_m
        finally:
            self._syncing = False
        self.prev.disabled = self.page == 0
        self.next.disabled = self.page >= pages(len(shown)) - 1
        self.answer.value = self.opened_html()
        return self

    def __repr__(self) -> str:
        return f"CaseFinderView({summary_text(self.shown, len(self.cases))})"
