"""Verdicts a careful reader would give: dates as days and periods, names as entities, gold content recall,
the labelled real answers and the audit arithmetic on them (issue: verdicts you can trust)."""
from __future__ import annotations

import json

import pytest

from workbench.data import DatasetError, load_sample
from workbench.eval.attribution import attribute
from workbench.eval.audit import label_probes
from workbench.eval.checker import conversation_entities
from workbench.eval.checker import _extra_name_rule, _number_rule, check_answer, content_recall
from workbench.eval.dates import find_periods
from workbench.eval.label_audit import (audit_on_labels, checker_audit, checker_source, f1_source, judge_real_audit,
                                        recorded_judge, shipped_entities, shipped_labels)
from workbench.eval.labels import load_labels, relabel_agreement
from workbench.eval.report import auto_metric, results_frame

Q16 = "When did Tomasz pick up his greyhound?"


@pytest.fixture(scope="module")
def names():
    return conversation_entities(load_sample()[0])


# -- dates ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, start, end", [
    ("13 May 2023", "2023-05-13", "2023-05-13"),
    ("on May 13th, 2023", "2023-05-13", "2023-05-13"),
    ("2023-05-13", "2023-05-13", "2023-05-13"),
    ("The sunday before 25 May 2023", "2023-05-21", "2023-05-21"),
    ("the Friday before 15 July 2023", "2023-07-14", "2023-07-14"),
    ("The week before 9 June 2023", "2023-05-29", "2023-06-08"),  # 7 days before, or the calendar week
    ("the weekend before 17 July 2023", "2023-07-15", "2023-07-16"),
    ("two weekends before 17 July 2023", "2023-07-08", "2023-07-09"),
    ("The week of 23 August 2023", "2023-08-21", "2023-08-27"),
    ("June 2023", "2023-06-01", "2023-06-30"),
    ("April.2023", "2023-04-01", "2023-04-30"),  # a LoCoMo gold (conv-41): read as the year alone, January passed
    ("Since 2016", "2016-01-01", "2016-12-31"),
    # an ordinal week or weekend of a month is that week, not the month (RecMem conv-41 q56)
    ("first weekend of August 2023", "2023-08-05", "2023-08-06"),
    ("the last week of September 2023", "2023-09-24", "2023-09-30"),
    ("first week of May 2023", "2023-05-01", "2023-05-07"),
    ("the first Sunday of May 2023", "2023-05-07", "2023-05-07"),
    ("The first weekend in August 2023", "2023-08-05", "2023-08-06"),
    ("Last week before 13 October 2022", "2022-10-03", "2022-10-12"),  # "last" adds nothing to "week before"
    ("second week before 9 June 2023", "2023-05-26", "2023-06-01"),  # two weeks back
    ("the second Sunday before 9 June 2023", "2023-05-28", "2023-05-28"),
])
def test_date_expressions_are_read_as_the_days_they_denote(text, start, end):
    (p,) = find_periods(text)
    assert (str(p.start), str(p.end)) == (start, end)


def test_a_month_written_with_a_full_stop_before_its_year_is_that_month():
    """Labelled set: "1 January 2023" was accepted for the gold "April.2023", read as 2023 alone."""
    q = "When did John start boot camp with his family?"
    assert check_answer(q, "April.2023", "1 January 2023").kind == "wrong_date"
    assert check_answer(q, "April.2023", "He started in April 2023.").correct


def test_may_the_verb_is_not_a_month():
    assert find_periods("You may be right, he may 3 times have said so") == []


# -- the cases the issue names ----------------------------------------------------------------------
def test_q16_a_different_day_is_wrong_and_the_same_day_in_any_form_is_right(names):
    wrong = check_answer(Q16, "13 May 2023", "21 May 2023", entities=names)
    assert not wrong.correct and wrong.kind == "wrong_date"
    for same in ("13th of May", "May 13, 2023", "He picked him up on 2023-05-13.", "Saturday 13 May 2023"):
        assert check_answer(Q16, "13 May 2023", same, entities=names).correct, same


def test_relative_gold_accepts_the_day_it_means_and_rejects_its_anchor():
    q = "When did Melanie run a charity race?"
    assert check_answer(q, "The sunday before 25 May 2023", "She ran it on 21 May 2023.").correct
    assert check_answer(q, "The sunday before 25 May 2023", "the Sunday before 25 May 2023").correct
    assert check_answer(q, "The sunday before 25 May 2023", "25 May 2023").kind == "wrong_date"
    assert check_answer(q, "The week before 9 June 2023", "It was on 5 June 2023").correct
    assert check_answer(q, "13 May 2023", "May 2023").kind == "vague"  # coarser than a day-precise gold
    assert check_answer(q, "13 May 2023", "Last Saturday").kind == "vague"  # no anchor: which Saturday?


