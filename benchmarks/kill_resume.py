"""Kill -9 and resume, measured: does an interrupted ``workbench eval`` lose, repeat or change a row?

The README promises that an interrupted evaluation is resumed by running the same command again
into the same ``--out``: rows already written are kept, a torn last line is reported and its
question answered again. Earlier rounds checked that by hand (18 kills); this module makes it a
measurement anyone can repeat::

    python -m benchmarks.kill_resume [--kills 20] [--seed 0] [--tear N] [--per-run 3]
        [--during work|any] [--methods a,b] [--questions N] [--work DIR] [--json FILE] [--markdown FILE]

It prints the JSON summary (or writes it to ``--json``) and the Markdown tables for
``docs/foreign-inputs.md`` (stderr, or ``--markdown``); exit status 1 when any row was lost,
repeated, extra or changed, a damaged line went unreported, a resume failed, a temporary file was
left behind or a manifest or saved memory is not whole.

What it does, all with the real command line (``workbench eval`` as a subprocess, no model):

1. records a cassette for a few methods over the sample data with a rule-based ``ScriptedLLM``
   (an extractive reader, a sentence splitter for fact extraction, a lexical judge), built through
   ``settings.build_method`` as the command line builds them, so ``--llm replay`` answers every call;
2. runs one uninterrupted **reference** run, and a second one that must agree with it row for row
   (else a difference after a resume would mean nothing) and whose time the kill moments are drawn over;
3. starts the same command into a fresh run directory and sends the whole process group SIGKILL
   after a seeded random delay drawn over the reference's duration (by default counted from when
   the first method starts: ``--during``), runs the same command again, kills it again, ... until
   an invocation finishes before its kill moment (or ``--per-run`` kills were made; then it is let
   finish); further kills go to a fresh directory, so they land all over a run rather than only in
   the few seconds a nearly finished run has left;
4. compares each finished directory with the reference: result rows by key (none lost, none on two
   good lines, none extra, the same prediction and verdicts), every damaged ``results.jsonl`` line
   reported by the resume that came after it, every other JSONL file (memories, events, manifests,
   costs) free of damaged lines, ``manifest.json`` whole and naming every method, each saved
   memory's signature valid, no temporary file left behind, and ``workbench report`` of the run
   the same, line for line, as the reference's.

``--tear N`` also cuts the last ``results.jsonl`` line in half after every N-th kill, as a power cut
would leave it (a SIGKILL seldom does: see ``measure``), so the resume's report of damaged lines is
measured too.

Per kill it records when (seconds after that invocation started), in which phase (before any
method started, or in which method), the rows on disk, the damaged lines and temporary files the
kill left, and what the next invocation said (the ``resuming ...`` notice, the questions each
method had left). ``tests/test_kill_resume.py`` runs a small version of it.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: methods of differing kinds: the whole conversation, retrieval, two fact extractors, a hierarchy (each saves a
#: memory: ``--save-memories``)
DEFAULT_METHODS = ("full_context", "naive_rag", "eager_floor", "mem0_style", "hymem")
#: what a resumed row must share with the reference's row of the same key: the answer and every verdict
ANSWER_FIELDS = ("prediction", "judge_label", "judge_error", "error", "check", "scores", "abstention")
SCRIPTED_MODEL = "kill-resume-scripted"

_WORD = re.compile(r"[a-z0-9']+")
_STOP = set("a an the and or of to in on at for with is are was were be do does did what who which when where how "
            "his her their its he she they it i you we my your that this from by as have has had not".split())
_SENT = re.compile(r"(?<=[.!?])\s+")
_TALK = re.compile(r"^([A-Z][\w .'-]{0,40}): (.+)$")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(str(text).lower()) if w not in _STOP and len(w) > 1}


# -- the scripted model: rules, so the recording needs no model and replays the same every time ------------------------
def _prompt(messages) -> str:
    return messages[-1]["content"] if messages else ""


def _question(prompt: str) -> str:
    found = re.findall(r"Question: (.*)", prompt)
    return found[-1] if found else ""


def extractive_reply(messages) -> str:
    """The context line sharing most content words with the question, cut to 12 words ("Not mentioned" when
    none shares any): answers that depend on what each method showed its reader."""
    prompt = _prompt(messages)
    question = _words(_question(prompt))
    best, score = "", 0
    for line in prompt.splitlines():
        m = _TALK.match(line.strip())
        if not m or line.startswith(("Question", "Answer", "Rules")):
            continue
        s = len(question & _words(m.group(2)))
        if s > score:
            best, score = m.group(2), s
    return " ".join(best.split()[:12]) if score else "Not mentioned in the conversation"


def split_facts(messages) -> dict:
    """Fact extraction: every sentence of 5+ words said in the prompt's dialogue, as '<speaker> said: ...'."""
    facts = []
    for line in _prompt(messages).splitlines():
        m = _TALK.match(line.strip())
        if m and not m.group(1).startswith(("Write", "Return", "Extract", "Question", "Answer")):
            facts += [f"{m.group(1)} said: {s.strip()}" for s in _SENT.split(m.group(2)) if len(s.split()) >= 5]
    return {"facts": facts[:20]}


