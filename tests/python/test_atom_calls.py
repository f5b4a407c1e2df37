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


# ATOM's gfx1250 decode with sinks (attention_mha.py, paged_attention_persistent_asm), by keyword.
ASM_SCRIPT = r'''
import json
import aiter_compat
from vllm_calls import RocmTensor, call_record

fp8 = "float8_e4m3fn"
kwargs = dict(Q=RocmTensor(4, 1, 8, 8, 64, dtype=fp8), K=RocmTensor(64, 8, 4, 256, 16, dtype=fp8),
              V=RocmTensor(64, 8, 16, 64, 16, dtype=fp8), kv_indices=RocmTensor(16, dtype="int32"),
              context_lens=RocmTensor(4, dtype="int32"), softmax_scale=0.125, kv_indptr=RocmTensor(5, dtype="int32"),
              gqa=8, mtp=0, query_scale=RocmTensor(1, dtype="float32"), key_scale=RocmTensor(1, dtype="float32"),
              value_scale=RocmTensor(1, dtype="float32"), qo_indptr=RocmTensor(5, dtype="int32"),
              work_indptr=RocmTensor(257, dtype="int32"), work_info=RocmTensor(1024, 8, dtype="int32"),
              split_o=RocmTensor(8, 1, 64, 64, dtype="float32"), split_lse=RocmTensor(8, 1, 64, 1, dtype="float32"),
              sink=RocmTensor(64, dtype="float32"), out=RocmTensor(4, 1, 8, 8, 64))
print(json.dumps(call_record(aiter_compat.pa_decode_bf16_asm, kwargs)))
'''


@pytest.mark.parametrize("version, absent", [("0.1.20.post1", False), ("0.1.16", False), ("0.1.13", True)])
def test_gfx1250_decode_is_refused_with_every_reason_where_nothing_serves_it(fixture_pkg, version, absent):
    # No GPU here: AITer's kernel is gfx1250's alone (assumed to apply when no GPU is found), and
    # no fallback kernel can run. The call says so; never a TypeError.
    site, _ = fixture_pkg(version)
    r = run_json(site, ASM_SCRIPT)
    assert r["route"] == "error", r
    reasons = " ".join(x for c in r["candidates"] for x in c["reasons"])
    if absent:
        assert "pa_decode_bf16_asm is not in this install" in reasons, reasons
    else:
        assert "quirk pa-decode-bf16-asm-gfx1250-only" in reasons and "assumed" in reasons, reasons
    assert "no GPU was found at start-up" in reasons, reasons