def test_a_wrong_person_or_pet_is_wrong(names):
    q = "What is the name of Tomasz's greyhound?"
    bad = check_answer(q, "Pilot", "His greyhound is called Biscuit.", entities=names)
    assert not bad.correct and bad.kind == "wrong_entity"
    assert check_answer(q, "Pilot", "He renamed him Pilot.", entities=names).correct
    assert check_answer("Who plays drums in The Low Tides?", "Ola", "Dev plays the drums.", entities=names).kind \
        == "wrong_entity"


def test_a_list_of_names_with_another_name_of_the_conversation_added_is_wrong():
    """Naive RAG's and RecMem's conv-41 batches: "Coco and Max" for "Coco, Shadow" (Max is John's dog) and "Maria,
    Cindy, John, Laura" for "Cindy, Laura" held every gold name or half of them and were accepted; the protocol's list
    rule wants none wrong."""
    conv = ("John", "Maria", "Max", "England", "London")
    q = "What are Maria's dogs' names?"
    bad = check_answer(q, "Coco, Shadow", "Maria's dogs' names are Coco and Max.", entities=conv)
    assert not bad.correct and bad.kind == "wrong_entity" and "Max" in bad.reason
    assert check_answer(q, "Coco, Shadow", "Coco and Shadow.", entities=conv).correct  # Maria is the question's
    who = "Who have written notes of gratitude to Maria?"
    assert check_answer(who, "Cindy, Laura", "Maria, Cindy, John, Laura, and Laura.", entities=conv).kind \
        == "wrong_entity"
    assert check_answer(who, "Cindy and Laura", "Cindy and Laura wrote to Maria.", entities=conv).correct
    # a gold listing no names goes on to the content rule: Melanie is one of her friends
    assert _extra_name_rule("Who supports Caroline?", "Her mentors, family, and friends",
                            "Melanie and her family", ("Caroline", "Melanie")) is None
    assert _extra_name_rule(q, "Coco", "Coco and Max", conv) is None  # one name: the entity rule's case
    # only a name listed beside a gold one counts: a speaker named elsewhere in the answer, a place in brackets, a
    # short form of the question's own name, and a list with no gold name in it are left to the other rules
    assert _extra_name_rule("What martial arts has John done?", "Kickboxing, Taekwondo",
                            "Kickboxing and Taekwondo, as John told Maria", conv) is None
    assert _extra_name_rule("What European countries has Maria been to?", "Spain, England",
                            "Spain and England (London)", conv) is None
    assert _extra_name_rule("Which classical musicians does Melanie enjoy?", "Bach and Mozart",
                            "Mel enjoys Bach, Mozart and Mel's own playlists", ("Caroline", "Melanie", "Mel")) is None
    assert _extra_name_rule(who, "Cindy, Laura", "Maria, John, volunteering, gratitude", conv) is None


def test_a_list_of_names_with_a_name_the_conversation_never_uses_added_is_wrong_too():
    """HyMem's conv-41 batch: "France, Germany, Italy, and Spain" for "Spain, England" was accepted, since France,
    Germany and Italy are no names of the conversation; listed beside a gold name they are wrong items all the same.
    Months, weekdays and sentence words in the run are no names."""
    conv = ("John", "Maria", "England", "Spain")
    q = "What European countries has Maria been to?"
    bad = check_answer(q, "Spain, England", "The European countries Maria has been to are France, Germany, Italy, "
                       "and Spain.", entities=conv)
    assert not bad.correct and bad.kind == "wrong_entity" and "France, Germany, Italy" in bad.reason
    assert check_answer(q, "Spain, England", "Spain and England, in May and June", entities=conv).correct
    assert check_answer("Which classical musicians does Melanie enjoy listening to?", "Bach and Mozart",
                        "Melanie enjoys classical like Bach and Mozart, as well as modern music like Ed Sheeran's "
                        "\"Perfect\".", entities=("Melanie", "Caroline")).correct


NAMES = ("John", "Maria", "Max", "Coco", "Shadow", "Toronto", "Spain", "England", "Melanie", "Caroline", "Seattle")


