"""ROCm/ATOM's prefill call form: aiter.flash_attn_varlen_func with a 3-value window (W, 0, 0) and
sink_ptr, by keyword, on fixture releases: AITer gets it where the release takes sink_ptr (the
window as given), a release without sink_ptr refuses it by name, and a 2-value-window release
gets the window it understands. (ATOM's unified_attention with shuffled_kv_cache:
test_shuffled_cache.py.)"""
import pytest

from fixture_process import run_json

SCRIPT = r'''
import json
import aiter_compat
from vllm_calls import RocmTensor, call_record

q = RocmTensor(256, 64, 64); k = RocmTensor(256, 8, 64); cu = RocmTensor(3, dtype="int32")
kwargs = dict(q=q, k=k, v=k, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=128, max_seqlen_k=128,
              softmax_scale=0.125, causal=True, window_size=(127, 0, 0), sink_ptr=%s, out=RocmTensor(256, 64, 64))
print(json.dumps(call_record(aiter_compat.flash_attn_varlen_func, kwargs)))
'''


def call(fixture_pkg, version, sinks=True):
    site, _ = fixture_pkg(version)
    return run_json(site, SCRIPT % ('RocmTensor(64, dtype="float32")' if sinks else "None"))


def test_sink_and_three_value_window_reach_aiter_from_0_1_10(fixture_pkg):
    r = call(fixture_pkg, "0.1.13")
    assert r["route"] == "aiter" and "sink_ptr" in r["received"], r
    assert r["window"] == [127, 0, 0]


def test_release_without_sink_ptr_refuses_by_name(fixture_pkg):
    r = call(fixture_pkg, "0.1.9.post1")
    assert r["route"] == "error", r
    assert "takes no sink_ptr (first in 0.1.10)" in " ".join(x for c in r["candidates"] for x in c["reasons"])


@pytest.mark.parametrize("version, window", [("0.1.7.post5", [127, 0]), ("0.1.9.post1", [127, 0, 0])])
def test_without_sinks_the_window_is_the_release_s(fixture_pkg, version, window):
    r = call(fixture_pkg, version, sinks=False)
    assert r["route"] == "aiter" and "sink_ptr" not in r["received"], r
    assert r["window"] == window