def lexical_judge(messages) -> dict:
    """CORRECT when a content word of the gold answer is in the generated one: verdicts that vary by row."""
    prompt = _prompt(messages)
    gold = re.search(r"Gold answer: (.*)", prompt)
    said = re.search(r"Generated answer: (.*)", prompt)
    ok = bool(gold and said and _words(gold.group(1)) & _words(said.group(1)))
    return {"reasoning": "scripted lexical rule", "label": "CORRECT" if ok else "WRONG"}


def scripted_llm(methods):
    """A ``ScriptedLLM`` that does not claim to be a small offline model: a replay of its cassette is judged by
    the recorded model's name (not small), so the methods must take the same profile while recording."""
    from workbench.llm import ScriptedLLM

    class _Scripted(ScriptedLLM):
        small_model = False

    rules = {f"{m}.answer": extractive_reply for m in methods}
    rules.update({f"{m}.extract": split_facts for m in methods})
    rules["judge.locomo"] = lexical_judge
    rules["hymem.light"] = lambda msgs: {"finished": 1, "answer": extractive_reply(msgs)}
    rules["hymem.summarize"] = lambda msgs: {"keywords": sorted(_words(_prompt(msgs)))[:5] or ["none"]}
    return _Scripted(rules, model=SCRIPTED_MODEL, default="auto")


def record_cassette(path: Path, methods, *, questions: int | None) -> Path:
    """Record every call the run will make (methods and judge) into ``path`` (in this process)."""
    from workbench.data import load_dataset
    from workbench.embed import embedder_from_spec
    from workbench.eval import LLMJudge, evaluate
    from workbench.eval.settings import build_method
    from workbench.llm import CachedLLM

    llm = CachedLLM(scripted_llm(methods), path, mode="record")
    data = load_dataset("sample")
    for name in methods:
        setup = build_method(name, llm=llm, embedder=embedder_from_spec("hash"), params={}, data="sample",
                             calibration="off", warn=False)
        evaluate(setup.method, data, judge=LLMJudge(llm), questions=questions, progress=False)
    return path


def workbench_command() -> list[str]:
    """The installed ``workbench`` script beside this interpreter (``python -m workbench`` if there is none)."""
    script = Path(sys.executable).with_name("workbench")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "workbench"]


def eval_argv(out: Path, cassette: Path, methods, questions: int | None) -> list[str]:
    argv = [*workbench_command(), "eval", "--method", ",".join(methods), "--data", "sample", "--llm", "replay",
            "--cassette", str(cassette), "--judge", "same", "--embedder", "hash", "--calibration", "off",
            "--save-memories", "--no-progress", "--out", str(out)]
    return argv + (["--questions", str(questions)] if questions else [])


# -- one invocation ----------------------------------------------------------------------------------------------------
@dataclass
class Invocation:
    """One ``workbench eval`` process: how long it ran, whether it was killed, what it said on stderr."""

    seconds: float
    killed: bool
    returncode: int | None
    stderr: str
    ready_s: float | None = None  # when the first method's estimate appeared on stderr (startup over)

    @property
    def notice(self) -> dict | None:
        """The ``resuming ...: N rows kept; M damaged ... skipped`` notice, when it printed one."""
        m = re.search(r"resuming .*?: (\d+) rows kept; (\d+) damaged or partial line\(s\) skipped", self.stderr)
        return {"kept": int(m.group(1)), "damaged": int(m.group(2))} if m else None

    @property
    def left(self) -> dict[str, int]:
        """Questions each method had still to answer, from the estimate it printed before starting."""
        return {m: int(q) for m, q in re.findall(r"estimate for (\S+) \(.*?\): \d+ conversation\(s\), \d+ turns, "
                                                  r"(\d+) questions", self.stderr)}

    @property
    def started_work(self) -> bool:
        """Past the resume check: the first method printed its estimate (printed after the notice)."""
        return bool(self.left)


