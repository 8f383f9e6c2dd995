"""The README's link form ``/app?tab=...`` (issue #67 item 3) answers 200 on both servers: ``workbench app``
(``widgets.app.serve``, which answers at ``/`` and ``/app``) and ``panel serve widgets/app.py`` (``/app``)."""
from __future__ import annotations

import http.client
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("panel")
from widgets import app as appmod  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: the README's own examples (README.md, the app section)
README_LINKS = ("/app?tab=Traces&q=sample-1%2Fq13&method=hymem&step=2&cmp=memr3",
                "/app?tab=Lifecycle&method=hmem&unit=ev28", "/app?present=1&tab=How+it+works")


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    from scripts.make_demo_run import make_demo_run

    return make_demo_run(tmp_path_factory.mktemp("run") / "r", n_conversations=1, max_questions=2)


def _get(port: int, path: str, wait_s: float = 240.0) -> tuple[int, bytes]:
    """GET ``path``, waiting for the port to open (the first page builds the app: slow on a loaded machine)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=max(5.0, deadline - time.monotonic()))
            conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
            resp = conn.getresponse()
            return resp.status, resp.read()
        except (ConnectionRefusedError, ConnectionResetError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def test_workbench_app_answers_the_readme_links_and_its_root(small_run):
    port = appmod.free_port()
    thread = appmod.serve(small_run, port=port, threaded=True)
    try:
        for path in ("/", "/?tab=Traces", "/app", *README_LINKS):
            status, body = _get(port, path)
            assert status == 200 and b"Memory Workbench" in body, (path, status)
        assert _get(port, "/nope")[0] == 404  # only the app's own paths
    finally:
        thread.stop()
        thread.join(timeout=10)


def test_the_app_routes_are_those_of_panel_serve():
    assert "/app" in appmod.APP_ROUTES and "/" in appmod.APP_ROUTES


def test_panel_serve_answers_the_readme_links(small_run):
    port = appmod.free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "panel", "serve", "widgets/app.py", "--auth-module", "widgets/host_auth.py",
         "--port", str(port), "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}",
         "--args", "--run", str(small_run)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for path in README_LINKS:
            status, body = _get(port, path)
            assert status == 200 and b"Memory Workbench" in body, (path, status)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
