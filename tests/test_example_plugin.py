"""The example plugin (issue #65 item 5): ``examples/topic_buckets`` installed from its folder with pip, offline, and
run through ``workbench eval`` (scripted replies, the estimate from its own cost profile), the census, the report,
its own gallery example and every tab of the app -- so the contract cannot drift from docs/method-contract.md and
docs/plugin-checklist.md without this test saying so."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "topic_buckets"

RUN_EVERYWHERE = r'''
import json, subprocess, sys
from pathlib import Path
out, replies = Path(sys.argv[1]), sys.argv[2]
report = {}
from workbench.methods import REGISTRY
from workbench.methods.registry import method_resources
cls = REGISTRY["topic_buckets"]
report["class_file"] = sys.modules[cls.__module__].__file__
report["resources"] = str(method_resources("topic_buckets"))
from workbench.testing import ContractError, check_method
try:
    check_method(cls)
    report["check_method"] = []
except ContractError as err:
    report["check_method"] = [f"{name}: {what}" for name, _, what in err.failures]

cli = [sys.executable, "-m", "workbench.cli"]
def run(*argv):
    done = subprocess.run(cli + list(argv), capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout + done.stderr
report["eval"] = run("eval", "--method", "topic_buckets", "--data", "tiny", "--llm", f"scripted:{replies}",
                     "--out", str(out), "--no-progress", "--save-memories")
report["mechanisms"] = run("mechanisms", str(out))
report["report"] = run("report", str(out))

from workbench.gallery import cassette, run_gallery, subdir
report["cassette"] = str(cassette("topic_buckets"))
run_gallery(out / subdir("small"), ["topic_buckets"])

import panel as pn
from widgets.app import build_app
from widgets.how_it_works import HowItWorksPage
from widgets.panel_parts import LinkHTML
page = HowItWorksPage.from_run("topic_buckets", cls, out / subdir("small"))
ex = page.example
report["how"] = {"missing": page.missing, "problems": page.problems,
                 "conversation": ex.conversation.id if ex else None,
                 "planted": sorted((ex.annotations.recurring[0] or {}).get("turns", [])) if ex and ex.annotations
                 else None, "rows": len(ex.rows) if ex else 0, "html": page.html()}
app = build_app(out)
app.prewarm()
seen = {}
for name, view in app.views.items():
    texts = [str(p.object) for p in view.panel.select(pn.pane.HTML) + view.panel.select(pn.pane.Markdown)
             + view.panel.select(LinkHTML)]
    texts += [w.value.to_string() for w in view.panel.select(pn.widgets.Tabulator) if w.value is not None]
    texts += [str(w.options) for w in view.panel.select(pn.widgets.Select) + view.panel.select(pn.widgets.MultiChoice)
              + view.panel.select(pn.widgets.CheckButtonGroup) + view.panel.select(pn.widgets.MultiSelect)
              + view.panel.select(pn.widgets.RadioButtonGroup)]
    texts += [str(p.object) for p in view.panel.select(pn.pane.Plotly)]
    joined = " ".join(texts)
    seen[name] = {"built": app.views.built(name), "named": "topic_buckets" in joined or "TopicBuckets" in joined,
                  "gallery": "gallery-topic-buckets" in joined}
report["tabs"] = seen
report["problems"] = app.store.errors
structures = app.views["Structures"]  # its clusters part drawn by the kind's view, no view code of the plugin's
structures.method.value = "topic_buckets"
figures = [p.object for p in structures.panel.select(pn.pane.Plotly) if p.object is not None]
html = " ".join(str(p.object) for p in structures.panel.select(pn.pane.HTML))
report["structures"] = {"scatter": sum(1 for f in figures for t in f.data if t.type in ("scatter", "scattergl")),
                        "as_json": "as JSON" in html}
help_probe = ("import runpy, sys; sys.argv = ['workbench', '-h']\ntry:\n    runpy.run_module('workbench', "
              "run_name='__main__')\nexcept SystemExit:\n    pass\n"
              "print('PANEL' if 'panel' in sys.modules else 'NO-PANEL', file=sys.stderr)")
done = subprocess.run([sys.executable, "-c", help_probe], capture_output=True, text=True)
report["help_imports_panel"] = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "?"
print(json.dumps(report))
'''


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The example installed from a copy of its folder (pip writes build/ and *.egg-info beside the sources) into a
    scratch target with no network and no build isolation, as tests/test_method_plugins.py installs its plugin."""
    pytest.importorskip("panel")
    tmp = tmp_path_factory.mktemp("example")
    src = tmp / "src"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    site = tmp / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                          "--no-index", "--target", str(site), str(src)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr[-3000:]
    assert list(site.glob("workbench_topic_buckets-*.dist-info/entry_points.txt")), "installed without its entry point"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), "WORKBENCH_DISABLE_PLUGINS": ""}
    run = subprocess.run([sys.executable, "-c", RUN_EVERYWHERE, str(tmp / "run"), str(EXAMPLE / "replies.json")],
                         cwd=tmp, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
    return site, tmp / "run", json.loads(run.stdout.strip().splitlines()[-1])


def test_the_installed_package_is_the_one_found_with_its_resources(installed):
    site, _, report = installed
    assert Path(report["class_file"]).is_relative_to(site), report["class_file"]
    assert Path(report["resources"]) == site / "topic_buckets" / "resources"
    assert Path(report["cassette"]) == site / "topic_buckets" / "resources" / "cassettes" / "gallery" / \
        "topic_buckets.jsonl"


def test_it_passes_check_method(installed):
    failures = installed[2]["check_method"]  # its gallery id is found in its own resources' conversations
    assert failures == [], "\n".join(failures)


def test_eval_runs_it_on_scripted_replies_priced_by_its_own_cost_profile(installed):
    _, run, report = installed
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert rows and {r["method"] for r in rows} == {"topic_buckets"} and not [r for r in rows if r["error"]]
    assert {r["llm_model"] for r in rows} == {"scripted-topic-buckets"}
    assert "no cost profile for 'topic_buckets'" not in report["eval"]
    costs = [json.loads(line) for line in (run / "results.costs.jsonl").read_text().splitlines()]
    estimate = costs[-1]["estimate"]
    assert estimate["phases"]["construct"]["calls"] > 0 and estimate["phases"]["query"]["calls"] > 0
    assert "gallery-topic-buckets" in estimate["basis"]  # fitted on its own gallery recording


def test_the_census_counts_its_buckets_and_the_report_names_it(installed):
    _, run, report = installed
    entry = json.loads((run / "mechanisms.json").read_text())["methods"]["topic_buckets"]
    mine = entry["counts"]
    assert mine["buckets"] > 0 and mine["summaries"] > 0 and mine["cassette_misses"] == 0
    # its check reads the planted phenomena its own package ships, not the workbench's alone
    assert "no phenomena annotated" not in json.dumps(entry.get("checked")), entry.get("checked")
    assert "topic_buckets" in report["report"] or "TopicBuckets" in report["report"]


def test_how_it_works_finds_its_own_gallery_example_in_its_package(installed):
    how = installed[2]["how"]
    assert not how["missing"] and not how["problems"], how
    assert how["conversation"] == "gallery-topic-buckets" and how["rows"] == 2
    assert how["planted"] and "D3:1" in how["planted"]  # its own annotations.json, read from its package
    assert "planted turn" in how["html"] and "What scripted-topic-buckets did" in how["html"]


def test_every_app_tab_builds_and_names_it(installed):
    report = installed[2]
    assert report["problems"] == []
    tabs = report["tabs"]
    assert all(t["built"] for t in tabs.values()), tabs
    missing = [name for name, t in tabs.items() if not t["named"] and name != "Conversations"]
    assert not missing, f"tabs that never name the plugin method: {missing} ({tabs})"
    assert any(t["gallery"] for t in tabs.values()), "no tab shows its gallery example"


def test_its_buckets_draw_as_a_structure_with_no_view_code_of_its_own(installed):
    drawn = installed[2]["structures"]
    assert drawn["scatter"] >= 1 and not drawn["as_json"], drawn  # the clusters kind's scatter, not a JSON dump


def test_workbench_help_with_the_plugin_installed_imports_no_panel(installed):
    assert installed[2]["help_imports_panel"] == "NO-PANEL"
