"""LLM judges: the mem0-style LoCoMo CORRECT/WRONG judge and LongMemEval's per-type yes/no judge.

The judge model is injected (``LLMJudge(llm)``); nothing here picks a model. Judge calls run under
``llm_tags(phase="judge", method=<method name>)``, so the usage ledger files them apart from the
method's construction and query cost. A reply the judge cannot read becomes a recorded
``JudgeVerdict.error`` with ``correct=None``; it never raises.

- LoCoMo (DATA.md §3): one user message, temperature 0, JSON ``{"reasoning", "label"}`` requested
  through a schema; score 1 iff ``label == "CORRECT"``. Fallback (as HyMem's code does): when the
  reply is still not valid JSON after the client's repair and retry, a regex looks for exactly one
  of the words ``CORRECT``/``WRONG`` in the last raw reply. Category 5 (adversarial) is not judged:
  most items have no gold answer; the harness scores them with the official rule instead.
- LongMemEval (DATA.md §2.4): the official per-type prompt (abstention when the id ends in
  ``_abs``), free text, ``max_tokens=10``. Departure: the official script counts any reply without
  "yes" as wrong; we read the words ``yes``/``no`` and record a reply with neither as a judge error.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass

from ..data import QA
from ..llm.errors import LLMError, ParseError
from ..llm.ledger import llm_tags, track
from . import judge_prompts as P
from .metrics import is_abstention, is_locomo

_LABEL = re.compile(r"\b(CORRECT|WRONG)\b")
_YES, _NO = re.compile(r"\byes\b", re.I), re.compile(r"\bno\b", re.I)


@dataclass(frozen=True)
class JudgeVerdict:
    """One judgement. ``correct`` is None when the question was not judged or the reply was unreadable."""

    correct: bool | None
    label: str | None = None
    reasoning: str = ""
    raw: str = ""
    error: str | None = None
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    fallback: bool = False

    @property
    def score(self) -> float | None:
        return None if self.correct is None else float(self.correct)

    def to_dict(self) -> dict:
        return asdict(self)


class LLMJudge:
    """Judge answers with an injected LLM (``LLMJudge(llm)``; temperature 0 unless told otherwise)."""

    def __init__(self, llm, *, temperature: float = 0.0, seed: int | None = None, regex_fallback: bool = True):
        self.llm = llm
        self.temperature = temperature
        self.seed = seed
        self.regex_fallback = regex_fallback

    @property
    def model(self) -> str:
        return getattr(self.llm, "model", type(self.llm).__name__)

    def __repr__(self) -> str:
        return f"LLMJudge({self.model!r})"

    @property
    def prompt_hash(self) -> str:
        """Hash of every prompt and schema this judge can send (``judge_prompts``)."""
        return judge_prompt_hash()

    @property
    def spec(self) -> dict:
        """What decides a verdict: the judge's model, decoding settings and prompt hash."""
        return {"class": type(self).__name__, "model": self.model, "temperature": self.temperature, "seed": self.seed,
                "regex_fallback": self.regex_fallback, "prompt_hash": self.prompt_hash}

    def applies_to(self, qa: QA) -> bool:
        return not (is_locomo(qa) and qa.category == 5)

    def judge(self, qa: QA, prediction: str, *, method: str = "") -> JudgeVerdict | None:
        """Judge a prediction for ``qa`` (LoCoMo or LongMemEval by the type of ``qa.category``).

        Returns None for questions this judge does not score (LoCoMo category 5).
        """
        if not self.applies_to(qa):
            return None
        with llm_tags(phase="judge", method=method), track() as calls:
            if is_locomo(qa):
                verdict = self._locomo(qa.question, qa.answer, prediction)
            else:
                verdict = self._longmemeval(qa, prediction)
        return _with_usage(verdict, calls, self.model)

    # -- LoCoMo --------------------------------------------------------------------------------
    def _locomo(self, question: str, gold: str, prediction: str) -> JudgeVerdict:
        prompt = P.LOCOMO_JUDGE.format(question=question, gold=gold, prediction=prediction)
        try:
            c = self.llm.complete(prompt, schema=P.LOCOMO_JUDGE_SCHEMA, temperature=self.temperature,
                                  seed=self.seed, role="judge.locomo")
        except ParseError as exc:
            return self._locomo_fallback(exc)
        except LLMError as exc:
            return JudgeVerdict(None, error=f"{type(exc).__name__}: {exc}")
        parsed = c.parsed if isinstance(c.parsed, dict) else {}
        label = str(parsed.get("label", "")).strip()
        if label not in ("CORRECT", "WRONG"):
            return JudgeVerdict(None, raw=c.text, error=f"unexpected label {label!r}")
        return JudgeVerdict(label == "CORRECT", label, str(parsed.get("reasoning", "")), c.text)

    def _locomo_fallback(self, exc: ParseError) -> JudgeVerdict:
        raw = exc.raw or ""
        found = set(_LABEL.findall(raw))
        if self.regex_fallback and len(found) == 1:
            label = found.pop()
            return JudgeVerdict(label == "CORRECT", label, "", raw, fallback=True)
        return JudgeVerdict(None, raw=raw, error=f"ParseError: {exc}")

    # -- LongMemEval ---------------------------------------------------------------------------
    def _longmemeval(self, qa: QA, prediction: str) -> JudgeVerdict:
        try:
            prompt = longmemeval_prompt(qa, prediction)
        except ValueError as exc:
            return JudgeVerdict(None, error=str(exc))
        try:
            c = self.llm.complete(prompt, temperature=self.temperature, seed=self.seed, max_tokens=10,
                                  role="judge.longmemeval")
        except LLMError as exc:
            return JudgeVerdict(None, error=f"{type(exc).__name__}: {exc}")
        text = c.text.strip()
        if _YES.search(text):
            return JudgeVerdict(True, "yes", "", text)
        if _NO.search(text):
            return JudgeVerdict(False, "no", "", text)
        return JudgeVerdict(None, raw=text, error="reply contains neither yes nor no")


