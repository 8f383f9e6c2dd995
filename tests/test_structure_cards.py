"""Structure cards (``widgets.structure_cards``): AMA, HyMem, MemR3 and the baselines in the Structures tab.

Methods are built on the tiny conversation with ScriptedLLM (role-matched replies) and HashEmbedder and
saved the way the harness saves them; the cards read the saved files back through ``RunDir``.
"""
from __future__ import annotations

import json
import math
import re

import pytest

from workbench.embed import HashEmbedder
from workbench.llm import ScriptedLLM
from workbench.methods import AMA
from workbench.methods.baselines.simple import EagerFloor, FullContext, NaiveRAG
from workbench.methods.hymem import HyMem
from workbench.methods.memr3 import MemR3
from workbench.rundir import RunDir, save_conversation, save_memory_snapshot

from widgets.structure_cards import CARDS, declared_view
from widgets.structure_cards import chunks_card as naive_rag_card
from widgets.structure_cards import controller_backend_card as memr3_card
from widgets.structure_cards import ingestion_log_rows as ama_log_rows
from widgets.structure_cards import level_links_card as hymem_card
from widgets.structure_cards import speaker_memories_card as mem0_style_card
from widgets.structure_cards import stores_log_card as ama_card

XSS = "<img src=x onerror=alert(1)>"
# Facts the scripted AMA Constructor returns per turn of tiny-1 (one carries an HTML payload)
FACTS = {"D1:1": ["Sam adopted a kitten"], "D1:6": ["Noor lives in Lyon"], "D2:1": [f"Noor moved to Geneva {XSS}"]}
EPISODE_TITLE = "Kitten & violin <news>"


def ama_llm() -> ScriptedLLM:
    def construct(messages):
        tid = re.search(r"THE TURN \(([^,]+),", messages[0]["content"]).group(1)
        return {"facts": [{"content": f, "pattern": "S-V-O"} for f in FACTS.get(tid, [])], "related_id": [],
                "timestamp": "empty"}
    return ScriptedLLM({"ama.construct": construct,
                        "ama.judge_ingest": {"Action": "Pass", "reason": "fine", "confidence": 0.9,
                                             "conflict_ids": []},
                        "ama.trigger": {"T_t": 0, "reason": "same topic", "confidence": 0.7, "topic_summary": ""},
                        "ama.episode": {"title": EPISODE_TITLE, "content": "Sam and Noor caught up.",
                                        "timestamp": "2023-06-05T09:00:00"}}, default="auto")


def hymem_llm() -> ScriptedLLM:
    def summarize(messages):  # one Level-1 sentence per turn line of the event
        return {"keywords": [f"L1 says: {line}" for line in messages[0]["content"].splitlines()
                             if line.startswith(("Sam: ", "Noor: "))]}
    return ScriptedLLM({"hymem.summarize": summarize}, default="auto")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, tiny_conv):
    run = tmp_path_factory.mktemp("cards") / "run"
    save_conversation(run, tiny_conv)
    emb = HashEmbedder(dim=128)
    auto = ScriptedLLM([], default="auto")
    methods = [AMA(llm=ama_llm(), embedder=emb),
               HyMem(llm=hymem_llm(), embedder=emb, segmentation="window", window_turns=3, window_stride=3),
               MemR3(llm=auto, embedder=emb), FullContext(llm=auto), NaiveRAG(llm=auto, embedder=emb),
               EagerFloor(llm=ScriptedLLM({"eager_floor.extract": {"facts": ["Sam has a kitten called Miso."]}},
                                          default="auto"), embedder=emb)]
    for m in methods:
        save_memory_snapshot(m.ingest(tiny_conv), run)
    return run


def card_of(run_dir, method, conv, **kw):
    run = RunDir(run_dir)
    cid = conv.id
    return CARDS[declared_view(method)](run.structures(method, cid), conv, memories=run.memories(method, cid),
                         params=run.params(method, cid), backend_params=run.params(method, cid, backend=True), **kw)


