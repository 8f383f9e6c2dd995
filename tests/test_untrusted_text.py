"""Untrusted text is made inert for every renderer it reaches: Markdown reports, the app's alerts, the terminal."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.untrusted import markdown_text, terminal_text

ROOT = Path(__file__).resolve().parents[1]
MARKDOWN_PAYLOADS = [
    "![beacon](https://beacon.invalid/track.png?run=1)",
    "[click](javascript:alert(1))",
    "<img src=https://beacon.invalid/x.png>",
    "<script>window.pwned=1</script>",
    "`code` and ``more``",
    "<https://beacon.invalid/auto>",
    "![a]\n\n[a]: https://beacon.invalid/ref.png",
    "\\![escaped back](https://beacon.invalid/b.png)",
    "&lt;img src=x onerror=alert(1)&gt;",
    "cell | another cell",
]
TERMINAL_PAYLOAD = "name\x1b]0;owned title\x07\x1b[2J\x9b31m\x00\x7f end"


def rendered(markdown: str) -> str:
    """HTML the way a permissive renderer (raw HTML allowed) would make it."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


@pytest.mark.parametrize("payload", MARKDOWN_PAYLOADS)
def test_markdown_text_forms_no_html_image_link_or_code(payload):
    html = rendered(f"| h |\n|---|\n| {markdown_text(payload)} |\n\ntext {markdown_text(payload)} text\n")
    for tag in ("<img", "<a ", "<script", "<code"):
        assert tag not in html, (payload, html)
    assert html.count("<td>") == 1  # still one cell


def test_markdown_text_shows_the_same_characters():
    from html import unescape

    payload = "![x](u) <b> & [y] `z` a|b \\ c"
    html = rendered(markdown_text(payload))
    assert unescape(html.replace("<p>", "").replace("</p>", "").strip()) == payload


#: bare URLs, domains and addresses in run text, each of a form some link detector turns into a live link
AUTOLINK_PAYLOADS = [
    "https://evil.example/x?a=1&b=2", "see http://evil.example.", "ftp://evil.example/f", "HTTPS://EVIL.EXAMPLE/",
    "www.evil.example", "(www.evil.com/path)", "mail me: mal@evil.example", "first.last+tag@evil.co.uk",
    "mailto:mal@evil.example", "xmpp:mal@evil.example/home", "evil.com", "a sub.evil.org/page link",
    "//evil.example/protocol-relative", "x //localhost/x", "https://127.0.0.1:8080/", "пример.рф", "wait https://evil.example/x*",
]


def _gfm(markdown: str) -> str:
    """GitHub's own renderer (cmark-gfm, with its autolink and table extensions), raw HTML allowed."""
    cmarkgfm = pytest.importorskip("cmarkgfm", reason="cmarkgfm (the dev extra) is not installed")
    from cmarkgfm.cmark import Options

    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def _linkify(markdown: str) -> str:
    """markdown-it with linkify (linkify-it: links bare domains, ``//host`` and addresses too), raw HTML allowed."""
    pytest.importorskip("linkify_it", reason="linkify-it-py (the dev extra) is not installed")
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True, "linkify": True}).enable(["table", "linkify"]).render(markdown)


@pytest.mark.parametrize("payload", AUTOLINK_PAYLOADS)
@pytest.mark.parametrize("render", [_gfm, _linkify], ids=["gfm", "linkify"])
def test_markdown_text_leaves_no_bare_url_to_autolink(render, payload):
    from html import unescape

    from workbench.untrusted import WORD_JOINER

    for markdown in (f"text {markdown_text(payload)} text\n", f"| h |\n|---|\n| {markdown_text(payload)} |\n"):
        html = render(markdown)
        assert "<a " not in html and "href" not in html, (payload, markdown, html)
    # rendered, it reads as the run wrote it (an address keeps an invisible word joiner after its "@")
    shown = unescape(render(markdown_text(payload)).replace("<p>", "").replace("</p>", "").strip())
    assert shown.replace(WORD_JOINER, "") == payload


def test_the_link_oracles_do_link_the_raw_payloads():
    """The oracles above would catch a live link: unescaped, each payload is linked by one of them."""
    unlinked = [p for p in AUTOLINK_PAYLOADS if "<a " not in _gfm(p) and "<a " not in _linkify(p)]
    assert unlinked == [], unlinked


def test_no_autolinks_leaves_ordinary_text_alone():
    for text in ("D1:3 at 10:30", "3.14 and 1.5B", "Note: done", "a / b and c/d", "ama[paper-judge]"):
        assert markdown_text(text) == text.replace("[", "\\[").replace("]", "\\]")


def test_terminal_json_stays_valid_json():
    from workbench.untrusted import terminal_json

    text = terminal_json(json.dumps({TERMINAL_PAYLOAD: [TERMINAL_PAYLOAD, "\u0085 ok"]}, ensure_ascii=False))
    assert not any(0x7f <= ord(c) <= 0x9f or ord(c) < 32 for c in text)
    assert json.loads(text) == {TERMINAL_PAYLOAD: [TERMINAL_PAYLOAD, "\u0085 ok"]}


