"""``QuestionView``: the Question view in a notebook (ipywidgets over ``widgets.question``'s state and HTML)."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from workbench.trace import Answer

from .html import DisplaysWidget, box
from .question import (question_html, question_options, question_state)
from workbench.methods import display_options

# -- notebook shell --------------------------------------------------------------------------------------------
class QuestionView(DisplaysWidget):
    """The Question view in a notebook: a question picker, a method picker (highlights and expands
    that row) and, for the picked method, its trace in a ``TraceStepper``. Logic lives in
    ``question_state`` / ``question_html``; this class only wires ipywidgets to them.

        QuestionView(run.results(), conversations={c: run.conversation(c) for c in run.conversation_ids()},
                     audits=audits, memories=run.memories)   # memories: ids the trace holds no text for

    ``memories(method, conv_id)`` gives a method's saved memory rows, so the stepper shows the text of ids the
    trace names without keeping (HyMem's deep candidates past the first few); ``from_run`` passes the run's.
    """

    def __init__(self, rows: Sequence[Mapping[str, Any]], *, conversations: Mapping[str, Any] | None = None,
                 audits: Mapping[str, Any] | str | None = "auto", qa_id: str | None = None,
                 memories: Callable[[str, str], Iterable[Mapping]] | None = None, problems: Sequence[str] = ()):
        from .cost_accuracy import resolve_audits

        self._problems = list(problems)
        self.store = None  # the RunStore ``from_run`` read through: its problems grow as memories are read
        self.rows = [dict(r) for r in rows]
        self.conversations = dict(conversations or {})
        self.memories = memories
        self.audits = resolve_audits(self.rows, audits) if audits is not None else {}
        self.options = question_options(self.rows)
        self.qa_id = qa_id or next(iter(self.options.values()), None)
        self.selected: str | None = None
        self._build_widgets()
        self.select(self.qa_id)

    @classmethod
    def from_run(cls, run_dir, **kw) -> "QuestionView":
        """Over a saved run directory (its results, conversations and the judge audits it records), read as
        ``widgets.run_store.RunStore.safe`` reads: a damaged conversation file, manifest or line is listed
        in ``problems`` (shown above the view), never raised, and every question of the rest is shown (one of
        a damaged conversation without its transcript). A run directory that does not exist raises."""
        parts = read_run_parts(run_dir, kw.pop("audits", None))
        run, safe = parts.run, parts.safe
        kw.setdefault("memories", lambda method, conv_id: safe(
            f"memories/{method}/{conv_id}/memories.jsonl", lambda: run.memories(method, conv_id), []))
        view = cls(parts.rows, conversations=parts.conversations, audits=parts.audits, **kw)
        view._read_problems = parts.problems
        view._render()  # with the run's problems above it
        return view

    @property
    def problems(self) -> list[str]:
        """What could not be read (a damaged file, skipped lines), shown above the view as the app's header
        shows it: those given, then those the run's store met (``from_run``), each once."""
        read = getattr(self, "_read_problems", None) or (self.store.errors if self.store is not None else ())
        return list(dict.fromkeys([*self._problems, *read]))

    def select(self, qa_id: str | None, method: str | None = None) -> "QuestionView":
        self.qa_id = qa_id
        conv_id = next((r.get("conv_id") for r in self.rows if r.get("qa_id") == qa_id), None)
        self.state = question_state(self.rows, qa_id, conversation=self.conversations.get(conv_id),
                                    audits=self.audits) if qa_id else None
        self.selected = method if self.state and method in self.state.methods else None
        self._render()
        return self

    @property
    def html(self) -> str:
        note = ""
        if self.problems:
            from .panel_parts import problems_html

            note = box(problems_html(self.problems))
        if self.state is None:
            return note + box("<p>No answered questions in these rows.</p>")
        return note + question_html(self.state, selected=self.selected)

    def static_html(self) -> str:
        """The question with every method's answer and verdict (``html``), then the picked method's trace."""
        return self.html + (self.stepper.static_html() if self.stepper else "")

    def _build_widgets(self) -> None:
        import ipywidgets as W

        self.question = W.Dropdown(options=self.options, value=self.qa_id, description="question",
                                   layout=W.Layout(width="95%"))
        self.method = W.Dropdown(options=[("(none)", None)], value=None, description="method")
        self.body = W.HTML()
        self.trace = W.VBox([])  # the picked method's TraceStepper
        self.question.observe(lambda ch: self.select(ch["new"]), names="value")
        self.method.observe(lambda ch: self.select(self.qa_id, ch["new"]), names="value")
        self.widget = W.VBox([self.question, self.body, self.method, self.trace])

    def _render(self) -> None:
        from .trace_stepper import TraceStepper

        methods = self.state.methods if self.state else []
        opts = [("(none)", None)] + list(display_options(methods).items())
        if list(self.method.options) != opts:
            self.method.options = opts
        if self.method.value != self.selected:
            self.method.value = self.selected
        m = self.state.row(self.selected) if self.state and self.selected else None
        self.stepper = None
        if m is not None and isinstance(m.row.get("answer"), Mapping):
            conv_id = m.row.get("conv_id")
            saved = self.memories(self.selected, conv_id) if self.memories and conv_id else ()
            conv = self._conversation()
            qa = next((q for q in getattr(conv, "qa", None) or () if q.id == self.qa_id), None)
            self.stepper = TraceStepper(Answer.from_dict(m.row["answer"]), conversation=conv,
                                        gold_evidence=self.state.evidence, memories=saved, qa=qa)
        self.trace.children = [self.stepper.widget] if self.stepper else []
        self.body.value = self.html  # last: reading the picked method's memories may have met a damaged line

    def _conversation(self):
        conv_id = next((r.get("conv_id") for r in self.rows if r.get("qa_id") == self.qa_id), None)
        return self.conversations.get(conv_id)

    def __repr__(self) -> str:
        n = len(self.state.rows) if self.state else 0
        return f"QuestionView({self.qa_id!r}, {n} methods, selected={self.selected!r})"


class RunParts:
    """What a notebook view reads of a run directory: ``rows``, ``conversations`` (id -> Conversation), the
    ``manifest``, the judge ``audits``, the ``problems`` met, and ``safe``/``run`` for further reads."""

    def __init__(self, run, safe, problems, rows, conversations, manifest, audits):
        self.run, self.safe, self.problems = run, safe, problems
        self.rows, self.conversations, self.manifest, self.audits = rows, conversations, manifest, audits


def read_run_parts(run_dir, audits=None) -> RunParts:
    """Read a run as ``RunStore.safe`` reads it, without importing that module (it loads Panel, whose notebook
    extension would put Panel's JavaScript loader into every notebook showing a view): a damaged conversation
    file, manifest or line becomes a line of ``problems``, never an exception. ``audits``: given, or the run's
    own (``cost_accuracy.run_audits``). A run directory that does not exist raises."""
    from workbench.rundir import RunDir

    from .cost_accuracy import run_audits
    from .lifecycle import safe_reader

    run, problems = RunDir(run_dir), []
    safe = safe_reader(run, problems)
    rows = safe("results.jsonl", run.results, [])
    convs = {}
    for cid in safe("conversations/", run.conversation_ids, []):
        conv = safe(f"conversations/{cid}.json", lambda cid=cid: run.conversation(cid), None)
        if conv is not None:
            convs[cid] = conv
    manifest = safe("manifest.json", run.manifest, {})
    if audits is None:
        audits = safe("judge audits", lambda: run_audits(manifest, rows), {})
    return RunParts(run, safe, problems, rows, convs, manifest, audits)