@pytest.mark.parametrize("question, gold, said", [
    # a full stop ends a name: the next sentence's first word is no list item
    ("What are Maria's dogs' names?", "Coco, Shadow", "Coco and Shadow. She adopted them last year."),
    ("What are Maria's dogs' names?", "Coco, Shadow", "Coco and Shadow. Both are dogs."),
    ("What martial arts has John done?", "Kickboxing, Taekwondo", "Kickboxing and Taekwondo. Recently he boxes."),
    # a gold item under a longer name of its own
    ("Which cities has John been to?", "Seattle, Chicago, New York, and Paris.",
     "Seattle, Chicago, New York City, and Paris."),
    ("Which classical musicians does Melanie enjoy?", "Bach and Mozart",
     "Johann Sebastian Bach and Wolfgang Amadeus Mozart"),
    # a name the conversation never uses, beside every gold item: a qualifier, not a wrong item
    ("Which cities?", "Paris, Rome", "Paris, France and Rome, Italy"),
    ("Where does he live?", "Toronto, Canada", "Toronto, Ontario, Canada"),
    # a question or gold that denies, a denial that ends at "and", negations that affirm
    ("What does Jon tell Gina he won't do?", "quit", "He won't quit."),
    ("What type of beer does John not like?", "dark beer", "John does not like dark beer."),
    ("Which pets suit her?", "Hairless cats or pigs, since they don't have fur",
     "Hairless cats or pigs wouldn't cause discomfort, since they don't have fur."),
    ("What did she do after the fall?", "kept running", "She decided not to give up and kept running."),
    ("What did she keep doing?", "painting", "She never gave up painting."),
    ("What did he start?", "a food truck", "Not long after losing his job he started a food truck."),
])
def test_right_answers_the_list_and_denial_rules_leave_alone(question, gold, said):
    """A review of the two rules found each of these right answers rejected; none may be."""
    assert check_answer(question, gold, said, entities=NAMES).correct, said


def test_an_answer_that_denies_the_golds_content_is_wrong():
    """HyMem's conv-41 batch: "John does not live close to a beach or the mountains" for "beach" holds the gold's
    word and was accepted; it says the opposite. A denial reaches to the end of its clause, and "not only", "can't
    wait", "never misses" or a denial of something else deny nothing the gold says."""
    bad = check_answer("Does John live close to a beach or the mountains?", "beach",
                       "John does not live close to a beach or the mountains.")
    assert not bad.correct and bad.kind == "wrong_value" and "not live close to a beach" in bad.reason
    assert not check_answer("What did she paint?", "a sunset", "She never painted a sunset.").correct
    for q, gold, said in [("Where does she want to go?", "the beach", "She can't wait to go to the beach."),
                          ("What does she make?", "pottery", "Not only paintings, but also pottery."),
                          ("What instrument does he play?", "bass", "Bass, not guitar."),
                          ("What does he do on Sundays?", "beach days", "He never misses his beach days."),
                          ("Which shelter?", "the homeless shelter", "Not the dog shelter but the homeless shelter."),
                          ("What did she paint?", "a sunset", "I'm not sure, but I think she painted a sunset."),
                          ("What did he give up?", "not eating meat", "He is not eating meat any more.")]:
        assert check_answer(q, gold, said).correct, said


def test_an_unrelated_answer_and_an_abstention_are_wrong(names):
    q = "What instrument does Tomasz play in The Low Tides?"
    assert not check_answer(q, "Bass", "Priya grows tomatoes on her allotment.", entities=names).correct
    abstain = check_answer(q, "Bass", "That is not mentioned in the conversation.", entities=names)
    assert not abstain.correct and abstain.kind == "abstain"


def test_a_paraphrase_and_a_long_right_answer_are_right(names):
    assert check_answer("How do Jon and Gina both like to destress?", "by dancing",
                        "They both unwind by dancing, which they love.").correct
    long = ("Tomasz plays the bass guitar in The Low Tides, with his cousin Ola on drums and his friend Dev "
            "singing; they are preparing for their first gig.")
    assert check_answer("What instrument does Tomasz play in The Low Tides?", "Bass", long, entities=names).correct


def test_numbers_yes_no_and_lists():
    assert check_answer("How heavy was the pumpkin?", "151 kg", "It weighed 148 kg.").kind == "wrong_value"
    assert check_answer("How heavy was the pumpkin?", "151 kg", "151 kilograms").correct
    q = "Is Tomasz running the Manchester half marathon?"
    assert check_answer(q, "No", "Yes, he is training for it.").kind == "wrong_value"
    assert check_answer(q, "No", "He is not running it any more.").correct
    assert content_recall("pottery, camping, painting", "She likes pottery and camping.") == pytest.approx(2 / 3)
    assert not check_answer("What does Melanie do?", "pottery, camping, painting, swimming, running",
                            "pottery").correct


