"""A method's "How it works" page: what it does, its pipeline, and its gallery example checked against the truth.

One page per method that declares ``how_it_works`` (``workbench.methods.explain.HowItWorks``):

1. two plain sentences and the pipeline diagram (``widgets.pipeline``);
2. when the method has a mechanism-gallery example (issue #40) and the run holds it (``workbench demo`` replays
   the gallery into ``<run>/gallery``): the short conversation with every planted turn marked, *the right
   outcome* (the method's own declaration) beside *what the model did* -- the checked census in one word
   (``workbench.eval.annotations.checked_verdict``: right / partly right / wrong / missed / did not fire), the
   counts the census recorded, each firing checked, and each question's answer with its checker verdict.

The app's "How it works" tab (``widgets.tabs.how_it_works``) adds the trace stepper over the example's
answers; a notebook shows ``HowItWorksPage`` (``_repr_html_``), then its ``stepper()``. Nothing here names a
method: everything comes from the declaration, the annotations and the run. All text is escaped.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from widgets.html import box, esc, session_when
from widgets.pipeline import Pipeline
from workbench.eval.annotations import checked_verdict, planted_marks
from workbench.eval.decisions import tally_text
from workbench.words import counted
from workbench.eval.mechanisms import headline, item_text
from workbench.jsonl import DamagedFile

CSS = (
    "<style>"
    ".wb-how {font-family: system-ui, sans-serif; font-size: 14px; line-height: 1.4;}"
    ".wb-how h3 {margin: 6px 0 4px 0;} .wb-how h4 {margin: 10px 0 4px 0;}"
    ".wb-how-cols {display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start;}"
    ".wb-how-col {flex: 1 1 26em; min-width: 18em;}"
    ".wb-how-conv {border: 1px solid #ced4da; border-radius: 6px; padding: 4px 8px; max-height: 26em;"
    " overflow-y: auto; font-size: 13px;}"
    ".wb-how-session {font-weight: 600; color: #343a40; margin: 6px 0 2px 0;}"
    ".wb-how-turn {margin: 1px 0; padding: 1px 4px; border-left: 3px solid transparent;}"
    ".wb-how-turn.planted {background: #fff3bf; border-left-color: #f59f00;}"
    ".wb-how-mark {display: block; color: #7c4a03; font-size: 12px;}"
    ".wb-how-id {color: #495057; font-family: ui-monospace, monospace; font-size: 12px;}"
    ".wb-how-right {background: #ebfbee; border: 1px solid #2b8a3e; border-radius: 6px; padding: 6px 10px;}"
    ".wb-how-did {background: #f8f9fa; border: 1px solid #adb5bd; border-radius: 6px; padding: 6px 10px;}"
    ".wb-verdict {display: inline-block; padding: 1px 8px; border-radius: 10px; font-weight: 600;}"
    ".wb-verdict.good {background: #d3f9d8; color: #1b5e20;} .wb-verdict.bad {background: #ffe3e3; color: #a61e1e;}"
    ".wb-verdict.meh {background: #fff3bf; color: #7c4a03;} .wb-verdict.none {background: #e9ecef; color: #343a40;}"
    ".wb-how table {border-collapse: collapse; font-size: 13px;}"
    ".wb-how td, .wb-how th {border-bottom: 1px solid #dee2e6; padding: 2px 6px; text-align: left;"
    " vertical-align: top;}"
    "</style>"
)
_TONE = {"right": "good", "partly right": "meh", "wrong": "bad", "missed": "bad", "did not fire": "none",
         "to read": "meh", "not checkable": "none"}


def verdict_chip(word: str) -> str:
    return f"<span class='wb-verdict {_TONE.get(word, 'none')}'>{esc(word)}</span>"


@dataclass
class GalleryExample:
    """One method's gallery example as the run recorded it: its conversation, planted phenomena, census entry
    and answer rows (``results.jsonl`` rows of that method on that conversation)."""

    method: str
    conversation: Any  # workbench.data.Conversation
    annotations: Any  # ConversationAnnotations or None
    census: dict
    rows: list[dict]
    memories: list = field(default_factory=list)  # saved memory rows: text for ids a trace names but does not keep
    #: what was skipped while reading it (a damaged results or memory line, ``file:line: reason``; unreadable
    #: annotations): the page lists them, so a row left out is never left out in silence
    problems: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, run_dir, method: str, conv_id: str, *, problems: list | None = None) -> "GalleryExample | None":
        """The example from the run directory ``run_dir``, or None when the run does not hold ``method``'s
        answers on ``conv_id``. A damaged whole file raises ``DamagedFile`` (the caller shows it); damaged lines
        of ``results.jsonl`` or the memory files are skipped and listed in the example's ``problems``, and in
        ``problems`` when given, also when no example is left (every row of it damaged is not "no replay")."""
        found = [] if problems is None else problems
        try:
            return cls._load(run_dir, method, conv_id, found)
        finally:
            if problems is None and found:  # nobody to tell: the lines still must not vanish
                import warnings

                warnings.warn(f"gallery run {run_dir}: {len(found)} damaged line(s) skipped, first {found[0]}")

    @classmethod
    def _load(cls, run_dir, method: str, conv_id: str, problems: list) -> "GalleryExample | None":
        from widgets.mechanisms_census import load_census
        from workbench.rundir import RunDir

        run = Path(run_dir)
        if not run.is_dir():
            return None
        rd = RunDir(run)
        rows = [r for r in rd.results() if r.get("method") == method and r.get("conv_id") == conv_id]
        problems.extend(f"skipped {p}" for p in rd.problems)
        rd.problems.clear()
        if not rows or conv_id not in rd.conversation_ids():
            return None
        value, _ = load_census(run)  # mechanisms.json, else counted from the run's files
        entry = ((value or {}).get("methods") or {}).get(method) or {}
        conversation, memories = rd.conversation(conv_id), rd.memories(method, conv_id)
        problems.extend(f"skipped {p}" for p in rd.problems)
        try:
            from workbench.gallery import annotations as gallery_annotations  # a plugin's own, from its package

            annotations = gallery_annotations(method).get(conv_id)
        except ValueError as exc:  # DatasetError: the example without its planted marks, and why
            annotations = None
            problems.append(f"phenomena annotations unusable: {exc}")
        return cls(method, conversation, annotations, entry, rows, memories, list(problems))

    @property
    def verdict(self) -> tuple[str, str]:
        checked = self.census.get("checked") if isinstance(self.census.get("checked"), dict) else None
        return checked_verdict(checked)

    def answers_right(self) -> tuple[int, int]:
        """(answers the checker holds right, answers)."""
        ok = sum(1 for r in self.rows if isinstance(r.get("check"), dict) and r["check"].get("correct") is True)
        return ok, len(self.rows)

    def cost(self) -> dict:
        """What the example cost as recorded: LLM calls and tokens (construction once, plus every question's) and
        the failures recorded on its rows (failed calls, fallbacks, unusable replies)."""
        def num(row, key):
            v = row.get(key)
            return v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0

        first = self.rows[0] if self.rows else {}
        calls = num(first, "construction_calls") + sum(num(r, "query_calls") for r in self.rows)
        tokens = num(first, "construction_tokens") + sum(num(r, "query_tokens") for r in self.rows)
        kinds: dict[str, int] = {}
        for r in self.rows:
            for f in r["failures"] if isinstance(r.get("failures"), list) else ():
                kind = str(f.get("kind") or "failure") if isinstance(f, dict) else "failure"
                kinds[kind] = kinds.get(kind, 0) + 1
            if r.get("error"):
                kinds["error"] = kinds.get("error", 0) + 1
        return {"calls": int(calls), "tokens": int(tokens), "failures": sum(kinds.values()), "kinds": kinds}

    @property
    def profile(self) -> str | None:
        """The method profile the example ran with (``workbench.methods.profile``), from its saved parameters."""
        params = self.rows[0].get("params") if self.rows else None
        value = params.get("profile") if isinstance(params, dict) else None
        return value if isinstance(value, str) else None


def conversation_html(conv, marks: dict[str, list[str]]) -> str:
    """The transcript, session by session with its date; each planted turn highlighted, what is planted there
    written under it."""
    out = []
    for i, s in enumerate(conv.sessions, 1):
        when = session_when(s) or "undated"
        out.append(f"<div class='wb-how-session'>Session {i} · {esc(when)}</div>")
        for t in s.turns:
            planted = marks.get(t.id) or []
            notes = "".join(f"<span class='wb-how-mark'>▲ {esc(m)}</span>" for m in planted)
            out.append(f"<div class='wb-how-turn{' planted' if planted else ''}'><span class='wb-how-id'>{esc(t.id)}"
                       f"</span> <b>{esc(t.speaker)}</b>: {esc(t.text)}{notes}</div>")
    return "<div class='wb-how-conv' tabindex='0' aria-label='the example conversation'>" + "".join(out) + "</div>"


def _checked_items_html(checked: dict | None) -> str:
    """Each list in the checked census (the edits judged right / wrong, what was missed, the parents or
    episodes judged, ...) as a small table under its name, folded."""
    if not isinstance(checked, dict):
        return ""
    parts = []
    for key, items in checked.items():
        if not isinstance(items, list) or not items:
            continue
        if all(isinstance(i, dict) for i in items):
            cols = [c for c in dict.fromkeys(k for i in items for k in i) if c != "conversation"]
            head = "".join(f"<th>{esc(c)}</th>" for c in cols)
            body = "".join("<tr>" + "".join(f"<td>{esc(_cell(i.get(c)))}</td>" for c in cols) + "</tr>"
                           for i in items)
            table = f"<table><tr>{head}</tr>{body}</table>"
        else:
            table = "<p>" + esc(", ".join(str(i) for i in items)) + "</p>"
        parts.append(f"<details><summary>{esc(key.replace('_', ' '))} ({len(items)})</summary>{table}</details>")
    return "".join(parts)


def _cell(value) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:.0%}" if 0 <= value <= 1 else f"{value:g}"
    return "" if value is None else str(value)


def _counts_items(method: str, census_entry: dict, *, why: bool = False) -> list[str]:
    """The census headline's counts of one method, each marked when it did not fire (``why``: with the census's
    reason for the zero, e.g. "all 16 parents (level >= 2) have a single child")."""
    heads = [h for h in headline({"methods": {method: census_entry}}) if h["method"] == method]
    return [item_text(i) + ("" if i["fired"] else f" (not fired{': ' + i['note'] if why and i.get('note') else ''})")
            for i in heads[0]["items"]] if heads else []


def _counts_html(method: str, census_entry: dict) -> str:
    items = _counts_items(method, census_entry)
    return ("<p><b>Recorded:</b> " + esc("; ".join(items)) + "</p>") if items else ""


def _decisions_html(census_entry: dict) -> str:
    """Its steps' own decisions on the example, each checked against the question's gold (the census's
    ``decisions``, ``workbench.eval.decisions``): whether the mechanism fired when it should have."""
    decided = census_entry.get("decisions")
    if not isinstance(decided, dict) or not decided:
        return ""
    return (f"<p><b>Its decisions, against each question's gold:</b> {esc(tally_text(decided))} "
            "<span class='wb-muted'>(each one under its step in the trace below)</span></p>")


def answers_html(example: GalleryExample) -> str:
    rows = []
    for r in example.rows:
        check = r.get("check") if isinstance(r.get("check"), dict) else {}
        ok = check.get("correct")
        mark = "✓ right" if ok is True else "✗ wrong" if ok is False else "?"
        judge = r.get("judge_label") or "—"
        rows.append(f"<tr><td>{esc(r.get('question'))}</td><td>{esc(r.get('gold'))}</td>"
                    f"<td>{esc(r.get('prediction'))}</td><td><b>{esc(mark)}</b><br><small>{esc(check.get('reason'))}"
                    f"</small></td><td>{esc(judge)}</td></tr>")
    return ("<table><tr><th>question</th><th>gold</th><th>the method's answer</th><th>checker</th>"
            "<th>LLM judge</th></tr>" + "".join(rows) + "</table>")


def profiles_html(name: str, cls: type, small: GalleryExample | None, paper: GalleryExample | None) -> str:
    """The paper profile next to the small one on the same example (issue #39 item 6): calls, tokens, the
    mechanism's verdict, answers right and failures, each as recorded; then the small profile's aids (its
    ``param_notes``) and, when the paper profile is not recorded, how to record it."""
    if not getattr(cls, "profiles", None):
        return ""
    rows = []
    for label, ex in (("small (tuned for the offline models)", small), ("paper (the paper's method)", paper)):
        if ex is None:
            rows.append(f"<tr><td>{esc(label)}</td><td colspan='5' class='wb-muted'>not recorded</td></tr>")
            continue
        cost, (word, line), (ok, n) = ex.cost(), ex.verdict, ex.answers_right()
        kinds = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in sorted(cost["kinds"].items()))
        # the counts behind the verdict, so a "did not fire" or a zero says what the model did instead
        counts = _counts_items(ex.method, ex.census, why=True)
        counts = ("<details><summary><small>the counts recorded</small></summary><ul>"
                  + "".join(f"<li><small>{esc(c)}</small></li>" for c in counts) + "</ul></details>") if counts else ""
        rows.append(f"<tr><td>{esc(label)}</td><td>{cost['calls']}</td><td>{cost['tokens']:,}</td>"
                    f"<td>{verdict_chip(word)} <small>{esc(line)}</small>{counts}</td><td>{ok} of {n}</td>"
                    f"<td>{cost['failures']}{f' <small>({esc(kinds)})</small>' if kinds else ''}</td></tr>")
    table = ("<table><tr><th>profile</th><th>LLM calls</th><th>tokens</th><th>the mechanism</th>"
             "<th>answers right (checker)</th><th>failures recorded</th></tr>" + "".join(rows) + "</table>")
    try:
        aids = cls(profile="small").param_notes
    except Exception as exc:  # a plugin's constructor may need services: say so instead of listing nothing
        aids = {"(could not list)": f"{type(exc).__name__}: {exc}"}
    aid_items = "".join(f"<li><code>{esc(k)}</code>: {esc(v)}</li>" for k, v in aids.items())
    todo = ("" if paper is not None else
            f"<p class='wb-muted'>The paper profile's example is not recorded: <code>python scripts/record_gallery.py "
            f"--profile paper --methods {esc(name)}</code> records it with the 1.5B.</p>")
    return (f"<h4>The paper's method with a small model</h4><p>The same example and model under both profiles "
            "(<code>profile=\"paper\"</code> is the default for any model that is not one of the offline ones). "
            f"</p>{table}{todo}<details><summary>What the small profile changes ({len(aids)})</summary>"
            f"<ul>{aid_items}</ul></details>")


#: how many damaged lines the page lists by name (the rest are counted)
PROBLEMS_LISTED = 5


def problems_note(problems: list[str]) -> str:
    """The example's damaged lines, said above it: how many were skipped, the first few by file and line."""
    if not problems:
        return ""
    items = "".join(f"<li><code>{esc(p)}</code></li>" for p in problems[:PROBLEMS_LISTED])
    more = (f"<li>and {len(problems) - PROBLEMS_LISTED} more</li>" if len(problems) > PROBLEMS_LISTED else "")
    return (f"<div class='wb-how-damage' role='alert' style='border:1px solid #e03131;background:#fff5f5;"
            f"padding:4px 8px;border-radius:6px'><b>{esc(counted(len(problems), 'problem'))} reading this example's "
            "run or cassettes; what they held is left out of the page:</b><ul>" + items + more + "</ul></div>")


class HowItWorksPage:
    """The page of one method class (``name``: its name in the run), with its gallery example when given, and the
    example under the paper profile (``paper``) when that is recorded too."""

    def __init__(self, name: str, cls: type, example: GalleryExample | None = None, *, missing: str = "",
                 paper: GalleryExample | None = None, designed=None):
        self.name, self.cls, self.example, self.missing, self.paper = name, cls, example, missing, paper
        #: the designed run beside the model's (``widgets.designed_view.DesignedExample``, set by its ``attach``;
        #: None: none attached, or no reference file)
        self.designed = designed
        self.how = cls.how_it_works
        self.cassette_problems: list[str] = []  # damaged lines of the committed gallery cassettes (``from_run``)
        self.read_problems: list[str] = []  # lines skipped reading the example's runs, kept or not (``from_run``)

    @property
    def problems(self) -> list[str]:
        """Everything skipped while reading the example (both profiles) and its cassettes, one line each: what
        the page lists under the example (and what a tab may pass to the app's header)."""
        found = [*self.read_problems, *(self.example.problems if self.example else ()),
                 *(self.paper.problems if self.paper else ()), *self.cassette_problems]
        return list(dict.fromkeys(found))

    @classmethod
    def from_run(cls, name: str, method_cls: type, gallery_run, paper_run=None) -> "HowItWorksPage":
        """The page with the example read from ``gallery_run`` (``<run>/gallery``), or saying why it is absent, and
        the paper profile's from ``paper_run`` (``<run>/gallery-paper``) when given. The designed run beside them
        (issue #64) is attached by ``widgets.designed_view.attach``."""
        how = method_cls.how_it_works
        if not how.gallery:
            return cls(name, method_cls)
        skipped: list[str] = []
        try:
            example = GalleryExample.load(gallery_run, name, how.gallery, problems=skipped) if gallery_run else None
            paper = GalleryExample.load(paper_run, name, how.gallery, problems=skipped) if paper_run else None
        except DamagedFile as exc:
            return cls(name, method_cls, missing=f"the gallery run could not be read: {exc}")
        missing = "" if example else (
            f"This run holds no readable replay of the gallery example ({how.gallery}). `workbench demo` replays it "
            "into <run>/gallery; or run `python scripts/record_gallery.py --replay --out <run>/gallery`.")
        page = cls(name, method_cls, example, missing=missing, paper=paper)
        page.read_problems = skipped
        from workbench.gallery import cassette_problems

        try:  # the committed cassettes the gallery replays: a damaged line there is a call the replay missed
            page.cassette_problems = [p for profile in ("small", "paper") if getattr(method_cls, "profiles", None)
                                      or profile == "small" for p in cassette_problems(name, profile)]
        except (OSError, ValueError) as exc:
            page.cassette_problems = [f"the gallery cassettes of {name} could not be checked: {exc}"]
        return page

    @classmethod
    def replay(cls, name: str, out=None) -> "HowItWorksPage":
        """``name``'s page with its gallery example replayed now from the committed cassette (``workbench.gallery``;
        a notebook's first cell), into ``out`` or a temporary directory. A method without an example gets its page
        without one."""
        import tempfile

        from workbench.gallery import cassette, run_gallery, subdir
        from workbench.methods import get_method

        method_cls = get_method(name)
        if not method_cls.how_it_works.gallery:
            return cls(name, method_cls)
        out = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix=f"gallery-{name}-"))
        small = run_gallery(out / subdir("small"), [name])
        paper = (run_gallery(out / subdir("paper"), [name], profile="paper")
                 if cassette(name, "paper").exists() else None)
        return cls.from_run(name, method_cls, small, paper)

    @property
    def title(self) -> str:
        return getattr(self.cls, "title", None) or self.name

    def diagram(self) -> Pipeline:
        """The pipeline diagram, untitled: the page's heading names the method."""
        return Pipeline(self.how.rows())

    def example_html(self) -> str:
        how, ex = self.how, self.example
        if not how.gallery:
            return "<p class='wb-muted'>No gallery example: this method has no signature mechanism to show.</p>"
        if ex is None:
            return f"<p class='wb-muted'>{esc(self.missing)}</p>{problems_note(self.problems)}"
        word, line = ex.verdict
        ok, n = ex.answers_right()
        model = (ex.rows[0].get("llm_model") if ex.rows else None) or "the model"
        marks = planted_marks(ex.annotations)
        # the example's own conversation, not the run's: the header's census counts those (review: "0 of 7 edits"
        # above, "0 of 1 edit" here, with nothing saying they are different conversations)
        where = ex.conversation.id if ex.conversation is not None else "the example"
        did = (f"<div class='wb-how-did'><h4>What {esc(model)} did</h4><p class='wb-muted'>counted on this "
               f"example's conversation ({esc(where)}) alone, not on the run's other conversations</p>"
               f"<p><b>The mechanism:</b> {verdict_chip(word)} {esc(line)}</p>"
               f"<p><b>The answers:</b> {ok} of {n} right (deterministic checker)</p>"
               f"{_counts_html(ex.method, ex.census)}{_decisions_html(ex.census)}"
               f"{_checked_items_html(ex.census.get('checked'))}</div>")
        right = f"<div class='wb-how-right'><h4>The right outcome</h4><p>{esc(how.right_outcome)}</p></div>"
        planted = (f"<p class='wb-muted'>{counted(len(marks), 'planted turn')} marked ▲ "
                   "(sample_data/annotations.json)</p>"
                   if marks else "")
        return (f"<h4>The example: {esc(how.mechanism)} <span class='wb-muted'>· conversation "
                f"{esc(how.gallery)}</span></h4>{problems_note(self.problems)}<div class='wb-how-cols'>"
                "<div class='wb-how-col'>"
                f"{conversation_html(ex.conversation, marks)}{planted}</div><div class='wb-how-col'>{right}{did}</div>"
                f"</div><h4>Its questions</h4>{answers_html(ex)}"
                + profiles_html(self.name, self.cls, ex, self.paper) + self.designed_html())

    def designed_html(self) -> str:
        """The designed run beside the model's (``DesignedExample.section_html``); empty without one."""
        return self.designed.section_html(self) if self.designed is not None else ""

    def html(self) -> str:
        ref = f" <span class='wb-muted'>· {esc(self.how.mechanism)}</span>" if self.how.mechanism else ""
        return box(CSS + f"<div class='wb-how'><h3>How {esc(self.title)} works{ref}</h3><p>{esc(self.how.summary)}</p>"
                   + "<h4>Its pipeline</h4>" + self.diagram().html + self.example_html() + "</div>")

    def _repr_html_(self) -> str:
        return self.html()

    def stepper(self, question: int = 0, *, run: str = "small"):
        """A notebook trace stepper (``TraceStepper``) over one run's answer to the example's ``question``-th
        question (the first is the one the mechanism is about), gold evidence marked. ``run``: ``"small"`` (the
        recorded small profile), ``"paper"`` (the recorded paper profile) or ``"designed"`` (the designed run,
        labelled in the stepper as reference replies written by hand). The model's steppers open at the step where
        it leaves the designed path, when it leaves it while answering this question. None without that run."""
        from widgets.trace_stepper import TraceStepper
        from workbench.trace import Answer

        ex = {"small": self.example, "paper": self.paper,
              "designed": self.designed.example if self.designed else None}.get(run)
        if ex is None or not ex.rows or question >= len(ex.rows):
            return None
        row = ex.rows[question]
        qa = next((q for q in ex.conversation.qa if q.id == row.get("qa_id")), None)
        stepper = TraceStepper(Answer.from_dict(row["answer"]), conversation=ex.conversation,
                               gold_evidence=qa.evidence if qa else (), memories=ex.memories, qa=qa,
                               intro=self.stepper_intro(run, row.get("qa_id")))
        step = self.divergence_at(run)
        if step is not None and step[0] == row.get("qa_id"):
            stepper.goto(stepper.stops.index(step[1]) if step[1] in stepper.stops else 0)
        return stepper

    def divergence_at(self, run: str) -> tuple[str, int] | None:
        """``(qa_id, step)`` where ``run``'s answer leaves the designed path (None: not while answering, or no
        designed run attached)."""
        return self.designed.divergence_at(self, run) if self.designed is not None else None

    def stepper_intro(self, run: str, qa_id) -> str:
        """The line a stepper shows above its controls: the designed run's label, or where a model run leaves
        the designed path (HTML; empty without a designed run)."""
        return self.designed.intro(self, run, qa_id) if self.designed is not None else ""
