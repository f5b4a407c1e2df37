"""AITER_COMPAT_INSTALL=1 and the wheel's aiter_compat_autoinstall.pth: install() at the first
`import aiter`, for engines with no plug-in group. The .pth and its module (python/, as the wheel
ships them) are copied into a folder that each child interpreter adds with site.addsitedir, which
runs the .pth as site does at start-up, over a fixture AITer. Checked: off (unset, 0, an unknown
value) nothing is armed, imported or patched; on, aiter is not imported at start and the first
import of aiter (however it is spelt) installs, so names bound by that very import are routes;
a broken aiter raises to its importer as it does without the hook; nothing at start writes a
traceback, and a failing install is one line."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import BUILD_PYTHON, SOURCE

TESTS = os.path.join(SOURCE, "tests", "python")
PTH, MODULE = "aiter_compat_autoinstall.pth", "_aiter_compat_autoinstall.py"

# What each child runs first: the .pth through site, then a look at what it did.
START = """
import json, site, sys
site.addsitedir(sys.argv[1])
start = {"aiter": "aiter" in sys.modules, "aiter_compat": "aiter_compat" in sys.modules,
         "hook_module": "_aiter_compat_autoinstall" in sys.modules,
         "hooks": [type(f).__name__ for f in sys.meta_path if type(f).__name__ == "_AfterAiterImport"]}
sys.stderr.write("--- started ---\\n")
def out(**kw):
    print(json.dumps(dict(start=start, **kw)))
"""


@pytest.fixture
def hook_dir(tmp_path):
    """A folder holding the .pth and its module, as the top of site-packages does."""
    folder = tmp_path / "hook-site"
    folder.mkdir()
    for name in (PTH, MODULE):
        shutil.copy(os.path.join(SOURCE, "python", name), folder / name)
    return str(folder)


def run(hook_dir, site_dir, code, flag, with_module=True):
    path = [BUILD_PYTHON] if with_module else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path + [TESTS, site_dir]), PYTHONNOUSERSITE="1",
               AITER_COMPAT_LOG_LEVEL="info")
    env.pop("AITER_COMPAT_INSTALL", None)
    if flag is not None:
        env["AITER_COMPAT_INSTALL"] = flag
    proc = subprocess.run([sys.executable, "-c", START + textwrap.dedent(code), hook_dir], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    at_start, _, after = proc.stderr.partition("--- started ---\n")
    return json.loads(proc.stdout.splitlines()[-1]), at_start, after


PATCHED = """
from aiter_compat._aiter_compat import PatchedFunction
import aiter
out(patched=isinstance(aiter.flash_attn_varlen_func, PatchedFunction), compat="aiter_compat" in sys.modules,
    hooks=[type(f).__name__ for f in sys.meta_path if type(f).__name__ == "_AfterAiterImport"])
"""


@pytest.mark.parametrize("flag", [None, "0", "off", "maybe"])
def test_off_does_nothing(fixture_pkg, hook_dir, flag):
    """Unset is off here (the .pth runs in every Python process), as are 0 and any unknown value."""
    site_dir, _ = fixture_pkg("0.1.13")
    got, at_start, after = run(hook_dir, site_dir, """
        import aiter
        out(compat="aiter_compat" in sys.modules, is_function=type(aiter.flash_attn_varlen_func).__name__)
    """, flag)
    # The .pth line reads the variable: off, not even the hook's module is imported.
    assert got["start"] == {"aiter": False, "aiter_compat": False, "hook_module": False, "hooks": []}
    assert got["compat"] is False and got["is_function"] == "function"  # nothing imported, nothing patched
    assert at_start == "" and after == ""


FIRST_IMPORTS = {
    "import aiter": "import aiter",
    # SGLang's aiter_backend: the import that binds the name is the one that installs.
    "from aiter import": "from aiter import mha_batch_prefill_func as bound",
    # ATOM's attention_mha: a submodule first (aiter/__init__.py runs before it).
    "from a submodule": "from aiter.ops.triton.attention.unified_attention import unified_attention as bound",
}


@pytest.mark.parametrize("first", FIRST_IMPORTS)
@pytest.mark.parametrize("flag", ["1", "true", "On"])
def test_on_installs_at_the_first_import_of_aiter(fixture_pkg, hook_dir, first, flag):
    site_dir, _ = fixture_pkg("0.1.13")
    got, at_start, after = run(hook_dir, site_dir, FIRST_IMPORTS[first] + "\n" + textwrap.dedent("""
        after_first = {"hooks": [type(f).__name__ for f in sys.meta_path if type(f).__name__ == "_AfterAiterImport"]}
        import aiter, aiter_compat, sglang_calls, vllm_calls
        from aiter_compat._aiter_compat import PatchedFunction
        from aiter import mha_batch_prefill_func
        from aiter.ops.triton.attention.unified_attention import unified_attention
        args, kwargs = sglang_calls.extend((-1, -1), with_sinks=False)
        bound_now = globals().get("bound")
        out(after_first=after_first, patched=isinstance(aiter.flash_attn_varlen_func, PatchedFunction),
            names=[isinstance(f, PatchedFunction) for f in (mha_batch_prefill_func, unified_attention)],
            bound=None if bound_now is None else isinstance(bound_now, PatchedFunction),
            extend=vllm_calls.call_record(mha_batch_prefill_func, kwargs, args),
            decode_with_sinks=vllm_calls.call_record(unified_attention, vllm_calls.decode(True)),
            elsewhere=aiter_compat.bound_elsewhere())
    """), flag)
    # Armed at start, and nothing imported: no aiter (torch), not even aiter_compat.
    assert got["start"] == {"aiter": False, "aiter_compat": False, "hook_module": True, "hooks": ["_AfterAiterImport"]}
    assert at_start == ""
    assert got["after_first"] == {"hooks": []}  # it removed itself
    assert got["patched"] and got["names"] == [True, True]
    if first != "import aiter":
        assert got["bound"] is True  # bound by the import that installed: the route, no rebinding needed
    assert got["elsewhere"]["rebound"] == [] and got["elsewhere"]["left"] == []
    extend = got["extend"]
    assert extend["route"] == "aiter" and extend["called"] == "mha_batch_prefill_func", extend
    assert extend["same_objects"] and extend["left_over"] == 0  # AITer's original once, no recursion
    decode = got["decode_with_sinks"]
    assert decode["route"] == "aiter" and "sinks" in decode["received"], decode
    assert "install: routes put under" in after and "Traceback" not in after


def test_aiter_imported_before_arming_installs_at_once(fixture_pkg, hook_dir):
    site_dir, _ = fixture_pkg("0.1.13")
    got, _, after = run(hook_dir, site_dir, "import aiter, _aiter_compat_autoinstall\n"
                                            "_aiter_compat_autoinstall.arm()\n" + PATCHED, None)
    assert got["patched"] and got["hooks"] == []
    assert "install: routes put under" in after


BROKEN = """
try:
    import aiter
    outcome = None
