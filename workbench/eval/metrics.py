"""Per-question metrics, each exactly as its protocol defines it (DATA.md §1.6, §3).

Two LoCoMo scorers side by side, which are **not** comparable with each other:

- mem0-style protocol (mem0ai/mem0 ``evaluation/metrics/utils.py`` @ b3ede5b): ``token_f1`` is a
  *set* F1 over ``simple_tokenize`` tokens (lowercase, ``. , ! ?`` to spaces, whitespace split; no
  stemming, no article removal); ``bleu1`` is nltk ``sentence_bleu`` with weights (1, 0, 0, 0) and
  smoothing method1 over ``word_tokenize`` of the lowercased strings.
- official LoCoMo (snap-research/locomo ``task_eval/evaluation.py``): ``locomo_f1`` normalises
  (commas dropped, lowercase, punctuation, articles *and "and"* removed), Porter-stems, and takes a
  multiset F1; category 1 splits both strings on ``,`` and averages over gold parts the best match;
  category 3 keeps the gold before the first ``;``; category 5 is ``adversarial_correct``.

``word_tokenize`` needs nltk's ``punkt`` data for sentence splitting, which an offline machine may
lack. Then ``word_tokens`` splits sentences with a small regex (after ``. ! ?`` + whitespace,
except after a common abbreviation or a single-letter initial) and runs nltk's own
``NLTKWordTokenizer`` (the tokenizer ``word_tokenize`` applies to each sentence, which needs no
data) on each piece. On ordinary English this gives the same tokens; it can differ from Punkt on
unusual abbreviations. ``bleu_tokenizer()`` says which one is in use.

Evidence recall is the share of gold evidence ids covered by the provenance (``Answer.source_ids``)
of the answer's context, at turn level and at session level (the part of a turn id before its
last ``:``). ``Answer.context`` is, by the trace convention (``workbench.trace.Answer``), exactly the
units put in front of the method's final reader (or of the calls that wrote the text it reads: for MemR3 every
batch its router read, since its answer call reads only the evidence written from them), so every method is
measured on what its reader saw, not on everything it ever retrieved. Because one unit can cover many
turns (a RecMem episode carries its whole cluster, Full-Context every turn), recall comes with ``turns_shown`` (distinct
turns the shown units cover) and ``evidence_precision`` (gold turns shown / turns shown).
Questions without gold evidence get ``None``, not 1 as in the official code.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache
from typing import Callable, Iterable, Mapping

from ..data import QA

# -- abstaining answers -----------------------------------------------------------------------------
# Phrases by which an answer says it does not know. Covers the official LoCoMo adversarial phrases
# ("no information available", "not mentioned") and the usual refusals of small models.
_ABSTAIN = re.compile(
    r"\b(not mentioned|no information|not (?:specified|stated|provided|available|known|given|clear|sure)|"
    r"(?:does|do|did) not (?:say|mention|specify|state|know)|doesn't (?:say|mention|specify)|didn't (?:say|mention)|"
    r"cannot be determined|can't be determined|unable to (?:determine|find|answer)|(?:i|we) (?:do not|don't) know|"
    r"not enough information|insufficient information|no (?:mention|record|details?) of)\b",
    re.IGNORECASE)
_ABSTAIN_WHOLE = re.compile(r"^\W*(unknown|none|n/?a|no answer|-)\W*$", re.IGNORECASE)


def says_abstain(prediction: str) -> bool:
    """Does the answer say the information is missing? (Empty answers count as abstaining.)"""
    text = str(prediction or "").strip()
    return not text or bool(_ABSTAIN_WHOLE.match(text) or _ABSTAIN.search(text))


# -- mem0-style protocol ----------------------------------------------------------------------------

def simple_tokenize(text) -> list[str]:
    """mem0's tokenizer: lowercase, ``. , ! ?`` become spaces, split on whitespace."""
    text = str(text).lower()
    for ch in ".,!?":
        text = text.replace(ch, " ")
    return text.split()


def token_f1(prediction, gold) -> float:
    """mem0-style set F1 (duplicates dropped). Empty prediction or gold gives 0."""
    if not prediction or not gold:
        return 0.0
    pred, ref = set(simple_tokenize(str(prediction).strip())), set(simple_tokenize(str(gold).strip()))
    common = pred & ref
    if not pred or not ref or not common:
        return 0.0
    p, r = len(common) / len(pred), len(common) / len(ref)
    return 2 * p * r / (p + r)


