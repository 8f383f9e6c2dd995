"""The app refuses requests sent under a foreign name (DNS rebinding): every route and the websocket."""
from __future__ import annotations

import base64
import http.client
import os
import time
from pathlib import Path

import pytest

pn = pytest.importorskip("panel")

from widgets import app as appmod  # noqa: E402
from widgets.host_guard import allowed_names, host_allowed, host_name  # noqa: E402


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    from scripts.make_demo_run import make_demo_run
    return make_demo_run(tmp_path_factory.mktemp("run") / "r", n_conversations=1, max_questions=2)


def request(port: int, host: str, path: str = "/", headers: dict | None = None) -> tuple[int, bytes]:
    """One raw GET to 127.0.0.1:port with the given Host header (urllib would send the real one)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            conn.request("GET", path, headers={"Host": host, **(headers or {})})
            resp = conn.getresponse()
            return resp.status, resp.read()
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def upgrade_headers(origin: str) -> dict:
    return {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(), "Sec-WebSocket-Protocol": "bokeh",
            "Origin": origin}


@pytest.fixture(scope="module")
def served(small_run):
    port = appmod.free_port()
    thread = appmod.serve(small_run, port=port, threaded=True)
    try:
        yield port
    finally:
        thread.stop()
        thread.join(timeout=10)


@pytest.mark.parametrize("host", ["rebind.attacker.test:{port}", "127.0.0.1.nip.io:{port}", "localhost.evil:{port}",
                                  "[::1]evil.example:{port}", "[::1]evil.example",
                                  "localhost-evil.test:{port}", "127.0.0.2.example:{port}", "10.0.0.7:{port}"])
def test_a_foreign_host_gets_403_on_the_page_static_files_and_websocket(served, host):
    host = host.format(port=served)
    status, body = request(served, host)
    assert status == 403 and b"Host" in body and b"session" not in body.lower()
    assert request(served, host, "/static/js/bokeh.min.js")[0] == 403
    status, _ = request(served, host, "/ws", upgrade_headers(f"http://{host}"))
    assert status == 403  # Tornado alone would accept it: the Origin matches the (foreign) Host


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LocalHost:{port}", "127.0.0.1:1"])
def test_loopback_names_with_any_port_are_served(served, host):
    status, body = request(served, host.format(port=served))
    assert status == 200 and b"Memory Workbench" in body


def test_an_ipv6_host_is_served(served):
    # Panel 1.9 split the host on ":" and answered 500 (widgets.location_compat); now the page is served
    status, body = request(served, f"[::1]:{served}")
    assert status == 200 and b"Memory Workbench" in body
    status, _ = request(served, f"[0:0:0:0:0:0:0:1]:{served}")
    assert status == 200  # the same address in its long form


@pytest.mark.parametrize("host", ["[::1]:{port}evil", "[::1]:{port}:1", "[::1",
                                  "::1:{port}", "[::g]:{port}", "localhost:99999", "localhost:{port}:1",
                                  "local host:{port}", "localhost:-1", "[]:{port}", "..:{port}", ":{port}",
                                  "localhost\\:{port}", "localhost/x:{port}"])
def test_a_malformed_host_is_a_400_with_words_never_a_500(served, host):
    host = host.format(port=served)
    status, body = request(served, host)
    # Tornado itself refuses a few forms (a space, "@", a backslash) with a bare 400 before any route runs
    assert status == 400 and (b"malformed" in body or body == b""), (host, status, body[:80])
    status, _ = request(served, host, "/ws", upgrade_headers(f"http://localhost:{served}"))
    assert status == 400  # the websocket handshake goes through the same gate


def test_a_websocket_from_a_loopback_page_is_accepted_and_from_a_foreign_origin_refused(served):
    status, _ = request(served, f"127.0.0.1:{served}", "/ws", upgrade_headers(f"http://localhost:{served}"))
    assert status != 403  # Bokeh goes on to ask for its session token; the Host check let it through
    status, _ = request(served, f"127.0.0.1:{served}", "/ws", upgrade_headers("http://rebind.attacker.test"))
    assert status == 403


def test_host_names_are_normalised_before_comparing():
    names = allowed_names("127.0.0.1", ["Workbench.Lab.Internal"])
    assert host_name("[::1]:8080") == "::1" and host_name("LOCALHOST.:5006") == "localhost"
    assert host_allowed("workbench.lab.internal:443", names) and host_allowed("127.0.0.1", names)
    assert not host_allowed("workbench.lab.internal.evil:443", names) and not host_allowed("", names)
    assert not host_allowed(None, names)
    assert "0.0.0.0" not in allowed_names("0.0.0.0") and "10.1.2.3" in allowed_names("10.1.2.3")


def test_other_names_need_allow_remote():
    with pytest.raises(SystemExit, match="--allow-remote"):
        appmod.serve("runs/none", allowed_hosts=["lab.internal"])


def test_panel_serve_path_refuses_a_foreign_host_without_reading_the_run(tmp_path):
    args = appmod.parse_args(["--run", str(tmp_path / "never-read")])
    refused = appmod.servable_for_request(args, {"Host": "rebind.attacker.test:5006"})
    assert isinstance(refused, pn.pane.Alert) and "DNS-rebinding" in refused.object
    shown = appmod.servable_for_request(args, {"Host": "127.0.0.1:5006"})
    assert isinstance(shown, appmod.WorkbenchApp)
    allowed = appmod.parse_args(["--run", str(tmp_path), "--allow-remote", "lab.internal"])
    assert isinstance(appmod.servable_for_request(allowed, {"Host": "lab.internal:5006"}), appmod.WorkbenchApp)


def test_cli_allow_remote_takes_names():
    from workbench.cli import build_parser

    args = build_parser().parse_args(["app", "--allow-remote", "a.lab", "b.lab", "--port", "0"])
    assert args.allow_remote == ["a.lab", "b.lab"]
    assert build_parser().parse_args(["app", "--allow-remote"]).allow_remote == []
    assert build_parser().parse_args(["app"]).allow_remote is None


@pytest.fixture(scope="module")
def panel_served(small_run):
    """``panel serve widgets/app.py`` with the Host check as Bokeh's auth module, as the README runs it."""
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[1]
    port = appmod.free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "panel", "serve", "widgets/app.py", "--auth-module", "widgets/host_auth.py",
         "--port", str(port), "--address", "127.0.0.1", "--args", "--run", str(small_run),
         "--allow-remote", "lab.internal"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield port
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


