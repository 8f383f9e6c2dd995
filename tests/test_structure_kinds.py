"""Structure kinds (``workbench.structures``): each kind's validator accepts a good part and names the field of a
bad one; a toy plugin method (defined here, no view code) that declares ``clusters`` and ``tree`` parts is drawn
by the Structures tab as a plotly figure and a tree outline, not as JSON; ``check_method`` validates the kinds;
the core module imports no Panel; Mem0-style declares its decisions as a ``timeline`` part."""
from __future__ import annotations

import copy
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from workbench import structures as S
from workbench.data import Conversation, Session, Turn
from workbench.embed import HashEmbedder
from workbench.llm import ScriptedLLM
from workbench.methods import MemoryMethod
from workbench.methods.answer_prompt import shared_answer
from workbench.methods.common import format_turn
from workbench.methods.store import MemoryUnit
from workbench.trace import Answer

ROOT = Path(__file__).resolve().parents[1]

GOOD = {
    "tree": {"kind": "tree", "title": "t", "nodes": [
        {"id": "r", "parent": None, "text": "root", "level": 2, "label": "all"},
        {"id": "a", "parent": "r", "text": "leaf a", "level": 1, "time": "2023-05-01T10:00:00",
         "source_ids": ["D1:1"]},
        {"id": "b", "parent": "r", "text": "leaf b"}]},
    "clusters": {"kind": "clusters", "clusters": [{"id": "c1", "label": "pets", "centroid": [0.0, 1.0, 0.0]}],
                 "members": [{"id": "m1", "text": "a dog", "cluster": "c1", "vector": [0.1, 0.9, 0.0]},
                             {"id": "m2", "text": "noise", "cluster": None, "vector": [1.0, 0.0, 0.0]}]},
    "stores": {"kind": "stores", "stores": [{"name": "facts", "entries": [
        {"id": "f1", "kind": "fact", "text": "Ann has a dog", "source_ids": ["D1:1"]}]}]},
    "graph": {"kind": "graph", "nodes": [{"id": "ann", "label": "Ann", "kind": "person"}, {"id": "dog"}],
              "edges": [{"source": "ann", "target": "dog", "label": "owns"}]},
    "levels": {"kind": "levels", "levels": [
        {"name": "key items", "units": [{"id": "k1", "text": "dog", "links": ["e1"]}]},
        {"name": "events", "units": [{"id": "e1", "text": "Ann talks about her dog"}]}]},
    "timeline": {"kind": "timeline", "events": [{"text": "ADD f1", "time": "2023-05-01", "label": "Ann"},
                                                {"text": "NONE"}]},
}

#: (kind, how to break a good part, the field the message must name)
BAD = [
    ("tree", lambda p: p["nodes"][1].update(parent="zz"), "nodes[1].parent"),
    ("tree", lambda p: p["nodes"][1].update(level=3), "nodes[1].level"),
    ("tree", lambda p: p["nodes"][0].update(parent="a"), "parent cycle"),
    ("tree", lambda p: p["nodes"][2].pop("text"), "nodes[2].text"),
    ("tree", lambda p: p["nodes"].append({"id": "a", "text": "again"}), "nodes[3].id"),
    ("clusters", lambda p: p["members"][0].update(cluster="c9"), "members[0].cluster"),
    ("clusters", lambda p: p["members"][1].update(vector=[1.0, float("nan"), 0.0]), "members[1].vector"),
    ("clusters", lambda p: p["members"][1].update(vector=[1.0, 0.0]), "different lengths"),
    ("clusters", lambda p: p.pop("members"), ".members must be a list"),
    ("stores", lambda p: p["stores"][0]["entries"][0].pop("kind"), "entries[0].kind"),
    ("stores", lambda p: p["stores"][0].update(entries="x"), "stores[0].entries"),
    ("graph", lambda p: p["edges"][0].update(target="cat"), "edges[0].target"),
    ("levels", lambda p: p["levels"][0]["units"][0].update(links=["nope"]), "units[0].links"),
    ("levels", lambda p: p["levels"][1]["units"][0].update(id="k1"), "units[0].id"),
    ("timeline", lambda p: p["events"][0].update(time="last Tuesday"), "events[0].time"),
    ("timeline", lambda p: p["events"][1].update(source_ids="D1:1"), "events[1].source_ids"),
]