def run_once(argv, *, kill_after: float | None, timeout: float, log: Path, from_ready: bool = False) -> Invocation:
    """Run ``argv`` in its own process group; SIGKILL the whole group ``kill_after`` seconds after it started, or
    with ``from_ready`` after its first method printed its estimate (None: let it finish, within ``timeout``).
    stderr goes to ``log`` (a file, so a killed process loses nothing it wrote)."""
    start = time.monotonic()
    hang = start + timeout
    limit = hang if kill_after is None or from_ready else start + kill_after
    ready = None
    with open(log, "wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        while proc.poll() is None and time.monotonic() < limit:
            time.sleep(min(0.02, max(limit - time.monotonic(), 0.0)))
            if ready is None and b"estimate for " in log.read_bytes():
                ready = time.monotonic() - start
                if from_ready and kill_after is not None:
                    limit = min(hang, start + ready + kill_after)
        end = time.monotonic()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the group leader is not reaped yet, so its group still exists
            proc.wait()
    # a process that ended on its own in the last instant is not counted as killed
    killed = proc.returncode == -signal.SIGKILL
    if killed and (kill_after is None or (from_ready and ready is None)):
        raise RuntimeError(f"{' '.join(argv)} did not finish within {timeout:.0f} s (a hang; see {log})")
    return Invocation(end - start, killed, None if killed else proc.returncode,
                      log.read_text(encoding="utf-8", errors="replace"), ready)


# -- what a run directory holds ----------------------------------------------------------------------------------------
@dataclass
class RunState:
    """What is on disk in a run directory, read line by line (``ResultsStore`` would hide a repeated key)."""

    rows: dict = field(default_factory=dict)  # key -> the first good row of that key
    repeated: Counter = field(default_factory=Counter)  # key -> good lines beyond the first
    damaged: dict[str, list[str]] = field(default_factory=dict)  # file (relative) -> "line: reason"
    temp_files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # manifest, memories: what is not whole


def _jsonl_files(run: Path):
    return sorted(p for p in run.rglob("*.jsonl") if p.is_file())


def temp_files(run: Path) -> list[str]:
    """Files a writer meant to rename away: ``.<name>.*.tmp`` (``write_text_atomic``), ``*.tmp``
    (``state.pkl.tmp``). Lock files (``*.lock``) are left by design and not counted."""
    return sorted(str(p.relative_to(run)) for p in run.rglob("*") if p.is_file() and p.name.endswith(".tmp"))


def read_state(run: Path, *, whole: bool = False) -> RunState:
    """The run directory's rows and damage; ``whole`` also checks the manifest and every saved memory."""
    from workbench.eval.store import row_key
    from workbench.jsonl import read_jsonl

    state = RunState(temp_files=temp_files(run) if run.is_dir() else [])
    for path in _jsonl_files(run) if run.is_dir() else []:
        got = read_jsonl(path)
        rel = str(path.relative_to(run))
        if got.bad:
            state.damaged[rel] = [f"{b.line}: {b.reason}" for b in got.bad]
        if rel == "results.jsonl":
            for row in got.rows:
                key = row_key(row)
                if key in state.rows:
                    state.repeated[key] += 1
                else:
                    state.rows[key] = row
    if whole:
        state.problems = whole_problems(run)
    return state


def whole_problems(run: Path) -> list[str]:
    """What is not whole: the manifest (parses, names an evaluation per method), each saved memory (its files
    there, its JSON parses, its pickle's signature verifies on this machine)."""
    from workbench.jsonl import DamagedFile, read_json
    from workbench.trust import UntrustedStateError, check_signature

    problems = []
    try:
        manifest = read_json(run / "manifest.json")
        if not manifest.get("evaluations"):
            problems.append("manifest.json: no evaluations")
    except (DamagedFile, FileNotFoundError) as exc:
        problems.append(f"manifest.json: {exc}")
    if (run / "manifest.json.damaged").exists():
        problems.append("manifest.json.damaged: a manifest was found damaged and set aside")
    for folder in sorted(p for p in (run / "memories").glob("*/*") if p.is_dir()):
        rel = folder.relative_to(run)
        missing = [n for n in ("params.json", "state.pkl", "state.sig", "memories.jsonl", "events.jsonl",
                               "structures.json") if not (folder / n).is_file()]
        if missing:
            problems.append(f"{rel}: missing {', '.join(missing)}")
            continue
        for name in ("params.json", "structures.json"):
            try:
                read_json(folder / name, expect=None)
            except DamagedFile as exc:
                problems.append(str(exc))
        try:
            check_signature(folder, (folder / "state.pkl").read_bytes())
        except UntrustedStateError as exc:
            problems.append(f"{rel}: {exc}")
    return problems


def _answer(row: dict) -> dict:
    return {k: row.get(k) for k in ANSWER_FIELDS}


def compare(ref: RunState, got: RunState, ref_dir: Path, got_dir: Path) -> dict:
    """Rows lost, repeated, extra and differing against the reference, and what else is not as the reference."""
    lost = [k for k in ref.rows if k not in got.rows]
    extra = [k for k in got.rows if k not in ref.rows]
    differing = [k for k in ref.rows if k in got.rows and _answer(ref.rows[k]) != _answer(got.rows[k])]
    methods = {k[0] for k in ref.rows}
    problems = list(got.problems)
    try:
        evaluated = {e.get("method") for e in json.loads((got_dir / "manifest.json").read_text())["evaluations"]}
        problems += [f"manifest.json: no evaluation of {m}" for m in sorted(methods - evaluated)]
    except (OSError, ValueError, KeyError, TypeError) as exc:  # also in got.problems when read with whole=True
        problems.append(f"manifest.json: its evaluations cannot be listed ({type(exc).__name__}: {exc})")
    ref_memories = {str(p.relative_to(ref_dir)) for p in (ref_dir / "memories").glob("*/*")}
    got_memories = {str(p.relative_to(got_dir)) for p in (got_dir / "memories").glob("*/*")}
    problems += [f"{m}: saved in the reference, missing here" for m in sorted(ref_memories - got_memories)]
    for rel in sorted(ref_memories & got_memories):
        for name in ("memories.jsonl", "events.jsonl"):
            a, b = ref_dir / rel / name, got_dir / rel / name
            if a.is_file() and b.is_file() and _line_count(a) != _line_count(b):
                problems.append(f"{rel}/{name}: {_line_count(b)} lines, the reference {_line_count(a)}")
    return {"lost": [list(k) for k in lost], "extra": [list(k) for k in extra],
            "repeated": [[*k, n] for k, n in got.repeated.items()],
            "differing": [{"key": list(k), "reference": _answer(ref.rows[k]), "resumed": _answer(got.rows[k])}
                          for k in differing],
            "problems": problems, "temp_files": got.temp_files}


_READ_PROBLEMS = re.compile(r"^(\d+) problem\(s\) reading the run: [^\n]*\n\n?", re.M)  # the line, its blank line


def report_text(run: Path, output: Path) -> tuple[str, int]:
    """``workbench report RUN --format md`` (the real command): its text without the line that lists the
    problems met reading the run, and how many problems that line counts. What a reader of the resumed run is
    shown, table for table, must be what the reference shows; the damaged lines a resume left are the one
    expected difference, and the report must name each of them."""
    proc = subprocess.run([*workbench_command(), "report", str(run), "--format", "md", "--output", str(output)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"workbench report {run} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    text = output.read_text(encoding="utf-8")
    found = _READ_PROBLEMS.search(text)
    return _READ_PROBLEMS.sub("", text), int(found.group(1)) if found else 0


def _line_count(path: Path) -> int:
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())


# -- the measurement ---------------------------------------------------------------------------------------------------
@dataclass
class Kill:
    """One SIGKILL and what the next invocation made of it."""

    n: int
    run: int
    at_s: float
    phase: str  # "startup" (no method had started) or the method that was running
    rows_on_disk: int  # distinct good result rows right after the kill
    damaged_after: int  # damaged results.jsonl lines on disk right after the kill (all kills so far)
    damaged_other: list[str]  # damaged lines in any other JSONL file right after the kill
    temp_files: list[str]
    torn: bool = False  # ``--tear``: after this kill the last results line was cut in half (a simulated power cut)
    resume_notice: dict | None = None  # what the next invocation printed ("N rows kept; M damaged ... skipped")
    resume_left: dict | None = None  # questions per method the next invocation still had to answer
    resume_started: bool = False  # the next invocation got past its resume check (else it was killed before)
    unreported: int = 0  # damaged results.jsonl lines the next invocation did not report although it checked


@dataclass
class Summary:
    command: str
    methods: list[str]
    questions: int | None
    seed: int
    kills_per_run: int
    tear: int  # every tear-th kill also cuts the last results line in half (0: never)
    during: str  # "work": kill moments drawn after the first method started; "any": from the process start
    reference_s: float
    reference_startup_s: float  # of which before the first method started
    reference_rows: int
    kills: int = 0
    runs: int = 0
    resumes: int = 0  # invocations after a kill (each resume is one more ``workbench eval`` of the same command)
    rows_lost: int = 0
    rows_repeated: int = 0
    rows_extra: int = 0
    rows_differing: int = 0
    torn_lines: int = 0  # results lines cut in half on purpose (``--tear``), a subset of damaged_lines
    damaged_lines: int = 0  # damaged results.jsonl lines in the finished run directories (all runs)
    damaged_reported: int = 0  # of those, reported by the last resume of their run (it lists them all)
    damaged_unreported: int = 0  # lines a resume checked over without reporting them (summed over resumes)
    damaged_other_files: int = 0  # damaged lines in memories, events, manifests, costs (not expected at all)
    temp_files_left: int = 0
    reports_differing: int = 0  # run directories whose ``workbench report`` differs from the reference's
    resume_failures: list[str] = field(default_factory=list)  # invocations that ended non-zero without a kill
    problems: list[str] = field(default_factory=list)
    per_kill: list[Kill] = field(default_factory=list)
    per_run: list[dict] = field(default_factory=list)
    next_tear: int = 0  # the first kill number at which a line may be torn next (``tear``)
    reference_report: str = ""  # the reference's ``workbench report --format md``

    @property
    def ok(self) -> bool:
        return not (self.rows_lost or self.rows_repeated or self.rows_extra or self.rows_differing
                    or self.damaged_unreported or self.damaged_other_files or self.temp_files_left
                    or self.reports_differing or self.resume_failures or self.problems)

    def to_dict(self) -> dict:
        skip = ("per_kill", "per_run", "next_tear", "reference_report")
        return {**{k: v for k, v in asdict(self).items() if k not in skip}, "ok": self.ok,
                "per_kill": [asdict(k) for k in self.per_kill], "per_run": self.per_run}


def tear_last_line(path: Path) -> bool:
    """Cut the last line of ``path`` in half (its newline and second half gone), as a write cut short by a power
    loss leaves it; False when there is no whole last line to cut."""
    data = path.read_bytes() if path.is_file() else b""
    if not data.endswith(b"\n") or len(data) < 2:
        return False
    start = data.rfind(b"\n", 0, len(data) - 1) + 1
    with open(path, "r+b") as f:
        f.truncate(start + (len(data) - start) // 2)
    return True


def _phase(inv: Invocation, state: RunState, ref: RunState) -> str:
    """Where the kill landed: ``startup`` (no method had started), ``<method>: answering`` (its rows not all on
    disk yet) or ``<method>: after its rows`` (its manifest entry, its census)."""
    started = list(inv.left)
    if not started:
        return "startup"
    method = started[-1]
    done = sum(1 for k in state.rows if k[0] == method)
    return f"{method}: {'after its rows' if done >= sum(1 for k in ref.rows if k[0] == method) else 'answering'}"


def measure(*, kills: int = 20, seed: int = 0, per_run: int = 3, methods=DEFAULT_METHODS, questions: int | None = None,
            during: str = "work", tear: int = 0, work: Path | None = None, progress=print) -> Summary:
    """Record, run the reference, then kill and resume until ``kills`` kills were made (see the module doc).

    Each invocation's kill moment is drawn uniformly over the reference run's duration; an invocation that
    finishes first (a resume has less to do) ends its run directory. ``during="work"`` counts that moment
    from when the invocation's first method printed its estimate, over the reference's time from there to
    its end: on a short run the interpreter's startup is most of the time, and a kill there tests only that
    a rerun starts. ``during="any"`` counts from the process start, over the whole reference duration.

    A SIGKILL seldom tears a line: a row is appended with one ``write``, and Linux stops a write to a file for
    a fatal signal only between pages, so a kill must land inside the write of a row longer than a page. A
    power cut or a full disk leaves half a line more readily, and then the resume must say so and answer
    that question again: ``tear=N`` cuts the last line of ``results.jsonl`` in half after every N-th
    kill (the next one that finds a whole last line), to measure that path too."""
    if kills < 0 or per_run < 1:
        raise ValueError("--kills must be >= 0 and --per-run >= 1")
    if during not in ("work", "any"):
        raise ValueError(f"during must be 'work' or 'any', got {during!r}")
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="kill-resume-")) if own else Path(work)
    work.mkdir(parents=True, exist_ok=True)
    try:
        return _measure(work, kills, seed, per_run, list(methods), questions, during, tear, progress)
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


def _measure(work: Path, kills: int, seed: int, per_run: int, methods: list[str], questions, during, tear,
             progress) -> Summary:
    rng = random.Random(seed)
    cassette = work / "cassette.jsonl"
    if cassette.exists():
        cassette.unlink()
    record_cassette(cassette, methods, questions=questions)
    ref_dir = work / "reference"
    shutil.rmtree(ref_dir, ignore_errors=True)
    ref_inv = run_once(eval_argv(ref_dir, cassette, methods, questions), kill_after=None, timeout=600,
                       log=work / "reference.stderr")
    if ref_inv.returncode != 0:
        raise RuntimeError(f"the reference run failed ({ref_inv.returncode}): {ref_inv.stderr[-2000:]}")
    ref = read_state(ref_dir, whole=True)
    bad_ref = [f"{k}: {r['error']}" for k, r in ref.rows.items() if r.get("error")]
    if bad_ref or ref.problems or ref.damaged or not ref.rows:
        raise RuntimeError("the reference run is not clean (the cassette must cover every call): "
                           f"{(bad_ref + ref.problems + [str(ref.damaged)])[:5]}")
    # a second uninterrupted run: the comparison means something only if two plain runs agree, and its
    # timing (caches warm, as for every later invocation) is what kill moments are drawn over
    twin_dir = work / "reference-twin"
    shutil.rmtree(twin_dir, ignore_errors=True)
    twin_inv = run_once(eval_argv(twin_dir, cassette, methods, questions), kill_after=None, timeout=600,
                        log=work / "reference-twin.stderr")
    twin = compare(ref, read_state(twin_dir, whole=True), ref_dir, twin_dir)
    if twin_inv.returncode != 0 or any(twin[k] for k in ("lost", "extra", "repeated", "differing", "problems")):
        raise RuntimeError(f"two uninterrupted runs disagree, so a resumed one cannot be compared: {twin}")
    ref_inv = twin_inv
    # startup: the seconds before the first method printed its estimate (imports, dataset, resume check)
    startup = ref_inv.ready_s if ref_inv.ready_s is not None else ref_inv.seconds / 2
    span = max(ref_inv.seconds - startup, 0.1) if during == "work" else ref_inv.seconds
    command = " ".join(eval_argv(Path("<out>"), Path("<cassette>"), methods, questions)[len(workbench_command()):])
    summary = Summary(command=f"workbench {command}", methods=methods, questions=questions, seed=seed,
                      kills_per_run=per_run, tear=tear, during=during, reference_s=round(ref_inv.seconds, 2),
                      reference_startup_s=round(startup, 2), reference_rows=len(ref.rows))
    summary.next_tear = tear
    summary.reference_report, named = report_text(ref_dir, work / "reference.report.md")
    if named:
        raise RuntimeError(f"the reference's report names {named} problem(s) reading it: "
                           f"{work / 'reference.report.md'}")
    progress(f"reference: {len(ref.rows)} rows in {ref_inv.seconds:.1f} s (startup {startup:.1f} s)")
    while summary.kills < kills:
        summary.runs += 1
        fresh_work = _one_run(work, summary, rng, per_run, kills, ref, ref_dir, cassette, span, progress)
        if fresh_work is not None and summary.during == "work":
            span = min(span, fresh_work)  # a fresh run finished before its kill: the expected work is shorter
    return summary


def _one_run(work, summary: Summary, rng, per_run, kills, ref, ref_dir, cassette, span, progress) -> float | None:
    """One run directory killed and resumed until it finishes; compared with the reference into ``summary``.
    Returns the work seconds of its first invocation when that one finished before its kill moment."""
    run_n = summary.runs
    fresh_work = None
    out = work / f"run{run_n}"
    shutil.rmtree(out, ignore_errors=True)
    argv = eval_argv(out, cassette, summary.methods, summary.questions)
    pending: Kill | None = None  # the kill whose resume is the next invocation
    run_kills = 0
    damaged_seen = reported_last = 0  # damaged lines the latest resume check saw on disk, and reported
    for attempt in range(per_run + 1):
        may_kill = run_kills < per_run and summary.kills < kills
        delay = rng.uniform(0.0, span) if may_kill else None
        inv = run_once(argv, kill_after=delay, timeout=max(120.0, 20 * summary.reference_s),
                       log=work / f"run{run_n}.{attempt}.stderr", from_ready=summary.during == "work")
        if pending is not None:  # this invocation is the resume of the kill before it
            summary.resumes += 1
            pending.resume_notice, pending.resume_left = inv.notice, inv.left or None
            pending.resume_started = inv.started_work
            if inv.started_work:  # it checked the results file: each damaged line there must be in its notice
                reported = inv.notice["damaged"] if inv.notice else 0
                pending.unreported = max(pending.damaged_after - reported, 0)
                summary.damaged_unreported += pending.unreported
                damaged_seen, reported_last = pending.damaged_after, min(reported, pending.damaged_after)
        if not inv.killed:
            if attempt == 0 and inv.ready_s is not None:
                fresh_work = inv.seconds - inv.ready_s
            if inv.returncode != 0:
                summary.resume_failures.append(f"run {run_n}, invocation {attempt}: exit {inv.returncode}: "
                                               f"{inv.stderr.strip().splitlines()[-1:] or ['(no output)']}")
            break
        summary.kills += 1
        torn = bool(summary.tear) and summary.kills >= summary.next_tear and tear_last_line(out / "results.jsonl")
        if torn:
            summary.torn_lines += 1
            summary.next_tear = summary.kills + summary.tear
        state = read_state(out)
        damaged = len(state.damaged.get("results.jsonl", []))
        other = [f"{f}:{line}" for f, lines in state.damaged.items() if f != "results.jsonl" for line in lines]
        run_kills += 1
        pending = Kill(summary.kills, run_n, round(inv.seconds, 2), _phase(inv, state, ref), len(state.rows),
                       damaged, other, state.temp_files, torn)
        summary.per_kill.append(pending)
        progress(f"kill {summary.kills} (run {run_n}) at {inv.seconds:.2f} s in {pending.phase}: "
                 f"{len(state.rows)} rows on disk, {damaged} damaged line(s), {len(state.temp_files)} temp file(s)")
    final = read_state(out, whole=True)
    diff = compare(ref, final, ref_dir, out)
    new_damage = len(final.damaged.get("results.jsonl", []))
    summary.damaged_lines += new_damage
    summary.damaged_reported += reported_last  # the last resume reports every damaged line of the file
    if new_damage > damaged_seen:  # damaged lines no resume checked (cannot happen: the last invocation checks)
        summary.damaged_unreported += new_damage - damaged_seen
    other = sum(len(v) for f, v in final.damaged.items() if f != "results.jsonl")
    summary.damaged_other_files += other
    summary.rows_lost += len(diff["lost"])
    summary.rows_repeated += len(diff["repeated"])
    summary.rows_extra += len(diff["extra"])
    summary.rows_differing += len(diff["differing"])
    summary.temp_files_left += len(diff["temp_files"])
    try:
        text, named = report_text(out, work / f"run{run_n}.report.md")
        report_same = text == summary.reference_report
        if named != new_damage + other:
            summary.problems.append(f"run {run_n}: workbench report names {named} problem(s) reading the run, "
                                    f"which holds {new_damage + other} damaged line(s)")
    except RuntimeError as exc:  # a report that fails over a resumed run is a finding, not the end of the measure
        summary.problems.append(f"run {run_n}: {exc}")
        report_same = False
    summary.reports_differing += not report_same
    summary.problems += [f"run {run_n}: {p}" for p in diff["problems"]]
    summary.per_run.append({"run": run_n, "kills": run_kills, "rows": len(final.rows),
                            "damaged_results_lines": new_damage, "damaged_other_lines": other,
                            "report_as_reference": report_same,
                            **{k: diff[k] for k in ("lost", "repeated", "extra", "differing", "temp_files",
                                                    "problems")}})
    progress(f"run {run_n}: {run_kills} kill(s), {len(final.rows)} rows; lost {len(diff['lost'])}, repeated "
             f"{len(diff['repeated'])}, differing {len(diff['differing'])}, damaged lines {new_damage}")
    return fresh_work


# -- reporting ---------------------------------------------------------------------------------------------------------
def markdown(summary: Summary) -> str:
    """The outcome counts and the per-kill table, for ``docs/foreign-inputs.md``."""
    s = summary
    when = ("drawn once its first method has started" if s.during == "work"
            else "drawn from the process start, startup included")
    options = (f" --tear {s.tear}" if s.tear else "") + ("" if s.during == "work" else " --during any")
    lines = [f"`python -m benchmarks.kill_resume --kills {s.kills} --seed {s.seed}{options}` runs "
             f"`{s.command}` ({len(s.methods)} methods, {s.reference_rows} result rows, {s.reference_s:.1f} s "
             f"uninterrupted of which {s.reference_startup_s:.1f} s before the first method starts), sends "
             f"its process group SIGKILL at seeded random moments ({when}) and reruns the same command into the same "
             f"`--out` until it finishes ({s.runs} run directories, at most {s.kills_per_run} kills each).", "",
             "| outcome | count |", "|---|---|",
             f"| kills (SIGKILL to the process group) | {s.kills} |",
             *[f"| ... landing {where} | {n} |" for where, n in _where(s.per_kill).items()],
             f"| resumes (the same command again) | {s.resumes} |",
             f"| rows lost | {s.rows_lost} |",
             f"| rows on two good lines (duplicated) | {s.rows_repeated} |",
             f"| rows not in the reference | {s.rows_extra} |",
             f"| rows differing from the reference (prediction, verdicts) | {s.rows_differing} |",
             *([f"| last `results.jsonl` line cut in half after a kill (`--tear {s.tear}`) | {s.torn_lines} |"]
               if s.tear else []),
             f"| damaged `results.jsonl` lines at the end{' (cut or torn)' if s.tear else ''} | {s.damaged_lines} |",
             f"| of those reported by the resume (`file:line: reason`) | {s.damaged_reported} |",
             f"| damaged lines never reported | {s.damaged_unreported} |",
             f"| damaged lines in memories, events, manifests, costs | {s.damaged_other_files} |",
             f"| temporary files left behind | {s.temp_files_left} |",
             f"| run directories whose `workbench report` differs from the reference's | {s.reports_differing} |",
             f"| resumes that failed | {len(s.resume_failures)} |",
             f"| manifest or saved-memory problems | {len(s.problems)} |", "",
             "| kill | run | at s | phase | rows on disk | damaged lines | temp files | the resume said |",
             "|---|---|---|---|---|---|---|---|"]
    for k in s.per_kill:
        if not k.resume_started:
            said = "killed again before its resume check"
        else:
            notice = (f"kept {k.resume_notice['kept']}, skipped {k.resume_notice['damaged']} damaged line(s)"
                      if k.resume_notice else "no damaged line (no notice)")
            left = ", ".join(f"{m} {q}" for m, q in (k.resume_left or {}).items())
            said = f"{notice}; questions left: {left}"
        lines.append(f"| {k.n} | {k.run} | {k.at_s:.2f} | {k.phase} | {k.rows_on_disk} | "
                     f"{k.damaged_after}{' (one cut)' if k.torn else ''} | "
                     f"{len(k.temp_files)} | {said} |")
    return "\n".join(lines)


def _where(kills) -> dict[str, int]:
    """Kills by phase kind: before any method started, while a method answered, after a method's last row."""
    def kind(k: Kill) -> str:
        if k.phase == "startup":
            return "before any method started"
        if k.phase.endswith("answering"):
            return "while a method worked (ingest, saving its memory, answers, judge)"
        return "after a method's last row (its manifest entry, the census)"

    kinds = Counter(kind(k) for k in kills)
    return dict(sorted(kinds.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs to send in all (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill moments (default 0)")
    parser.add_argument("--per-run", type=int, default=3,
                        help="kills per run directory before it is let finish (default 3)")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS), help="methods, comma-separated")
    parser.add_argument("--questions", type=int, default=0,
                        help="at most N questions per conversation (default 0: all 76 of the sample data)")
    parser.add_argument("--during", choices=("work", "any"), default="work",
                        help="work: kill moments drawn once the first method started (default); any: from the "
                             "process start, startup included")
    parser.add_argument("--tear", type=int, default=0,
                        help="also cut the last results line in half after every N-th kill, as a power cut "
                             "would (default 0: never)")
    parser.add_argument("--work", default=None, help="keep the run directories here (default: a temporary folder)")
    parser.add_argument("--json", default=None, help="write the JSON summary to this file (default: stdout)")
    parser.add_argument("--markdown", default=None, help="write the Markdown tables to this file")
    args = parser.parse_args(argv)
    summary = measure(kills=args.kills, seed=args.seed, per_run=args.per_run,
                      methods=[m.strip() for m in args.methods.split(",") if m.strip()],
                      questions=args.questions or None, during=args.during, tear=args.tear,
                      work=Path(args.work) if args.work else None,
                      progress=lambda line: print(line, file=sys.stderr, flush=True))
    text = json.dumps(summary.to_dict(), indent=2, default=str)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)
    table = markdown(summary)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n", encoding="utf-8")
    print(table, file=sys.stderr)
    return 0 if summary.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
