"""A plugin's resources (issue #65 item 3): ``resources = "pkg.folder"`` on a method class names the folder its
gallery conversations, annotations, gallery cassettes and cost profile are read from; a bad declaration or file is
an error naming it, and the built-ins keep the workbench's ``sample_data``."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

from workbench import gallery
from workbench.data import SAMPLE_DIR, load_sample
from workbench.eval.estimate import estimate_run
from workbench.eval.harness import select
from workbench.methods import REGISTRY, register
from workbench.methods.registry import method_resources, resource_file

from test_method_plugins import LastTurns


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A package ``res_pkg`` with a resource folder ``res_pkg.res``, and a registered method declaring it."""
    folder = tmp_path / "res_pkg" / "res"
    (folder / "cassettes" / "gallery").mkdir(parents=True)
    (tmp_path / "res_pkg" / "__init__.py").write_text("")
    (folder / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    for mod in [m for m in sys.modules if m.startswith("res_pkg")]:
        monkeypatch.delitem(sys.modules, mod)
    cls = register(type("WithResources", (LastTurns,), {"name": "with_resources", "resources": "res_pkg.res"}))
    yield cls, folder
    REGISTRY.unregister("with_resources")


def test_the_builtins_keep_the_workbenchs_sample_data():
    assert method_resources("hymem") is None and resource_file("hymem", "cost_profiles.json") is None
    assert gallery.cassette("hymem") == SAMPLE_DIR / "cassettes" / "gallery" / "hymem.jsonl"
    assert gallery.cassette("hymem", "paper").name == "hymem.paper.jsonl"
    assert gallery.data_spec("hymem") == "gallery"


def test_a_declared_folder_holds_the_cassettes_and_files(plugin):
    cls, folder = plugin
    assert method_resources("with_resources") == folder and method_resources(cls) == folder
    assert gallery.cassette("with_resources") == folder / "cassettes" / "gallery" / "with_resources.jsonl"
    assert resource_file("with_resources", "annotations.json") is None  # not shipped: nothing to read
    assert gallery.data_spec("with_resources") == "gallery"
    conv = json.loads((SAMPLE_DIR / "gallery_conversations.json").read_text())[0]
    (folder / "gallery_conversations.json").write_text(json.dumps([{**conv, "sample_id": "gallery-mine"}]))
    assert gallery.data_spec("with_resources") == f"locomo:{folder / 'gallery_conversations.json'}"
    ids = gallery.conversation_ids(cls)
    assert "gallery-mine" in ids and "gallery-hymem" in ids


@pytest.mark.parametrize("declared, says", [("no_such_pkg_xyz.res", "not an importable package"),
                                            ("not a name", "dotted module name"), (42, "dotted module name")])
def test_a_bad_declaration_is_an_error_naming_the_attribute(declared, says):
    cls = type("BadResources", (LastTurns,), {"name": "bad_resources", "resources": declared})
    with pytest.raises(ValueError, match=says) as err:
        method_resources(cls)
    assert "BadResources.resources" in str(err.value)


def test_a_file_outside_the_folder_is_refused(plugin, tmp_path):
    _, folder = plugin
    (tmp_path / "secret.json").write_text("{}")
    (folder / "annotations.json").symlink_to(tmp_path / "secret.json")
    with pytest.raises(ValueError, match="outside its resource folder"):
        resource_file("with_resources", "annotations.json")
    with pytest.raises(ValueError, match="outside its resource folder"):
        resource_file("with_resources", "../../secret.json")


def test_its_annotations_are_read_and_checked_against_its_conversations(plugin):
    from workbench.data import DatasetError

    _, folder = plugin
    conv = json.loads((SAMPLE_DIR / "gallery_conversations.json").read_text())[0]
    (folder / "gallery_conversations.json").write_text(json.dumps([{**conv, "sample_id": "gallery-mine"}]))
    body = {"recurring": [{"id": "t", "topic": "a topic", "turns": ["D1:1", "D2:1"]}]}
    (folder / "annotations.json").write_text(json.dumps({"schema": 1, "conversations": {"gallery-mine": body}}))
    ann = gallery.annotations("with_resources")
    assert ann["gallery-mine"].recurring[0]["turns"] == ["D1:1", "D2:1"] and "gallery-hymem" in ann
    body["recurring"][0]["turns"] = ["D9:9", "D2:1"]  # a turn its conversation does not have
    (folder / "annotations.json").write_text(json.dumps({"schema": 1, "conversations": {"gallery-mine": body}}))
    with pytest.raises(DatasetError, match="D9:9"):
        gallery.annotations("with_resources")


PROFILE = {"fitted_on": {"data": "my-gallery", "cassette": "with_resources.jsonl", "model": "scripted"},
           "methods": {"with_resources": {"params": {}, "roles": [
               {"phase": "query", "role": "with_resources.answer", "unit": "questions", "calls_per_unit": 2.0,
                "prompt_tokens_per_call": 100.0, "completion_tokens_per_call": 5.0}]}}}


def test_the_estimate_reads_its_own_cost_profile(plugin):
    _, folder = plugin
    plan = select(load_sample("tiny_conversation"))
    before = estimate_run("with_resources", plan, profiles={"methods": {}})
    assert before.phases["query"].calls == 0 and any("no cost profile" in n for n in before.notes)
    (folder / "cost_profiles.json").write_text(json.dumps(PROFILE))
    est = estimate_run("with_resources", plan, profiles={"methods": {}})
    questions = sum(len(q) for _, q in plan)
    assert est.phases["query"].calls == 2 * questions and est.phases["query"].prompt_tokens == 200 * questions
    assert "my-gallery" in est.basis and not any("no cost profile" in n for n in est.notes)


def test_a_damaged_cost_profile_is_said_and_the_run_estimated_without_it(plugin):
    _, folder = plugin
    (folder / "cost_profiles.json").write_text(textwrap.dedent('{"methods": {"with_resources": {"roles": 3}}}'))
    est = estimate_run("with_resources", select(load_sample("tiny_conversation")), profiles={"methods": {}})
    said = [n for n in est.notes if "own cost profile is unusable" in n]
    assert said and "cost_profiles.json" in said[0] and "roles" in said[0]
    assert est.phases["query"].calls == 0