def test_every_kind_has_a_good_example_and_a_drawing():
    from widgets.structure_kinds import DRAWINGS

    assert set(GOOD) == set(S.KINDS) == set(DRAWINGS)
    for kind, part in GOOD.items():
        assert S.validate_part(part, extra_kinds=()) == [], kind


@pytest.mark.parametrize("kind,breaks,field", BAD, ids=[f"{k}-{f}" for k, _, f in BAD])
def test_a_bad_part_is_refused_naming_the_field(kind, breaks, field):
    part = copy.deepcopy(GOOD[kind])
    breaks(part)
    problems = S.validate_part(part, extra_kinds=())
    assert problems and any(field in p for p in problems), problems
    with pytest.raises(S.StructureKindError, match=field.replace("[", r"\[").replace("]", r"\]")):
        S.to_kind(kind, **{k: v for k, v in part.items() if k != "kind"})


def test_unknown_kind_and_containers():
    assert "no structure kind" in S.validate_part({"kind": "bogus"}, extra_kinds=())[0]
    assert S.validate_part({"kind": "bogus"}, extra_kinds=("bogus",)) == []  # a kind with a view of its own
    assert S.parts_of({"units": []}) == [] and S.validate_structures({"units": []}) == []
    assert S.parts_of(GOOD["tree"]) == [GOOD["tree"]]
    bad = {"parts": [GOOD["graph"], {"kind": "graph", "nodes": [], "edges": [{"source": "x", "target": "y"}]}]}
    assert any(p.startswith("parts[1].edges[0].source") for p in S.validate_structures(bad))
    assert "must be a list" in S.validate_structures({"parts": {"kind": "tree"}})[0]
    assert S.tree_part(GOOD["tree"]["nodes"], title="t")["kind"] == "tree"


def test_the_core_module_imports_no_panel():
    code = "import sys, workbench.structures; bad = {'panel', 'bokeh', 'plotly', 'widgets'} & set(sys.modules); " \
           "print(sorted(bad)); sys.exit(1 if bad else 0)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


# -- a toy plugin method with no view code ---------------------------------------------------------------------
def toy_conversation() -> Conversation:
    lines = [("Ann", "My dog Rex chased a ball today."), ("Bob", "I baked sourdough bread."),
             ("Ann", "Rex the dog needs a vet visit."), ("Bob", "The bread recipe uses rye flour."),
             ("Ann", "I adopted a second dog."), ("Bob", "Baking bread is relaxing.")]
    sessions = []
    for s in range(2):
        when = datetime(2023, 5, 1 + 7 * s, 10)
        turns = tuple(Turn(f"D{s + 1}:{i + 1}", sp, text, f"S{s + 1}", when)
                      for i, (sp, text) in enumerate(lines[3 * s:3 * s + 3]))
        sessions.append(Session(f"S{s + 1}", when, turns))
    return Conversation("toy-1", ("Ann", "Bob"), tuple(sessions))