# -- AMA --------------------------------------------------------------------------------------------
def test_ama_card_shows_stores_timeline_and_log(run_dir, tiny_conv):
    html = card_of(run_dir, "ama", tiny_conv)
    n = len(tiny_conv.turns)
    assert f"<b>{n}</b> raw · <b>3</b> fact · <b>2</b> episode units, from {n} turns" in html
    assert "Sam adopted a kitten" in html and "Noor lives in Lyon" in html  # fact texts
    assert "<b>D1:6</b> Noor: Yes, still in Lyon for now." in html  # a fact's source turn, as text
    assert "Noor moved to Geneva &lt;img src=x" in html and XSS not in html  # escaped
    # a long card: a "jump to" line naming each section, each heading with the id its link points at
    jumps = re.search(r"<p class='wb-jumps'>(.*?)</p>", html).group(1)
    ids = re.findall(r"href='#([\w-]+)' data-jump='\1'", jumps)
    assert len(ids) == 4 and all(f"<h5 id='{i}'>" in html for i in ids), jumps
    assert [re.sub(r"<[^>]+>", "", t).split(" (")[0] for t in jumps.split(" · ")] == [
        "jump to: Episode timeline", "Fact store", "Raw store", "Ingestion log: the Judge and the Refresher, per turn"]
    html = html.replace(jumps, "")
    # the episode timeline: one episode per session (episode_at_session_end), in order, with its turns
    timeline = html.split("Episode timeline")[1].split("Fact store")[0]
    assert "2 episodes, in conversation order" in timeline
    assert timeline.index("D1:1–D1:6 (6 turns)") < timeline.index("D2:1–D2:")
    assert "Kitten &amp; violin &lt;news&gt;" in timeline
    assert "<b>D1:3</b> Sam: Miso. She&#x27;s grey with white paws." in timeline  # an episode's turn text
    log = html.split("Ingestion log")[1]
    assert re.search(r"Every one of the \d+ Judge verdicts was <b>Pass</b>", log)
    assert "the Refresher never ran" in log
    assert "shown as JSON" not in html
    # review T2c: the settings in words, the parameter on hover, never "trigger=llm" as the text
    settings = html.split("settings of this run")[1].split("</details>")[0]
    assert "what closes an episode</td><td><b>the LLM decides, turn by turn</b>" in settings
    assert 'title="trigger=llm"' in settings and ">trigger=" not in settings


def test_ama_log_counts_verdicts_and_refresher_actions():
    log = [{"turn_id": "D1:2", "step": "judge", "verdict": "Pass"},
           {"turn_id": "D2:1", "step": "conflict_check", "candidates": 2},
           {"turn_id": "D2:1", "step": "judge", "verdict": "Refresh", "conflict_ids": ["fact:3"]},
           {"turn_id": "D2:1", "step": "refresh", "action": "Update", "updated": ["fact:3"], "deleted": []},
           {"turn_id": "D2:2", "step": "episode", "stored": False, "error": f"ParseError {XSS}"},
           {"turn_id": "D2:3", "step": "refresh", "action": "Update", "updated": [], "deleted": []},
           "not a dict", {"step": "judge", "verdict": 7}]
    rows = {r["turn"]: r for r in ama_log_rows(log, {"D1:2": 0, "D2:1": 1, "D2:2": 2, "D2:3": 3})}
    assert rows["D2:1"]["judge"] == ["Refresh"] and rows["D2:1"]["candidates"] == 2
    assert rows["D2:1"]["refresh"] == ["Update, updated fact:3"]
    assert rows["D2:3"]["refresh"] == ["Update, changed no unit"] and rows["D2:3"]["changed"] == 0
    html = ama_card({"ingestion_log": log}, None, memories=[], params=None)
    # a decision that changed nothing is not counted as an edit (the review saw 9 decisions here, 7 edits in Events)
    assert "Judge verdicts: Pass 1, Refresh 1, 7 1." in html
    assert "Refresher decisions: 2, 1 of them changed a unit (the edits in Events; 1 changed none)." in html
    assert "Update, updated fact:3" in html and "Errors recorded: 1." in html
    assert "ParseError &lt;img" in html and XSS not in html
    assert "params.json is missing" in html and "source turns are shown as ids only" in html


def test_ama_card_tolerates_odd_inputs():
    rows = [{"id": "fact:0", "kind": "fact", "text": {"nested": XSS}, "source_ids": 5},
            {"id": "episode:0", "kind": "episode", "text": math.nan, "source_ids": None, "title": XSS},
            {"id": "x", "kind": "weird"}, "not a row"]
    html = ama_card({"ingestion_log": {"bad": 1}}, None, memories=rows, params={"params": "odd"})
    assert XSS not in html and "&lt;img src=x" in html
    assert "1 rows of memories.jsonl are not objects" in html
    assert "kind other than raw/fact/episode" in html
    assert "ingestion_log in structures.json is a dict, not a list" in html
    assert "params.json has no &#x27;params&#x27; object" in html
    assert "no ingestion_log" in ama_card({}, None, memories=[])


