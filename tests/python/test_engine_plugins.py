"""The engines' plugin functions: vllm_plugin.register (entry-point group vllm.general_plugins)
and sglang_plugin.register (sglang.srt.plugins), both _plugin.install_from_plugin. For each:
AITER_COMPAT_INSTALL's off values leave AITer untouched (not even imported), on values and an
unknown one (with a warning) install, the return value is install()'s list, nothing raises when
install() or the logger raises, every log line names the engine; and pyproject.toml declares both
entry points, naming functions that exist.

Each case runs in a fresh interpreter (install() changes AITer's modules for the process) over a
fixture AITer 0.1.9: no sink_ptr, so the engines' sink_ptr=None raises TypeError there unless the
route is in place."""
import importlib
import inspect
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import BUILD_PYTHON, SOURCE

TESTS = os.path.join(SOURCE, "tests", "python")
# name: (module in aiter_compat, the engine's label in the log, entry-point group)
PLUGINS = {
    "vllm": ("vllm_plugin", "vLLM", "vllm.general_plugins"),
    "sglang": ("sglang_plugin", "SGLang", "sglang.srt.plugins"),
}

CHILD = r'''
import importlib, json, sys
plugin = importlib.import_module("aiter_compat." + sys.argv[1])
mode = sys.argv[2]
import aiter_compat, aiter_compat._install
from aiter_compat import _aiter_compat as ext
from aiter_compat._aiter_compat import PatchedFunction
calls = []
if mode in ("install raises", "install and log raise"):
    def install():
        calls.append("install")
        raise RuntimeError("install broke")
    aiter_compat._install.install = install
if mode == "install and log raise":
    def log(level, text):
        raise ValueError("the logger broke")
    ext._log = log
returned = ["aiter.a_list_of_its_own"]
if mode == "install returns":
    def install():
        calls.append("install")
        return returned
    aiter_compat._install.install = install
before = "aiter" in sys.modules
got = plugin.register()
imported = "aiter" in sys.modules and not before
import aiter, aiter.ops.mha, vllm_calls
paths = {"aiter": aiter, "aiter.ops.mha": aiter.ops.mha}
patched = {p: isinstance(m.flash_attn_varlen_func, PatchedFunction) for p, m in paths.items()}
try:
    result = repr(aiter.flash_attn_varlen_func(**vllm_calls.prefill(False)))  # sink_ptr=None, as engines pass
except TypeError as e:
    result = "TypeError: " + str(e)
out = {"got": got, "same_list": got is returned, "calls": calls, "imported_aiter": imported, "patched": patched,
       "result": result}
if mode == "plain" and got:
    out["install_again"] = aiter_compat.install()  # idempotent: everything patched so far
print(json.dumps(out))
'''


