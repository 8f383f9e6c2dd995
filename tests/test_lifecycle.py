"""Unit lifecycle (``widgets.lifecycle``) and the event log on the conversation's time axis
(``widgets.event_timeline``): pure state and HTML over a small hand-made run, no widget toolkit."""
from __future__ import annotations

import json
import re
from datetime import datetime

import pytest

from workbench.data import QA, Conversation, Session, Turn
from workbench.trace import Answer, Hit, MemoryEvent, Step

from widgets.event_timeline import EventLog, conversation_axis, place_events, timeline_figure
from widgets.lifecycle import EVENTS_ONLY, IN_MEMORY, REMOVED, LifecycleIndex, parse_link, turn_html, unit_html


def _conv() -> Conversation:
    s1 = Session("S1", datetime(2023, 3, 14, 19, 40), tuple(
        Turn(f"D1:{i}", "Priya" if i % 2 else "Tomasz", text, "S1") for i, text in enumerate(
            ["I live in Leeds.", "Nice. I work nights.", "My dog is called Biscuit."], start=1)))
    s2 = Session("S2", datetime(2023, 4, 2, 11, 5), tuple(
        Turn(f"D2:{i}", "Priya" if i % 2 else "Tomasz", text, "S2") for i, text in enumerate(
            ["I moved to Lisbon!", "Biscuit is called Pilot now.", "<script>alert(1)</script>"], start=1)))
    qa = (QA("c/q1", "Where does Priya live?", "Lisbon", 4, ("D2:1",)),
          QA("c/q2", "What is the dog called?", "Pilot", 4, ("D2:2",)))
    return Conversation("c", ("Priya", "Tomasz"), (s1, s2), qa)


def _run():
    memories = {
        "ama": [{"id": "f1", "kind": "fact", "text": "Priya lives in Lisbon", "source_ids": ["D1:1", "D2:1"]},
                {"id": "f3", "kind": "fact", "text": "The dog is Pilot", "source_ids": ["D1:3", "D2:2"]}],
        "naive_rag": [{"id": f"chunk-{i}", "kind": "chunk", "text": t, "source_ids": [tid]}
                      for i, (tid, t) in enumerate([("D1:1", "I live in Leeds."), ("D2:1", "I moved to Lisbon!")])],
    }
    events = {
        "ama": [MemoryEvent(0, "ADD", "f1", None, "Priya lives in Leeds", "turn D1:1", ("D1:1",), method="ama"),
                MemoryEvent(1, "ADD", "f2", None, "Priya works nights", "turn D1:2", ("D1:2",), method="ama"),
                MemoryEvent(2, "ADD", "f3", None, "The dog is Biscuit", "turn D1:3", ("D1:3",), method="ama"),
                MemoryEvent(3, "UPDATE", "f1", "Priya lives in Leeds", "Priya lives in Lisbon", "refresher: D2:1",
                            ("D1:1", "D2:1"), method="ama"),
                MemoryEvent(4, "DELETE", "f2", "Priya works nights", None, "refresher: contradicted",
                            ("D1:2",), method="ama"),  # sources all old: still happened after D2:1 was read
                MemoryEvent(5, "UPDATE", "f3", "The dog is Biscuit", "The dog is Pilot", "question: What is the dog "
                            "called?", ("D1:3",), method="ama")],
        # a MemR3-like folder: its backend's events carry the backend's name
        "naive_rag": [MemoryEvent(i, "ADD", f"chunk-{i}", None, t, "chunk", (tid,), method="naive_rag")
                      for i, (tid, t) in enumerate([("D1:1", "I live in Leeds."), ("D2:1", "I moved to Lisbon!")])],
    }
    ans_ama = Answer("Where does Priya live?", "Lisbon", (
        Step("retrieve", "search", {}, hits=(Hit("f1", "Priya lives in Lisbon", 0.9, ("D1:1", "D2:1")),
                                              Hit("f3", "The dog is Pilot", 0.2, ("D1:3", "D2:2")))),
        Step("answer", "answer", {})), context=(Hit("f1", "Priya lives in Lisbon", 0.9, ("D1:1", "D2:1")),),
        method="ama")
    ans_rag = Answer("Where does Priya live?", "Leeds", (Step("answer", "answer", {}),), context=(
        Hit("chunk-0", "I live in Leeds.", 0.8, ("D1:1",)), Hit("chunk-1", "I moved to Lisbon!", 0.7, ("D2:1",))),
        method="naive_rag")
    results = [{"method": "ama", "conv_id": "c", "qa_id": "c/q1", "question": "Where does Priya live?",
                "prediction": "Lisbon", "judge_label": "CORRECT", "attribution": "correct",
                "answer": ans_ama.to_dict()},
               {"method": "naive_rag", "conv_id": "c", "qa_id": "c/q1", "question": "Where does Priya live?",
                "prediction": "Leeds", "judge_label": "WRONG", "attribution": "reading_miss",
                "answer": ans_rag.to_dict()},
               {"method": "naive_rag", "conv_id": "other", "qa_id": "other/q1", "question": "?",
                "answer": ans_rag.to_dict()}]  # another conversation: ignored
    return memories, events, results


