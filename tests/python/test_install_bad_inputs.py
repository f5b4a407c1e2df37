"""install() and uninstall() when things are not as expected: two threads at once, an AITer whose
import fails (or that is absent), a module already partly patched, a name that cannot be set, a
wrapper put over the route, an entry point's module failing to import, the old unified_attention
path imported before install(). Each has a clear outcome, and nothing is lost: every call still
reaches AITer's original function exactly once, and uninstall() puts back what was there."""
import json
import os
import subprocess
import sys
import textwrap

from conftest import BUILD_PYTHON, SOURCE

TESTS = os.path.join(SOURCE, "tests", "python")

PRELUDE = """
import json, sys, threading
import aiter_compat
from aiter_compat._aiter_compat import PatchedFunction
import vllm_calls

def reached(fn, **kw):
    import aiter
    before = len(aiter.CALLS)
    fn(**(kw or vllm_calls.prefill(False)))
    return len(aiter.CALLS) - before  # 1: AITer's original ran once

def out(**kw):
    print(json.dumps(kw))
"""


def run(site, code, env=None):
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join([BUILD_PYTHON, TESTS, site]), PYTHONNOUSERSITE="1",
                    AITER_COMPAT_LOG_LEVEL="info")
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.splitlines()[-1]), proc.stderr


def install_lines(log):
    return [line for line in log.splitlines() if "install:" in line]


def test_install_twice_from_two_threads(fixture_pkg):
    site, _ = fixture_pkg("0.1.10")
    result, log = run(site, """
        import aiter, aiter.ops.mha as mha
        original = mha.flash_attn_varlen_func
        barrier, results = threading.Barrier(2), []
        def go():
            barrier.wait()
            results.append(aiter_compat.install())
        threads = [threading.Thread(target=go) for _ in range(2)]
        [t.start() for t in threads]; [t.join() for t in threads]
        again = aiter_compat.install()
        out(results=results, again=again, same=aiter.flash_attn_varlen_func is mha.flash_attn_varlen_func,
            wraps_original=aiter.flash_attn_varlen_func.__wrapped__ is original,
            reached=reached(aiter.flash_attn_varlen_func), stats=aiter_compat.stats()["flash_attn_varlen_func"],
            restored=aiter_compat.uninstall(), back=mha.flash_attn_varlen_func is original and
            aiter.flash_attn_varlen_func is original, second_uninstall=aiter_compat.uninstall())
    """)
    assert result["results"][0] == result["results"][1] == result["again"] and result["again"]
    assert result["same"] and result["wraps_original"]  # one patch per original, never a patch of a patch
    assert result["reached"] == 1 and result["stats"] == {"aiter.ops.mha.flash_attn_varlen_func": 1}
    assert result["restored"] == result["again"] and result["back"] and result["second_uninstall"] == []
    assert len([line for line in install_lines(log) if "routes put under" in line]) == 1, log


def write_aiter(site, init_text):
    os.makedirs(os.path.join(site, "aiter"), exist_ok=True)
    with open(os.path.join(site, "aiter", "__init__.py"), "w") as f:
        f.write(init_text)


def test_aiter_import_failing(tmp_path):
    for text, found in [("raise RuntimeError('HIP runtime not found')\n", "RuntimeError: HIP runtime not found"),
                        ("import sys\nsys.exit('no ROCm torch')\n", "SystemExit: no ROCm torch"),
                        ("import torch_that_is_missing\n", "ModuleNotFoundError: No module named 'torch_that_is_missing'")]:
        site = tmp_path / f"site{len(found)}"
        write_aiter(str(site), text)
        result, log = run(str(site), """
            import numpy as np
            got = aiter_compat.install()
            q = np.ones((3, 2, 8), np.float32); cu = np.array([0, 3], np.int32)
            o = aiter_compat.flash_attn_varlen_func(q, q, q, cu, cu, 3, 3, causal=True)  # still usable
            out(got=got, sum=float(o.sum()), uninstall=aiter_compat.uninstall())
        """)
        assert result == {"got": [], "sum": 48.0, "uninstall": []}
        lines = install_lines(log)
        assert len(lines) == 1 and f"nothing patched: import aiter failed: {found}" in lines[0], log


def test_no_aiter(tmp_path):
    result, log = run(str(tmp_path), "out(got=aiter_compat.install())")
    assert result == {"got": []}
    lines = install_lines(log)
    assert len(lines) == 1 and "nothing patched: AITer is not installed" in lines[0] and "[info]" in lines[0], log


