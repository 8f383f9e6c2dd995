"""The app's gate (``widgets.host_guard``), access token (``widgets.access_token``) and page policy
(``widgets.page_policy``) over HTTP: parsed Host headers, bounded addresses with words, a token when
bound beyond loopback (page and websocket), a policy on every response; the same under ``panel serve``."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pn = pytest.importorskip("panel")

from tests.test_host_guard import request, upgrade_headers  # noqa: E402
from widgets import app as appmod  # noqa: E402
from widgets.access_token import AccessToken  # noqa: E402
from widgets.host_guard import (FOREIGN, MALFORMED, MAX_QUERY_PARAMS, MAX_TARGET_BYTES, OK,  # noqa: E402
                                MalformedHost, host_verdict, parse_host, request_bounds)
from widgets.page_policy import add_nonce, page_policy  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("header, name, port", [
    ("localhost:5006", "localhost", 5006), ("LOCALHOST.", "localhost", None), ("[::1]:80", "::1", 80),
    ("[0:0:0:0:0:0:0:1]", "::1", None), ("127.0.0.1:1", "127.0.0.1", 1), ("lab-box.local:443", "lab-box.local", 443)])
def test_a_host_header_is_parsed_to_its_canonical_name(header, name, port):
    assert parse_host(header) == (parse_host(header).__class__(name, port))


@pytest.mark.parametrize("header", ["[::1]:5006evil", "a@localhost", "localhost:0",
                                    "localhost:65536", "[::g]", "[127.0.0.1]", "::1", "local host", "", None,
                                    "localhost:5006:1", "-bad.example", "a..b", "x" * 300, "loc\u0430lhost"])
def test_anything_else_is_malformed(header):
    with pytest.raises(MalformedHost):
        parse_host(header)
    assert host_verdict(header) == MALFORMED


def test_a_well_formed_name_that_is_not_ours_is_foreign():
    assert host_verdict("evil.example:5006") == FOREIGN
    assert host_verdict("localhost.evil:5006") == FOREIGN
    assert host_verdict("[::2]:5006") == FOREIGN
    with pytest.raises(MalformedHost):
        parse_host("[::1]evil.example:5006")  # not an address: Python's urlsplit reads it as ::1
    assert host_verdict("[::1]evil.example:5006") == FOREIGN  # the name of another host, dressed as ours
    assert host_verdict("[::1]:5006") == OK


def test_request_bounds_say_what_was_too_big():
    assert request_bounds("/?tab=Traces&q=locomo:1&step=4") is None
    long = request_bounds("/?q=" + "a" * MAX_TARGET_BYTES)
    assert long.startswith("414") and "bytes long" in long
    many = request_bounds("/?" + "&".join(["p"] * (MAX_QUERY_PARAMS + 1)))
    assert many.startswith("400") and "query parameters" in many


def test_the_token_is_read_from_header_cookie_or_query_and_dropped_from_the_address():
    token = AccessToken("t" * 32, port=9)
    assert AccessToken.without_token("/?tab=Traces&token=abc&q=1") == "/?tab=Traces&q=1"
    with pytest.raises(SystemExit, match="too short"):
        AccessToken("short")
    assert token.link("http://h:9/") == "http://h:9/?token=" + "t" * 32
    assert AccessToken(port=1).value != AccessToken(port=1).value  # random per start


def test_the_page_policy_forbids_other_hosts_forms_and_inline_scripts_without_the_nonce():
    policy = page_policy("N0NCE")
    assert "script-src 'self' 'nonce-N0NCE'" in policy and "'unsafe-inline'" not in policy.split("style-src")[0]
    for directive in ("form-action 'none'", "base-uri 'none'", "object-src 'none'", "frame-ancestors 'none'"):
        assert directive in policy
    assert "http" not in policy  # no host outside this server is named
    assert add_nonce("<script>a</script><script src='x'></script>", "N") == \
        '<script nonce="N">a</script><script nonce="N" src=\'x\'></script>'
    assert add_nonce("<script>", None) == "<script>"
    inner = '<p>a</p>\n<SCRIPT>var s = "<script>x";\nvar t = 1;</SCRIPT>\n<script type="m">1</script>'
    assert add_nonce(inner, "N") == ('<p>a</p>\n<SCRIPT nonce="N">var s = "<script>x";\nvar t = 1;</SCRIPT>\n'
                                     '<script nonce="N" type="m">1</script>')  # a "<script" in a string is no tag


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    from scripts.make_demo_run import make_demo_run
    return make_demo_run(tmp_path_factory.mktemp("run") / "r", n_conversations=1, max_questions=2)


@pytest.fixture(scope="module")
def served(small_run):
    port = appmod.free_port()
    thread = appmod.serve(small_run, port=port, threaded=True)
    yield port
    thread.stop()
    thread.join(timeout=10)


def _get(port, path, host=None, headers=None):
    import http.client

    deadline = time.monotonic() + 60
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", path, headers={"Host": host or f"127.0.0.1:{port}", **(headers or {})})
            resp = conn.getresponse()
            return resp.status, resp.read(), {k.lower(): v for k, v in resp.getheaders()}
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_an_oversized_address_gets_a_4xx_page_with_words(served):
    status, body, _ = _get(served, "/?q=" + "a" * 100_000)  # 100 kB: Tornado alone dropped the connection
    assert status == 414 and b"bytes long" in body
    status, body, _ = _get(served, "/?" + "&".join(["p"] * 2000))  # Tornado alone: an empty 400 past 1,000
    assert status == 400 and b"2,000 query parameters" in body
    status, body, _ = _get(served, "/?" + "&".join(f"p{i}=1" for i in range(2000)))
    assert status in (400, 414) and body.strip()


def test_every_response_carries_a_policy_and_the_page_a_fresh_nonce(served):
    _, page, headers = _get(served, "/")
    nonce = re.search(r"'nonce-([^']+)'", headers["content-security-policy"]).group(1)
    scripts = re.findall(rb"<script[^>]*>", page)
    assert scripts and all(f'nonce="{nonce}"'.encode() in s for s in scripts)
    _, _, again = _get(served, "/")
    assert again["content-security-policy"] != headers["content-security-policy"]  # one nonce per page
    _, _, static = _get(served, "/static/js/bokeh.min.js")
    assert static["content-security-policy"].startswith("default-src 'none'")
    assert static["x-content-type-options"] == "nosniff"


@pytest.fixture(scope="module")
def remote(small_run):
    port = appmod.free_port("0.0.0.0")
    thread = appmod.serve(small_run, port=port, address="0.0.0.0", allow_remote=True, threaded=True)
    yield port, thread.token
    thread.stop()
    thread.join(timeout=10)


def test_a_remote_bind_needs_its_token_for_the_page_and_the_websocket(remote):
    port, token = remote
    status, body, _ = _get(port, "/")  # "Host: 127.0.0.1" is no longer enough
    assert status == 403 and b"access token" in body
    assert request(port, f"localhost:{port}", "/ws", upgrade_headers(f"http://localhost:{port}"))[0] == 403
    assert _get(port, "/?token=wrong-token-of-some-length")[0] == 403
    status, _, headers = _get(port, f"/?tab=Traces&token={token}")
    assert status == 303 and headers["location"] == "/?tab=Traces"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert _get(port, "/", headers={"Cookie": cookie.split(";")[0]})[0] == 200
    assert _get(port, "/", headers={"Authorization": f"token {token}"})[0] == 200
    status, _ = request(port, f"localhost:{port}", "/ws",
                        {**upgrade_headers(f"http://localhost:{port}"), "Cookie": cookie.split(";")[0]})
    assert status != 403  # the gate lets it through; Bokeh goes on to ask for its session token


def test_a_token_fixed_by_the_environment_is_used(small_run, monkeypatch):
    monkeypatch.setenv("WORKBENCH_APP_TOKEN", "x" * 24)
    assert AccessToken(port=1).value == "x" * 24


def test_loopback_needs_no_token(served):
    assert _get(served, "/")[0] == 200


def test_panel_serve_on_every_interface_needs_its_token(small_run):
    port = appmod.free_port("0.0.0.0")
    proc = subprocess.Popen(
        [sys.executable, "-m", "panel", "serve", "widgets/app.py", "--auth-module", "widgets/host_auth.py",
         "--port", str(port), "--address", "0.0.0.0", "--allow-websocket-origin", f"127.0.0.1:{port}",
         "--args", "--run", str(small_run)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline, lines = time.monotonic() + 60, []
        while time.monotonic() < deadline and not any("token=" in line for line in lines):
            lines.append(proc.stdout.readline())
        text = "".join(lines)
        assert "WARNING: serving on 0.0.0.0" in text
        token = re.search(r"token=([A-Za-z0-9_\-]+)", text).group(1)
        status, body, _ = _get(port, "/app", host=f"localhost:{port}")
        assert status == 403 and b"access token" in body
        assert request(port, f"localhost:{port}", "/app/ws", upgrade_headers(f"http://localhost:{port}"))[0] == 403
        status, _, headers = _get(port, f"/app?token={token}")
        assert status == 303 and "token" not in headers["location"]
        status, body, headers = _get(port, "/app", headers={"Cookie": headers["set-cookie"].split(";")[0]})
        assert status == 200 and b"Memory Workbench" in body and "nonce-" in headers["content-security-policy"]
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


def test_the_cli_passes_num_procs_and_a_thread_refuses_it(monkeypatch):
    from workbench import cli

    seen = {}
    monkeypatch.setattr(cli, "serve_app", lambda run, **kw: seen.update(kw))
    args = cli.build_parser().parse_args(["app", "--num-procs", "2", "--no-browser"])
    args.func(args)
    assert seen["num_procs"] == 2
    with pytest.raises(SystemExit, match="num-procs"):
        appmod.serve("runs/none", threaded=True, num_procs=2)
