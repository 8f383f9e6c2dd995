"""``compare``: one question answered by several methods, side by side.

    compare({"naive_rag": rag, "hymem": hymem}, "Where did Priya move?", gold="Lisbon")
    compare(saved_answers_by_method, question)      # precomputed Answers: no LLM involved

    compare(answers, qa=q, conversation=conv)         # a dataset question: its gold, evidence and category

Columns: answer, context size (units and tokens), query tokens and calls, and, when a gold answer is given, the
deterministic checker's verdict (``workbench.eval.checker``: right, or wrong with its kind and reason; the
conversation, when given, supplies the names its entity rules need), then token F1 (mem0-style,
``workbench.eval.metrics.token_f1``) and whether the normalised gold appears in the answer, for comparison with
papers. F1 and containment are lexical checks that get dates backwards ("21 May 2023" scores higher than "13th of
May" against "13 May 2023"), so the verdict comes first. An adversarial question (LoCoMo category 5) is checked
as the checker checks it everywhere (``checker.check_adversarial``): an abstention in any wording is right, an
answer made up is wrong.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from .html import box, esc, method_title_html, source_ids_html, table_html

_NORM = re.compile(r"[^a-z0-9 ]+")
#: source ids listed per row before the rest is counted (gold evidence is always listed)
SOURCES_SHOWN = 8
#: the table's headings in words (``rows`` and ``to_frame()`` keep the field names)
HEADERS = {"method": "method", "answer": "answer", "verdict": "verdict", "f1": "token F1",
           "evidence_recall": "gold evidence found", "context": "context shown", "query": "answering cost",
           "steps": "steps", "sources": "sources", "error": "error"}


def _norm(text: str) -> str:
    return " ".join(_NORM.sub(" ", str(text).lower()).split())


def _token_f1(prediction: str, gold: str) -> float:
    from workbench.eval.metrics import token_f1

    return token_f1(prediction, gold)


def _count_tokens(text: str) -> int:
    from workbench.llm.tokens import count_tokens

    return count_tokens(text)


def _named(methods_or_answers) -> dict[str, Any]:
    if isinstance(methods_or_answers, Mapping):
        return {str(k): v for k, v in methods_or_answers.items()}
    out = {}
    for obj in methods_or_answers:
        name = getattr(obj, "method", None) or getattr(obj, "name", None) or type(obj).__name__
        out[str(name) if str(name) not in out else f"{name}#{len(out)}"] = obj
    return out


def verdict_text(check):
    from workbench.eval.report import verdict_text as words

    return words(check)


def verdict_words(verdict: str) -> str:
    """A row's ``verdict`` as the table shows it: the checker's kind in words ("wrong: wrong date")."""
    from .question import kind_words

    head, _, kind = verdict.partition(": ")
    return f"{head}: {kind_words(kind)}" if kind else verdict


def check_dict(check):
    from workbench.eval.checker import check_dict as as_dict

    return as_dict(check)


def _answer_of(obj, question: str, now):
    """An Answer as given, or a built method's answer to ``question``; an exception is returned
    (and shown in its row) rather than stopping the other methods."""
    if hasattr(obj, "steps") and hasattr(obj, "text"):
        return obj
    try:
        return obj.answer(question, now=now)
    except Exception as exc:  # shown in the row's error column
        return exc


class Comparison:
    """The side-by-side result. State: ``answers`` (name -> Answer or exception), ``rows``, ``html``."""

    def __init__(self, question: str, answers: dict[str, Any], *, gold: str | None = None,
                 evidence: Iterable[str] = (), category: Any = None, entities: Iterable[str] = (), qa=None,
                 conversation=None):
        self.question, self.answers, self.gold, self.evidence = question, answers, gold, tuple(evidence)
        self.category, self.entities, self.qa, self.conversation = category, tuple(entities), qa, conversation
        self.rows = [self._row(name, a) for name, a in answers.items()]
        self.html = self._html()
        self._widget = None

    def _row(self, name: str, a) -> dict:
        if isinstance(a, BaseException):  # the method raised: no answer, which is wrong where a gold is given
            failed = {} if self.gold is None else {"verdict": "wrong: failed",
                                                   "verdict_reason": "the method failed to answer"}
            return {"method": name, "answer": "", **failed, "error": f"{type(a).__name__}: {a}"}
        row = {"method": name, "answer": a.text, "context_units": len(a.context),
               "context_tokens": sum(_count_tokens(h.text) for h in a.context),
               "query_tokens": a.usage.total_tokens, "calls": a.usage.calls, "steps": len(a.steps),
               "sources": list(a.source_ids), "error": a.error or ""}
        if self.gold is not None:
            check = self._check(a)
            row["verdict"] = verdict_text(check_dict(check)) or "not checked"
            row["verdict_reason"] = "" if check is None else check.reason
            row["f1"] = round(_token_f1(a.text, self.gold), 3)
            row["contains_gold"] = bool(_norm(self.gold)) and _norm(self.gold) in _norm(a.text)
        if self.evidence:
            got = set(a.source_ids)
            row["evidence_recall"] = round(sum(e in got for e in self.evidence) / len(self.evidence), 3)
        return row

    def _check(self, a):
        """The checker's verdict on ``a``, as the harness gives it (``check_qa`` for a dataset question: None for a
        LongMemEval one or a gold that is no short answer); an adversarial question (category 5) by
        ``check_adversarial``, as the checker reads it everywhere (an abstention in any wording is right, an answer
        made up is wrong); a failed call is wrong."""
        from workbench.eval.checker import Check, check_adversarial, check_answer, check_qa

        if self.qa is not None and self.gold == self.qa.answer:
            # the harness's own call, with the conversation for the names (no second check_answer)
            return check_qa(self.qa, a.text, error=a.error or None, conversation=self.conversation)
        if str(self.category) == "5":
            return check_adversarial(a.text, error=a.error or None)
        if a.error:
            return Check(False, "failed", "the method failed to answer", 0.0)
        return check_answer(self.question, str(self.gold), a.text, entities=self.entities)

    def _html(self) -> str:
        """The table: the verdict beside the answer, then the lexical score, the evidence reached, what the
        answer cost and its sources (``contains_gold`` stays in ``rows``; the error column only when a row has
        one)."""
        cols = ["method", "answer"]
        if self.gold is not None:
            cols += ["verdict", "f1"]
        if self.evidence:
            cols += ["evidence_recall"]
        cols += ["context", "query", "steps", "sources"]
        if any(r.get("error") for r in self.rows):
            cols += ["error"]
        def calls(n):
            return f"{n or 0} call{'' if n == 1 else 's'}"

        rows = [{**r, "sources": source_ids_html(r.get("sources", ()), self.evidence, limit=SOURCES_SHOWN),
                 "context": f"{r.get('context_units', 0)} unit{'' if r.get('context_units') == 1 else 's'} · "
                            f"≈{r.get('context_tokens', 0):,} tok",
                 "query": f"{r.get('query_tokens', 0):,} tok · {calls(r.get('calls'))}"} for r in self.rows]
        escaped = [{k: (v if k == "sources" else esc(v)) for k, v in r.items()} for r in rows]
        for r, e in zip(self.rows, escaped):  # the method by its title; the verdict in words, its reason on hover
            e["method"] = method_title_html(r["method"])
            if "evidence_recall" in r:
                e["evidence_recall"] = f"{r['evidence_recall']:.0%}"
            if "verdict" in r:
                mark = "✓" if r["verdict"] == "right" else "–" if r["verdict"] == "not checked" else "✗"
                e["verdict"] = (f'<span title="{esc(r.get("verdict_reason") or "")}" style="white-space:nowrap">'
                                f'{mark} {esc(verdict_words(r["verdict"]))}</span>')
        gold = "" if self.gold is None else (
            f"<br><b>gold:</b> {esc(self.gold)} <small>(verdict: the deterministic checker, hover for why; "
            "token F1 is a lexical score, for comparison with papers; the context's tokens are counted with the "
            "workbench's tokenizer, the answering cost is the model's own count)</small>")
        return box(f"<p><b>Q:</b> {esc(self.question)}{gold}</p>"
                   + table_html(escaped, cols, raw=cols, headers=HEADERS))

    @property
    def widget(self):
        if self._widget is None:
            import ipywidgets as W

            self._widget = W.HTML(self.html)
        return self._widget

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(self.rows)

    def _repr_html_(self) -> str:
        return self.html

    def _repr_mimebundle_(self, **kwargs):
        """The widget view with the table as ``text/html`` beside it (a page without live widgets shows that)."""
        bundle = self.widget._repr_mimebundle_(**kwargs)
        return {**bundle, "text/html": self.html} if isinstance(bundle, dict) else bundle

    def __repr__(self) -> str:
        return f"Comparison({self.question!r}, methods={list(self.answers)})"


def compare(methods_or_answers, question: str | None = None, *, gold: str | None = None,
            evidence: Iterable[str] = (), now=None, qa=None, conversation=None) -> Comparison:
    """Answer ``question`` with each built method (or take precomputed Answers) and tabulate them. ``qa``, a
    dataset question, gives the question, gold, evidence and category not passed; ``conversation`` gives the
    checker the conversation's names."""
    category = None
    if qa is not None:
        question = question if question is not None else qa.question
        gold = gold if gold is not None else qa.answer
        evidence = evidence or qa.evidence
        category = qa.category
    if question is None:
        raise TypeError("compare() needs a question (or qa=)")
    entities = ()
    if conversation is not None:
        from workbench.eval.checker import conversation_entities

        entities = conversation_entities(conversation)
    named = _named(methods_or_answers)
    return Comparison(question, {k: _answer_of(v, question, now) for k, v in named.items()}, gold=gold,
                      evidence=evidence, category=category, entities=entities, qa=qa, conversation=conversation)