def test_a_count_answered_with_no_number_is_vague_and_twice_is_two():
    """RecMem's conv-41 batch: "John works a few times a week" for "Three times a week" held the gold's content
    words ("times", "week") and was accepted; readers call a quantity that names no number vague."""
    q, gold = "How often does John work out with his family?", "Three times a week"
    assert check_answer(q, gold, "John works a few times a week.").kind == "vague"
    assert check_answer(q, gold, "They work out several times a week.").kind == "vague"
    assert check_answer(q, gold, "John works out with his family twice a week.").kind == "wrong_value"
    assert check_answer(q, gold, "Three times every week, with his kids.").correct
    assert check_answer(q, "twice a week", "He does it twice a week.").correct
    assert check_answer(q, "a few times a week", "a few times a week").correct  # the gold is no count itself
    # "a couple" is often two: the quantity rule leaves it to the others
    assert "where the gold counts" not in check_answer("How many times has she gone?", "2", "A couple of times").reason
    assert check_answer("How many times has she gone to the beach?", "15", "Fifteen times, some of them alone.").correct
    # only where a count is asked, and a date's day is no count
    assert check_answer("What does Melanie do with her family?", "Her husband and 2 kids",
                        "Melanie often goes camping with her husband and kids.").correct
    assert _number_rule("How long has Maria volunteered?", "Since August 4, 2023", "For some time now.") is None
    assert _number_rule("How long has Maria volunteered?", "Four years", "For some time now.").kind == "vague"
    # "once" the conjunction is no count; "once a month" is one
    assert check_answer("When did she take up painting?", "Once she retired", "After she retired in 2020.").correct
    assert check_answer("How often does she paint?", "Once a month", "Twice a month.").kind == "wrong_value"


def test_a_possessive_of_the_question_s_own_name_is_not_gold_content():
    """Gold "Melanie's daughter" for "Whose birthday did Melanie celebrate?": the name is asked, the daughter is the
    answer; "Melanie's birthday" held 50 % of the gold while "Melanie's" counted as a word of its own."""
    q, gold = "Whose birthday did Melanie celebrate recently?", "Melanie's daughter"
    assert not check_answer(q, gold, "Melanie's birthday was celebrated with a concert.").correct
    assert check_answer(q, gold, "Her daughter's birthday.").correct
    assert content_recall('"Melanie\'s" daughter', "Melanie's birthday", q) == 0.0  # quoted: the same word
    assert content_recall("Caroline’s mom", "her mom", "Who visited Caroline?") == 1.0  # curly apostrophe too


def test_a_list_answer_that_denies_the_other_items_is_wrong():
    """Half a list is right under the protocol only when none is wrong: "only one name: Biscuit" for gold
    "Biscuit, Pilot" denies Pilot (the MemR3 A/B's paper-profile answer the checker used to accept at 50 %)."""
    q, gold = "What names has Tomasz's greyhound had?", "Biscuit, Pilot"
    denied = check_answer(q, gold, "Tomasz's greyhound has had only one name: Biscuit.")
    assert (denied.correct, denied.kind) == (False, "contradicts") and "only one" in denied.reason
    assert not check_answer(q, gold, "Just one: Biscuit").correct
    assert not check_answer(q, gold, "He has one name only: Biscuit").correct
    assert check_answer(q, gold, "Biscuit").kind == "partial"  # half the list: wrong since issue #66
    assert check_answer(q, gold, "Only one name: Biscuit, later Pilot").correct  # every item given: content decides
    # a negated count claims nothing, a time is no count of names: the list rule decides (half: partial)
    assert check_answer(q, gold, "Not just one: Biscuit").kind == "partial"
    assert check_answer(q, gold, "Biscuit, until just one week ago").kind == "partial"
    hobbies, three = "Which hobbies does Melanie have?", "pottery, camping, painting"
    assert not check_answer(hobbies, three, "She only does pottery and camping, just two hobbies.").correct
    for fine in ("Pottery and camping, which she started just one summer ago.",  # what is counted is not asked
                 "Pottery and camping, only 2 pm to 4.", "Pottery and camping, read in exactly one sitting.",
                 "Pottery is her one and only love, plus camping.",
                 "Not only one hobby: she does pottery and camping."):
        assert check_answer(hobbies, three, fine).kind == "partial", fine  # no count claim; two of three items