# -- HyMem ------------------------------------------------------------------------------------------
def test_hymem_card_links_level1_to_level2(run_dir, tiny_conv):
    html = card_of(run_dir, "hymem", tiny_conv)
    assert "<b>4</b> Level-2 events" in html and f"<b>{len(tiny_conv.turns)}</b> Level-1 units" in html
    table = html.split("Level-1 → Level-2 links")[1]
    first = table.split("<tr>")[2]  # L2-0: turns D1:1-D1:3 and their three Level-1 sentences
    assert "L2-0" in first and "D1:1–D1:3 (3 turns)" in first
    assert "L1 says: Sam: Hi Noor! I adopted a kitten on Saturday." in first
    assert "L1 says: Sam: Miso. She&#x27;s grey with white paws." in first
    assert "L1 says: Noor: Cute" not in first  # D1:4 belongs to the next event
    assert "summary failed" not in html
    assert "<i>window</i>: a fixed window of turns (no LLM)" in html and "<i>gap</i>" not in html


def test_hymem_card_marks_fallbacks_and_orphans():
    rows = [{"id": "L2-0", "kind": "L2", "text": XSS, "source_ids": ["D1:1"], "topic": XSS, "level1_ids": ["L1-0"],
             "segment": "llm"},
            {"id": "L1-0", "kind": "L1", "text": "raw text", "event_id": "L2-0", "fallback": "ParseError: x"},
            {"id": "L1-1", "kind": "L1", "text": "lost", "event_id": "L2-9", "fallback": math.nan}]
    html = hymem_card({}, None, memories=rows, params=None)
    assert "<b class='wb-forced'>1</b> Level-1 units hold their event's raw text" in html
    assert "(raw text: summary failed)" in html
    assert "1 Level-1 units name an event that is not stored: L1-1" in html
    assert XSS not in html


def test_hymem_card_flags_items_that_repeat_another():
    """Review: HyMem's demo events list "Priya's back hates her" five times with no word about it."""
    rows = [{"id": "L2-0", "kind": "L2", "text": "t", "source_ids": ["D1:1"], "topic": "back", "segment": "llm"}]
    rows += [{"id": f"L1-{i}", "kind": "L1", "text": text, "event_id": "L2-0"}
             for i, text in enumerate(["Priya's back hates her", "Priya's  back hates her", "Pilot is fast"])]
    html = hymem_card({}, None, memories=rows, params=None)
    assert "⚠ 1 of its 3 items repeats another word for word" in html and "= L1-0</span>" in html
    assert "= L1-2" not in html


# -- MemR3 ------------------------------------------------------------------------------------------
def test_memr3_card_shows_its_backend(run_dir, tiny_conv):
    html = card_of(run_dir, "memr3", tiny_conv, views=["naive_rag", "hmem"])
    n_chunks = len(RunDir(run_dir).memories("memr3", tiny_conv.id))
    assert (f"<b>Naive RAG</b> <small>(naive_rag, class NaiveRAG)</small>, which holds <b>{n_chunks}</b> units "
            f"({n_chunks} chunks)") in html
    assert "this is the default one" in html
    # backend settings in words, each parameter and its raw value on hover; a backend's top_k is its own
    assert ('<tr title="chunking=window"><td>how the conversation is cut into chunks</td><td><b>fixed windows of '
            'tokens</b></td></tr>') in html
    assert "key sentences the light module reads" not in html and "chunks its own answers would read" in html
    assert '<tr title="chunk_tokens=256"><td>tokens per chunk</td><td><b>256</b></td></tr>' in html
    assert "Naive RAG has its own structure card in this tab" in html
    assert "n_max=" in html and "retriever_options=none" in html
    assert "D1:1–" in html  # the chunks' turn spans
    # chunk ids never wrap ("chunk-" / "0" in a narrow column): their cells are marked, the class set nowrap
    assert '<th class="wb-id">chunk</th>' in html and re.search(r'<td class="wb-id">chunk-\d+</td>', html)
    assert re.search(r"\.wb-box td\.wb-id, \.wb-box th\.wb-id \{white-space: nowrap;\}", html)
    bare = memr3_card({}, None, memories=[], params=None, backend_params=None)
    assert "backend/params.json is missing" in bare and "(unknown backend)" in bare