@pytest.fixture
def index():
    memories, events, results = _run()
    return LifecycleIndex(_conv(), memories, events, results)


# -- lifecycle state -------------------------------------------------------------------------------------
def test_turn_lists_every_unit_of_every_method_derived_from_it(index):
    tl = index.turn("D1:1")
    assert [u.unit_id for u in tl.units["ama"]] == ["f1"] and [u.unit_id for u in tl.units["naive_rag"]] == ["chunk-0"]
    assert (tl.previous, tl.next, tl.session, tl.date) == (None, "D1:2", "S1", "14 Mar 2023")
    removed = index.turn("D1:2").units["ama"]  # only the event log knows f2: AMA deleted it
    assert [(u.unit_id, u.status, u.text) for u in removed] == [("f2", REMOVED, "Priya works nights")]
    assert index.turn("D1:2").units["naive_rag"] == ()  # listed as "nothing derived", not left out
    assert {m: [u.unit_id for u in us] for m, us in index.turn("D2:1").units.items()} == {
        "naive_rag": ["chunk-1"], "ama": ["f1"]}


def test_unit_sources_events_and_the_answers_that_saw_it(index):
    ul = index.unit("ama", "f1")
    assert ul.ref.status == IN_MEMORY and [t.id for t in ul.source_turns] == ["D1:1", "D2:1"]
    assert [(e.seq, e.kind) for e in ul.events] == [(0, "ADD"), (3, "UPDATE")]
    (seen,) = ul.seen
    assert (seen.qa_id, seen.rank, seen.n_context, seen.steps, seen.covers_gold) == ("c/q1", 1, 1, (1,), ("D2:1",))
    assert ul.retrieved == ()
    f3 = index.unit("ama", "f3")  # retrieved by a step, but not put in front of the final reader
    assert f3.seen == () and [(s.qa_id, s.rank, s.steps) for s in f3.retrieved] == [("c/q1", None, (1,))]
    rag = index.unit("naive_rag", "chunk-1")
    assert [(s.qa_id, s.rank, s.covers_gold, s.judge_label) for s in rag.seen] == [("c/q1", 2, ("D2:1",), "WRONG")]
    assert index.unit("naive_rag", "chunk-0").seen[0].covers_gold == ()  # saw it, but it is not gold evidence
    ghost = index.ref("ama", "nope")
    assert ghost.status == EVENTS_ONLY and not index.has_unit("ama", "nope")


def test_event_placement_on_the_conversation_axis(index):
    axis = conversation_axis(_conv())
    assert axis.n == 6 and [(s.id, s.start, s.end, s.date) for s in axis.sessions] == [
        ("S1", 1, 3, "14 Mar 2023"), ("S2", 4, 6, "2 Apr 2023")]
    _, events, _ = _run()
    places = place_events(events["ama"], axis)
    assert places[("ama", 3)].turn_id == "D2:1" and places[("ama", 3)].session == "S2"
    late = places[("ama", 4)]  # a DELETE whose only source is D1:2 happened after the UPDATE at D2:1
    assert (late.x, late.turn_id, late.inferred) == (4.0, "D2:1", True) and late.label.startswith("after D2:1")
    q = places[("ama", 5)]
    assert q.question_time and q.x == axis.question_x and q.label == "question time"


def test_html_links_escaping_and_side_by_side_changes(index):
    html = unit_html(index.unit("ama", "f1"), links=True)
    assert '<td class="wb-before">Priya lives in <del>Leeds</del></td>' in html
    assert '<td class="wb-after">Priya lives in <ins>Lisbon</ins></td>' in html
    assert f'data-link="{json.dumps(["turn", "D2:1"]).replace(chr(34), "&quot;")}"' in html
    assert 'data-link="[&quot;question&quot;, &quot;c/q1&quot;, &quot;ama&quot;]"' in html
    assert "Answers whose reader saw it (1)" in html and "#1 of 1" in html
    assert re.search(r"<h4>AMA <code[^>]*>ama</code>: unit <code>f1</code>", html)  # by its title, not "ama · f1"
    assert 'title="right by the correctness rule">right</span> · judge: CORRECT' in html  # the outcome in words
    turn = turn_html(index.turn("D2:3"), links=True)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in turn and "<script>alert" not in turn
    plain = unit_html(index.unit("ama", "f1"), links=False)
    assert 'class="wb-link"' not in plain and "data-link" not in plain  # a notebook gets plain ids, not dead links
    assert 'data-link="[&quot;unit&quot;, &quot;ama&quot;, &quot;f1&quot;]"' in turn_html(index.turn("D1:1"))


