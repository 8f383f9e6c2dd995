"""Write a small, honest demo run directory for the app, the widgets and their tests.

No language model is involved: the LLM is a ``ScriptedLLM`` whose replies come from two plain
rules (an extractive reader that returns the context sentence sharing most words with the
question, and a fact splitter for EagerFacts), the embedder is ``HashEmbedder`` and the "judge" is
a lexical rule. The manifest says so in its ``scripted`` and ``label`` fields, and the app shows
that label, so nobody mistakes these numbers for results.

    python scripts/make_demo_run.py runs/demo                     # sample data, 2 conversations
    python scripts/make_demo_run.py /tmp/run --inject --max-questions 8 --conversations 1
    python scripts/make_demo_run.py /tmp/big --data locomo:../shared/data/locomo/locomo10_dev.json

``--inject`` appends a session whose turns contain ``<script>`` and ``<img onerror>`` payloads (and
a question about them) so the escaping of every view can be tested in a real browser.
"""
from __future__ import annotations

import argparse
import re
import shutil
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from workbench import __version__
from workbench.data import QA, Conversation, Dataset, Session, Turn, load_dataset
from workbench.embed import HashEmbedder
from workbench.eval import evaluate
from workbench.jsonl import write_json_atomic
from workbench.llm import ScriptedLLM
from workbench.methods import get_method

DEFAULT_METHODS = ("naive_rag", "full_context", "eager_facts")
SCRIPT_LABEL = ("SCRIPTED DEMO RUN: replies come from a rule-based ScriptedLLM (extractive heuristic), "
                "embeddings from HashEmbedder, correctness from a lexical rule. No language model was run; "
                "the numbers show the plumbing, not any method's quality.")
INJECTION_SCRIPT = "<script>window.__pwned=1</script>"
INJECTION_IMG = '<img src=x onerror="window.__pwned=2">'

_STOP = set("a an the and or of to in on at for with is are was were be been do does did what who whom which when "
            "where why how his her their its he she they it i you we my your our that this there from by as "
            "about have has had not no yes so if than then into out up down over after before would could "
            "should will".split())
_WORD = re.compile(r"[a-z0-9']+")
_SENT = re.compile(r"(?<=[.!?])\s+")


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(str(text).lower()) if w not in _STOP and len(w) > 1}


# -- the scripted "model": two documented rules -------------------------------------------------
def _candidate_lines(prompt: str) -> list[str]:
    skip = ("Rules", "- ", "Question:", "Answer:", "Memories", "Session on", "Below is", "Answer the", "The question")
    return [ln for ln in prompt.splitlines() if ": " in ln and not ln.startswith(skip)]


def extractive_answer(messages) -> str:
    """Rule 1 (answer prompts): the sentence, in the context line sharing most content words with
    the question (speaker names ignored), that itself shares most; at most 15 words. No overlap ->
    "Not mentioned"."""
    prompt = messages[-1]["content"]
    found = re.findall(r"Question: (.*)\nAnswer:", prompt)
    lines = _candidate_lines(prompt)
    speakers = {w for ln in lines for w in content_words(ln.split(": ", 1)[0].split("]")[-1])}
    question = content_words(found[-1] if found else "") - speakers
    best, best_score = "", 0
    for line in lines:
        text = line.split(": ", 1)[1]
        score = len(question & content_words(text))
        if score > best_score:
            best, best_score = text, score
    if not best_score:
        return "Not mentioned in the conversation"
    sentence = max(_SENT.split(best), key=lambda s: len(question & content_words(s)))
    return " ".join(sentence.split()[:15])


def split_facts(messages) -> dict:
    """Rule 2 (EagerFacts extraction): every sentence of 5+ words becomes "<speaker> said: ..."."""
    facts = []
    for line in messages[-1]["content"].splitlines():
        m = re.match(r"^([A-Z][\w .'-]{0,40}): (.+)$", line)
        if not m or m.group(1).startswith(("Write", "Return", "Extract")):
            continue
        facts += [f"{m.group(1)} said: {s.strip()}" for s in _SENT.split(m.group(2)) if len(s.split()) >= 5]
    return {"facts": facts}


def scripted_llm() -> ScriptedLLM:
    rules = {f"{m}.answer": extractive_answer for m in ("naive_rag", "full_context", "eager_facts")}
    rules["eager_facts.extract"] = split_facts
    return ScriptedLLM(rules, model="scripted-extractive", default="auto")


class RuleJudge:
    """Lexical stand-in for the LLM judge, with the ``LLMJudge`` interface the harness calls:
    CORRECT when every content word of the gold answer appears in the prediction. Category 5 is
    not judged (the harness scores it with the official adversarial rule)."""

    model = "rule:gold-content-words-in-prediction"
    temperature = None
    spec = {"class": "RuleJudge", "model": model, "prompt_hash": None}

    def applies_to(self, qa: QA) -> bool:
        return qa.category != 5

    def judge(self, qa: QA, prediction: str, *, method: str = ""):
        from workbench.eval.judge import JudgeVerdict

        if not self.applies_to(qa):
            return None
        need = content_words(qa.answer)
        ok = bool(need) and need <= content_words(prediction)
        return JudgeVerdict(ok, "CORRECT" if ok else "WRONG", "scripted demo: lexical rule, not a model",
                            model=self.model)