def register(fixture_pkg, plugin, mode="plain", flag=None):
    """plugin's register() in a fresh interpreter; (its JSON record, stderr)."""
    site, _ = fixture_pkg("0.1.9")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([BUILD_PYTHON, TESTS, site]), AITER_COMPAT_LOG_LEVEL="info",
               PYTHONNOUSERSITE="1")
    env.pop("AITER_COMPAT_INSTALL", None)
    if flag is not None:
        env["AITER_COMPAT_INSTALL"] = flag
    proc = subprocess.run([sys.executable, "-c", CHILD, PLUGINS[plugin][0], mode], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr  # register() raised, or the child broke
    return json.loads(proc.stdout), proc.stderr


def plugin_lines(log):
    return [line for line in log.splitlines() if " plugin: " in line]


def assert_untouched(got):
    assert got["got"] == [] and not got["imported_aiter"], got  # register() did not even import aiter
    assert got["patched"] == {"aiter": False, "aiter.ops.mha": False}
    assert got["result"].startswith("TypeError") and "sink_ptr" in got["result"]  # AITer as it is


def assert_installed(got):
    assert "aiter.flash_attn_varlen_func" in got["got"] and "aiter.ops.mha.flash_attn_varlen_func" in got["got"], got
    assert got["patched"] == {"aiter": True, "aiter.ops.mha": True}
    assert got["result"] == "('called', 'flash_attn_varlen_func')"  # sink_ptr=None dropped, AITer reached


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
@pytest.mark.parametrize("flag", ["0", "false", "no", "off", "OFF", " False "])
def test_off_values_leave_aiter_untouched(fixture_pkg, plugin, flag):
    got, log = register(fixture_pkg, plugin, flag=flag)
    assert_untouched(got)
    (line,) = plugin_lines(log)
    assert "[info]" in line and line.endswith(
        f"{PLUGINS[plugin][1]} plugin: AITER_COMPAT_INSTALL={flag.strip().lower()}: AITer's entry points left as they "
        "are"), line
    assert "install:" not in log, log


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
@pytest.mark.parametrize("flag", [None, "", "1", "true", "Yes", " on "])
def test_on_values_install(fixture_pkg, plugin, flag):
    got, log = register(fixture_pkg, plugin, flag=flag)
    assert_installed(got)
    assert got["install_again"] == got["got"]  # register() returned install()'s list
    assert "install: routes put under" in log and plugin_lines(log) == [], log


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_unknown_value_warns_and_installs(fixture_pkg, plugin):
    got, log = register(fixture_pkg, plugin, flag="maybe")
    assert_installed(got)
    (line,) = plugin_lines(log)
    assert "[warning]" in line and line.endswith(
        f"{PLUGINS[plugin][1]} plugin: AITER_COMPAT_INSTALL='maybe' is not one of 0/1 (or false/true, no/yes, "
        "off/on); installing"), line
    assert "install: routes put under" in log


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_returns_install_list(fixture_pkg, plugin):
    got, log = register(fixture_pkg, plugin, mode="install returns")
    assert got["got"] == ["aiter.a_list_of_its_own"] and got["same_list"] and got["calls"] == ["install"]
    assert plugin_lines(log) == []


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_never_raises_when_install_raises(fixture_pkg, plugin):
    got, log = register(fixture_pkg, plugin, mode="install raises")
    assert got["calls"] == ["install"]
    assert_untouched(got)
    (line,) = plugin_lines(log)
    assert "[warning]" in line and line.endswith(
        f"{PLUGINS[plugin][1]} plugin: install failed: RuntimeError: install broke"), log


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_never_raises_when_install_and_the_logger_raise(fixture_pkg, plugin):
    """The line goes to stderr directly when the library's logger fails too."""
    got, log = register(fixture_pkg, plugin, mode="install and log raise")
    assert got["got"] == [] and got["calls"] == ["install"]
    assert f"[aiter_compat] [warning] {PLUGINS[plugin][1]} plugin: install failed: RuntimeError: install broke" \
        in log.splitlines(), log


def declared_entry_points():
    """{group: {name: value}} of pyproject.toml's [project.entry-points.*] tables."""
    path = os.path.join(SOURCE, "pyproject.toml")
    if sys.version_info >= (3, 11):
        import tomllib
        with open(path, "rb") as f:
            return {g: dict(eps) for g, eps in tomllib.load(f)["project"].get("entry-points", {}).items()}
    # Before 3.11 (no tomllib): each table's header, then its `name = "value"` lines (comments between).
    with open(path) as f:
        text = f.read()
    found = {}
    for table in re.finditer(r'^\[project\.entry-points\."([^"]+)"\]\n((?:(?:[A-Za-z0-9_.-]+ = "[^"]*"|#.*|)\n)*)',
                             text, re.MULTILINE):
        found[table.group(1)] = dict(re.findall(r'^([A-Za-z0-9_.-]+) = "([^"]*)"$', table.group(2), re.MULTILINE))
    return found


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_pyproject_declares_the_entry_point(plugin):
    module, _, group = PLUGINS[plugin]
    declared = declared_entry_points()
    assert declared.get(group) == {"aiter_compat": f"aiter_compat.{module}:register"}, declared
    target, attr = declared[group]["aiter_compat"].split(":")
    # In the package the wheel ships (python/aiter_compat), and importable as built.
    assert os.path.isfile(os.path.join(SOURCE, "python", *target.split(".")) + ".py")
    fn = getattr(importlib.import_module(target), attr)
    assert callable(fn)
    required = [p for p in inspect.signature(fn).parameters.values()
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert required == []  # engines call it with no arguments
