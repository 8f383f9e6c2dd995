"""Loaders: every LoCoMo/LongMemEval quirk, malformed input, the project's samples, the dev copies."""
import json

import pytest

from workbench.data import QA, Conversation, DatasetError, Session, Turn, load_locomo, load_longmemeval, load_sample


def _sample(**over):
    conv = {"speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hi"},
                          {"speaker": "Bo", "dia_id": "D1:2", "text": "Look", "img_url": ["u"],
                           "blip_caption": "a photo of a cat", "query": "cat"}],
            "session_2_date_time": "9:00 am on 1 June, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Again"}],
            "session_3_date_time": "9:00 am on 2 June, 2023"}  # date key without a session (conv-26 quirk)
    qa = [{"question": "Year?", "answer": 2022, "evidence": ["D1:1"], "category": 2},
          {"question": "Trap?", "adversarial_answer": "yes", "evidence": [], "category": 5},
          {"question": "Both?", "answer": "No", "adversarial_answer": "Yes", "evidence": ["D1:2"], "category": 5},
          {"question": "Multi?", "answer": "x", "evidence": ["D1:1; D2:1", "D", "D:11:26"], "category": 1}]
    sample = {"sample_id": "s1", "conversation": conv, "qa": qa, "event_summary": {}, "observation": {},
              "session_summary": {}}
    sample.update(over)
    return [sample]


def _write(tmp_path, data, name="d.json"):
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


def test_locomo_quirks(tmp_path):
    ds = load_locomo(_write(tmp_path, _sample()))
    conv = ds[0]
    assert [s.id for s in conv.sessions] == ["S1", "S2"]  # extra date key ignored (and counted)
    assert conv.qa[0].answer == "2022"  # int answer cast
    assert conv.qa[1].answer == "" and conv.qa[1].extras["adversarial_answer"] == "yes"
    assert conv.qa[2].answer == "No"
    assert conv.qa[3].evidence == ("D1:1", "D2:1")  # split on ';' (counted), bad ids dropped (counted)
    assert ds.skipped == {"category5_without_answer": 1, "qa_without_evidence": 1,
                          "malformed_evidence_parts_dropped": 2, "evidence_entries_split": 1,
                          "session_dates_without_session": 1}
    img = conv.turn("D1:2")
    assert img.extras["blip_caption"] == "a photo of a cat" and "a photo of a cat" in img.content
    assert img.time.year == 2023 and img.time.hour == 13
    assert conv.qa[0].time == conv.sessions[-1].date_time


@pytest.mark.parametrize("mutate,where", [
    (lambda s: s.pop("sample_id"), "sample_id"),
    (lambda s: s["conversation"]["session_1"][0].pop("text"), "session_1[0]"),
    (lambda s: s["conversation"]["session_1"][0].update(dia_id="X1"), "dia_id"),
    (lambda s: s["conversation"]["session_1"][0].update(text=5), "session_1[0].text"),
    (lambda s: s["conversation"].update(session_1_date_time="yesterday"), "session_1_date_time"),
    (lambda s: s["conversation"].pop("session_2_date_time"), "session_2_date_time"),
    (lambda s: s["qa"][0].update(category=9), "qa[0].category"),
    (lambda s: s["qa"][3].pop("answer"), "qa[3].answer"),
    (lambda s: s.update(qa={"not": "a list"}), ".qa"),
])
def test_locomo_malformed_names_location(tmp_path, mutate, where):
    data = _sample()
    mutate(data[0])
    with pytest.raises(DatasetError) as err:
        load_locomo(_write(tmp_path, data))
    assert where in str(err.value) and "d.json" in str(err.value)


def test_corrupt_json_and_missing_file(tmp_path):
    with pytest.raises(DatasetError, match="line 1 column"):
        load_locomo(_write(tmp_path, "[{oops"))
    with pytest.raises(DatasetError, match="not found"):
        load_locomo(tmp_path / "missing.json")
    with pytest.raises(DatasetError, match="list"):
        load_locomo(_write(tmp_path, {"a": 1}))
    with pytest.raises(DatasetError, match="line"):
        load_longmemeval(_write(tmp_path, "{", "l.json"))