@pytest.mark.parametrize("host", ["rebind.attacker.test:{port}", "localhost.evil:{port}", "10.0.0.7:{port}",
                                  "[::1]evil.example:{port}"])
def test_panel_serve_refuses_a_foreign_host_before_any_session(panel_served, host):
    host = host.format(port=panel_served)
    status, body = request(panel_served, host, "/app")
    assert status == 403 and b"No session was created" in body and b"<script" not in body  # answered by the hook
    status, _ = request(panel_served, host, "/app/ws", upgrade_headers(f"http://{host}"))
    assert status == 403  # refused before the handshake: a forged session token never reaches Bokeh


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "lab.internal:{port}"])
def test_panel_serve_serves_its_own_names(panel_served, host):
    status, body = request(panel_served, host.format(port=panel_served), "/app")
    assert status == 200 and b"Memory Workbench" in body
    status, _ = request(panel_served, host.format(port=panel_served), "/app/ws",
                        upgrade_headers(f"http://{host.format(port=panel_served)}"))
    assert status != 403


@pytest.mark.parametrize("host", ["[::1]:{port}evil", "a@localhost:{port}", "localhost:99999", "[::1"])
def test_panel_serve_answers_a_malformed_host_with_a_400(panel_served, host):
    host = host.format(port=panel_served)
    assert request(panel_served, host, "/app")[0] == 400
    assert request(panel_served, host, "/app/ws", upgrade_headers(f"http://localhost:{panel_served}"))[0] == 400


def test_panel_serve_serves_an_ipv6_host_and_bounds_its_addresses(panel_served):
    status, body = request(panel_served, f"[::1]:{panel_served}", "/app")
    assert status == 200 and b"Memory Workbench" in body
    assert "nonce-" in _headers(panel_served, "/app").get("Content-Security-Policy", "")
    status, body = request(panel_served, f"127.0.0.1:{panel_served}", "/app?" + "&".join(["p"] * 2000))
    assert status == 400 and b"query parameters" in body


def _headers(port: int, path: str) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
    resp = conn.getresponse()
    resp.read()
    return dict(resp.getheaders())


def test_host_auth_reads_names_from_panels_command_line():
    from widgets.host_auth import names_from_argv
    names = names_from_argv(["panel", "serve", "widgets/app.py", "--address", "10.1.2.3", "--args", "--run", "r",
                             "--allow-remote", "Lab.Internal"])
    assert {"10.1.2.3", "lab.internal", "localhost"} <= names
    assert names_from_argv(["panel", "serve", "widgets/app.py"]) == allowed_names("127.0.0.1")
