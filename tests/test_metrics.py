"""Metrics against hand-computed values (mem0-style set F1 and BLEU-1, official LoCoMo F1, recall)."""
from __future__ import annotations

import math

import pytest

from workbench.data import QA
from workbench.eval import metrics as M


def test_simple_tokenize_is_mem0s():
    assert M.simple_tokenize("Hello, World! It's 7 p.m.?") == ["hello", "world", "it's", "7", "p", "m"]


def test_token_f1_is_a_set_f1():
    # pred set {the, cat, sat, on, mat} (5), gold {the, cat} (2), common 2: P=2/5, R=1, F1=0.8/1.4
    assert M.token_f1("The cat sat on the mat.", "the cat") == pytest.approx(2 * 0.4 / 1.4)
    assert M.token_f1("yes yes yes", "Yes") == 1.0  # duplicates dropped
    assert M.token_f1("", "x") == 0.0 and M.token_f1("x", "") == 0.0
    assert M.token_f1("dogs", "dog") == 0.0  # no stemming in the mem0 protocol


def test_bleu1_brevity_penalty_and_clipping():
    # 3 predicted tokens, 2 match; candidate longer than reference, so BP = 1
    assert M.bleu1("the cat sat", "the cat") == pytest.approx(2 / 3)
    # 1 token, precision 1; c=1 < r=2 so BP = exp(1 - 2/1)
    assert M.bleu1("cat", "the cat") == pytest.approx(math.exp(-1))
    assert M.bleu1("The Cat", "the cat") == pytest.approx(1.0)  # lowercased
    # word_tokenize splits the comma: [7, may, ",", 2023] vs [7, may, 2023] -> 3/4
    assert M.bleu1("7 May, 2023", "7 may 2023") == pytest.approx(0.75)
    assert M.bleu1("", "x") == 0.0


def test_word_tokens_split_sentences_like_word_tokenize():
    assert M.word_tokens("he left. then she came.") == ["he", "left", ".", "then", "she", "came", "."]
    assert M.word_tokens("mr. smith didn't come!") == ["mr.", "smith", "did", "n't", "come", "!"]
    assert M.bleu_tokenizer()  # named in the manifest


def test_official_normalisation_removes_and():
    assert M.normalize_answer("The Cat and the Hat, Inc.") == "cat hat inc"


def test_official_f1_stems_and_counts_multisets():
    assert M.locomo_f1_score("running dogs", "the dog runs") == 1.0  # Porter: run, dog
    # multiset: pred [dog, dog], gold [dog]: P=1/2, R=1
    assert M.locomo_f1_score("dog dog", "dog") == pytest.approx(2 / 3)
    assert M.locomo_f1_score("cat", "dog") == 0.0


def test_category_rules():
    # cat 1: gold parts [swimming, running and painting]; best matches 1 and F1(paint | run paint)=2/3
    assert M.locomo_f1("painting, swimming", "swimming, running and painting", 1) == pytest.approx((1 + 2 / 3) / 2)
    # cat 3: only the gold before ';' counts: "Yes" -> [ye]; pred [like, ye]: P=1/2, R=1
    assert M.locomo_f1("likely yes", "Yes; because she loves it", 3) == pytest.approx(2 / 3)
    # cat 2/4: plain stemmed F1 against the whole gold
    assert M.locomo_f1("likely yes", "Yes; because", 4) == pytest.approx(2 * 0.5 * 0.5 / 1.0)
    assert M.locomo_f1("Not mentioned in the conversation", "", 5) == 1.0
    assert M.adversarial_correct("No information available.") == 1.0
    assert M.adversarial_correct("He went to Paris") == 0.0


def test_evidence_and_session_recall():
    assert M.evidence_recall(["D1:3", "D2:5"], ["D1:3", "D4:1"]) == 0.5
    assert M.evidence_recall(["D1:3", "D1:3"], ["D1:3"]) == 1.0
    assert M.evidence_recall([], ["D1:3"]) is None
    qa = QA("c/q0", "q?", "a", 4, ("D1:3", "D2:5"))
    assert M.session_recall(qa, ["D1:9"]) == 0.5
    lme = QA("abc", "q?", "a", "multi-session", ("answer_ab_1:3",),
             extras={"answer_session_ids": ("answer_ab_1", "answer_cd_2")})
    assert M.session_recall(lme, ["answer_ab_1:7"]) == 0.5
    assert M.evidence_recall(lme.evidence, ["answer_ab_1:7"]) == 0.0
    assert M.session_of("answer_4be1b6b4_2:5") == "answer_4be1b6b4_2" and M.session_of("S3") == "S3"


def test_metric_applicability():
    scorers = M.resolve_metrics(M.DEFAULT)
    cat5 = M.score_prediction("Not mentioned", QA("c/q1", "q?", "", 5), scorers)
    assert cat5 == {"f1": None, "bleu1": None, "locomo_f1": 1.0, "exact_match": None, "adversarial": 1.0}
    ssu = M.score_prediction("paris.", QA("x1", "q?", "Paris", "single-session-user"), scorers)
    assert ssu["exact_match"] == 1.0 and ssu["f1"] == 1.0 and ssu["locomo_f1"] is None
    pref = M.score_prediction("x", QA("x2", "q?", "rubric", "single-session-preference"), scorers)
    assert pref["f1"] is None and pref["exact_match"] is None
    with pytest.raises(ValueError, match="unknown metric"):
        M.resolve_metrics(["rouge"])
    custom = M.resolve_metrics([lambda pred, qa: float(len(pred))])
    assert list(custom) == ["<lambda>"]