_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs etc e.g i.e inc ltd co corp no fig mt ft approx dept est jan feb mar apr "
    "jun jul aug sep sept oct nov dec".split())
_SENT_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


def _split_sentences(text: str) -> list[str]:
    """Regex stand-in for Punkt: break after ``. ! ?`` and whitespace unless the word before the
    period is a known abbreviation or a single letter (an initial)."""
    out, start = [], 0
    for m in _SENT_END.finditer(text):
        before = text[start:m.start()].split()
        last = before[-1].rstrip(".").lower() if before else ""
        if text[m.start() - 1] == "." and (last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())):
            continue
        out.append(text[start:m.end()].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


@lru_cache(maxsize=1)
def _tokenizer_kind() -> str:
    try:
        import nltk

        nltk.word_tokenize("Probe. Sentence.")
        return "nltk.word_tokenize"
    except LookupError:
        return "regex sentences + nltk.NLTKWordTokenizer (punkt data not installed)"


@lru_cache(maxsize=1)
def _treebank():
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def word_tokens(text: str) -> list[str]:
    """``nltk.word_tokenize`` when its data is installed, else the documented regex fallback."""
    if _tokenizer_kind() == "nltk.word_tokenize":
        import nltk

        return nltk.word_tokenize(text)
    tok = _treebank()
    return [t for sent in _split_sentences(text) for t in tok.tokenize(sent)]


def bleu1(prediction, gold) -> float:
    """mem0-style BLEU-1: sentence_bleu, weights (1,0,0,0), smoothing method1, lowercased input."""
    if not prediction or not gold:
        return 0.0
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    pred = word_tokens(str(prediction).strip().lower())
    ref = word_tokens(str(gold).strip().lower())
    if not pred or not ref:
        return 0.0
    return float(sentence_bleu([ref], pred, weights=(1, 0, 0, 0), smoothing_function=SmoothingFunction().method1))


def bleu_tokenizer() -> str:
    """Which tokenizer ``bleu1`` uses here (recorded in the run manifest)."""
    return _tokenizer_kind()


# -- official LoCoMo ------------------------------------------------------------------------------
_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


def normalize_answer(text) -> str:
    """Official LoCoMo normalisation (commas, case, punctuation, a/an/the/and, whitespace)."""
    s = str(text).replace(",", "").lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


@lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem import PorterStemmer  # pure Python, no data download

    return PorterStemmer()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer().stem(word)


def locomo_f1_score(prediction, gold) -> float:
    """Official stemmed multiset token F1 (``f1_score`` in the LoCoMo code)."""
    pred = [_stem(w) for w in normalize_answer(prediction).split()]
    ref = [_stem(w) for w in normalize_answer(gold).split()]
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    p, r = same / len(pred), same / len(ref)
    return 2 * p * r / (p + r)


def locomo_multi_f1(prediction, gold) -> float:
    """Official category-1 rule: split on ``,``; mean over gold parts of the best part match."""
    preds = [p.strip() for p in str(prediction).split(",")]
    golds = [g.strip() for g in str(gold).split(",")]
    return sum(max(locomo_f1_score(p, g) for p in preds) for g in golds) / len(golds)


ADVERSARIAL_PHRASES = ("no information available", "not mentioned")


def adversarial_correct(prediction) -> float:
    """Official category-5 rule: 1 if the output says the information is not available."""
    text = str(prediction).lower()
    return 1.0 if any(p in text for p in ADVERSARIAL_PHRASES) else 0.0


def locomo_f1(prediction, gold, category: int) -> float:
    """Official LoCoMo QA score with the category rules (1: comma split, 3: gold before ';', 5: rule)."""
    if category == 5:
        return adversarial_correct(prediction)
    gold = str(gold)
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category == 1:
        return locomo_multi_f1(prediction, gold)
    return locomo_f1_score(prediction, gold)


def exact_match(prediction, gold) -> float:
    """Normalised equality (official LoCoMo normalisation, no stemming)."""
    return 1.0 if normalize_answer(prediction) == normalize_answer(gold) else 0.0


# -- evidence recall --------------------------------------------------------------------------------

def session_of(turn_id: str) -> str:
    """``D3:7`` -> ``D3``; ``answer_4be1b6b4_2:5`` -> ``answer_4be1b6b4_2``; ids without ``:`` unchanged."""
    head, sep, _ = str(turn_id).rpartition(":")
    return head if sep and head else str(turn_id)


def evidence_recall(gold_ids: Iterable[str], context_ids: Iterable[str]) -> float | None:
    """Share of gold evidence ids present in the context provenance (None without gold evidence)."""
    gold = list(dict.fromkeys(gold_ids))
    if not gold:
        return None
    have = set(context_ids)
    return sum(1 for g in gold if g in have) / len(gold)


def turns_shown(context_ids: Iterable[str]) -> int:
    """How many distinct conversation turns the shown units cover (their provenance)."""
    return len(set(context_ids))


def evidence_precision(gold_ids: Iterable[str], context_ids: Iterable[str]) -> float | None:
    """Gold evidence turns among the turns shown / turns shown.

    None without gold evidence, or when nothing was shown (0/0 has no value). A unit spanning many
    turns lowers it, so large units cannot buy recall for free.
    """
    gold = set(gold_ids)
    shown = set(context_ids)
    if not gold or not shown:
        return None
    return len(gold & shown) / len(shown)


def gold_sessions(qa: QA) -> list[str]:
    """LongMemEval: ``answer_session_ids``; LoCoMo: the sessions of the evidence turns."""
    extras = qa.extras or {}
    if extras.get("answer_session_ids"):
        return [str(s) for s in extras["answer_session_ids"]]
    return list(dict.fromkeys(session_of(e) for e in qa.evidence))


def session_recall(qa: QA, context_ids: Iterable[str]) -> float | None:
    return evidence_recall(gold_sessions(qa), (session_of(c) for c in context_ids))


# -- the metric table the harness applies ---------------------------------------------------------

def is_locomo(qa: QA) -> bool:
    return isinstance(qa.category, int)


def is_abstention(qa: QA) -> bool:
    return bool((qa.extras or {}).get("abstention")) or str(qa.id).endswith("_abs")


def _free_text_gold(qa: QA) -> bool:
    """Gold that is a short answer (not a LongMemEval rubric/explanation, not an empty cat-5 slot)."""
    if is_locomo(qa):
        return qa.category != 5 and bool(qa.answer)
    return qa.category != "single-session-preference" and not is_abstention(qa) and bool(qa.answer)


def _m_f1(pred: str, qa: QA):
    return token_f1(pred, qa.answer) if _free_text_gold(qa) else None


def _m_bleu1(pred: str, qa: QA):
    return bleu1(pred, qa.answer) if _free_text_gold(qa) else None


def _m_locomo_f1(pred: str, qa: QA):
    return locomo_f1(pred, qa.answer, qa.category) if is_locomo(qa) else None


def _m_exact(pred: str, qa: QA):
    return exact_match(pred, qa.answer) if _free_text_gold(qa) else None


def _m_adversarial(pred: str, qa: QA):
    return adversarial_correct(pred) if is_locomo(qa) and qa.category == 5 else None


Metric = Callable[[str, QA], "float | None"]
METRICS: Mapping[str, Metric] = {"f1": _m_f1, "bleu1": _m_bleu1, "locomo_f1": _m_locomo_f1,
                                 "exact_match": _m_exact, "adversarial": _m_adversarial}
DEFAULT = ("f1", "bleu1", "locomo_f1", "exact_match", "adversarial")


def resolve_metrics(metrics) -> dict[str, Metric]:
    """Names from ``METRICS`` or callables ``f(prediction, qa) -> float | None`` (named by ``__name__``)."""
    out = {}
    for m in metrics:
        if isinstance(m, str):
            if m not in METRICS:
                raise ValueError(f"unknown metric {m!r}; available: {sorted(METRICS)}")
            out[m] = METRICS[m]
        elif callable(m):
            out[getattr(m, "__name__", "metric")] = m
        else:
            raise TypeError(f"a metric is a name or a callable, got {m!r}")
    return out


def score_prediction(prediction: str, qa: QA, metrics: Mapping[str, Metric]) -> dict[str, float | None]:
    return {name: (None if (v := fn(prediction, qa)) is None else float(v)) for name, fn in metrics.items()}