def test_an_unreadable_answer_is_listed_not_dropped_silently():
    memories, events, results = _run()
    results.append({"method": "ama", "conv_id": "c", "qa_id": "c/q2", "answer": {"question": "?"}})
    index = LifecycleIndex(_conv(), memories, events, results)
    assert len(index.problems) == 1 and "'c/q2' is unreadable" in index.problems[0]
    assert [s.qa_id for s in index.unit("ama", "f1").seen] == ["c/q1"]


def test_parse_link_accepts_only_known_targets():
    assert parse_link(["turn", "D1:1"]) == ("turn", "D1:1")
    assert parse_link(["unit", "ama", "f1"]) == ("unit", "ama", "f1")
    for bad in (["turn"], ["unit", "ama"], ["script", "x"], "turn:D1:1", None, ["turn", 3], []):
        assert parse_link(bad) is None, bad


# -- the event log: one axis, pages, colours -------------------------------------------------------------
def test_event_log_pages_through_every_event():
    conv = _conv()
    events = [MemoryEvent(i, "ADD", f"u{i}", None, f"text {i}", "", (conv.turns[i % 6].id,), method="m")
              for i in range(523)]
    log = EventLog(events, conversation=conv, page_size=50)
    assert log.pages == 11 and len(log.page_events) == 50 and log.pager_text == "events 1–50 of 523 (page 1 of 11)"
    seen = []
    for p in range(log.pages):
        log.set_page(p)
        seen += [e.unit_id for e in log.page_events]
        assert log.table_html.count("<tr>") + log.table_html.count('<tr class="wb-refresh">') == \
            len(log.page_events) + 1  # + the header row
    assert sorted(seen) == sorted(e.unit_id for e in events)  # no cap: every event is on some page
    assert log.set_page(99).page == 10 and len(log.page_events) == 23
    log.set_filter(text="text 7")
    assert log.page == 0 and {e.unit_id for e in log.filtered} == {f"u{i}" for i in range(523) if str(i)[0] == "7"}


def test_timeline_lanes_and_refresh_markers_keep_the_method_colour(index):
    _, events, _ = _run()
    evs = events["ama"] + events["naive_rag"]
    log = EventLog(evs, conversation=_conv())
    assert [e.seq for e in log.events if e.method == "ama"] == [0, 1, 2, 3, 4, 5]  # conversation order
    assert log.events[-1].cause.startswith("question:")  # question time sorts last
    fig = log.figure
    by_name = {t.name: t for t in fig.data}
    # methods by title in the legend and the lanes (usability review: code names)
    assert by_name["AMA"].marker.color == by_name["AMA edits (UPDATE/DELETE): 3"].marker.color
    assert by_name["AMA"].marker.color != by_name["Naive RAG"].marker.color
    lanes = list(fig.layout.yaxis.categoryarray)
    assert lanes == ["AMA · DELETE", "AMA · UPDATE", "AMA · ADD", "Naive RAG · ADD"]  # the last one is drawn on top
    ticks = list(fig.layout.xaxis.ticktext)
    assert ticks[0] == "S1<br>14 Mar 2023" and ticks[-1] == "question<br>time"
    empty = timeline_figure([], axis=conversation_axis(_conv()))
    assert len(empty.data) == 0


def test_a_wide_legend_gets_its_own_rows_above_the_plot():
    """Ten methods with their refresh entries wrap the horizontal legend to three or more rows: the top
    margin grows with it, so the legend does not run into the title; two rows keep the old margin."""
    from widgets.event_timeline import legend_rows

    few = ["naive_rag", "hymem", "ama", "ama edits (UPDATE/DELETE): 7"]
    many = few + ["eager_floor", "ama[paper-judge]", "hmem", "hmem edits (UPDATE/DELETE): 15", "recmem",
                  "recmem edits (UPDATE/DELETE): 21", "memr3", "memr3[one-chunk]"]
    assert legend_rows(few) == 2 and legend_rows(many) >= 3
    assert legend_rows([]) == 2