class CheckerJudge:
    """The deterministic checker (``workbench.eval.checker``) behind the judge interface: no model, no call, the
    same verdict for the same answer on every machine. On the labelled real answers it agrees with careful readers
    far more often than the offline LLM judges (``workbench judge-audit`` prints both), so it is the offline judge
    to use: ``workbench eval --judge checker``. It needs the conversation's names for its entity rule, which the
    harness passes where it can (``names``); without them that rule is skipped."""

    model = "checker"

    def __init__(self, names=()):
        self.names = tuple(names)

    def __repr__(self) -> str:
        return "CheckerJudge()"

    @property
    def spec(self) -> dict:
        from .checker import RECALL_THRESHOLD
        from .paraphrase import default_paraphrase

        para = default_paraphrase()  # the semantic step's thresholds: a re-tuned checker is another judge
        return {"class": type(self).__name__, "model": self.model, "threshold": RECALL_THRESHOLD,
                "word_cos": para.word_cos, "valence_gap": para.valence_gap, "prompt_hash": None}

    def applies_to(self, qa: QA) -> bool:
        return is_locomo(qa) and qa.category != 5 and bool(qa.answer)

    def judge(self, qa: QA, prediction: str, *, method: str = "") -> JudgeVerdict | None:
        if not self.applies_to(qa):
            return None
        from .checker import check_answer

        c = check_answer(qa.question, qa.answer, prediction, entities=self.names)
        label = "CORRECT" if c.correct else "WRONG"
        return JudgeVerdict(c.correct, label, f"{c.kind}: {c.reason}", model=self.model)


def longmemeval_prompt(qa: QA, prediction: str) -> str:
    """The official per-type prompt (abstention for ``_abs`` ids), reworded."""
    if is_abstention(qa):
        template, gold_label = P.LME_JUDGE_ABSTENTION, "Explanation"
        ask = "Does the model correctly identify the question as unanswerable?"
    else:
        if qa.category not in P.LME_TEMPLATES:
            raise ValueError(f"no LongMemEval judge prompt for question type {qa.category!r}")
        template = P.LME_TEMPLATES[qa.category]
        gold_label = "Rubric" if qa.category == "single-session-preference" else "Correct answer"
        ask = "Is the model response correct?"
    return template.format(question=qa.question, gold_label=gold_label, gold=qa.answer, prediction=prediction,
                           ask=ask)


def judge_prompt_hash() -> str:
    """sha256 (12 hex) of the judge prompts and schema: a reworded prompt is a different judge."""
    blob = json.dumps([P.LOCOMO_JUDGE, P.LOCOMO_JUDGE_SCHEMA, P.LME_TEMPLATES, P.LME_JUDGE_ABSTENTION], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def judge_spec(judge) -> dict | None:
    """A judge's ``spec`` (``LLMJudge.spec``), or for another object with the judge interface its class
    and model (no prompt hash: it has none we can see). None for no judge."""
    if judge is None:
        return None
    spec = getattr(judge, "spec", None)
    if isinstance(spec, dict):
        return dict(spec)
    return {"class": type(judge).__name__, "model": str(getattr(judge, "model", type(judge).__name__)),
            "prompt_hash": None}


def judge_key(judge_or_spec) -> str | None:
    """Short stable hash of a judge spec: rows judged under another key are re-judged on resume, and
    audits are looked up by it."""
    spec = judge_or_spec if isinstance(judge_or_spec, dict) or judge_or_spec is None else judge_spec(judge_or_spec)
    if spec is None:
        return None
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _with_usage(v: JudgeVerdict, calls, model: str) -> JudgeVerdict:
    return JudgeVerdict(v.correct, v.label, v.reasoning, v.raw, v.error, model,
                        sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls),
                        len(calls), v.fallback)
