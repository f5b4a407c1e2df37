"""vLLM 0.34's call forms beyond those of its FA backend's prefill: its unified backend's
unified_attention (fp8 q_descale, k/v descales as one-element scalars, output_scale,
shuffled_kv_cache on gfx1250) on fixture releases, and its FA backend's K/V views of one packed
cache (_split_kv_cache: the head stride is not the slot stride) on the CPU reference."""

import numpy as np
import pytest

import aiter_compat
from attention_reference import attention
from conftest import RNG
from fixture_process import run_json

SCRIPT = r'''
import json
import aiter_compat
from vllm_calls import RocmTensor, call_record

cache = RocmTensor(512, 16, 8, 64, dtype="float8_e4m3fn")
scalar = lambda: RocmTensor(1, dtype="float32")
kwargs = dict(q=RocmTensor(4, 64, 64, dtype="float8_e4m3fn"), k=cache, v=cache, out=RocmTensor(4, 64, 64),
              cu_seqlens_q=RocmTensor(5, dtype="int32"), max_seqlen_q=1, seqused_k=RocmTensor(4, dtype="int32"),
              max_seqlen_k=4096, softmax_scale=0.125, causal=True, window_size=(127, 0),
              block_table=RocmTensor(4, 256, dtype="int32"), softcap=0.0, q_descale=scalar(), k_descale=scalar(),
              v_descale=scalar(), output_scale=scalar(), sinks=RocmTensor(64, dtype="float32"))
print(json.dumps(call_record(aiter_compat.unified_attention, kwargs)))
'''


def run(site):
    return run_json(site, SCRIPT)


@pytest.mark.parametrize("version", ["0.1.13", "0.1.20.post1"])
def test_unified_backend_fp8_call_reaches_aiter_with_every_scale(fixture_pkg, version):
    site, _ = fixture_pkg(version)
    r = run(site)
    assert r["route"] == "aiter", r
    assert {"q_descale", "k_descale", "v_descale", "output_scale", "sinks"} <= set(r["received"])
    assert r["same_objects"], r  # the scalars are passed as given, not expanded


EXPLAIN = r'''
import json
import aiter_compat
from vllm_calls import RocmTensor

cache = RocmTensor(512, 16, 8, 64, dtype="float8_e4m3fn")
scalar = lambda: RocmTensor(1, dtype="float32")
kwargs = dict(q=RocmTensor(4, 64, 64, dtype=QTYPE), k=cache, v=cache, out=RocmTensor(4, 64, 64),
              cu_seqlens_q=RocmTensor(5, dtype="int32"), max_seqlen_q=1, seqused_k=RocmTensor(4, dtype="int32"),
              max_seqlen_k=4096, softmax_scale=0.125, causal=True, window_size=(127, 0),
              block_table=RocmTensor(4, 256, dtype="int32"), softcap=0.0, k_descale=scalar(), v_descale=scalar(),
              q_descale=scalar() if WITH_Q_DESCALE else None)
e = aiter_compat.explain("unified_attention", **kwargs)
print(json.dumps({"route": e["route"], "aiter_reasons": e["candidates"][0]["reasons"],
                  "quirks": [q["id"] for q in aiter_compat.probe()["quirks"]]}))
'''


def explain_on(site, qtype, with_q_descale):
    return run_json(site, f"QTYPE = {qtype!r}\nWITH_Q_DESCALE = {with_q_descale}\n" + EXPLAIN)


@pytest.mark.parametrize("version", ["0.1.7", "0.1.10", "0.1.11.post1"])
def test_fp8_queries_with_kv_descales_are_kept_from_releases_that_ignore_them(fixture_pkg, version):
    """From 0.1.6.post2 to 0.1.11.post1 AITer's kernel leaves an fp8 cache unscaled under fp8
    queries (k_descale and v_descale ignored, no error) and asserts q_descale is None: the probe
    names both quirks, and explain() gives them as the reasons AITer does not take the call."""
    site, _ = fixture_pkg(version)
    kv_only = explain_on(site, "float8_e4m3fn", False)
    assert {"unified-attention-fp8-q-ignores-kv-descales", "unified-attention-q-descale-asserted"} <= set(kv_only["quirks"])
    assert kv_only["route"] != "aiter", kv_only
    reasons = " ".join(kv_only["aiter_reasons"])
    assert "quirk unified-attention-fp8-q-ignores-kv-descales: " in reasons and "ignored without an error" in reasons
    assert "unified-attention-q-descale-asserted" not in reasons
    with_q = explain_on(site, "float8_e4m3fn", True)
    assert "quirk unified-attention-q-descale-asserted: " in " ".join(with_q["aiter_reasons"]), with_q
    # 16-bit queries over the fp8 cache: these releases scale K and V by their descales.
    assert explain_on(site, "bfloat16", False)["route"] == "aiter"


@pytest.mark.parametrize("version", ["0.1.12", "0.1.13"])
def test_fp8_queries_with_descales_reach_releases_that_apply_them(fixture_pkg, version):
    site, _ = fixture_pkg(version)
    r = explain_on(site, "float8_e4m3fn", True)
    assert r["route"] == "aiter", r
    assert not {"unified-attention-fp8-q-ignores-kv-descales", "unified-attention-q-descale-asserted"} & set(r["quirks"])


def test_unified_backend_fp8_call_on_a_release_without_unified_is_refused(fixture_pkg):
    site, _ = fixture_pkg("0.1.5")
    r = run(site)
    assert r["route"] == "error"
    assert "unified_attention is not in this install" in " ".join(x for c in r["candidates"] for x in c["reasons"])


def test_packed_kv_views_on_the_cpu_reference():
    """vLLM's FA backend splits one cache [blocks, 2, block_size, Hk, D] into K and V views:
    block stride 2 x block_size x Hk x D, slot stride Hk x D, head stride D."""
    blocks, bs, hk, hq, d = 6, 4, 2, 4, 8
    packed = RNG.standard_normal((blocks, 2, bs, hk, d)).astype(np.float32)
    k, v = packed[:, 0], packed[:, 1]
    assert k.strides[0] != k.strides[1] * bs  # a view, not a contiguous cache
    table = np.array([[4, 1, 3], [0, 5, 2]], np.int32)
    used = np.array([10, 7], np.int32)
    q_lens = [3, 1]
    cu = np.array([0, 3, 4], np.int32)
    q = RNG.standard_normal((4, hq, d)).astype(np.float32)
    sinks = RNG.standard_normal(hq).astype(np.float32)
    out = np.full((4, hq, d), np.nan, np.float32)
    aiter_compat.unified_attention(q, k, v, out, cu, 3, used, 10, d ** -0.5, True, (-1, -1), table, 0.0, None, None,
                                   None, sinks=sinks)
    for b in range(2):
        keys = k[table[b]].reshape(-1, hk, d)[:used[b]]
        values = v[table[b]].reshape(-1, hk, d)[:used[b]]
        want, _ = attention(q[cu[b]:cu[b + 1]], keys, values, d ** -0.5, True, (-1, -1), sinks)
        assert np.abs(out[cu[b]:cu[b + 1]] - want).max() < 2e-5