def test_module_already_partly_patched(fixture_pkg):
    """aiter.ops.mha holds a route from an earlier install whose record is gone; aiter itself does
    not: the original is recovered from the patch, aiter is patched with the same object."""
    site, _ = fixture_pkg("0.1.9")
    result, _ = run(site, """
        import inspect, aiter, aiter.ops.mha as mha
        original = mha.flash_attn_varlen_func
        names = list(inspect.signature(original).parameters)
        stale = PatchedFunction("flash_attn_varlen_func", original, names, "aiter.ops.mha.flash_attn_varlen_func")
        mha.flash_attn_varlen_func = stale
        got = aiter_compat.install()
        out(got=got, kept=mha.flash_attn_varlen_func is stale, top=aiter.flash_attn_varlen_func is stale,
            reached=[reached(aiter.flash_attn_varlen_func), reached(mha.flash_attn_varlen_func)],
            restored=aiter_compat.uninstall(), back=[aiter.flash_attn_varlen_func is original,
                                                     mha.flash_attn_varlen_func is original])
    """)
    assert "aiter.flash_attn_varlen_func" in result["got"] and "aiter.ops.mha.flash_attn_varlen_func" in result["got"]
    assert result["kept"] and result["top"] and result["reached"] == [1, 1]
    assert result["back"] == [True, True]


def test_a_name_that_cannot_be_set(fixture_pkg):
    site, _ = fixture_pkg("0.1.10")
    result, log = run(site, """
        import types, aiter, aiter.ops.mha as mha
        class Guarded(types.ModuleType):
            def __setattr__(self, name, value):
                if name == "flash_attn_func":
                    raise AttributeError("flash_attn_func is read-only here")
                super().__setattr__(name, value)
        mha.__class__ = Guarded
        original = mha.flash_attn_func
        got = aiter_compat.install()
        out(got=got, untouched=mha.flash_attn_func is original, varlen=isinstance(mha.flash_attn_varlen_func,
            PatchedFunction), restored=aiter_compat.uninstall(), after=mha.flash_attn_func is original)
    """)
    assert "aiter.ops.mha.flash_attn_func" not in result["got"] and "aiter.flash_attn_func" in result["got"]
    assert result["untouched"] and result["varlen"] and result["after"]
    assert set(result["restored"]) == set(result["got"])
    line = [line for line in install_lines(log) if "not patched" in line]
    assert line and "aiter.ops.mha.flash_attn_func: cannot be set: AttributeError: flash_attn_func is read-only here" \
        in line[0] and "[warning]" in line[0], log


def test_a_wrapper_put_over_the_route(fixture_pkg):
    """Another library wraps aiter.flash_attn_varlen_func after install(): its calls go through the
    route to AITer's original once (the route binds to the registered original, not to the name,
    which now is the wrapper); uninstall leaves the wrapper, says so, and it keeps working."""
    site, _ = fixture_pkg("0.1.10")
    result, log = run(site, """
        import aiter, aiter.ops.mha as mha
        original = mha.flash_attn_varlen_func
        aiter_compat.install()
        inner = aiter.flash_attn_varlen_func
        def profiler(**kw):
            return inner(**kw)
        aiter.flash_attn_varlen_func = profiler
        first = reached(aiter.flash_attn_varlen_func)
        restored = aiter_compat.uninstall()
        out(first=first, restored=restored, wrapper_kept=aiter.flash_attn_varlen_func is profiler,
            mha_back=mha.flash_attn_varlen_func is original, after=reached(aiter.flash_attn_varlen_func))
    """)
    assert result["first"] == 1 and result["after"] == 1
    assert "aiter.flash_attn_varlen_func" not in result["restored"]
    assert "aiter.ops.mha.flash_attn_varlen_func" in result["restored"]
    assert result["wrapper_kept"] and result["mha_back"]
    assert "uninstall: left as they are: aiter.flash_attn_varlen_func: now holds function" in log, log