except BaseException as e:
    outcome = {"type": type(e).__name__, "text": str(e), "line": getattr(e, "lineno", None)}
try:
    import aiter  # an importer that tries again sees the same error
    again = None
except BaseException as e:
    again = type(e).__name__
out(outcome=outcome, again=again, compat="aiter_compat" in sys.modules)
"""


def test_a_broken_aiter_raises_to_its_importer_unchanged(tmp_path, hook_dir):
    site_dir = tmp_path / "broken-site"
    (site_dir / "aiter").mkdir(parents=True)
    (site_dir / "aiter" / "__init__.py").write_text("CALLS = [\ndef oops(:\n")
    without, _, log_without = run(hook_dir, str(site_dir), BROKEN, None)
    with_hook, at_start, log_with = run(hook_dir, str(site_dir), BROKEN, "1")
    assert with_hook["start"]["hooks"] == ["_AfterAiterImport"] and at_start == ""
    assert without["outcome"]["type"] == "SyntaxError"
    assert with_hook["outcome"] == without["outcome"] and with_hook["again"] == without["again"] == "SyntaxError"
    # Nothing installed and nothing said: the error is the importer's to handle.
    assert with_hook["compat"] is False and log_with == log_without == ""


def test_without_aiter_compat_importable_one_line_and_aiter_works(fixture_pkg, hook_dir):
    """The module the .pth imports is there but aiter_compat is not (a broken install): aiter
    imports as it does without the hook, and the failure is one line, no traceback."""
    site_dir, _ = fixture_pkg("0.1.13")
    got, at_start, after = run(hook_dir, site_dir, """
        import aiter
        out(is_function=type(aiter.flash_attn_varlen_func).__name__)
    """, "1", with_module=False)
    assert got["is_function"] == "function" and at_start == ""
    lines = after.splitlines()
    assert len(lines) == 1 and "AITER_COMPAT_INSTALL: install after import aiter failed: ModuleNotFoundError" \
        in lines[0] and "[warning]" in lines[0], after


def test_the_pth_runs_at_interpreter_start(fixture_pkg, tmp_path):
    """The same files in a user site-packages folder (PYTHONUSERBASE): site runs the .pth when the
    interpreter starts, with no addsitedir call."""
    base = tmp_path / "userbase"
    env = dict(os.environ, PYTHONUSERBASE=str(base))
    env.pop("PYTHONNOUSERSITE", None)
    query = "import site, sys; print(site.ENABLE_USER_SITE, site.getusersitepackages())"
    enabled, user_site = subprocess.run([sys.executable, "-c", query], capture_output=True, text=True, env=env,
                                        check=True).stdout.split()
    if enabled != "True":
        pytest.skip(f"user site-packages are disabled here (site.ENABLE_USER_SITE={enabled})")
    os.makedirs(user_site)
    for name in (PTH, MODULE):
        shutil.copy(os.path.join(SOURCE, "python", name), os.path.join(user_site, name))
    site_dir, _ = fixture_pkg("0.1.13")
    code = ("import sys; hooks = [type(f).__name__ for f in sys.meta_path if type(f).__name__ == '_AfterAiterImport']\n"
            "from aiter_compat._aiter_compat import PatchedFunction\n"
            "from aiter import flash_attn_varlen_func\n"
            "print(hooks, isinstance(flash_attn_varlen_func, PatchedFunction))\n")
    env.update(PYTHONPATH=os.pathsep.join([BUILD_PYTHON, site_dir]), AITER_COMPAT_INSTALL="1",
               AITER_COMPAT_LOG_LEVEL="off")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.split("]")[0] + "]" == "['_AfterAiterImport']" and proc.stdout.split()[-1] == "True", proc.stdout
