"""Integration: the real offline model in-process, and OpenAIChat against a real llama.cpp server.

Marked ``integration``; they run in CI (the set-up installs the model). They skip with a clear
reason only where the runtime is genuinely absent.
"""
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from workbench.runtime import models

pytestmark = pytest.mark.integration


def _model_or_skip(name):
    try:
        return models.assemble(name)
    except FileNotFoundError as exc:
        pytest.skip(f"offline model not installed ({exc}); run `make test` which installs it")


def _llama_or_skip():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not built; run scripts/setup_env.sh")


def test_import_workbench_pulls_no_ui_modules():
    code = ("import sys, workbench, workbench.methods, workbench.llm, workbench.eval, workbench.cli; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('panel', 'ipywidgets', 'jupyterlab', 'bokeh', "
            "'IPython', 'plotly', 'pyvis', 'widgets')]; print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_local_model_answers_about_tiny_conversation(tiny_conv):
    _llama_or_skip()
    from workbench.llm import LlamaCpp
    from workbench.methods import FullContext

    llm = LlamaCpp(_model_or_skip(models.DEFAULT_MODEL), name=models.DEFAULT_MODEL, n_ctx=4096)
    method = FullContext(llm=llm).ingest(tiny_conv)
    qa = next(q for q in tiny_conv.qa if q.answer == "Geneva")
    ans = method.answer(qa.question, now=qa.time)
    assert "geneva" in ans.text.lower(), ans.text
    assert ans.usage.calls == 1 and ans.usage.prompt_tokens > 100


def test_model_integrity_check_refuses_a_tampered_file(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_MODEL_DIR", str(tmp_path))
    spec = models.MODELS[models.FALLBACK_MODEL]
    (tmp_path / spec.filename).write_bytes(b"not the weights")
    with pytest.raises(models.ModelIntegrityError, match="Refusing"):
        models.verify(models.FALLBACK_MODEL)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    _llama_or_skip()
    pytest.importorskip("uvicorn", reason="llama server extras missing")
    path = _model_or_skip(models.FALLBACK_MODEL)
    port = _free_port()
    log = open(tmp_path_factory.mktemp("server") / "server.log", "w+")  # a file, not a pipe nobody drains
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--model_alias", "local",
                             "--n_ctx", "2048", "--n_threads", "2", "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(120):
        try:
            urllib.request.urlopen(f"{url}/models", timeout=1)
            break
        except OSError:
            if proc.poll() is not None:
                log.seek(0)
                pytest.fail(f"llama_cpp.server exited: {log.read()[-2000:]}")
            time.sleep(0.5)
    yield url
    proc.terminate()
    proc.wait(timeout=20)
    log.close()


def test_openai_client_against_real_llama_server(llama_server):
    from workbench.llm import OpenAIChat

    llm = OpenAIChat("local", base_url=llama_server, max_tokens=64)
    plain = llm.complete("Say hello in one word.", role="t.plain")
    assert plain.text.strip() and plain.usage.prompt_tokens > 0
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "count": {"type": "integer"}},
              "required": ["city", "count"]}
    out = llm.complete("Return the city Paris and the number 3 as JSON.", schema=schema, role="t.json")
    assert set(out.parsed) >= {"city", "count"} and isinstance(out.parsed["count"], int)
    # llama.cpp's server rejects json_schema; the client must have fallen back and remembered it
    assert llm._modes[0] == "json_object"
