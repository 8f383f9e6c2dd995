"""The method contract (``workbench.testing.contract.CHECKS``) over every registered method, in one
parametrised suite; the label-leak check on LongMemEval input; the question-date policy; MemR3
driving each paper method's own retriever with masking."""
import json
import re

import pytest

from workbench.data import load_longmemeval
from workbench.data.types import QA
from workbench.embed import HashEmbedder
from workbench.eval.harness import question_time
from workbench.llm import ScriptedLLM
from workbench.llm.ledger import track
from workbench.methods import (REGISTRY, AMA, EagerFacts, EagerFloor, FullContext, HMem, HyMem, Mem0Style, MemR3,
                               NaiveRAG, RecMem)
from workbench.testing.contract import CHECKS, prompt_texts


def auto():
    return ScriptedLLM([], default="auto")


def emb():
    return HashEmbedder(dim=128)


# -- configurations: at least the defaults of every method, plus ones that fill every structure ---------
def hmem_extract(messages):
    """One event per turn of the fragment, the speaker and capitalised words as entities."""
    body = messages[0]["content"].split("\n\n")[1]
    events, ents, rels = [], [], []
    for speaker, text in re.findall(r"^(\w+): (.+)$", body, re.M):
        events.append({"text": f"{speaker} said: {text}"})
        ents.append({"name": speaker, "type": "person"})
        for word in re.findall(r"(?<=\s)[A-Z][a-z]{2,}\b", text):
            ents.append({"name": word, "type": "other"})
            rels.append({"source": speaker, "relation": "mentions", "target": word})
    return json.dumps({"events": events, "entities": ents, "relations": rels})


def hymem_summarize(messages):
    return {"keywords": [line for line in messages[0]["content"].splitlines()
                         if line.startswith(("Sam: ", "Noor: "))]}


def eager_llm():
    return ScriptedLLM({"eager_facts.extract": {"facts": ["Someone said something."]},
                        "eager_floor.extract": {"facts": ["Someone said something."]}}, default="auto")


def mem0_llm():
    return ScriptedLLM({"mem0_style.extract": {"facts": ["Someone said something."]},
                        "mem0_style.decide": {"actions": [{"fact": 1, "event": "ADD", "id": "", "text": ""}]}},
                       default="auto")


CONFIGS = {
    "full_context": {"default": lambda: FullContext(llm=auto())},
    "naive_rag": {"default": lambda: NaiveRAG(llm=auto(), embedder=emb(), top_k=3)},
    "eager_facts": {"default": lambda: EagerFacts(llm=eager_llm(), embedder=emb())},
    "eager_floor": {"default": lambda: EagerFloor(llm=eager_llm(), embedder=emb())},
    "mem0_style": {"default": lambda: Mem0Style(llm=mem0_llm(), embedder=emb())},
    "hymem": {
        "default": lambda: HyMem(llm=auto(), embedder=emb()),
        "topics": lambda: HyMem(llm=ScriptedLLM({"hymem.segment": {"events": [
            {"start": 1, "end": 3, "topic": "kitten"}, {"start": 4, "end": 6, "topic": "violin"}]},
            "hymem.summarize": hymem_summarize}, default="auto"), embedder=emb())},
    "ama": {"default": lambda: AMA(llm=auto(), embedder=emb()),
            "refresh_on_query": lambda: AMA(llm=auto(), embedder=HashEmbedder(dim=256), refresh_on_query=True)},
    "hmem": {"default": lambda: HMem(llm=auto(), embedder=emb()),
             "extracting": lambda: HMem(llm=ScriptedLLM({"hmem.extract": hmem_extract}, default="auto"),
                                        embedder=emb())},
    "recmem": {
        "default": lambda: RecMem(llm=auto(), embedder=emb()),
        "active": lambda: RecMem(llm=ScriptedLLM({
            "recmem.consolidate": {"episodes": ["Sam and Noor talked about Miso and Geneva."]},
            "recmem.refine": {"facts": ["Sam adopted a kitten named Miso."]}}, default="auto"),
            embedder=emb(), theta_sim=0.4, theta_count=2, k_sub=3)},
    "memr3": {"over_rag": lambda: MemR3(llm=auto(), embedder=emb()),
              "over_eager_facts": lambda: MemR3(llm=eager_llm(), embedder=emb(),
                                                backend=EagerFacts(llm=eager_llm(), embedder=emb()))},
}
CASES = [pytest.param(make, id=f"{name}-{variant}") for name, variants in CONFIGS.items()
         for variant, make in variants.items()]


def test_every_registered_method_has_a_configuration():
    assert set(CONFIGS) == set(REGISTRY), "add the new method to CONFIGS so the contract covers it"
    for name, variants in CONFIGS.items():
        for make in variants.values():
            assert type(make()) is REGISTRY[name]


