"""``--llm scripted:FILE`` (a method run with no model from the command line), per-method ``--llm`` specs,
``--data demo``, labelled ablations on the command line and the profile a replayed cassette was recorded with."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.llm import LLMError, llm_from_spec
from workbench.llm.default import is_per_method, per_method_specs
from workbench.llm.scripted_file import ScriptedFileError, ScriptedFileLLM, load_scripted
from workbench.methods import REGISTRY, MemoryMethod, register
from workbench.methods.base import Ablation
from workbench.methods.common import format_turn
from workbench.methods.store import MemoryUnit
from workbench.trace import Answer


def write(tmp_path: Path, content, name: str = "replies.json") -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def usage_error(capsys, argv: list[str]) -> str:
    """The one-line message of a command line that fails as a usage error (exit status 2)."""
    capsys.readouterr()
    assert main(argv) == 2
    return capsys.readouterr().err


def ask(llm, role: str, schema=None) -> str:
    return llm.complete("a prompt", role=role, schema=schema).text


# -- the reply file -------------------------------------------------------------------------------------------

def test_a_reply_file_answers_by_role_in_order_then_by_its_rule(tmp_path):
    path = write(tmp_path, {"scripted_replies": 1, "model": "scripted-notes", "roles": {
        "notes.summarize": {"replies": ["first", "second"], "then": "last"},
        "notes.answer": {"reply": {"answer": "a greyhound"}},
        "notes.judge": {"replies": ["one"], "then": "error"},
        "notes.*": "wildcard"}, "default": "error"})
    llm = llm_from_spec(f"scripted:{path}")
    assert isinstance(llm, ScriptedFileLLM) and llm.model == "scripted-notes" and llm.small_model
    assert [ask(llm, "notes.summarize") for _ in range(3)] == ["first", "second", "second"]
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    assert llm.complete("q", role="notes.answer", schema=schema).parsed == {"answer": "a greyhound"}
    assert ask(llm, "notes[wo-summary].summarize") == "second", "a labelled variant reads its method's rules"
    assert ask(llm, "notes.other") == "wildcard"
    assert ask(llm, "notes.judge") == "one"
    with pytest.raises(LLMError, match="used up"):
        ask(llm, "notes.judge")
    with pytest.raises(LLMError, match=r"replies\.json: no rule for role 'other\.step'"):
        ask(llm, "other.step")


def test_auto_default_gives_schema_valid_replies():
    llm = llm_from_spec("scripted")
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 2}, "ok": {"type": "boolean"}},
              "required": ["n", "ok"]}
    assert llm.complete("x", role="any.step", schema=schema).parsed == {"n": 2, "ok": True}
    assert ask(llm, "any.free") == "unknown"


@pytest.mark.parametrize("content, field", [
    ("not json", "not JSON (line 1"),
    ({"roles": {}}, '"scripted_replies" must be 1'),
    ({"scripted_replies": 1, "role": {}}, "unknown field(s) ['role']"),
    ({"scripted_replies": 1, "roles": []}, '"roles" must map roles to rules'),
    ({"scripted_replies": 1, "roles": {"a.b": {"replys": ["x"]}}}, "roles['a.b']: a rule is"),
    ({"scripted_replies": 1, "roles": {"a.b": {"replies": []}}}, "roles['a.b']: replies must be a non-empty"),
    ({"scripted_replies": 1, "roles": {"a.b": {"replies": ["x"], "then": "loop"}}}, "roles['a.b'].then: 'loop'"),
    ({"scripted_replies": 1, "roles": {"a.b": {"reply": "x", "then": "auto"}}}, "only a list of replies"),
    ('{"scripted_replies": 1, "roles": {"a.b": NaN}}', "NaN is not a JSON value"),
    ({"scripted_replies": 1, "model": ""}, '"model" must be a non-empty string'),
])
def test_a_bad_reply_file_is_an_error_naming_the_file_and_the_field(tmp_path, content, field):
    path = write(tmp_path, content)
    with pytest.raises(ScriptedFileError) as err:
        load_scripted(path)
    assert str(path) in str(err.value) and field in str(err.value)


def test_a_missing_reply_file_is_a_usage_error(tmp_path, capsys):
    assert "none.json: no such reply file" in usage_error(capsys, [
        "eval", "--llm", f"scripted:{tmp_path / 'none.json'}", "--method", "naive_rag", "--data", "tiny",
        "--out", str(tmp_path / "run"), "--no-progress", "--embedder", "hash"])


def test_per_method_specs():
    assert per_method_specs("local") == {"*": "local"} and not is_per_method("openai:m@http://a,http://b")
    assert per_method_specs("openai:m@http://a,http://b") == {"*": "openai:m@http://a,http://b"}
    assert per_method_specs("mine=scripted:r.json, ama[probe]=openai:m@http://a,http://b,*=replay:c.jsonl") == {
        "mine": "scripted:r.json", "ama[probe]": "openai:m@http://a,http://b", "*": "replay:c.jsonl"}
    with pytest.raises(ValueError, match="given twice"):
        per_method_specs("a=local,a=scripted")
    with pytest.raises(ValueError, match="gives no spec"):
        per_method_specs("a=,*=local")


# -- a plugin run with no model, beside the demo's recorded methods ---------------------------------------------

class NoteBook(MemoryMethod):
    """A small plugin: each turn stored, a running note summarised by the LLM every ``every`` turns, an
    answer from the note and the turns sharing most words with the question."""

    name = "notebook_plugin"
    ablations = {"w/o notes": Ablation({"every": 0}, "our own ablation: no running note")}

    def __init__(self, *, llm=None, every: int = 20, top_k: int = 4):
        self.llm = llm
        self.every = every
        self.top_k = top_k

    def _reset(self):
        self.units_ = []
        self.notes_ = []

    def _build(self, conv):
        for i, turn in enumerate(conv.turns, 1):
            unit = MemoryUnit(turn.id, "turn", format_turn(turn, with_date=True), (turn.id,), turn.time)
            self.units_.append(unit)
            self._emit("ADD", unit.id, after=unit.text, cause="turn arrived", source_ids=unit.source_ids,
                       time=unit.time)
            if self.every and i % self.every == 0:
                text = self.llm.complete("Summarise:\n" + "\n".join(u.text for u in self.units_[-self.every:]),
                                         role=f"{self.name}.summarize").text
                note = MemoryUnit(f"note-{len(self.notes_)}", "note", text,
                                  tuple(u.id for u in self.units_[-self.every:]), turn.time)
                self.notes_.append(note)
                self._emit("ADD", note.id, after=text, cause="note written", source_ids=note.source_ids,
                           time=turn.time)

    def _answer(self, question, *, now):
        steps = []
        words = set(question.lower().split())
        with self.step(steps, "retrieve", "turns sharing words with the question") as s:
            ranked = sorted(self.units_, key=lambda u: -len(words & set(u.text.lower().split())))[:self.top_k]
            s.hits = [u.hit(1.0) for u in ranked] + [n.hit(0.5) for n in self.notes_[-1:]]
        with self.step(steps, "answer", "answer from the hits") as s:
            reply = self.llm.complete("\n".join(h.text for h in steps[0].hits) + "\nQ: " + question,
                                      role=f"{self.name}.answer",
                                      schema={"type": "object", "properties": {"answer": {"type": "string"}},
                                              "required": ["answer"]})
            text = reply.parsed["answer"]
            s.data["answer"] = text
        return Answer(question, text, tuple(steps), tuple(steps[0].hits))

    def _units(self):
        return [u.row() for u in [*self.units_, *self.notes_]]


@pytest.fixture
def plugin():
    register(NoteBook)
    yield NoteBook
    REGISTRY.unregister(NoteBook.name)


REPLIES = {"scripted_replies": 1, "model": "scripted-notebook", "roles": {
    "notebook_plugin.summarize": {"replies": ["Caroline and Melanie talk about painting.", "A note on the race."],
                                  "then": "last"},
    "notebook_plugin.answer": {"reply": {"answer": "painting"}}}, "default": "error"}


def _manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


def test_eval_runs_a_plugin_scripted_beside_the_demos_recorded_methods(tmp_path, plugin, capsys):
    """The issue's command: the plugin on its reply file, naive_rag and hymem replaying the demo cassette with 0
    misses (the demo's slice, questions and profile rebuilt by --data demo); each method's LLM in the manifest."""
    replies = write(tmp_path, REPLIES)
    run = tmp_path / "run"
    assert main(["eval", "--llm", f"scripted:{replies}", "--data", "demo", "--method",
                 "notebook_plugin,naive_rag,hymem", "--out", str(run), "--no-progress", "--judge", "checker"]) == 0
    err = capsys.readouterr().err
    assert "naive_rag, hymem on replay:demo.jsonl:" in err and ", 0 misses" in err
    assert "the methods run on different LLMs" in err
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    by_method = {m: [r for r in rows if r["method"] == m] for m in ("notebook_plugin", "naive_rag", "hymem")}
    from workbench.eval.profiles import ACTIVE, DEMO_PROFILES

    demo_qs = set(DEMO_PROFILES[ACTIVE].questions)
    for method, mine in by_method.items():
        assert {r["qa_id"] for r in mine} == demo_qs, method
        assert not [r for r in mine if r.get("error")], (method, [r["error"] for r in mine if r.get("error")][:2])
    assert {r["prediction"] for r in by_method["notebook_plugin"]} == {"painting"}
    evals = {e["method"]: e for e in _manifest(run)["evaluations"]}
    assert evals["notebook_plugin"]["llm"]["model"] == "scripted-notebook"
    assert evals["notebook_plugin"]["llm_choice"]["by"] == "--llm"
    assert evals["notebook_plugin"]["llm_choice"]["spec"] == "scripted:replies.json"
    assert evals["naive_rag"]["llm"]["model"] == "qwen2.5-coder-1.5b"
    assert evals["hymem"]["llm_choice"] == {"spec": "replay:demo.jsonl", "by": "the demo's recording (--data demo)"}
    assert evals["hymem"]["profile"] == ACTIVE
    from workbench.eval.method_llms import llms_by_method, mixed_llms_line

    llms = llms_by_method(_manifest(run))
    assert llms["notebook_plugin"].startswith("scripted-notebook") and llms["hymem"].startswith("qwen2.5-coder-1.5b")
    line = mixed_llms_line(_manifest(run))
    assert "notebook_plugin" in line and "naive_rag, hymem" in line
    assert main(["report", str(run), "--output", str(tmp_path / "report.md")]) == 0
    report = (tmp_path / "report.md").read_text()
    assert "## The LLM each method ran on" in report
    assert "| notebook_plugin | scripted-notebook |" in report and "| hymem | qwen2.5-coder-1.5b |" in report


def test_star_spec_gives_every_method_the_same_llm(tmp_path, plugin):
    replies = write(tmp_path, {**REPLIES, "default": "auto"})
    run = tmp_path / "run"
    assert main(["eval", "--llm", f"*=scripted:{replies}", "--data", "demo", "--method", "notebook_plugin,naive_rag",
                 "--questions", "2", "--out", str(run), "--no-progress"]) == 0
    evals = {e["method"]: e for e in _manifest(run)["evaluations"]}
    assert evals["naive_rag"]["llm"]["model"] == "scripted-notebook"
    from workbench.eval.method_llms import llm_section, mixed_llms_line

    assert mixed_llms_line(_manifest(run)) is None
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert llm_section(rows) is None


def test_an_llm_entry_naming_a_method_the_run_lacks_is_an_error(tmp_path, capsys):
    assert "--llm names hymem, which --method does not run" in usage_error(capsys, [
        "eval", "--llm", "hymem=scripted,*=scripted", "--method", "naive_rag", "--data", "tiny",
        "--out", str(tmp_path / "run"), "--no-progress"])


def test_demo_data_is_the_demos_own_slice():
    from workbench.demo import DEMO, demo_dataset
    from workbench.eval.settings import demo_data

    mine = demo_data()
    assert mine.dataset.name == demo_dataset(DEMO).name
    assert mine.dataset.conversations == demo_dataset(DEMO).conversations
    assert mine.questions == list(DEMO.questions) and mine.build_data == "locomo"
    assert demo_data(questions=3).questions == list(DEMO.questions[:3])


# -- CLI rough edges: ablation labels, the recorded profile of a replayed cassette --------------------------------

def test_an_ablation_label_without_profile_runs_the_ablation(tmp_path, plugin):
    run = tmp_path / "run"
    assert main(["eval", "--llm", "scripted", "--data", "tiny", "--method", "notebook_plugin[w/o notes]",
                 "--out", str(run), "--no-progress", "--questions", "1"]) == 0
    ev = _manifest(run)["evaluations"][-1]
    assert ev["method"] == "notebook_plugin[wo-notes]" and ev["params"]["every"] == 0


def test_an_unknown_label_is_an_error_listing_the_valid_ones(tmp_path, plugin, capsys):
    common = ["--llm", "scripted", "--data", "tiny", "--out", str(tmp_path / "run"), "--no-progress"]
    assert "unknown variant 'notebook_plugin[no-such]': [no-such] names none of notebook_plugin's ablations " \
           "('w/o notes')" in usage_error(
        capsys, ["eval", "--method", "notebook_plugin[no-such]", *common])
    assert "the recorded profiles' variants: ama[paper-judge] (with --profile)" in usage_error(
        capsys, ["eval", "--method", "ama[nope]", *common])
    assert "nor a variant of profile 1.5b (ama[paper-judge])" in usage_error(
        capsys, ["eval", "--method", "ama[nope]", "--profile", "1.5b", *common])


def test_a_replay_of_a_recorded_profiles_cassette_takes_that_profile(tmp_path, capsys):
    """Without --profile, a method replaying the demo cassette (or a copy of it, as workbench demo makes) is built
    as it was recorded, with a note; --profile still chooses; a cassette no profile recorded leaves it unset."""
    from workbench.embed import HashEmbedder
    from workbench.eval.profiles import ACTIVE, DEMO_PROFILES
    from workbench.eval.settings import build_method
    from workbench.llm import CachedLLM

    copy = tmp_path / "cassette.jsonl"
    copy.write_bytes(DEMO_PROFILES[ACTIVE].cassette.read_bytes())
    emb = HashEmbedder(dim=64)
    setup = build_method("hymem", llm=CachedLLM.replay(copy), embedder=emb, data="sample")
    assert setup.profile == ACTIVE and setup.output_bounds
    assert f"built with --profile {ACTIVE}" in capsys.readouterr().err
    assert build_method("hymem", llm=CachedLLM.replay(copy), embedder=emb, profile="0.5b").profile == "0.5b"
    other = tmp_path / "other.jsonl"
    other.write_text(copy.read_text().splitlines()[0] + "\n")
    assert build_method("hymem", llm=CachedLLM.replay(other), embedder=emb, data="sample").profile is None


def test_a_scripted_recording_replayed_says_how_to_get_its_profile(tmp_path, capsys):
    """A cassette recorded from a scripted LLM (a small model: profile='auto' was 'small') replayed under its model's
    name: 'auto' is 'paper' there, and a note says so and how to replay it; with that fix it replays with 0 misses."""
    cassette = tmp_path / "scripted.jsonl"
    common = ["--data", "tiny", "--method", "hymem", "--no-progress", "--embedder", "hash", "--questions", "2"]
    assert main(["eval", "--llm", "scripted", "--cassette", str(cassette), "--out", str(tmp_path / "a"), *common]) == 0
    capsys.readouterr()
    replay = ["eval", "--llm", "replay", "--cassette", str(cassette), *common]
    assert main([*replay, "--out", str(tmp_path / "b")]) == 0
    assert "replays only with --param profile='\"small\"'" in capsys.readouterr().err
    assert main([*replay, "--out", str(tmp_path / "c"), "--param", 'profile="small"']) == 0
    assert "replays only with" not in capsys.readouterr().err
    rows = [json.loads(line) for line in (tmp_path / "c" / "results.jsonl").read_text().splitlines()]
    assert rows and not [r for r in rows if r.get("error")]


def test_the_report_names_each_methods_llm_when_they_differ():
    """A run whose methods ran on different LLMs says so in the report (scores then compare readers too)."""
    import pandas as pd

    from workbench.eval.report import llms_section

    same = pd.DataFrame([{"method": "a", "llm_model": "m1"}, {"method": "b", "llm_model": "m1"}])
    assert llms_section(same) == []
    mixed = pd.DataFrame([{"method": "a", "llm_model": "scripted <b>x</b>"}, {"method": "b", "llm_model": "m1"}])
    text = "\n".join(llms_section(mixed))
    assert "## The LLM each method ran on" in text and "| b" in text and "m1" in text
    assert "<b>" not in text  # run data is escaped as everywhere in the report