class ToyBuckets(MemoryMethod):
    """Each turn joins the bucket named by its speaker; each bucket gets one LLM summary. Its ``structures()``
    declares a ``clusters`` part (turns with their embeddings, buckets with centroids) and a ``tree`` part
    (a root, one node per bucket summary, the turns as leaves), and nothing else: no view code."""

    name = "toy_buckets"

    def __init__(self, *, llm=None, embedder=None, answer_prompt: str = "shared"):
        self.llm = llm
        self.embedder = embedder
        self.answer_prompt = answer_prompt

    def _reset(self):
        self.units_, self.buckets_, self.summaries_, self.vectors_ = [], {}, {}, {}

    def _build(self, conv):
        for t in conv.turns:
            u = MemoryUnit(t.id, "turn", format_turn(t, with_date=True), (t.id,), t.time)
            self.units_.append(u)
            self.buckets_.setdefault(t.speaker, []).append(u)
            self._emit("ADD", u.id, after=u.text, cause="turn arrived", source_ids=u.source_ids, time=u.time)
        vectors = self.embedder([u.text for u in self.units_]) if self.units_ else []
        self.vectors_ = {u.id: [round(float(x), 5) for x in v] for u, v in zip(self.units_, vectors)}
        for speaker, units in self.buckets_.items():
            text = "\n".join(u.text for u in units)
            self.summaries_[speaker] = self.llm.complete(f"Summarise in one line:\n{text}",
                                                         role="toy_buckets.summarize").text.strip() or speaker
            self._emit("ADD", f"bucket-{speaker}", after=self.summaries_[speaker], cause="bucket summarised",
                       source_ids=tuple(u.id for u in units), time=units[-1].time)

    def _answer(self, question, *, now):
        steps = []
        with self.step(steps, "retrieve", "every turn") as s:
            s.hits = [u.hit(1.0) for u in self.units_]
        with self.step(steps, "answer", "answer") as s:
            text = shared_answer(self, "\n".join(h.text for h in steps[0].hits), question, now)
            s.data["answer"] = text
        return Answer(question, text, tuple(steps), tuple(steps[0].hits))

    def _units(self):
        return [u.row() for u in self.units_]

    def structures(self) -> dict:
        dims = len(next(iter(self.vectors_.values()), []))
        centroid = {sp: [round(sum(self.vectors_[u.id][d] for u in us) / len(us), 5) for d in range(dims)]
                    for sp, us in self.buckets_.items()}
        clusters = S.clusters_part(
            [{"id": u.id, "text": u.text, "cluster": f"bucket-{sp}", "vector": self.vectors_[u.id],
              "source_ids": list(u.source_ids), "time": u.time}
             for sp, us in self.buckets_.items() for u in us],
            [{"id": f"bucket-{sp}", "label": f"{sp}'s bucket", "centroid": centroid[sp]} for sp in self.buckets_],
            title="Buckets of turns")
        nodes = [{"id": "all", "parent": None, "text": "every bucket", "label": "memory"}]
        for sp, us in self.buckets_.items():
            nodes.append({"id": f"bucket-{sp}", "parent": "all", "text": self.summaries_[sp], "label": sp})
            nodes += [{"id": u.id, "parent": f"bucket-{sp}", "text": u.text, "time": u.time,
                       "source_ids": list(u.source_ids)} for u in us]
        return {"parts": [clusters, S.tree_part(nodes, title="Bucket summaries over their turns")]}


def toy_llm() -> ScriptedLLM:
    return ScriptedLLM({"toy_buckets.summarize": "Talk about dogs and bread."}, default="auto")


def build_toy_run(run: Path) -> Path:
    """A tiny run directory holding the toy method's saved memory (as ``workbench eval`` saves it)."""
    from workbench.rundir import save_conversation, save_memory_snapshot

    conv = toy_conversation()
    m = ToyBuckets(llm=toy_llm(), embedder=HashEmbedder(dim=32)).ingest(conv)
    save_conversation(run, conv)
    save_memory_snapshot(m, run)
    return run


def test_toy_method_passes_check_method_and_a_broken_part_is_named():
    from workbench.testing import ContractError, check_method

    make = lambda: ToyBuckets(llm=toy_llm(), embedder=HashEmbedder(dim=32))  # noqa: E731
    assert check_method(ToyBuckets, make=make) is None

    class Broken(ToyBuckets):
        def structures(self):
            out = super().structures()
            out["parts"][0]["members"][0]["cluster"] = "bucket-nobody"
            return out

    with pytest.raises(ContractError, match=r"parts\[0\]\.members\[0\]\.cluster 'bucket-nobody' is no cluster id"):
        check_method(Broken, make=lambda: Broken(llm=toy_llm(), embedder=HashEmbedder(dim=32)))


