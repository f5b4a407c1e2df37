"""The C API's AITer route: a C caller's DLTensors reach AITer's Python entry point by keyword,
through the embedded (here: the host) interpreter, with only the keywords the release accepts."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD_PYTHON, SOURCE

LIB = os.environ.get("AITER_COMPAT_CAPI", os.path.join(SOURCE, "build", "libaiter_compat.so"))

CHILD = r'''
import ctypes, json, sys
import numpy as np

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]
class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]
class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]
P = ctypes.POINTER(DLTensor)
class VarlenArgs(ctypes.Structure):
    _fields_ = [(n, P) for n in ("q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "sinks", "out", "lse")] + [
        ("max_seqlen_q", ctypes.c_int64), ("max_seqlen_k", ctypes.c_int64), ("softmax_scale", ctypes.c_double),
        ("causal", ctypes.c_int), ("window_left", ctypes.c_int64), ("window_right", ctypes.c_int64),
        ("softcap", ctypes.c_double)]

keep = []
def dl(array, code, bits, device=10):  # kDLROCM: the memory is host memory, which the fixture never reads
    shape = (ctypes.c_int64 * array.ndim)(*array.shape)
    keep.extend([array, shape])
    t = DLTensor(array.ctypes.data, DLDevice(device, 0), array.ndim, DLDataType(code, bits, 1), shape, None, 0)
    keep.append(t)
    return ctypes.pointer(t)

lib = ctypes.CDLL(sys.argv[1])
lib.aiter_compat_last_error.restype = ctypes.c_char_p
bf16 = lambda *s: np.zeros(s, np.uint16)
q, k, v, out = bf16(8, 64, 64), bf16(8, 8, 64), bf16(8, 8, 64), bf16(8, 64, 64)
cu = np.array([0, 8], np.int32)
sinks = np.zeros(64, np.float32) if sys.argv[2] == "sinks" else None
args = VarlenArgs(dl(q, 4, 16), dl(k, 4, 16), dl(v, 4, 16), dl(cu, 0, 32), dl(cu, 0, 32),
                  dl(sinks, 2, 32) if sinks is not None else None, dl(out, 4, 16), None, 8, 8, 0.125, 1, 127, 0, 0.0)
installed = sys.argv[3] == "install"
if installed:  # the Python module's routes under AITer's names, in the same process
    import aiter_compat
    aiter_compat.install()
status = lib.aiter_compat_varlen_attention(ctypes.byref(args), None)
import aiter
calls = [(name, sorted(kw), list(kw.get("window_size", ()))) for name, kw in aiter.CALLS]
print(json.dumps({"status": status, "error": lib.aiter_compat_last_error().decode(), "calls": calls,
                  "python_module_calls": aiter_compat.stats() if installed else None}))
'''


def run(site, mode, install=False):
    path = os.pathsep.join([BUILD_PYTHON, site]) if install else site
    env = dict(os.environ, PYTHONPATH=path, AITER_COMPAT_LOG_LEVEL="off", PYTHONNOUSERSITE="1")
    proc = subprocess.run([sys.executable, "-c", CHILD, LIB, mode, "install" if install else "-"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def site_with_torch_stub(fixture_pkg):
    def make(version):
        site, _ = fixture_pkg(version)
        os.makedirs(f"{site}/torch", exist_ok=True)
        with open(f"{site}/torch/__init__.py", "w") as f:  # stands in for torch.from_dlpack
            f.write("def from_dlpack(x):\n    return x\n")
        return site
    return make


def test_capi_reaches_aiter_by_keyword(site_with_torch_stub):
    r = run(site_with_torch_stub("0.1.12"), "sinks")
    assert r["status"] == 0, r["error"]
    [(name, keywords, window)] = r["calls"]
    assert name == "flash_attn_varlen_func"
    assert keywords == sorted(["q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k",
                               "softmax_scale", "causal", "window_size", "out", "sink_ptr"])
    assert window == [127, 0, 0]  # adapted to the release's 3-value window


def test_capi_refuses_sinks_on_an_old_release(site_with_torch_stub):
    r = run(site_with_torch_stub("0.1.9.post1"), "sinks")
    assert r["status"] == 2 and r["calls"] == []
    assert "flash_attn_varlen_func takes no sink_ptr (first in 0.1.10)" in r["error"]
    ok = run(site_with_torch_stub("0.1.9.post1"), "nosinks")
    assert ok["status"] == 0 and "sink_ptr" not in ok["calls"][0][1]


def test_capi_without_torch_says_why(fixture_pkg):
    site, _ = fixture_pkg("0.1.12")
    r = run(site, "sinks")
    assert r["status"] == 2
    assert "torch cannot be imported here" in r["error"]


def test_capi_calls_aiters_original_after_install(site_with_torch_stub):
    """aiter_compat.install() in the same process: the C API's AITer route calls AITer's own
    function once, not the patched name (which would dispatch the call again in the Python module)."""
    r = run(site_with_torch_stub("0.1.12"), "sinks", install=True)
    assert r["status"] == 0, r["error"]
    assert [name for name, _, _ in r["calls"]] == ["flash_attn_varlen_func"]
    assert r["python_module_calls"] == {}
