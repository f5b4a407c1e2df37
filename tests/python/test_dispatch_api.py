"""probe(), routes(), explain(), policies and logging."""
import os
import subprocess
import sys

import numpy as np
import pytest

import aiter_compat
from conftest import BUILD_PYTHON, SOURCE, replay_seed


class RocmTensor:
    def __init__(self, *shape, dtype="bfloat16"):
        self.shape, self.dtype = shape, dtype

    def __dlpack_device__(self):
        return (10, 0)


def test_probe_is_the_report():
    report = aiter_compat.probe()
    assert report["schema_version"] == 1
    assert set(report["ops"]) >= {"flash_attn_varlen_func", "unified_attention"}


def test_explain_does_not_run_and_routes_records_calls():
    q = np.zeros((4, 2, 8), np.float32)
    cu = np.array([0, 4], np.int32)
    e = aiter_compat.explain("flash_attn_varlen_func", q=q, k=q, v=q, cu_seqlens_q=cu, cu_seqlens_k=cu,
                             max_seqlen_q=4, max_seqlen_k=4, dropout_p=0.5)
    assert e["route"] == "refused"
    assert "dropout_p is not supported" in e["candidates"][1]["reasons"]
    rocm = aiter_compat.explain("flash_attn_varlen_func", q=RocmTensor(4, 64, 64), k=RocmTensor(4, 8, 64),
                                v=RocmTensor(4, 8, 64), cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=4,
                                max_seqlen_k=4, sink_ptr=RocmTensor(64, dtype="float32"))
    assert ("sinks", "yes") in [tuple(r) for r in rocm["features"]]
    aiter_compat.flash_attn_varlen_func(q, q, q, cu, cu, 4, 4)
    assert any(r["route"] == "fallback (cpu)" for r in aiter_compat.routes())
    with pytest.raises(aiter_compat.AiterCompatError):
        aiter_compat.explain("no_such_op", q=q)


def test_set_policy():
    q = np.zeros((4, 2, 8), np.float32)
    cu = np.array([0, 4], np.int32)
    try:
        aiter_compat.set_policy("aiter-only")
        assert aiter_compat.get_policy() == "aiter-only"
        with pytest.raises(aiter_compat.AiterCompatError) as info:
            aiter_compat.flash_attn_varlen_func(q, q, q, cu, cu, 4, 4)
        assert "policy aiter-only" in str(info.value)
        with pytest.raises(aiter_compat.AiterCompatError) as info:
            aiter_compat.set_policy("fastest")
        assert info.value.argument == "policy"
    finally:
        aiter_compat.set_policy("auto")
    assert aiter_compat.flash_attn_varlen_func(q, q, q, cu, cu, 4, 4).shape == (4, 2, 8)


def run(code, **env):
    full = {**os.environ, "PYTHONPATH": BUILD_PYTHON, "PYTHONNOUSERSITE": "1", **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=60)


def test_policy_from_environment_and_logging():
    code = "import aiter_compat as a; print(a.get_policy())"
    assert run(code, AITER_COMPAT_POLICY="prefer-fallback").stdout.strip() == "prefer-fallback"
    bad = run(code, AITER_COMPAT_POLICY="bogus")
    assert bad.stdout.strip() == "auto" and "AITER_COMPAT_POLICY=bogus" in bad.stderr
    call = ("import aiter_compat as a, numpy as np; q=np.zeros((4,2,8),np.float32); cu=np.array([0,4],np.int32)\n"
            "for _ in range(3): a.flash_attn_varlen_func(q,q,q,cu,cu,4,4)")
    proc = run(call)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("[info]") == 1 and "policy auto" in proc.stderr
    assert proc.stderr.count("[warning]") == 0  # no AITer entry point: nothing was rerouted
    assert run(call, AITER_COMPAT_LOG_LEVEL="off").stderr == ""


def test_reroute_warns_once(fixture_pkg):
    site, _ = fixture_pkg("0.1.9.post1")
    call = ("import aiter_compat as a, numpy as np; q=np.zeros((4,2,8),np.float32); cu=np.array([0,4],np.int32)\n"
            "for _ in range(3): a.flash_attn_varlen_func(q,q,q,cu,cu,4,4,sink_ptr=np.zeros(2,np.float32))")
    proc = run(call, PYTHONPATH=f"{BUILD_PYTHON}:{site}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("[warning]") == 1
    assert "flash_attn_varlen_func goes to fallback varlen_fwd (cpu reference) instead of AITer" in proc.stderr
    assert "takes no sink_ptr (first in 0.1.10)" in proc.stderr


def test_exits_cleanly_after_use():
    proc = run("import aiter_compat as a; a.probe(); a.set_policy('auto'); a.probe()")
    assert proc.returncode == 0 and "Fatal" not in proc.stderr


def test_first_use_from_many_threads():
    """Threads racing to the first call share one probe and one route, each with its own result."""
    code = r"""
import threading, numpy as np, aiter_compat as a
from attention_reference import attention
rng = np.random.default_rng(SEED)
results, errors = [None] * 12, []
def work(i):
    try:
        q = rng.standard_normal((6, 4, 8)).astype(np.float32)
        cu = np.array([0, 6], np.int32)
        out = a.flash_attn_varlen_func(q, q, q, cu, cu, 6, 6, causal=True, sink_ptr=np.zeros(4, np.float32))
        want, _ = attention(q, q, q, 8 ** -0.5, True, sink=np.zeros(4))
        results[i] = float(np.abs(out - want).max())
    except Exception as e:
        errors.append(repr(e))
threads = [threading.Thread(target=work, args=(i,)) for i in range(12)]
[t.start() for t in threads]; [t.join() for t in threads]
assert not errors, errors
assert max(results) < 1e-5, results
assert len(a.routes()) == 1, a.routes()
print("ok")
"""
    proc = run(code.replace("SEED", str(replay_seed())), PYTHONPATH=f"{BUILD_PYTHON}:{os.path.join(SOURCE, 'tests', 'python')}")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_aiter_that_fails_to_import_is_routed_around(fixture_pkg):
    """The static probe sees a good install, but importing it raises (a missing ROCm library):
    the call does not fail with ImportError; AITer is dropped from the routes, with the reason."""
    site, pkg = fixture_pkg("0.1.12")
    with open(f"{pkg}/ops/mha.py", "a") as f:
        f.write("raise ImportError('libamdhip64.so: cannot open shared object file')\n")
    code = r"""
import aiter_compat as a
class RocmTensor:
    def __init__(self, *shape, dtype="bfloat16"):
        self.shape, self.dtype = shape, dtype
    def __dlpack_device__(self):
        return (10, 0)
q, k = RocmTensor(8, 64, 64), RocmTensor(8, 8, 64)
for attempt in range(2):
    try:
        a.flash_attn_varlen_func(q, k, k, RocmTensor(2, dtype="int32"), RocmTensor(2, dtype="int32"), 8, 8,
                                 sink_ptr=RocmTensor(64, dtype="float32"))
    except a.AiterCompatError as e:
        print(type(e).__name__, "import aiter.ops.mha failed: ImportError: libamdhip64.so" in str(e))
    except ImportError as e:
        print("ImportError escaped", e)
"""
    proc = run(code, PYTHONPATH=f"{BUILD_PYTHON}:{site}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["AiterCompatError True", "AiterCompatError True"], proc.stdout
    assert proc.stderr.count("AITer is routed around from now on") == 1