def test_the_structures_tab_draws_the_toy_plugins_declared_kinds(tmp_path):
    pn = pytest.importorskip("panel")
    pytest.importorskip("plotly")
    from widgets import app as appmod

    app = appmod.build_app(build_toy_run(tmp_path / "run"))
    view = app.views["Structures"]
    section = view.sections["toy_buckets"]
    figures = [p for p in section if isinstance(p, pn.pane.Plotly)]
    kinds = sorted(type(f.object.data[0]).__name__ for f in figures)
    assert kinds == ["Icicle", "Scatter"], kinds  # the cluster scatter and the tree's icicle
    scatter = next(f.object for f in figures if type(f.object.data[0]).__name__ == "Scatter")
    assert {t.name for t in scatter.data if t.showlegend is not False} == {"Ann&#x27;s bucket", "Bob&#x27;s bucket"}
    html = "\n".join(str(p.object) for p in section if isinstance(p, pn.pane.HTML))
    assert "class='wb-tree'" in html and "data-node='bucket-Ann'" in html  # the tree's text outline
    assert "Talk about dogs and bread." in html and "Members by cluster" in html
    assert "as JSON" not in html and not any(isinstance(p, pn.pane.Alert) for p in section)


def test_a_broken_part_is_said_in_the_tab_and_the_others_drawn(tmp_path):
    pn = pytest.importorskip("panel")
    from widgets.tabs.structures import declared_parts

    parts = {"parts": [GOOD["timeline"], {"kind": "graph", "nodes": [], "edges": [{"source": "x", "target": "y"}]},
                       {"kind": "no-such-kind"}]}
    panes = declared_parts(parts, None, "toy")
    html = "\n".join(str(p.object) for p in panes if isinstance(p, pn.pane.HTML))
    assert "ADD f1" in html and "parts[1].edges[0].source" in html and "parts[2].kind" in html


def test_mem0_style_declares_its_decisions_as_a_timeline():
    from workbench.methods import get_method
    from widgets.structure_kinds import draw_part

    m0 = get_method("mem0_style")
    llm = ScriptedLLM({"mem0_style.extract": {"facts": ["Ann has a dog named Rex"]},
                       "mem0_style.decide": {"actions": [{"event": "ADD", "fact": 1, "text": "Ann has a dog"}]}},
                      default="auto")
    m = m0(llm=llm, embedder=HashEmbedder(dim=32)).ingest(toy_conversation())
    st = m.structures()
    assert "decisions" in st and S.validate_structures(st) == []
    (timeline,) = S.parts_of(st)
    assert timeline["kind"] == "timeline" and timeline["events"]
    assert "ADD mem-0" in timeline["events"][0]["text"]
    assert "ADD mem-0" in draw_part(timeline, toy_conversation())[0]


def test_a_kind_of_its_own_is_drawn_by_its_entry_point_view_loaded_only_then(monkeypatch):
    pn = pytest.importorskip("panel")
    import widgets.tabs.structures as tab

    loaded = []

    class EntryPoint:  # what importlib.metadata gives: a name, its target, and load()
        value = "toy_pkg.views:bubble_view"

        def load(self):
            loaded.append(self.value)
            return lambda part, conversation: pn.pane.HTML(f"<p>bubbles: {len(part['bubbles'])}</p>")

    monkeypatch.setattr(tab, "_view_entry_points", lambda: {"bubbles": EntryPoint()})
    assert tab.declared_parts({"parts": [GOOD["timeline"]]}, None) and loaded == []  # a documented kind: not loaded
    panes = tab.declared_parts({"parts": [{"kind": "bubbles", "bubbles": [1, 2]}]}, None)
    assert loaded == [EntryPoint.value] and "bubbles: 2" in panes[0].object