# -- data ------------------------------------------------------------------------------------------
def inject(conv: Conversation) -> Conversation:
    """Append a session whose turns carry HTML/JS payloads, and a question whose evidence is there."""
    last = conv.sessions[-1]
    n = len(conv.sessions) + 1
    when = (last.date_time or last.turns[-1].time) + timedelta(days=1) if (last.date_time or last.turns) else None
    a, b = conv.speakers[0], conv.speakers[-1]
    turns = (Turn(f"D{n}:1", a, f"Testing the viewer: {INJECTION_SCRIPT} should show up as text.", f"S{n}", when),
             Turn(f"D{n}:2", b, f"And this too: {INJECTION_IMG} plus a <b>bold</b> tag.", f"S{n}", when))
    qa = QA(f"{conv.id}/inject", f"What did {a} paste while testing the viewer?", INJECTION_SCRIPT, 4,
            (f"D{n}:1",), when)
    # first in the list, so that a "first N questions" selection always includes it
    return replace(conv, sessions=conv.sessions + (Session(f"S{n}", when, turns, ""),), qa=(qa,) + conv.qa)


# -- the run -----------------------------------------------------------------------------------------
def build_method(name: str, llm, embedder):
    cls = get_method(name)
    names = cls._param_names()
    return cls(**{k: v for k, v in (("llm", llm), ("embedder", embedder)) if k in names})


def demo_dataset(data: str, n_conversations: int | None, inject_html: bool) -> Dataset:
    ds = load_dataset(data)
    convs = list(ds.conversations)[:n_conversations]
    if inject_html:
        convs[0] = inject(convs[0])
    return Dataset(ds.name, tuple(convs), ds.skipped)


def make_demo_run(out_dir, *, data: str = "sample", n_conversations: int | None = 2, max_questions: int | None = None,
                  methods=DEFAULT_METHODS, inject_html: bool = False, overwrite: bool = True) -> Path:
    """Evaluate each method with the project's harness (scripted LLM, rule judge) into ``out_dir``:
    results.jsonl, conversations/, memories/<method>/<conv>/ and a manifest labelled as scripted."""
    out = Path(out_dir)
    if out.exists() and overwrite:
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    dataset = demo_dataset(data, n_conversations, inject_html)
    llm, embedder, judge = scripted_llm(), HashEmbedder(dim=256), RuleJudge()
    runs = {}
    for name in methods:
        res = evaluate(build_method(name, llm, embedder), dataset, judge=judge, store=out / "results.jsonl",
                       questions=max_questions, progress=False, save_memories_dir=out)
        runs[name] = res.manifest
    manifest = _manifest(data, dataset, runs, embedder, judge, rule_judge_audit(judge, dataset))
    write_json_atomic(out / "manifest.json", manifest, indent=2)
    return out


def rule_judge_audit(judge, dataset) -> dict:
    """The rule judge audited like any judge (``workbench.eval.audit``) on this run's own data: no
    model is involved, so it takes milliseconds and is not cached."""
    from workbench.eval.audit import audit_judge, build_probes, compact, sample_probes

    return compact(audit_judge(judge, sample_probes(build_probes(dataset), 200), dataset=dataset.name,
                               progress=False))


def _manifest(data, dataset, runs, embedder, judge, audit) -> dict:
    from workbench.eval.manifest import dataset_spec, judge_entry

    return {"name": "demo", "scripted": True, "label": SCRIPT_LABEL, "created_by": "scripts/make_demo_run.py",
            "package_version": __version__, "data": {"spec": data, "conversations": [c.id for c in dataset]},
            "dataset_info": dataset_spec(dataset),
            "llm": {"model": "scripted-extractive", "class": "ScriptedLLM",
                    "rules": ["*.answer: context sentence sharing most question words (<=15 words)",
                              "eager_facts.extract: each sentence of 5+ words as '<speaker> said: ...'"]},
            "embedder": embedder.name,
            "judge": {**judge_entry(judge, audit), "rule": RuleJudge.__doc__.split(":")[0]},
            "git_commit": next((r.get("git_commit") for r in runs.values() if r.get("git_commit")), None),
            "runs": runs}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="run directory to (over)write")
    ap.add_argument("--data", default="sample", help="sample | tiny | locomo:<path> | longmemeval:<path>")
    ap.add_argument("--conversations", type=int, default=2)
    ap.add_argument("--max-questions", type=int, default=None)
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS))
    ap.add_argument("--inject", action="store_true", help="add a session with <script>/<img onerror> turns")
    a = ap.parse_args(argv)
    out = make_demo_run(a.out, data=a.data, n_conversations=a.conversations, max_questions=a.max_questions,
                        methods=tuple(a.methods.split(",")), inject_html=a.inject)
    print(f"wrote {out} (scripted demo run; see manifest.json)")


if __name__ == "__main__":
    main()