def test_an_entry_points_module_failing_to_import(fixture_pkg):
    site, pkg = fixture_pkg("0.1.10")
    with open(os.path.join(pkg, "ops", "triton", "attention", "unified_attention.py"), "w") as f:
        f.write("raise ImportError('triton is not installed')\n")
    result, log = run(site, "out(got=aiter_compat.install())")
    assert "aiter.ops.mha.flash_attn_varlen_func" in result["got"]
    assert not any("unified_attention" in p for p in result["got"])
    line = [line for line in install_lines(log) if "not patched" in line]
    assert line and ("aiter.ops.triton.attention.unified_attention.unified_attention: import "
                     "aiter.ops.triton.attention.unified_attention failed: ImportError: triton is not installed") in line[0]


def test_old_unified_path_imported_before_install(fixture_pkg):
    """An engine imported aiter.ops.triton.unified_attention before install(): AITer's compat finder
    left two copies of the module, each with its own function; both get the route."""
    site, _ = fixture_pkg("0.1.10")
    result, _ = run(site, """
        import importlib
        from aiter.ops.triton.unified_attention import unified_attention as early
        old = sys.modules["aiter.ops.triton.unified_attention"]
        new = sys.modules["aiter.ops.triton.attention.unified_attention"]
        originals = [old.unified_attention, new.unified_attention]
        got = aiter_compat.install()
        patched = [isinstance(m.unified_attention, PatchedFunction) for m in (old, new)]
        calls = [reached(m.unified_attention, **vllm_calls.decode(True)) for m in (old, new)]
        restored = aiter_compat.uninstall()
        out(two_copies=originals[0] is not originals[1], patched=patched, calls=calls, restored=restored,
            back=[old.unified_attention is originals[0], new.unified_attention is originals[1]])
    """)
    assert result["two_copies"] and result["patched"] == [True, True] and result["calls"] == [1, 1]
    assert result["back"] == [True, True]
    assert sorted(p for p in result["restored"] if "unified" in p) == [
        "aiter.ops.triton.attention.unified_attention.unified_attention",
        "aiter.ops.triton.unified_attention.unified_attention"]


def test_dispatch_state_made_after_install(fixture_pkg):
    """reset() after install(): the next probe is live and reads the patched names; it reads
    AITer's parameters through __wrapped__, and the route still calls the original once."""
    site, _ = fixture_pkg("0.1.9")
    result, _ = run(site, """
        import aiter
        aiter_compat.flash_attn_varlen_func(**vllm_calls.prefill(False))  # routed before install: bound early
        aiter.CALLS.clear()
        aiter_compat.install()
        first = reached(aiter.flash_attn_varlen_func)
        aiter_compat.reset()
        second = reached(aiter.flash_attn_varlen_func)
        live = aiter_compat.probe()["ops"]["flash_attn_varlen_func"]
        try:
            aiter.flash_attn_varlen_func(**vllm_calls.prefill(True))
            refused = None
        except aiter_compat.AiterCompatError as e:
            refused = str(e)
        out(first=first, second=second, params="sink_ptr" in live["params"], has_min="min_seqlen_q" in live["params"],
            refused="takes no sink_ptr (first in 0.1.10)" in (refused or ""))
    """)
    assert result == {"first": 1, "second": 1, "params": False, "has_min": True, "refused": True}


def test_positional_arguments_past_the_release(fixture_pkg):
    site, _ = fixture_pkg("0.1.9")
    result, _ = run(site, """
        import aiter
        aiter_compat.install()
        q, k, v, cu = vllm_calls.gpt_oss()
        try:
            aiter.flash_attn_varlen_func(q, k, v, cu, cu, 8, 8, *([None] * 30))
        except aiter_compat.AiterCompatError as e:
            out(argument=e.argument, found=e.found, needed=e.needed)
    """)
    assert result == {"argument": "aiter.ops.mha.flash_attn_varlen_func", "found": "37 positional arguments",
                      "needed": "at most 23 (the installed release's positional parameters)"}


def test_patched_functions_pickle_by_reference(fixture_pkg):
    """Engines may pickle a function reference (sending work to worker processes): the route
    pickles as AITer's name, as the function it replaced did."""
    site, _ = fixture_pkg("0.1.10")
    result, _ = run(site, """
        import copy, pickle, aiter, aiter.ops.mha as mha
        aiter_compat.install()
        patched = mha.flash_attn_varlen_func
        data = pickle.dumps(patched)
        out(same=pickle.loads(data) is patched, copied=copy.deepcopy(patched) is patched,
            by_name=b"flash_attn_varlen_func" in data and b"aiter.ops.mha" in data)
    """)
    assert result == {"same": True, "copied": True, "by_name": True}
