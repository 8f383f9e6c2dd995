"""One bad method plugin breaks nothing else (issue #68 item 6): a plugin whose import raises anything but
KeyboardInterrupt (``SystemExit`` and ``GeneratorExit`` included), two plugins with one name, a plugin with a
built-in's name and an entry point that loads no method class each give one clear line naming the entry point,
and every other method, every CLI command and the app keep working.

Plugins are installed for real: a ``*.dist-info`` folder (METADATA and entry_points.txt) beside the plugin's
module on ``sys.path``, which ``importlib.metadata`` finds as it finds any installed distribution."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from workbench.methods import REGISTRY, PluginWarning
from workbench.methods.registry import BUILTIN, DISABLE_ENV, GROUP, _Registry, plugin_problems

ROOT = Path(__file__).resolve().parents[1]

GOOD = '''
from workbench.methods import MemoryMethod


class {cls}(MemoryMethod):
    name = "{name}"

    def _reset(self):
        self.units_ = []

    def _build(self, conv):
        pass

    def _answer(self, question, *, now):
        raise NotImplementedError

    def _units(self):
        return []
'''

#: module bodies whose import raises, -> what the one line must name
RAISING = {
    "system_exit_message": ("raise SystemExit('usage: bad-plugin [-h] (this is not the workbench)')",
                            "SystemExit('usage: bad-plugin [-h] (this is not the workbench)')"),
    "sys_exit_bare": ("import sys\nsys.exit()", "SystemExit()"),
    "sys_exit_code": ("import sys\nsys.exit(3)", "SystemExit(3)"),
    "generator_exit": ("raise GeneratorExit('closed')", "GeneratorExit: closed"),
    "own_base_exception": ("class Odd(BaseException):\n    pass\nraise Odd('odd')", "Odd: odd"),
    "runtime_error": ("raise RuntimeError('first line\\nsecond line \\x1b[31mred\\x1b[0m')",
                      "RuntimeError: first line second line \\x1b[31mred"),
    "missing_dependency": ("import no_such_dependency_xyz", "ModuleNotFoundError"),
    "zero_division": ("1 / 0", "ZeroDivisionError"),
    "syntax_error": ("def (:", "SyntaxError"),
    "memory_error": ("raise MemoryError('pretend')", "MemoryError: pretend"),
}


def install(site: Path, dist: str, entries: dict[str, str], modules: dict[str, str]) -> None:
    """A distribution ``dist`` in ``site``: its modules and a dist-info declaring ``entries`` (name -> target)."""
    site.mkdir(parents=True, exist_ok=True)
    for mod, body in modules.items():
        (site / f"{mod}.py").write_text(textwrap.dedent(body))
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))


def load(site: Path, monkeypatch) -> tuple[list[str], list[str]]:
    """(names a fresh registry lists, the PluginWarning lines it gave) with ``site`` on ``sys.path``."""
    monkeypatch.syspath_prepend(str(site))
    reg = _Registry()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        names = list(reg)
    lines = [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]
    assert lines == reg.problems
    return names, lines


def one_clear_line(line: str, *needles: str) -> None:
    assert "\n" not in line and "\x1b" not in line, line
    assert DISABLE_ENV in line, line  # says how to switch it off
    for n in needles:
        assert n in line, (n, line)


@pytest.mark.parametrize("case", sorted(RAISING))
def test_a_plugin_that_raises_at_import_is_one_line_and_hides_nothing(case, tmp_path, monkeypatch):
    body, shown = RAISING[case]
    module = f"bad_{case}"
    install(tmp_path, f"bad-{case}", {"broken": f"{module}:Broken", "fine": "fine_plugin:Fine"},
            {module: body, "fine_plugin": GOOD.format(cls="Fine", name="fine")})
    names, lines = load(tmp_path, monkeypatch)
    assert names == [*BUILTIN, "fine"]  # every built-in, and the other plugin of the same distribution
    assert len(lines) == 1, lines
    one_clear_line(lines[0], "'broken'", f"{module}:Broken", f"bad-{case}", shown)


def test_keyboard_interrupt_at_import_is_not_swallowed(tmp_path, monkeypatch):
    install(tmp_path, "ctrl-c", {"ctrl_c": "ctrl_c_mod:X"}, {"ctrl_c_mod": "raise KeyboardInterrupt"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        list(_Registry())


def test_two_plugins_with_one_name_are_both_left_out_in_one_line(tmp_path, monkeypatch):
    install(tmp_path, "twin-a", {"twin": "twin_a:Twin"}, {"twin_a": GOOD.format(cls="Twin", name="twin")})
    install(tmp_path, "twin-b", {"twin": "twin_b:Twin"}, {"twin_b": GOOD.format(cls="Twin", name="twin")})
    names, lines = load(tmp_path, monkeypatch)
    assert "twin" not in names and names == list(BUILTIN)
    assert len(lines) == 1, lines
    one_clear_line(lines[0], "twin_a:Twin", "twin_b:Twin", "twin-a", "twin-b", "all 2 are left out")
    # the way out the line gives: switch one distribution off, and the other is the method
    monkeypatch.setenv(DISABLE_ENV, "twin-b")
    names, lines = load(tmp_path, monkeypatch)
    assert names == [*BUILTIN, "twin"] and lines == []
    assert _Registry()["twin"].__module__ == "twin_a"


def test_a_plugin_with_a_builtins_name_keeps_the_builtin_in_one_line(tmp_path, monkeypatch):
    install(tmp_path, "fake-rag", {"naive_rag": "fake_rag:NaiveRAG"},
            {"fake_rag": GOOD.format(cls="NaiveRAG", name="naive_rag")})
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = _Registry()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kept = reg["naive_rag"]
    lines = [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]
    assert f"{kept.__module__}:{kept.__qualname__}".startswith(BUILTIN["naive_rag"].split(":")[0])
    assert len(lines) == 1
    one_clear_line(lines[0], "'naive_rag'", "fake_rag:NaiveRAG", "fake-rag", "built-in", "kept")


@pytest.mark.parametrize("target, body, needle", [
    ("notmethod_a:helper", "def helper():\n    pass\n", "not a subclass of workbench.methods.MemoryMethod"),
    ("notmethod_b:VALUE", "VALUE = 3\n", "not a subclass"),
    ("notmethod_c:Missing", "", "AttributeError"),
    ("notmethod_d:Other", GOOD.format(cls="Other", name="other_name"), "must agree"),
])
def test_an_entry_point_that_loads_no_method_class_is_one_line(tmp_path, monkeypatch, target, body, needle):
    install(tmp_path, "not-a-method", {"odd": target}, {target.split(":")[0]: body})
    names, lines = load(tmp_path, monkeypatch)
    assert names == list(BUILTIN) and len(lines) == 1, lines
    one_clear_line(lines[0], "'odd'", target, "not-a-method", needle)


def test_a_disabled_plugin_is_never_imported(tmp_path, monkeypatch):
    marker = tmp_path / "imported"
    install(tmp_path, "noisy", {"noisy": "noisy_mod:Noisy"},
            {"noisy_mod": f"open({str(marker)!r}, 'w').close()\nraise SystemExit('noisy')"})
    for value in ("noisy", "Noisy", "all", "other, noisy"):
        monkeypatch.setenv(DISABLE_ENV, value)
        names, lines = load(tmp_path, monkeypatch)
        assert names == list(BUILTIN) and lines == [] and not marker.exists(), value


def test_the_app_hook_lists_the_lines_of_the_global_registry(tmp_path, monkeypatch):
    install(tmp_path, "exits", {"exits": "exits_mod:X"}, {"exits_mod": "raise SystemExit(2)"})
    monkeypatch.syspath_prepend(str(tmp_path))
    REGISTRY.reload()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PluginWarning)
            problems = plugin_problems()
            assert list(REGISTRY)[:len(BUILTIN)] == list(BUILTIN)
        assert len(problems) == 1 and "'exits'" in problems[0] and "SystemExit(2)" in problems[0]
    finally:
        monkeypatch.undo()
        REGISTRY.reload()
    assert plugin_problems() == []


def _cli(site: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != DISABLE_ENV}
    env = {**base, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]), **(env or {})}
    return subprocess.run([sys.executable, "-m", "workbench.cli", *args], cwd=site, env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_plugin_that_exits_at_import_stops_no_cli_command(tmp_path):
    """Before: the plugin's SystemExit escaped the registry while the CLI built its parser, so every command,
    ``--help`` too, printed the plugin's "usage: ..." and exited 1, which reads as a workbench usage error."""
    site = tmp_path / "site"
    install(site, "exits-at-import", {"exits": "exits_mod:Exits"},
            {"exits_mod": "raise SystemExit('usage: exits [-h] (not the workbench)')"})
    got = _cli(site, "--help")
    assert got.returncode == 0, got.stderr
    assert "usage: workbench" in got.stdout
    lines = [line for line in got.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, got.stderr  # one line, once per process, however often the registry is read
    one_clear_line(lines[0], "PluginWarning", "'exits'", "exits_mod:Exits", "exits-at-import", "SystemExit(")
    cassette = tmp_path / "empty.jsonl"
    cassette.write_text("")
    got = _cli(site, "cassette", "check", str(cassette))
    clean = _cli(site, "cassette", "check", str(cassette), env={DISABLE_ENV: "exits-at-import"})
    assert clean.stderr.strip() == "" and clean.stdout.strip()
    assert (got.returncode, got.stdout) == (clean.returncode, clean.stdout)  # the command ran as without it
    assert len(got.stderr.strip().splitlines()) == 1 and "PluginWarning" in got.stderr