def _lme_item(**over):
    item = {"question_id": "q1_abs", "question_type": "knowledge-update", "question": "Where?", "answer": 7,
            "question_date": "2023/05/28 (Sun) 19:47",
            "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/01 (Mon) 09:00"],
            "haystack_session_ids": ["answer_b", "answer_a"],
            "haystack_sessions": [[{"role": "user", "content": "I moved", "has_answer": True},
                                   {"role": "assistant", "content": "Nice"}],
                                  [{"role": "user", "content": "Hello"}]],
            "answer_session_ids": ["answer_b"]}
    item.update(over)
    return item


def test_longmemeval_item(tmp_path):
    ds = load_longmemeval(_write(tmp_path, [_lme_item()]))
    conv = ds[0]
    # sorted by date, opaque ids: the dataset's "answer_..." ids would reveal the evidence sessions
    assert [s.id for s in conv.sessions] == ["S1", "S2"] and [s.date_text[8:10] for s in conv.sessions] == ["01", "20"]
    qa = conv.qa[0]
    assert qa.answer == "7" and qa.evidence == ("S2:1",) and qa.extras["abstention"]
    assert qa.extras["answer_session_ids"] == ("S2",)  # the gold side keeps the mapping for scoring
    assert qa.extras["session_ids"] == {"S1": "answer_a", "S2": "answer_b"}
    assert qa.time.day == 28 and conv.speakers == ("user", "assistant")
    no_flags = _lme_item(haystack_sessions=[[{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]])
    ds = load_longmemeval(_write(tmp_path, [no_flags]))
    assert ds[0].qa[0].evidence == ("S2:1",) and ds.skipped["evidence_from_answer_sessions"] == 1


def test_longmemeval_methods_see_no_gold_flags_or_ids(tmp_path):
    conv = load_longmemeval(_write(tmp_path, [_lme_item()]))[0]
    seen = conv.without_qa()
    assert seen.qa == () and all("has_answer" not in t.extras for t in seen.turns)
    assert not any("answer" in x for s in seen.sessions for x in (s.id, *(t.id for t in s.turns)))


def test_without_qa_strips_gold_turn_extras():
    turn = Turn("S1:1", "user", "I moved", "S1", None, {"has_answer": True, "blip_caption": "a box"})
    conv = Conversation("c", ("user",), (Session("S1", None, (turn,)),), (QA("q", "Where?", "Lyon", 1),))
    [seen] = conv.without_qa().turns
    assert dict(seen.extras) == {"blip_caption": "a box"} and seen.content == turn.content


@pytest.mark.parametrize("over,where", [
    ({"question_type": "trivia"}, "question_type"),
    ({"question_date": "May 5"}, "question_date"),
    ({"haystack_dates": ["2023/05/20 (Sat) 10:00"]}, "haystack_sessions"),
])
def test_longmemeval_malformed(tmp_path, over, where):
    with pytest.raises(DatasetError, match=where):
        load_longmemeval(_write(tmp_path, [_lme_item(**over)]))
    item = _lme_item()
    item.pop("answer_session_ids")
    with pytest.raises(DatasetError, match="answer_session_ids"):
        load_longmemeval(_write(tmp_path, [item]))


def test_project_samples_meet_the_design():
    ds = load_sample()
    assert len(ds) >= 2
    for conv in ds:
        assert len(conv.sessions) >= 6 and len(conv.turns) >= 80 and len(conv.speakers) == 2
        assert len(conv.qa) >= 25 and {q.category for q in conv.qa} == {1, 2, 3, 4, 5}
        ids = {t.id for t in conv.turns}
        assert all(set(q.evidence) <= ids for q in conv.qa)
    assert len(load_sample("tiny_conversation")[0].turns) < 20


def test_locomo_dev_copy(locomo_dev_path):
    ds = load_locomo(locomo_dev_path)
    assert len(ds) == 7 and len(ds.questions) == 1347
    assert [len(c.sessions) for c in ds][0] == 19
    assert sum(1 for q in ds.questions if q.category != 5) == 1035


def test_longmemeval_dev_copy(lme_dev_path):
    ds = load_longmemeval(lme_dev_path)
    assert len(ds) == 399
    assert sum(1 for c in ds if c.qa[0].extras["abstention"]) == 21
    assert sum(len(c.turns) for c in ds) == 8772
