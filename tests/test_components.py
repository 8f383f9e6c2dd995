"""Each paper method runs on its paper's components when they can be reached (``--embedder auto``), and any
other embedder or a missing reranker is a departure in ``param_notes``, the app header and the manifest."""
from __future__ import annotations

import pytest

from workbench.embed import HashEmbedder, MiniLMEmbedder, embedder_from_spec
from workbench.eval.components import choose_components
from workbench.eval.settings import build_method
from workbench.llm import ScriptedLLM
from workbench.methods import REGISTRY
from workbench.methods.components import component_departures, same_model

PAPERS = ("hymem", "ama", "hmem", "recmem", "memr3")
PAPER_EMBEDDERS = {"hymem": "Qwen3-Embedding-0.6B", "ama": "text-embedding-3-large", "hmem": "Qwen3-Embedding-4B",
                   "recmem": "text-embedding-3-small", "memr3": "text-embedding-3-large"}
PAPER_RERANKERS = {"hmem": "Qwen3-Reranker-4B", "memr3": "ms-marco-MiniLM-L-12-v2"}


class _Reranker:
    def __init__(self, name):
        self.name = name

    def __call__(self, query, documents):
        return [0.0] * len(documents)


def _api_llm(model="gpt-4o-mini"):
    llm = ScriptedLLM([], default="auto")
    llm.model = model  # what a run records as the LLM; the method only needs one to be there
    return llm


@pytest.mark.parametrize("name", PAPERS)
def test_each_paper_method_declares_its_papers_components(name):
    c = REGISTRY[name].components
    assert c.embedder == PAPER_EMBEDDERS[name]
    assert c.reranker == PAPER_RERANKERS.get(name)


@pytest.mark.parametrize("name", PAPERS)
def test_auto_names_the_papers_embedder_for_an_api_model(name, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # building a client sends nothing
    comp = REGISTRY[name].components
    choice = choose_components(name, llm_spec="openai:gpt-4o-mini",
                               embedder_url="http://127.0.0.1:9/v1" if not comp.embedder_on_openai else None)
    embedder = embedder_from_spec(choice.embedder)
    assert same_model(embedder.name, comp.embedder_served)
    if comp.embedder_on_openai:  # OpenAI's own API serves it: no URL needed
        assert choice.embedder == f"openai:{comp.embedder_served}"
    setup = build_method(name, llm=_api_llm(), embedder=embedder, params={"profile": "paper"}, warn=False,
                         reranker=_Reranker(comp.reranker_served) if comp.reranker else None)
    assert "embedder" not in setup.method.param_notes
    assert "reranker" not in setup.method.param_notes
    assert setup.method.param_notes == {}, setup.method.param_notes  # the paper profile on the paper's parts


def test_an_open_embedder_without_a_url_falls_back_and_says_why():
    choice = choose_components("hmem", llm_spec="openai:gpt-4o-mini")
    assert choice.embedder == "minilm"
    assert any("--embedder-url" in n and "Qwen3-Embedding-4B" in n for n in choice.notes)
    assert any("--reranker-url" in n for n in choice.notes)
    with_url = choose_components("hmem", llm_spec="openai:gpt-4o-mini", embedder_url="http://h:8000/v1",
                                 reranker_url="http://h:8001/v1")
    assert with_url.embedder == "openai:Qwen/Qwen3-Embedding-4B@http://h:8000/v1"
    assert with_url.reranker == "endpoint:Qwen/Qwen3-Reranker-4B@http://h:8001/v1"


def test_a_local_model_keeps_the_offline_embedder_and_no_reranker():
    """Every recorded cassette was made this way: ``auto`` must not change what a local or replayed run builds."""
    for spec in (None, "local", "replay:x.jsonl", "gguf:m.gguf"):
        for name in (*PAPERS, "naive_rag", "full_context"):
            choice = choose_components(name, llm_spec=spec)
            assert (choice.embedder, choice.reranker) == ("minilm", "none")


def test_baselines_embed_like_the_runs_one_paper_method():
    alone = choose_components("naive_rag", llm_spec="openai:gpt-4o-mini", run_methods=("naive_rag", "ama"))
    assert alone.embedder == "openai:text-embedding-3-large"
    mixed = choose_components("naive_rag", llm_spec="openai:gpt-4o-mini",
                              run_methods=("naive_rag", "ama", "recmem"))
    assert mixed.embedder == "minilm"  # two papers, two embedders: the offline default, not a guess


def test_an_explicit_spec_is_used_as_given():
    assert choose_components("ama", llm_spec="openai:gpt-4o-mini", embedder="hash").embedder == "hash"
    c = choose_components("ama", llm_spec="local", reranker="lexical")
    assert c.reranker == "none" and any("reranks nothing" in n for n in c.notes)


@pytest.mark.parametrize("name", PAPERS)
def test_minilm_forced_is_a_departure_everywhere(name):
    """param_notes, the manifest's departures (the method's config, as the harness writes it) and the app
    header (read from the saved params.json) all list the embedder."""
    pytest.importorskip("panel")
    from widgets.app import departure_notes

    setup = build_method(name, llm=_api_llm(), embedder=MiniLMEmbedder(), params={"profile": "paper"}, warn=False)
    method = setup.method
    paper = REGISTRY[name].components.embedder
    assert paper in method.param_notes["embedder"]
    manifest = type(method).departures(method.config(), None)  # harness.run_manifest's "departures"
    assert any(line.startswith("embedder = 'all-MiniLM-L6-v2-int8'") and paper in line for line in manifest)
    header = departure_notes([name], lambda _n: {"params": method.config()})
    assert any(line.startswith(f"{name}: embedder = ") and paper in line for line in header)
    if REGISTRY[name].components.reranker:  # no reranker given: that is listed too
        assert "reranker" in method.param_notes
        assert any(line.startswith("reranker = 'none'") for line in manifest)


def test_component_departures_compare_names_loosely():
    c = REGISTRY["hmem"].components
    assert component_departures(c, embedder="qwen/qwen3-embedding-4b", reranker="Qwen3-Reranker-4B") == {}
    assert set(component_departures(c, embedder="hash-256")) == {"embedder", "reranker"}
    assert component_departures(c, embedder=None) == {}  # a method not yet given its services: not judged
    assert component_departures(None, embedder="hash-256") == {}  # a baseline has no paper components


def test_hash_embedder_config_is_named_in_saved_params():
    setup = build_method("ama", llm=_api_llm(), embedder=HashEmbedder(), params={"profile": "paper"}, warn=False)
    assert setup.method.config()["embedder"] == "hash-256"
    assert "reranker" not in setup.method.config()  # AMA takes none: its configuration hash is unchanged


def test_the_header_names_each_methods_embedder_when_they_differ():
    from workbench.eval.method_llms import mixed_embedders_line

    one = {"evaluations": [{"method": "ama", "embedder": "x"}, {"method": "naive_rag", "embedder": "x"}]}
    assert mixed_embedders_line(one) is None
    two = {"evaluations": [{"method": "ama", "embedder": "text-embedding-3-large"},
                           {"method": "recmem", "embedder": "text-embedding-3-small"},
                           {"method": "naive_rag", "embedder": "all-MiniLM-L6-v2-int8"}]}
    assert mixed_embedders_line(two) == ("ama: text-embedding-3-large; recmem: text-embedding-3-small; "
                                         "naive_rag: all-MiniLM-L6-v2-int8")
    assert mixed_embedders_line({"evaluations": "not a list"}) is None  # a damaged manifest: no line