def test_attribution_no_longer_calls_a_wrong_day_correct_because_of_f1():
    row = {"category": 2, "question": Q16, "gold": "13 May 2023", "prediction": "21 May 2023",
           "scores": {"f1": 0.67}, "evidence_recall": 1.0}
    a = attribute(row)
    assert a.label == "reading_miss" and a.basis == "checker"
    right = {**row, "prediction": "13th of May", "scores": {"f1": 0.33}}
    assert attribute(right).label == "correct"


def test_the_checker_leads_when_the_judge_is_not_trusted():
    rows = [{"method": "m", "params_hash": "h", "dataset": "d", "conv_id": "c", "qa_id": f"q{i}", "category": 2,
             "category_name": "temporal", "question": Q16, "gold": "13 May 2023", "prediction": p,
             "scores": {"f1": 0.5, "checker": c, "judge": 1.0}, "judge_label": "CORRECT", "judge_model": "unaudited"}
            for i, (p, c) in enumerate([("21 May 2023", 0.0), ("13th of May", 1.0)])]
    assert auto_metric(results_frame(rows)) == "checker"


# -- the labelled set -------------------------------------------------------------------------------
def _row(**kw):
    base = {"id": "s/m/c/q1", "source": "s", "dataset": "d", "conv_id": "c", "qa_id": "c/q1", "category": 2,
            "question": "q?", "gold": "g", "prediction": "p", "method": "m", "lenient": "wrong", "strict": "wrong",
            "kind": "vague"}
    base.update(kw)
    return base


@pytest.mark.parametrize("bad, field", [
    ({"lenient": "maybe"}, "lenient"),
    ({"kind": "odd"}, "kind"),
    ({"lenient": "right", "kind": "vague"}, "kind"),
    ({"strict": "right"}, "strict"),
    ({"category": 5}, "category"),
    ({"relabel": {"lenient": "right"}}, "relabel"),
    ({"judge_label": "YES"}, "judge_label"),
])
def test_the_loader_rejects_a_malformed_label_naming_file_line_and_field(tmp_path, bad, field):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(_row()) + "\n" + json.dumps(_row(id="s/m/c/q2", **bad)) + "\n")
    with pytest.raises(DatasetError, match=rf"answers.jsonl: line 2: .*{field}"):
        load_labels(path)


def test_the_loader_rejects_a_repeated_id(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(_row()) + "\n" + json.dumps(_row()) + "\n")
    with pytest.raises(DatasetError, match="repeats line 1"):
        load_labels(path)


def test_the_audit_arithmetic(tmp_path):
    rows = [_row(id=f"s/m/c/q{i}", qa_id=f"c/q{i}", lenient=lab, strict=lab, kind="right" if lab == "right" else k,
                 judge_label=j, judge_model="jm")
            for i, (lab, k, j) in enumerate([("right", "", "CORRECT"), ("right", "", "WRONG"),
                                             ("wrong", "vague", "CORRECT"), ("wrong", "vague", "CORRECT"),
                                             ("wrong", "abstain", "WRONG")])]
    rows[0]["relabel"] = {"lenient": "right", "strict": "wrong", "kind": "right"}
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    labels = load_labels(path)
    a = audit_on_labels(labels, recorded_judge)
    assert (a["false_accept"]["k"], a["false_accept"]["n"]) == (2, 3)
    assert (a["false_reject"]["k"], a["false_reject"]["n"]) == (1, 2)
    assert a["agreement"]["k"] == 2 and a["false_accept_by_kind"]["vague"]["k"] == 2
    assert a["false_accept_by_kind"]["abstain"]["k"] == 0
    assert relabel_agreement(labels)["lenient"]["agree"] == 1 and relabel_agreement(labels)["strict"]["agree"] == 0
    probes = label_probes(labels)
    assert [p.expected for p in probes] == [True, True, False, False, False]
    assert judge_real_audit("jm", labels) is None  # 3 wrong answers: too few to call the judge reliable or not


