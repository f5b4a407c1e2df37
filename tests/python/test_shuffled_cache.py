"""unified_attention with shuffled_kv_cache=True over AITer's 5-D caches (k [blocks, Hk, D / x,
block, x], v [blocks, Hk, block / x, D, x]), as vLLM's unified backend on gfx1250 and ATOM call
it: the heads and block size are read from that layout (not from NHD positions, which would take
the block size for the KV-head count and refuse a call AITer serves), AITer gets the call where
the release takes shuffled_kv_cache, and elsewhere the fallbacks, which read the layout, take it
where a GPU (or CPU tensors) lets them."""

import pytest

from fixture_process import run_json

SCRIPT = r'''
import json
import aiter_compat
from vllm_calls import RocmTensor, call_record

x = 8  # 16 bytes of bf16
blocks, hk, block, d, hq = 300, 8, 128, 64, 64
k = RocmTensor(blocks, hk, d // x, block, x)
v = RocmTensor(blocks, hk, block // x, d, x)
scale = RocmTensor(1, dtype="float32")
# ATOM's form: q, k_cache, v_cache, o positionally; kv_scale as both descales; sinks.
args = (RocmTensor(4, hq, d), k, v, RocmTensor(4, hq, d))
kwargs = dict(cu_seqlens_q=RocmTensor(5, dtype="int32"), max_seqlen_q=1, seqused_k=RocmTensor(4, dtype="int32"),
              max_seqlen_k=8192, softmax_scale=0.125, causal=True, window_size=(127, 0),
              block_table=RocmTensor(4, 64, dtype="int32"), softcap=0.0, q_descale=None, k_descale=scale,
              v_descale=scale, sinks=RocmTensor(hq, dtype="float32"), shuffled_kv_cache=True)
record = call_record(aiter_compat.unified_attention, kwargs, args)
features = dict(aiter_compat.routes()[-1]["features"]) if aiter_compat.routes() else {}
print(json.dumps({"record": record, "features": features}))
'''


def run(site):
    return run_json(site, SCRIPT)


def test_shuffled_cache_reaches_aiter_where_the_release_takes_it(fixture_pkg):
    site, _ = fixture_pkg("0.1.20.post1")
    out = run(site)
    r = out["record"]
    assert r["route"] == "aiter", r
    assert {"shuffled_kv_cache", "sinks", "k_descale", "v_descale"} <= set(r["received"])
    assert out["features"]["heads (q, kv)"] == "64, 8", out["features"]
    assert out["features"]["block_size"] == "128"
    assert out["features"]["head_dim (q/k, v)"] == "64, 64"


def test_shuffled_cache_on_a_release_without_it_is_refused_by_name(fixture_pkg):
    site, _ = fixture_pkg("0.1.13")
    r = run(site)["record"]
    assert r["route"] == "error", r
    text = " ".join(reason for c in r["candidates"] for reason in c["reasons"])
    assert "takes no shuffled_kv_cache (first in 0.1.15.post1)" in text
    # The fallbacks read the 5-D caches (the generic GPU kernel, the CPU reference): what keeps
    # them off here is that no GPU is present, not the layout.
    assert "shuffled_kv_cache is not supported" not in text
    assert "no GPU was found" in text, text
