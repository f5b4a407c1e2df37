"""`pip install .`'s wheel installs the aiter_compat module and the aiter-compat command into a
fresh virtual environment. The session's wheel (`pip wheel .`, pip's build step of `pip install
.`) is installed rather than building a second time."""
import json
import os
import subprocess

import pytest

from wheel_support import make_venv, run_pip


def test_pip_install_into_a_venv(built_wheel, tmp_path):
    venv = tmp_path / "venv"
    python = make_venv(venv, system_site_packages=True)  # numpy from the system, for the call
    run_pip(python, "install", "-q", "--no-index", "--no-deps", built_wheel)
    code = ("import aiter_compat as a, numpy as np; q=np.ones((3,2,8),np.float32); cu=np.array([0,3],np.int32);"
            "o=a.flash_attn_varlen_func(q,q,q,cu,cu,3,3,causal=True); print(a.__file__, float(o.sum()))")
    env = dict(os.environ, AITER_COMPAT_LOG_LEVEL="off", PYTHONPATH="")
    run = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=str(tmp_path), env=env)
    assert run.returncode == 0, run.stderr
    path, total = run.stdout.split()
    assert path.startswith(str(venv)) and float(total) == pytest.approx(3 * 2 * 8)
    # AITER_COMPAT_INSTALL=1's start-up hook, at the top of site-packages where site runs it.
    top = os.path.dirname(os.path.dirname(path))
    assert {"aiter_compat_autoinstall.pth", "_aiter_compat_autoinstall.py"} <= set(os.listdir(top)), top
    # The console script, and the same command through -m.
    script = venv / "bin" / "aiter-compat"
    assert script.is_file()
    for argv in ([str(script), "--version"], [python, "-m", "aiter_compat", "--version"]):
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=str(tmp_path), env=env)
        assert proc.returncode == 0 and proc.stdout.startswith("aiter-compat "), proc.stdout + proc.stderr


PLUGIN_CALL = """
import importlib.metadata as md, json, sys
import vllm_calls
(ep,) = [e for e in md.entry_points(group=sys.argv[1]) if e.name == "aiter_compat"]
installed = ep.load()()  # what vLLM's load_general_plugins and SGLang's load_plugins do
import aiter
from aiter_compat._aiter_compat import PatchedFunction
patched = isinstance(aiter.flash_attn_varlen_func, PatchedFunction)
result = None
try:
    result = repr(aiter.flash_attn_varlen_func(**vllm_calls.prefill(False)))  # sink_ptr=None, as vLLM passes
except TypeError as e:
    result = "TypeError: " + str(e)
print(json.dumps({"value": ep.value, "dist": ep.dist.name if ep.dist else None, "installed": installed,
                  "patched": patched, "result": result}))
"""


# group: (the entry point's value, the engine's label in the log)
ENGINE_PLUGINS = {"vllm.general_plugins": ("aiter_compat.vllm_plugin:register", "vLLM"),
                  "sglang.srt.plugins": ("aiter_compat.sglang_plugin:register", "SGLang")}


@pytest.mark.parametrize("flag", [None, "0"])
def test_engine_plugin_entry_points(built_wheel, fixture_pkg, tmp_path, flag):
    """The installed package's entry points in vllm.general_plugins and sglang.srt.plugins, found and
    loaded through importlib.metadata as vLLM and SGLang do, put the routes under an old AITer
    (0.1.9, no sink_ptr); AITER_COMPAT_INSTALL=0 leaves AITer as it is."""
    site, _ = fixture_pkg("0.1.9")
    venv = tmp_path / "venv"
    python = make_venv(venv, system_site_packages=True)
    run_pip(python, "install", "-q", "--no-index", "--no-deps", built_wheel)
    tests = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, AITER_COMPAT_LOG_LEVEL="info", PYTHONPATH=os.pathsep.join([site, tests]),
               PYTHONNOUSERSITE="1")
    env.pop("AITER_COMPAT_INSTALL", None)
    if flag is not None:
        env["AITER_COMPAT_INSTALL"] = flag
    for group, (value, label) in ENGINE_PLUGINS.items():
        proc = subprocess.run([python, "-c", PLUGIN_CALL, group], capture_output=True, text=True, cwd=str(tmp_path),
                              env=env)
        assert proc.returncode == 0, proc.stderr
        got = json.loads(proc.stdout)
        assert got["value"] == value and got["dist"] == "aiter-compat", (group, got)
        if flag is None:
            assert got["patched"] and "aiter.flash_attn_varlen_func" in got["installed"], group
            assert got["result"] == "('called', 'flash_attn_varlen_func')", group
            assert "install: routes put under" in proc.stderr, group
        else:
            assert not got["patched"] and got["installed"] == [], group
            assert got["result"].startswith("TypeError") and "sink_ptr" in got["result"], group  # AITer as it is
            assert f"{label} plugin: AITER_COMPAT_INSTALL=0: AITer's entry points left as they are" in proc.stderr