@pytest.mark.parametrize("make", CASES)
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_contract(make, check, tiny_conv):
    check(make, tiny_conv)



# -- memories saved before the methods became subpackages --------------------------------------------------
def save_with_flat_module_paths(m, path, monkeypatch) -> bytes:
    """Save ``m`` as the flat layout did: every class of a moved module is pickled under its old path
    (``workbench.methods.hmem_tree.HTree``, ...), by aliasing the old paths in ``sys.modules`` and
    giving the classes their old ``__module__`` for the time of the save."""
    import importlib
    import sys

    from workbench.methods.moved import MOVED_MODULES

    with monkeypatch.context() as mp:
        for old, new in MOVED_MODULES.items():
            module = importlib.import_module(new)
            mp.setitem(sys.modules, old, module)
            for obj in vars(module).values():
                if isinstance(obj, type) and obj.__module__ == new:
                    mp.setattr(obj, "__module__", old)
        m.save(path)
    return (path / "state.pkl").read_bytes()


@pytest.mark.parametrize("make", CASES)
def test_a_memory_saved_under_the_old_module_paths_still_loads(make, tiny_conv, tmp_path, monkeypatch):
    from workbench.methods.moved import MOVED_MODULES

    m = make().ingest(tiny_conv)
    current = m.save(tmp_path / "now") / "state.pkl"
    moved = {old: new for old, new in MOVED_MODULES.items() if f"{new}\n".encode() in _module_names(current)}
    data = save_with_flat_module_paths(m, tmp_path / "before", monkeypatch)
    names = _module_names(tmp_path / "before" / "state.pkl")
    assert not any(f"{new}\n".encode() in names for new in MOVED_MODULES.values()), "a new path leaked into the pickle"
    assert all(f"{old}\n".encode() in names for old in moved), "the old paths were not written"
    assert data and (tmp_path / "before" / "state.sig").is_file()
    loaded = type(m).load(tmp_path / "before", llm=getattr(m, "llm", None), embedder=getattr(m, "embedder", None))
    assert loaded.memories().equals(m.memories()) and loaded.events == m.events
    if type(m).name in ("hmem", "recmem"):  # their states hold moved classes (tree, graph, gate log)
        assert moved, f"{type(m).__name__}'s state names no moved module: the test checks nothing"


def _module_names(pkl) -> bytes:
    """The dotted ``workbench.`` names a pickle holds, one per line (each is written once, then memoised)."""
    import pickletools

    return "".join(f"{arg}\n" for op, arg, _ in pickletools.genops(pkl.read_bytes())
                   if isinstance(arg, str) and arg.startswith("workbench.")).encode()


# -- label leaks through a real loader -------------------------------------------------------------------
LME_ITEM = {
    "question_id": "gpt4_leakprobe_abs", "question_type": "knowledge-update", "question": "Where does Noor live now?",
    "answer": "Geneva", "question_date": "2023/07/01 (Sat) 10:00",
    "haystack_dates": ["2023/06/05 (Mon) 09:00", "2023/06/20 (Tue) 18:00"],
    "haystack_session_ids": ["sharegpt_d41d8cd9_0", "answer_4be1b6b4_2"],
    "haystack_sessions": [[{"role": "user", "content": "I adopted a grey kitten called Miso."},
                           {"role": "assistant", "content": "Congratulations on Miso!"}],
                          [{"role": "user", "content": "I moved to Geneva last week for a museum job.",
                            "has_answer": True},
                           {"role": "assistant", "content": "Good luck in Geneva!", "has_answer": False}]],
    "answer_session_ids": ["answer_4be1b6b4_2"]}


@pytest.mark.parametrize("make", CASES)
def test_no_dataset_label_or_evidence_id_reaches_a_method(make, tmp_path):
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([LME_ITEM]))
    conv = load_longmemeval(path)[0]
    qa = conv.qa[0]
    with track() as calls:
        m = make().ingest(conv)
        m.answer(qa.question, now=question_time(m, qa))
    texts = prompt_texts(calls) + [" ".join(map(str, m.memories().astype(str).to_numpy().ravel()))]
    for needle in ("answer_4be1b6b4_2", "sharegpt_d41d8cd9_0", "has_answer", "leakprobe_abs"):
        assert not any(needle in t for t in texts), f"{needle!r} reached {m.name}"
    assert all(not t.extras for t in m.conversation_.turns)