def test_the_shipped_set_holds_no_held_out_conversation_and_pins_its_audit():
    labels = shipped_labels()
    assert len(labels) >= 100
    assert not [a for a in labels if a.conv_id == "conv-30"]  # kept apart for the independent check
    assert set(shipped_entities()) >= {a.conv_id for a in labels}
    checker = checker_audit()
    f1 = audit_on_labels(labels, f1_source())
    judge = audit_on_labels([a for a in labels if a.judge_label], recorded_judge)
    # the measured ordering the views rely on: the checker agrees with the readers more than F1 or the judges
    assert checker["agreement"]["rate"] > max(f1["agreement"]["rate"], judge["agreement"]["rate"])
    # false rejects were 16/162 (9.9 %) before HyMem's 152 answers over conv-26 were labelled (after the checker's
    # rules): 5 of their 20 right answers were rejected (paraphrases, and one "week before" read as the calendar
    # week), 23/216 (10.6 %) in all; 22/216 after the checker accepted that reading; with RecMem's conv-41 answers
    # (1 of their 23 right rejected), 23/239 (9.6 %).
    # The bound guards against regressions; lowering it back needs a better checker.
    assert checker["false_accept"]["rate"] <= 0.10 and checker["false_reject"]["rate"] <= 0.12
    assert checker_source(shipped_entities())(labels[0]) in (True, False)


def test_the_checker_is_an_offline_judge_with_the_judge_interface(tmp_path, capsys):
    from workbench.cli import main
    from workbench.data import QA
    from workbench.eval import CheckerJudge

    judge = CheckerJudge(names=("Tomasz", "Priya"))
    qa = QA("sample-1/q16", Q16, "13 May 2023", 2)
    assert judge.judge(qa, "13th of May").label == "CORRECT"
    wrong = judge.judge(qa, "21 May 2023")
    assert wrong.label == "WRONG" and wrong.reasoning.startswith("wrong_date")
    assert judge.judge(QA("x", "q?", "", 5), "Not mentioned") is None  # adversarial: scored by its own rule
    argv = ["judge-audit", "--data", "sample", "--judge", "checker", "--real", "20", "--n", "10", "--no-progress",
            "--cache", str(tmp_path / "audits.json")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "On labelled real answers" in out and "Judge audit: checker" in out and "second table" in out
    assert "Verdict sources on" in out and "token F1 >= 0.5" in out


def test_the_verdicts_benchmark_measures_every_source_on_the_shipped_set():
    from benchmarks.bench_verdicts import markdown, run

    r = run()
    assert r["status"] == "ok" and r["n"] == len(shipped_labels())
    names = [s["source"] for s in r["sources"]]
    assert names[:3] == ["checker", "f1", "content recall >= 0.5"] and any(n.startswith("judge ") for n in names)
    assert sum(g["n"] for g in r["checker_by_answers"]) == r["n"]
    text = "\n".join(markdown(r))
    assert "| checker |" in text and "Blind second reading" in text and "conv-30" in text


def test_the_week_before_a_date_accepts_either_reading_and_nothing_beyond():
    """HyMem conv-26 q21: a reader took "27 June 2023" as right for "the week before 6 July 2023" (a Thursday),
    reading the calendar week before (26 June-2 July); the checker read only the seven days before (29 June-5 July)
    and rejected it. Both readings are accepted now; a day outside both is still wrong."""
    q = "When did Caroline go to the LGBTQ conference?"
    for day in ("26 June 2023", "27 June 2023", "5 July 2023"):
        assert check_answer(q, "The week before 6 July 2023", day).correct, day
    for day in ("25 June 2023", "6 July 2023"):
        assert check_answer(q, "The week before 6 July 2023", day).kind == "wrong_date", day
    (two,) = find_periods("two weeks before 6 July 2023")  # a counted phrase keeps its seven days
    assert (str(two.start), str(two.end)) == ("2023-06-22", "2023-06-28")


def test_a_day_outside_the_first_weekend_of_a_month_is_a_wrong_date():
    """RecMem conv-41 q56: "9 August 2023" was accepted for "first weekend of August 2023", read as all August."""
    q = "When did John run a 5K?"
    assert check_answer(q, "first weekend of August 2023", "9 August 2023").kind == "wrong_date"
    assert check_answer(q, "first weekend of August 2023", "on 6 August 2023").correct


def test_a_period_straddling_the_gold_is_vague_and_named_as_overlapping_not_coarser():
    q = "When did Maria start volunteering?"
    coarse = check_answer(q, "13 May 2023", "Sometime in May 2023")
    assert coarse.kind == "vague" and "coarser than" in coarse.reason
    straddle = check_answer(q, "last week of May 2023", "the week of 29 May 2023")  # 29 May-4 June vs 25-31 May
    assert straddle.kind == "vague" and "overlapping, not inside" in straddle.reason and "29 May" in straddle.reason
