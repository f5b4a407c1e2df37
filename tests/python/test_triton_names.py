"""AITer's Triton flash attention names (aiter.ops.triton.attention.mha, aiter.ops.triton.mha before
v0.1.10): `sink=` on the fallbacks against float64; on fixture releases, AITer gets the call with
its sink from v0.1.8 and a release before refuses it by name; install() routes Triton's functions
apart from CK's of the same name; the probe never takes CK's function for Triton's."""
import os

import numpy as np
import pytest

import aiter_compat
from aiter_compat import triton_mha
from attention_reference import attention
from conftest import RNG
from fixture_process import run_json


def test_varlen_sink_on_the_cpu_reference():
    q_lens, k_lens, hq, hk, d = [5, 3], [9, 3], 8, 2, 16
    cu_q = np.array([0, 5, 8], np.int32)
    cu_k = np.array([0, 9, 12], np.int32)
    q = RNG.standard_normal((8, hq, d)).astype(np.float32)
    k = RNG.standard_normal((12, hk, d)).astype(np.float32)
    v = RNG.standard_normal((12, hk, d)).astype(np.float32)
    sink = RNG.standard_normal(hq).astype(np.float32)
    out, lse = triton_mha.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 5, 9, causal=True, window_size=(3, 0),
                                                 sink=sink, return_lse=True, config={"BLOCK_M": 64})
    for b in range(2):
        want, want_lse = attention(q[cu_q[b]:cu_q[b + 1]], k[cu_k[b]:cu_k[b + 1]], v[cu_k[b]:cu_k[b + 1]], d ** -0.5,
                                   True, (3, 0), sink)
        assert np.abs(out[cu_q[b]:cu_q[b + 1]] - want).max() < 2e-5
        assert np.abs(lse[:, cu_q[b]:cu_q[b + 1]] - want_lse).max() < 2e-5


def test_batch_sink_on_the_cpu_reference():
    q = RNG.standard_normal((2, 6, 4, 8)).astype(np.float32)
    k = RNG.standard_normal((2, 7, 2, 8)).astype(np.float32)
    sink = RNG.standard_normal(4).astype(np.float32)
    out = triton_mha.flash_attn_func(q, k, k, causal=False, sink=sink)
    for b in range(2):
        want, _ = attention(q[b], k[b], k[b], 8 ** -0.5, False, (-1, -1), sink)
        assert np.abs(out[b] - want).max() < 2e-5


def test_ck_keyword_is_not_triton_s():
    q = np.zeros((2, 2, 8), np.float32)
    cu = np.array([0, 2], np.int32)
    with pytest.raises(aiter_compat.AiterCompatError) as e:
        triton_mha.flash_attn_varlen_func(q, q, q, cu, cu, 2, 2, sink_ptr=np.zeros(2, np.float32))
    assert "sink_ptr" in str(e.value) and "sink" in e.value.needed


SCRIPT = r'''
import importlib, json, sys
import aiter_compat
import aiter_compat.triton_mha
from vllm_calls import RocmTensor, call_record

def prefill(**extra):
    q = RocmTensor(256, 64, 64); k = RocmTensor(256, 8, 64)
    cu = RocmTensor(3, dtype="int32")
    return dict(q=q, k=k, v=k, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=128, max_seqlen_k=128, causal=True,
                softmax_scale=0.125, **extra)

out = {"direct": call_record(aiter_compat.triton_mha.flash_attn_varlen_func,
                             prefill(sink=RocmTensor(64, dtype="float32")))}
installed = aiter_compat.install()
import aiter
mod = sys.modules.get("aiter.ops.triton.attention.mha") or importlib.import_module("aiter.ops.triton.mha")
out["installed"] = installed
out["ck_is_triton"] = getattr(aiter, "flash_attn_varlen_func", None) is mod.flash_attn_varlen_func
out["through_aiter"] = call_record(mod.flash_attn_varlen_func, prefill(sink=RocmTensor(64, dtype="float32")))
out["ck_through_aiter"] = call_record(aiter.flash_attn_varlen_func, prefill())
aiter_compat.uninstall()
print(json.dumps(out))
'''


def run(site):
    return run_json(site, SCRIPT)


@pytest.mark.parametrize("version, module", [("0.1.9.post1", "aiter.ops.triton.mha"),
                                             ("0.1.13", "aiter.ops.triton.attention.mha")])
def test_triton_sink_reaches_aiter_from_0_1_8(fixture_pkg, version, module):
    site, _ = fixture_pkg(version)
    out = run(site)
    for how in ("direct", "through_aiter"):
        r = out[how]
        assert r["route"] == "aiter" and r["called"] == "triton_flash_attn_varlen_func", (how, r)
        assert "sink" in r["received"] and r["same_objects"], r
    assert f"{module}.flash_attn_varlen_func" in out["installed"]
    assert not out["ck_is_triton"]
    # CK's name is its own route: it reaches CK's function, not Triton's.
    assert out["ck_through_aiter"]["called"] == "flash_attn_varlen_func", out["ck_through_aiter"]


def test_triton_sink_before_0_1_8_is_refused_by_name(fixture_pkg):
    site, _ = fixture_pkg("0.1.7.post5")
    r = run(site)["direct"]
    assert r["route"] == "error", r
    text = " ".join(reason for c in r["candidates"] for reason in c["reasons"])
    assert "triton_flash_attn_varlen_func takes no sink (first in 0.1.8)" in text


def test_probe_never_takes_ck_s_function_for_triton_s(cli, fixture_pkg):
    # A release whose Triton module is gone: the name search may look under aiter.ops.triton
    # only, so CK's flash_attn_varlen_func in aiter.ops.mha is not reported as Triton's.
    site, pkg = fixture_pkg("0.1.13")
    os.remove(os.path.join(pkg, "ops", "triton", "attention", "mha.py"))
    report = cli.probe_json("--aiter-root", site)
    assert report["ops"]["flash_attn_varlen_func"]["present"] is True
    triton = report["ops"]["triton_flash_attn_varlen_func"]
    assert triton["present"] is False, triton