# -- the question date, per method and benchmark -----------------------------------------------------------
PAPER_QUESTION_DATE = {"hymem": {"locomo": False, "longmemeval": True},
                       "recmem": {"locomo": False, "longmemeval": True},
                       "memr3": {"locomo": False, "longmemeval": True}}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_question_date_policy_is_per_method_and_benchmark(name, tiny_conv):
    cls = REGISTRY[name]
    expected = PAPER_QUESTION_DATE.get(name, {"locomo": True, "longmemeval": True})
    assert cls.question_date_policy() == expected
    locomo_qa = tiny_conv.qa[0]
    lme_qa = QA("q", "Where?", "Lyon", "knowledge-update", time=locomo_qa.time)
    method = CONFIGS[name][next(iter(CONFIGS[name]))]()
    assert question_time(method, locomo_qa) == (locomo_qa.time if expected["locomo"] else None)
    assert question_time(method, lme_qa) == lme_qa.time


@pytest.mark.parametrize("name", ["hymem", "recmem", "memr3"])
def test_no_question_date_in_locomo_prompts_of_methods_whose_papers_omit_it(name, tiny_conv):
    qa = tiny_conv.qa[0]
    assert qa.time is not None

    def dated(calls):
        marks = ("question is asked on", "date of the question")
        return any(m in t.lower() for t in prompt_texts(calls) for m in marks)

    m = CONFIGS[name][next(iter(CONFIGS[name]))]().ingest(tiny_conv)
    with track() as calls:
        m.answer(qa.question, now=question_time(m, qa))
    assert calls and not dated(calls)
    with track() as calls:
        m.answer(qa.question, now=qa.time)  # what LongMemEval gives: the date does reach the prompt
    assert dated(calls)


def test_order_dependence_is_exposed():
    assert not AMA(llm=auto(), embedder=emb()).order_dependent
    assert AMA(llm=auto(), embedder=emb(), refresh_on_query=True).order_dependent
    assert not any(CONFIGS[n][next(iter(CONFIGS[n]))]().order_dependent for n in CONFIGS if n != "ama")


# -- MemR3 over each paper method's retriever, with the mask ------------------------------------------------
def router(decision, **payload):
    return {"evidence": [], "gaps": ["where Noor lives"], "decision": decision, **payload}


BACKENDS = {
    "hymem_L1": (lambda llm: HyMem(llm=llm, embedder=emb(), segmentation="window", window_turns=3, window_stride=3),
                 None),
    "hymem_L2": (lambda llm: HyMem(llm=llm, embedder=emb(), segmentation="window", window_turns=3, window_stride=3),
                 {"level": "L2"}),
    "ama": (lambda llm: AMA(llm=llm, embedder=emb(), trigger="session"), None),
    "hmem": (lambda llm: HMem(llm=ScriptedLLM({"hmem.extract": hmem_extract}, default="auto"), embedder=emb()),
             None),
    "recmem": (lambda llm: RecMem(llm=ScriptedLLM({
        "recmem.consolidate": {"episodes": ["Sam and Noor talked about Miso and Geneva."]},
        "recmem.refine": {"facts": ["Sam adopted a kitten named Miso."]}}, default="auto"),
        embedder=emb(), theta_sim=0.4, theta_count=2, k_sub=3), None),
}


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_memr3_drives_each_paper_retriever_with_the_mask(backend, tiny_conv):
    build, options = BACKENDS[backend]
    backend_llm = ScriptedLLM({"hymem.summarize": hymem_summarize}, default="auto")
    queries = iter(("Noor moved city", "museum job", "violin lessons", "kitten Miso"))

    def route(messages):  # retrieve whenever free to; obey a forced directive
        forced = re.search(r'must be "(\w+)"', messages[0]["content"])
        decision = forced.group(1) if forced else "retrieve"
        payload = {"retrieve": {"retrieval_query": next(queries)}, "reflect": {"reasoning": "think"},
                   "answer": {"detailed_answer": "Geneva"}}[decision]
        return router(decision, **payload)

    llm = ScriptedLLM({"memr3.router": route, "memr3.answer": "Geneva"})
    m = MemR3(llm=llm, backend=build(backend_llm), retriever_options=options, n_chk=2).ingest(tiny_conv)
    ans = m.answer("Where does Noor live now?")
    retrieves = [s for s in ans.steps if s.kind == "retrieve"]
    assert len(retrieves) >= 2 and retrieves[0].data["retrieved_ids"]
    seen: list[str] = []
    for s in retrieves:
        assert sorted(s.data["masked_ids"]) == sorted(seen)
        assert s.data["dropped_ids"] == [], f"{backend}'s retriever returned masked ids itself"
        assert not set(s.data["retrieved_ids"]) & set(seen)
        seen += s.data["retrieved_ids"]
    turn_ids = {t.id for t in tiny_conv.turns}
    assert all(h.source_ids and set(h.source_ids) <= turn_ids for h in ans.context)
    assert ans.text == "Geneva"