def test_terminal_text_escapes_controls_but_keeps_newlines_tabs_and_unicode():
    out = terminal_text(TERMINAL_PAYLOAD + "\n\tnext — ünï")
    assert not any(ord(c) < 32 and c not in "\n\t" or 0x7f <= ord(c) <= 0x9f for c in out)
    assert "\\x1b]0;owned title\\x07" in out and "\\x9b31m" in out and out.endswith("\n\tnext — ünï")


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    from scripts.make_demo_run import make_demo_run
    return make_demo_run(tmp_path_factory.mktemp("run") / "demo", n_conversations=1, max_questions=2)


def hostile_copy(demo_run: Path, dest: Path) -> tuple[Path, str]:
    """The demo run with one method renamed to a name carrying Markdown, HTML and terminal payloads."""
    run = shutil.copytree(demo_run, dest)
    rows = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines() if x.strip()]
    old = rows[0]["method"]
    evil = f"{old}![b](https://beacon.invalid/m.png)<img src=x>{TERMINAL_PAYLOAD}"
    for r in rows:
        if r["method"] == old:
            r["method"] = evil
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run, evil


def cli(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], env=env, capture_output=True, timeout=300,
                          cwd=ROOT)


def assert_no_controls(data: bytes) -> None:
    text = data.decode("utf-8")
    bad = [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f]
    assert not bad, [hex(ord(c)) for c in bad]


def test_report_markdown_file_and_terminal_output_are_inert(demo_run, tmp_path):
    run, evil = hostile_copy(demo_run, tmp_path / "run")
    out = cli("report", str(run / "results.jsonl"), "--output", str(tmp_path / "report.md"))
    assert out.returncode == 0, out.stderr
    md = (tmp_path / "report.md").read_text()
    assert_no_controls(md.encode())
    html = rendered(md)
    assert "<img" not in html and "beacon.invalid" in html  # shown as text, not fetched
    out = cli("report", str(run / "results.jsonl"))
    assert out.returncode == 0 and b"beacon\\.invalid" in out.stdout  # the Markdown, no autolink in it
    assert_no_controls(out.stdout)
    assert b"\\x1b\\]0;owned title" in out.stdout  # shown, escaped for Markdown and the terminal


def test_mechanisms_prints_no_terminal_controls(demo_run, tmp_path):
    run, _ = hostile_copy(demo_run, tmp_path / "run")
    for fmt in ("table", "json"):
        out = cli("mechanisms", str(run), "--format", fmt, "--no-write")
        assert out.returncode == 0, out.stderr
        assert_no_controls(out.stdout)
        assert b"owned title" in out.stdout
        if fmt == "json":  # still valid JSON, the payload intact inside it
            assert any(TERMINAL_PAYLOAD in m for m in json.loads(out.stdout)["methods"])


def test_census_markdown_is_inert(demo_run, tmp_path):
    from workbench.eval.mechanisms import census, census_markdown

    run, _ = hostile_copy(demo_run, tmp_path / "run")
    html = rendered(census_markdown(census(run)))
    assert "<img" not in html and "beacon.invalid" in html


def test_cassette_costs_prints_no_terminal_controls(tmp_path):
    from workbench.llm.cache import cache_key

    messages = [{"role": "user", "content": "q"}]
    row = {"key": cache_key("m", messages, None, 0.0, None, None), "role": f"fam{TERMINAL_PAYLOAD}.x",
           "model": f"model{TERMINAL_PAYLOAD}", "messages": messages, "reply": "r", "prompt_tokens": 1,
           "completion_tokens": 1, "latency_s": 0.5}
    p = tmp_path / "c.jsonl"
    p.write_text(json.dumps(row) + "\n" + json.dumps({"key": f"x{TERMINAL_PAYLOAD}"}) + "\n")
    for action in ("costs", "check"):
        out = cli("cassette", action, str(p))
        assert out.returncode == 1 and b"Traceback" not in out.stderr
        assert_no_controls(out.stdout + out.stderr)
    assert b"\\x1b]0;owned title" in cli("cassette", "costs", str(p)).stdout


def test_app_alerts_render_no_markdown(tmp_path):
    pn = pytest.importorskip("panel")
    from widgets import app as appmod

    app = appmod.build_app(tmp_path / "![beacon](beacon.png) [link](javascript:x) `code`")
    alert = app.problems.objects[0]
    assert not isinstance(alert, pn.pane.Markdown)  # pn.pane.Alert is Markdown: images would be fetched
    assert isinstance(alert, pn.pane.HTML) and "<img" not in alert.object and "![beacon](beacon.png)" in alert.object
    assert "alert-danger" in alert.css_classes
