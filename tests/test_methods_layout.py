"""One subpackage per method: explicit exports, no inherited halves, prompt hashes that did not move
with the code, and memories saved under the old flat module paths (see also
``test_contract.test_a_memory_saved_under_the_old_module_paths_still_loads``)."""
import importlib
import json
import pkgutil

import pytest

import workbench.methods as methods
from workbench.embed import HashEmbedder
from workbench.eval.manifest import method_prompt_hashes
from workbench.llm import ScriptedLLM
from workbench.methods import REGISTRY, MemoryMethod, NaiveRAG
from workbench.methods.moved import MOVED_MODULES, SavedStateError, load_state, prompt_key

PACKAGES = ("ama", "baselines", "hmem", "hymem", "memr3", "recmem")


def test_the_package_exports_are_explicit_and_the_registry_unchanged():
    for name in methods.__all__:
        assert hasattr(methods, name), name
    for pkg in PACKAGES:
        sub = importlib.import_module(f"workbench.methods.{pkg}")
        assert sub.__all__ and all(hasattr(sub, n) for n in sub.__all__), pkg
    assert list(REGISTRY) == ["full_context", "naive_rag", "eager_floor", "eager_facts", "hymem", "ama", "hmem",
                              "recmem", "memr3", "mem0_style"]  # registry.BUILTIN: the views' order and colours
    assert methods.EagerFacts is methods.baselines.EagerFacts and REGISTRY["eager_facts"] is methods.EagerFacts


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_contract_methods_come_from_the_class_not_a_mixin(name):
    """Every class a method inherits from is a ``MemoryMethod`` (no mixin halves), and its own
    ``summary_stats`` is a static method of the class."""
    cls = REGISTRY[name]
    assert all(c is object or issubclass(c, MemoryMethod) for c in cls.__mro__), cls.__mro__
    assert isinstance(vars(MemoryMethod)["summary_stats"], staticmethod)
    owner = next(c for c in cls.__mro__ if "summary_stats" in vars(c))
    assert isinstance(vars(owner)["summary_stats"], staticmethod)


# -- prompt hashes ------------------------------------------------------------------------------------------
FLAT_KEYS = {  # the keys written before the move (modules with prompt constants)
    "full_context": {"baselines_prompts"}, "naive_rag": {"baselines_prompts"}, "eager_floor": {"baselines_prompts"},
    "eager_facts": {"baselines_prompts"}, "mem0_style": {"mem0_style_prompts"}, "ama": {"ama_prompts"},
    "hmem": {"hmem", "hmem_graph", "hmem_prompts", "hmem_retrieval"}, "hymem": {"hymem", "hymem_prompts"},
    "memr3": {"memr3", "memr3_prompts", "memr3_state"}, "recmem": {"recmem", "recmem_prompts"}}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_prompt_hashes_keep_their_flat_module_keys(name):
    """Result rows store these keys (and a hash over them): renaming them would re-answer every row."""
    cls = REGISTRY[name]
    assert set(method_prompt_hashes(cls.__new__(cls))) == FLAT_KEYS[name]


def test_every_module_of_a_method_package_is_hashed_with_some_method():
    listed = {m for cls in REGISTRY.values()
              for m in (*cls.prompt_modules, *(x for mods in cls.profile_prompt_modules.values() for x in mods))}
    # a paper's headline tables (``paper_tables``) are what ``workbench reproduce`` compares against, and H-Mem's
    # ``stand_in`` LLM exists only to fit its calibration (whose values reach a run as parameters, hashed there):
    # neither changes an answer, so no run's prompt hash should move when one of them changes
    not_behaviour = {"paper_tables", "stand_in"}
    for pkg in PACKAGES:
        path = importlib.import_module(f"workbench.methods.{pkg}").__path__
        for info in pkgutil.iter_modules(path):
            if info.name in not_behaviour:
                continue
            assert f"{pkg}.{info.name}" in listed, f"{pkg}.{info.name} is in no class's prompt_modules"
    for module in listed:
        importlib.import_module(f"workbench.methods.{module}")


def test_prompt_keys_are_the_old_flat_names():
    for old, new in MOVED_MODULES.items():
        assert prompt_key(new) == old.rsplit(".", 1)[-1]
        importlib.import_module(new)
    assert prompt_key("workbench.methods.someday.planning") == "planning"


# -- saved memories -----------------------------------------------------------------------------------------
def test_old_paths_of_the_main_modules_resolve_to_their_classes():
    """The old ``workbench.methods.hmem`` is now a package: its classes are looked up in ``hmem.method``."""
    from workbench.methods import HMem, Mem0Style
    from workbench.methods.hmem.tree import HTree
    from workbench.methods.memr3.method import Run

    for module, name, cls in (("hmem", "HMem", HMem), ("memr3", "Run", Run), ("baselines", "NaiveRAG", NaiveRAG),
                              ("mem0_style", "Mem0Style", Mem0Style), ("hmem_tree", "HTree", HTree)):
        assert load_state(f"cworkbench.methods.{module}\n{name}\n.".encode(), saved_by="0.1.0") is cls


def _saved(tmp_path, version):
    m = NaiveRAG(llm=ScriptedLLM([], default="auto"), embedder=HashEmbedder(32)).ingest(_tiny())
    m.save(tmp_path)
    meta = json.loads((tmp_path / "params.json").read_text())
    assert meta["version"] == importlib.import_module("workbench").__version__
    if version is None:
        meta.pop("version")
    else:
        meta["version"] = version
    (tmp_path / "params.json").write_text(json.dumps(meta))
    # a state naming a class that no version of the workbench has, at an old flat path
    (tmp_path / "state.pkl").write_bytes(b"(dp0\nVstore_\np1\ncworkbench.methods.baselines\nGone\np2\ns.")
    return m


def _tiny():
    from workbench.data import load_sample

    return load_sample("tiny_conversation")[0]


def test_a_missing_class_names_the_version_that_saved_the_memory(tmp_path):
    _saved(tmp_path, "0.0.9")
    with pytest.raises(SavedStateError, match=r"saved by memory-workbench 0\.0\.9 and names "
                                               r"workbench\.methods\.baselines\.Gone \(moved to "
                                               r"workbench\.methods\.baselines\.simple\)"):
        NaiveRAG.load(tmp_path, embedder=HashEmbedder(32), trust=True)


def test_a_missing_class_in_a_memory_without_a_version_says_so(tmp_path):
    _saved(tmp_path, None)
    with pytest.raises(SavedStateError, match="a memory-workbench version that did not record itself"):
        NaiveRAG.load(tmp_path, embedder=HashEmbedder(32), trust=True)