# -- baselines --------------------------------------------------------------------------------------
def test_baseline_cards_say_what_is_stored(run_dir, tiny_conv):
    n = len(tiny_conv.turns)
    fc = card_of(run_dir, "full_context", tiny_conv)
    assert f"Nothing is stored: every question sees all <b>{n}</b> turns (2 sessions" in fc
    rag = card_of(run_dir, "naive_rag", tiny_conv)
    assert f"<b>{n}</b> chunks of the conversation are stored (one chunk per turn)" in rag
    assert "turns per chunk: min 1, median 1, max 1" in rag and "Hi Noor! I adopted a kitten" in rag
    ef = card_of(run_dir, "eager_floor", tiny_conv)
    assert "facts are stored, extracted by one LLM call per exchange" in ef
    assert "Sam has a kitten called Miso." in ef and "<b>D1:1</b> Sam:" in ef
    m0 = mem0_style_card({}, tiny_conv, memories=[{"id": "mem-0", "kind": "memory", "text": "[5 June] Sam has Miso",
                                                   "source_ids": ["D1:3"], "speaker": "Sam"}],
                         params={"params": {"top_k": 10}})
    assert "<b>1</b> memories are stored (Sam: 1)" in m0 and "<b>D1:3</b> Sam: Miso." in m0
    assert "decision call" not in m0  # saved before the decisions were: nothing claimed
    from widgets.structure_cards import fact_list_card, stores_log_card
    facts = [{"id": "f0", "kind": "fact", "text": "Sam is Noor's friend", "source_ids": ["D1:3"]},
             {"id": "f1", "kind": "fact", "text": "Miso is grey", "source_ids": ["D1:3"]}]
    for card in (fact_list_card({}, tiny_conv, memories=facts, params={}),
                 stores_log_card({}, tiny_conv, memories=facts, params={})):
        assert "1 of 2 facts are flagged against their own turns" in card and "⚠ “friend” not in its turn" in card
        assert card.count("wb-flag") == 1
    assert "flagged" not in fact_list_card({}, tiny_conv, memories=facts[1:], params={})
    decided = {"decisions": [{"facts": ["a", "b"], "shown": {}, "actions": [{"event": "NONE", "fact": "a"}]},
                             {"facts": ["c"], "shown": {"0": "mem-0"},
                              "actions": [{"event": "ADD", "fact": "c"}, {"event": "UPDATE", "fact": "c",
                                                                          "skipped": "unknown id"}, "junk"]},
                             {"facts": 5, "actions": 7}, "junk"]}  # odd saved values: read as empty, no error
    m0 = mem0_style_card(decided, tiny_conv, memories=[], params={"params": {"top_k": 10}})
    assert ("Of the <b>3</b> facts extracted, the decision call applied NONE 1, ADD 1 (1 of the NONEs with nothing "
            "stored yet to compare against), skipped 1 actions naming an unknown id or event and named <b>1</b> "
            "facts in no action at all (dropped).") in m0
    odd = naive_rag_card({}, None, memories=[{"id": XSS, "text": None, "source_ids": "D1:1"}], params={})
    assert XSS not in odd and "params.json is missing" in odd


# -- the app ----------------------------------------------------------------------------------------
def test_app_structures_tab_uses_the_cards(run_dir, tiny_conv):
    pn = pytest.importorskip("panel")
    from widgets import app as appmod

    app = appmod.build_app(run_dir)
    assert app.store.errors == []
    view = app.views["Structures"]
    assert view.headings() == ["AMA ama", "Eager floor eager_floor", "Full-Context full_context", "HyMem hymem",
                               "MemR3 memr3", "Naive RAG naive_rag"]
    for method, marker in (("ama", "Noor lives in Lyon"), ("hymem", "L1 says: Sam: Hi Noor!"),
                           ("memr3", "<b>Naive RAG</b> <small>(naive_rag, class NaiveRAG)</small>"),
                           ("full_context", "Nothing is stored"),
                           ("naive_rag", "one chunk per turn"), ("eager_floor", "Sam has a kitten called Miso.")):
        section = view.sections[method]
        assert len(section) == 1 and not isinstance(section[0], pn.pane.Alert), method
        assert marker in section[0].object, method
        assert "shown as JSON" not in section[0].object
    # a damaged params.json: reported in the header, the card still renders with a note
    (run_dir / "memories" / "naive_rag" / tiny_conv.id / "params.json").write_text("{broken")
    try:
        app = appmod.build_app(run_dir)
        sections = app.views["Structures"].sections  # tabs are built when first shown; this builds it
        assert any("naive_rag" in e and "params.json" in e for e in app.store.errors)
        assert "params.json is missing" in sections["naive_rag"][0].object
    finally:
        (run_dir / "memories" / "naive_rag" / tiny_conv.id / "params.json").write_text(
            json.dumps({"method": "naive_rag", "class": "NaiveRAG", "params": {"chunking": "turn", "top_k": 10}}))