def test_a_recmem_unit_reads_as_its_exchange_with_the_stored_text_one_click_away():
    """RecMem stores the authors' frame ("[Message Timestamp]: ... [Message]: [Priya]: ..."); the lifecycle shows the
    exchange as people read it (the method's ``readable`` hook) and keeps the stored text under "as stored"."""
    from widgets.lifecycle import UnitLifecycle, UnitRef

    stored = "[Message Timestamp]: 2:30 pm on 21 May 2023 [Message]: [Tomasz]: Pilot it is.\n[Priya]: Farewell!"
    ref = UnitRef("recmem", "unit-22", "subconscious", stored, ("D4:3",), "in memory", 0, 0)
    html = unit_html(UnitLifecycle(ref, {}, (), (), (), {}, ()), links=False)
    shown = html.split("<details>")[0]
    assert "Tomasz: Pilot it is." in shown and "Message Timestamp" not in shown and "[Tomasz]" not in shown
    assert "as stored</summary>" in html and "[Message Timestamp]: 2:30 pm" in html
    plain = UnitRef("ama", "f1", "fact", "[Dev]: kept as it is", (), "in memory", 0, 0)
    assert "as stored" not in unit_html(UnitLifecycle(plain, {}, (), (), (), {}, ()), links=False)


def test_a_turn_says_what_is_planted_there():
    """Review: sample-1's D4:3 renames the greyhound (a planted knowledge update) and the turn's page did not say so,
    so its units could not be read against it. A conversation without annotations shows nothing."""
    from workbench.data import load_sample

    conv = next(c for c in load_sample().conversations if c.id == "sample-1")
    html = turn_html(LifecycleIndex(conv, {}, {}, []).turn("D4:3"), links=False)
    assert "▲ planted here: update" in html and "becomes Pilot" in html
    assert "planted here" not in turn_html(index_of_plain_turn(), links=False)


def index_of_plain_turn():
    return LifecycleIndex(_conv(), *_run()).turn("D1:1")


def test_a_units_page_flags_its_text_when_it_is_hard_to_read():
    """The Memories and Events tables flag raw JSON and loops (``widgets.readability``); the unit's own page did
    not. A loop is counted against its source turns: what the people said three times is no loop."""
    from widgets.lifecycle import UnitLifecycle, UnitRef

    looped = "Priya agrees to plant the seeds. " * 3
    ref = UnitRef("ama", "episode:3", "episode", looped, ("D1:1",), "in memory", 0, 0)
    turn = Turn("D1:1", "Priya", "Let us plant the seeds.", "S1")
    head = unit_html(UnitLifecycle(ref, {}, (turn,), (), (), {}, ()), links=False).split("</h4>")[0]
    assert "⚠ repeats itself" in head
    said = Turn("D1:1", "Priya", looped, "S1")  # she really said it three times
    assert "⚠" not in unit_html(UnitLifecycle(ref, {}, (said,), (), (), {}, ()), links=False).split("</h4>")[0]
    # an episode or summary the model wrote that stops mid-sentence was cut at its length cap; a parent copying its
    # child's text is read as that child (an event need not end with a full stop)
    cut = "Priya agrees to plant the seeds on the windowsill first and then outside when the frost risk is"
    for kind, row, flagged in (("episode", {}, True), ("summary", {}, True),
                               ("summary", {"copy_of_child": True}, False), ("event", {}, False)):
        unit = UnitRef("m", "u1", kind, cut, ("D1:1",), "in memory", 0, 0)
        head = unit_html(UnitLifecycle(unit, row, (turn,), (), (), {}, ()), links=False).split("</h4>")[0]
        assert ("⚠ cut off" in head) is flagged, kind


def test_a_fact_units_page_flags_what_it_gets_wrong_against_its_turns():
    """The Memories table, the Question tab and the Structures cards flag a fact against its own turns; the fact's
    own page says so too (a raw unit, the turn by design, is not flagged)."""
    from widgets.lifecycle import UnitLifecycle, UnitRef

    turn = Turn("D1:1", "Jon", "Check my ideal dance studio by the water.", "S1")
    fact = UnitRef("ama", "fact:20", "fact", "Jon is Gina's friend", ("D1:1",), "in memory", 0, 0)
    head = unit_html(UnitLifecycle(fact, {}, (turn,), (), (), {}, ()), links=False).split("</h4>")[0]
    assert "⚠ “friend” not in its turn" in head
    raw = UnitRef("ama", "raw:D1:1", "raw", "Jon: Check my ideal dance studio by the water.", ("D1:1",), "in memory",
                  0, 0)
    assert "⚠" not in unit_html(UnitLifecycle(raw, {}, (turn,), (), (), {}, ()), links=False).split("</h4>")[0]
