"""CPU tensors run on the reference kernels: every op against the independent reference on
random inputs (seeded: see conftest.py), over shapes and edge cases."""
import numpy as np
import pytest

import aiter_compat
from attention_reference import attention
from conftest import RNG
from dlpack_arrays import bf16_values, bfloat16

TOL = {np.float32: 2e-5, np.float16: 2e-3}


def ragged(q_lens, k_lens, hq, hk, d, dv, dtype):
    cu_q = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(k_lens)]).astype(np.int32)
    q = RNG.standard_normal((cu_q[-1], hq, d)).astype(dtype)
    k = RNG.standard_normal((cu_k[-1], hk, d)).astype(dtype)
    v = RNG.standard_normal((cu_k[-1], hk, dv)).astype(dtype)
    return q, k, v, cu_q, cu_k


VARLEN_CASES = [
    # q_lens, k_lens, hq, hk, d, causal, window, sinks
    ([5, 1, 7], [5, 9, 7], 8, 2, 16, True, (-1, -1), "random"),
    ([3, 4], [6, 4], 4, 4, 8, False, (-1, -1), "random"),
    ([9], [9], 8, 1, 64, True, (3, 0), "random"),
    ([6], [10], 2, 1, 8, False, (2, 1), None),
    ([4], [4], 2, 2, 8, True, (100, 0), "random"),          # window wider than the context
    ([1, 1, 1], [1, 5, 3], 4, 2, 8, True, (-1, -1), "random"),  # length-1 queries
    ([0, 3, 0], [0, 3, 2], 2, 1, 8, True, (-1, -1), "random"),  # empty sequences
    ([3], [0], 2, 1, 8, False, (-1, -1), "random"),            # no keys: sink only
    ([4], [4], 2, 1, 8, True, (-1, -1), "large"),              # sinks of 1e4
    ([4], [4], 2, 1, 8, True, (-1, -1), "-inf"),               # -inf: no sink
    ([2, 3], [2, 3], 64, 8, 64, True, (127, 0), "random"),     # GPT-OSS shape
    ([3], [3], 4, 2, 128, True, (-1, -1), "random"),           # head dim 128
]


def sinks_of(kind, hq):
    if kind is None:
        return None
    if kind == "large":
        return np.full(hq, 1e4, np.float32)
    if kind == "-inf":
        return np.full(hq, -np.inf, np.float32)
    return RNG.standard_normal(hq).astype(np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", range(len(VARLEN_CASES)))
def test_varlen(case, dtype):
    q_lens, k_lens, hq, hk, d, causal, window, sink_kind = VARLEN_CASES[case]
    q, k, v, cu_q, cu_k = ragged(q_lens, k_lens, hq, hk, d, d, dtype)
    sinks = sinks_of(sink_kind, hq)
    out = np.full((cu_q[-1], hq, d), np.nan, dtype)  # poisoned: every element must be written
    res, lse = aiter_compat.flash_attn_varlen_func(
        q, k, v, cu_q, cu_k, max(q_lens), max(k_lens), causal=causal, window_size=window, sink_ptr=sinks,
        return_lse=True, out=out)
    assert res is out
    scale = d ** -0.5
    for b in range(len(q_lens)):
        qs, ks = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        want, want_lse = attention(q[qs], k[ks], v[ks], scale, causal, window, sinks)
        np.testing.assert_allclose(out[qs], want, atol=TOL[dtype], rtol=0)
        np.testing.assert_allclose(lse[:, qs], want_lse, rtol=1e-5, atol=1e-5)


def test_varlen_allocates_numpy_output_and_honours_scale_and_softcap():
    q, k, v, cu_q, cu_k = ragged([4, 2], [4, 5], 4, 2, 8, 8, np.float32)
    out = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 4, 5, softmax_scale=0.3, logits_soft_cap=2.0)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == q.shape
    want, _ = attention(q[0:4], k[0:4], v[0:4], 0.3, False, softcap=2.0)
    np.testing.assert_allclose(out[0:4], want, atol=2e-5)


def test_flash_attn_func_batch_layout():
    b, sq, sk, hq, hk, d = 2, 5, 7, 4, 2, 16
    q = RNG.standard_normal((b, sq, hq, d)).astype(np.float32)
    k = RNG.standard_normal((b, sk, hk, d)).astype(np.float32)
    v = RNG.standard_normal((b, sk, hk, d)).astype(np.float32)
    sinks = RNG.standard_normal(hq).astype(np.float32)
    out, lse = aiter_compat.flash_attn_func(q, k, v, causal=True, sink_ptr=sinks, return_lse=True)
    assert out.shape == (b, sq, hq, d) and lse.shape == (b, hq, sq)
    for i in range(b):
        want, want_lse = attention(q[i], k[i], v[i], d ** -0.5, True, sink=sinks)
        np.testing.assert_allclose(out[i], want, atol=2e-5)
        np.testing.assert_allclose(lse[i], want_lse, rtol=1e-5)


def paged_case(ctx, qlen, hq, hk, d, block_size, dtype=np.float32):
    nblk = [(c + block_size - 1) // block_size for c in ctx]
    total_blocks = sum(nblk) + 3
    perm = RNG.permutation(total_blocks)
    table = np.zeros((len(ctx), max(nblk)), np.int32)
    start = 0
    for b, n in enumerate(nblk):
        table[b, :n] = perm[start:start + n]
        start += n
    kc = RNG.standard_normal((total_blocks, block_size, hk, d)).astype(dtype)
    vc = RNG.standard_normal((total_blocks, block_size, hk, d)).astype(dtype)
    cu_q = np.concatenate([[0], np.cumsum(qlen)]).astype(np.int32)
    q = RNG.standard_normal((cu_q[-1], hq, d)).astype(dtype)

    def contiguous(cache, b):
        rows = [cache[table[b, j // block_size], j % block_size] for j in range(ctx[b])]
        return np.stack(rows) if rows else np.zeros((0, hk, d), dtype)
    return q, kc, vc, table, np.array(ctx, np.int32), cu_q, contiguous


@pytest.mark.parametrize("block_size", [1, 16, 32])
@pytest.mark.parametrize("window", [(-1, -1), (5, 0)])
def test_unified_attention_paged_prefill_extend_decode(block_size, window):
    ctx, qlen = [13, 1, 20, 40], [13, 1, 3, 1]
    q, kc, vc, table, used, cu_q, contiguous = paged_case(ctx, qlen, 8, 2, 16, block_size)
    sinks = RNG.standard_normal(8).astype(np.float32)
    out = np.full(q.shape, np.nan, np.float32)
    res = aiter_compat.unified_attention(q, kc, vc, out, cu_q, max(qlen), used, max(ctx), 0.25, True, window,
                                         table, 0, None, None, None, sinks=sinks)
    assert res is None  # written in place, as AITer's does
    for b in range(len(ctx)):
        qs = slice(cu_q[b], cu_q[b + 1])
        want, _ = attention(q[qs], contiguous(kc, b), contiguous(vc, b), 0.25, True, window, sinks)
        np.testing.assert_allclose(out[qs], want, atol=2e-5)


def test_paged_attention_decode_with_sinks_and_lse():
    ctx = [1, 17, 64]
    q, kc, vc, table, used, _, contiguous = paged_case(ctx, [1, 1, 1], 64, 8, 64, 16)
    sinks = RNG.standard_normal(64).astype(np.float32)
    out, lse = aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=0.125,
                                                   window_size=(127, 0), sinks=sinks, return_lse=True)
    assert out.shape == q.shape and lse.shape == (64, 3)
    for b in range(3):
        want, want_lse = attention(q[b:b + 1], contiguous(kc, b), contiguous(vc, b), 0.125, True, (127, 0), sinks)
        np.testing.assert_allclose(out[b:b + 1], want, atol=2e-5)
        np.testing.assert_allclose(lse[:, b:b + 1], want_lse, rtol=1e-5)


@pytest.mark.parametrize("sink_kind", ["random", "large", "-inf", None])
def test_merge_attn_states_adds_the_sink_once(sink_kind):
    """Chunked prefill: attend the cached chunk and the new tokens separately (without sinks),
    merge with the sink: equals attention over all keys with the sink counted once."""
    hq, hk, d, ctx, new = 8, 2, 16, 12, 5
    q = RNG.standard_normal((new, hq, d)).astype(np.float32)
    k = RNG.standard_normal((ctx + new, hk, d)).astype(np.float32)
    v = RNG.standard_normal((ctx + new, hk, d)).astype(np.float32)
    sinks = sinks_of(sink_kind, hq)
    cu = lambda n: np.array([0, n], np.int32)
    cached, cached_lse = aiter_compat.flash_attn_varlen_func(q, k[:ctx], v[:ctx], cu(new), cu(ctx), new, ctx,
                                                             causal=False, return_lse=True)
    fresh, fresh_lse = aiter_compat.flash_attn_varlen_func(q, k[ctx:], v[ctx:], cu(new), cu(new), new, new,
                                                           causal=True, return_lse=True)
    out = np.full_like(q, np.nan)
    out_lse = np.full((hq, new), np.nan, np.float32)
    assert aiter_compat.merge_attn_states(out, cached, cached_lse, fresh, fresh_lse, output_lse=out_lse,
                                          sinks=sinks) is None
    want, want_lse = attention(q, k, v, d ** -0.5, True, sink=sinks)
    np.testing.assert_allclose(out, want, atol=2e-5)
    np.testing.assert_allclose(out_lse, want_lse, rtol=1e-5)


def test_merge_attn_states_bad_inputs():
    x = np.zeros((3, 2, 8), np.float32)
    lse = np.zeros((2, 3), np.float32)
    with pytest.raises(aiter_compat.AiterCompatError) as info:
        aiter_compat.merge_attn_states(x.copy(), x, lse, x, np.zeros((3, 2), np.float32))
    assert info.value.argument == "suffix_lse"
    with pytest.raises(aiter_compat.AiterCompatError) as info:
        aiter_compat.merge_attn_states(x.copy(), x, lse, x, lse, sinks=np.full(2, np.nan, np.float32))
    assert info.value.argument == "sinks"


def test_merge_attn_states_nan_lse_reaches_the_output_as_nan():
    # A part whose keys held a NaN has a NaN LSE: the merged rows and LSE are NaN (as the attention
    # kernels keep NaN), not a zero row; the other rows are untouched by it.
    x = RNG.standard_normal((3, 2, 8)).astype(np.float32)
    lse = RNG.standard_normal((2, 3)).astype(np.float32)
    bad = lse.copy()
    bad[1, 2] = np.nan
    out, out_lse = np.zeros_like(x), np.zeros((2, 3), np.float32)
    aiter_compat.merge_attn_states(out, x, bad, x, lse, output_lse=out_lse, sinks=np.zeros(2, np.float32))
    assert np.isnan(out[2, 1]).all() and np.isnan(out_lse[1, 2])
    assert np.isfinite(np.delete(out.reshape(6, 8), 5, axis=0)).all()
    assert np.isfinite(np.delete(out_lse.ravel(), 5)).all()


def sinks_in(dtype, values):
    """The same sink logits in `dtype` (as engines pass them), and the float64 values it holds."""
    if dtype == "bfloat16":
        t = bfloat16(values)
        return t, bf16_values(t.storage).astype(np.float64)
    t = np.asarray(values).astype(dtype)
    return t, t.astype(np.float64)


SINK_DTYPES = ["float32", "float16", "bfloat16"]


@pytest.mark.parametrize("sink_dtype", SINK_DTYPES)
def test_sinks_in_the_models_dtype_every_op(sink_dtype):
    """GPT-OSS keeps its sinks in bfloat16 and AITer takes them so: every entry point takes
    float32, float16 and bfloat16 sinks and honours their values."""
    hq, hk, d = 8, 2, 16
    sinks, held = sinks_in(sink_dtype, RNG.standard_normal(hq) * 2)
    # varlen prefill
    q, k, v, cu_q, cu_k = ragged([5, 3], [5, 7], hq, hk, d, d, np.float32)
    out, lse = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 5, 7, causal=True, sink_ptr=sinks,
                                                   return_lse=True)
    for b in range(2):
        qs, ks = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        want, want_lse = attention(q[qs], k[ks], v[ks], d ** -0.5, True, sink=held)
        np.testing.assert_allclose(out[qs], want, atol=2e-5)
        np.testing.assert_allclose(lse[:, qs], want_lse, rtol=1e-5, atol=1e-5)
    # paged: unified_attention (extend) and paged_attention_decode
    ctx, qlen = [9, 20], [3, 1]
    q, kc, vc, table, used, cu_q, contiguous = paged_case(ctx, qlen, hq, hk, d, 16)
    out = np.full(q.shape, np.nan, np.float32)
    aiter_compat.unified_attention(q, kc, vc, out, cu_q, 3, used, 20, 0.25, True, (-1, -1), table, 0, None, None,
                                   None, sinks=sinks)
    for b in range(2):
        qs = slice(cu_q[b], cu_q[b + 1])
        want, _ = attention(q[qs], contiguous(kc, b), contiguous(vc, b), 0.25, True, sink=held)
        np.testing.assert_allclose(out[qs], want, atol=2e-5)
    q1 = q[[2, 3]]
    out = aiter_compat.paged_attention_decode(q1, kc, vc, table, used, softmax_scale=0.25, sinks=sinks)
    for b in range(2):
        want, _ = attention(q1[b:b + 1], contiguous(kc, b), contiguous(vc, b), 0.25, True, sink=held)
        np.testing.assert_allclose(out[b:b + 1], want, atol=2e-5)
    # merge_attn_states: the sink enters once
    x = RNG.standard_normal((4, hq, d)).astype(np.float32)
    y = RNG.standard_normal((4, hq, d)).astype(np.float32)
    lx = RNG.standard_normal((hq, 4)).astype(np.float32)
    ly = RNG.standard_normal((hq, 4)).astype(np.float32)
    merged, merged_lse = np.empty_like(x), np.empty((hq, 4), np.float32)
    aiter_compat.merge_attn_states(merged, x, lx, y, ly, output_lse=merged_lse, sinks=sinks)
    total = np.logaddexp(np.logaddexp(lx, ly), held[:, None])
    np.testing.assert_allclose(merged_lse, total, rtol=1e-5, atol=1e-5)
    want = x * np.exp(lx - total).T[:, :, None] + y * np.exp(ly - total).T[:, :, None]
    np.testing.assert_allclose(merged, want, atol=2e-5)


def test_bfloat16_sinks_equal_float32_sinks_of_the_same_values():
    q, k, v, cu_q, cu_k = ragged([6], [6], 8, 2, 16, 16, np.float16)
    sinks, held = sinks_in("bfloat16", RNG.standard_normal(8))
    a = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 6, 6, causal=True, sink_ptr=sinks)
    b = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 6, 6, causal=True, sink_ptr=held.astype(np.float32))
    np.testing.assert_array_equal(a, b)


def test_nan_in_bfloat16_sinks_is_named():
    q, k, v, cu_q, cu_k = ragged([2], [2], 4, 2, 8, 8, np.float32)
    values = np.zeros(4, np.float32)
    values[2] = np.nan
    with pytest.raises(aiter_compat.AiterCompatError) as info:
        aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 2, 2, sink_ptr=bfloat16(values))
    assert info.value.argument == "sinks" and info.value.found == "NaN at head 2"


def test_softmax_scale_as_a_zero_dim_array():
    """AITer takes a scalar tensor for softmax_scale (its __float__); so do the fallbacks."""
    q, k, v, cu_q, cu_k = ragged([4], [4], 4, 2, 8, 8, np.float32)
    a = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 4, 4, softmax_scale=np.array(0.3, np.float32))
    b = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 4, 4, softmax_scale=float(np.float32(0.3)))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shape", ["scalar expanded", "per sequence and kv head"])
def test_unified_attention_applies_the_descales(shape):
    """AITer's unified_attention multiplies the scores by q_descale k_descale and the output by
    v_descale ([num_seqs, num_kv_heads]; vLLM passes its scalar scale expanded to that shape, stride
    0): the same as attention over q, k and v scaled by them."""
    ctx, qlen = [13, 1, 20], [13, 1, 3]
    q, kc, vc, table, used, cu_q, contiguous = paged_case(ctx, qlen, 8, 2, 16, 16)
    sinks = RNG.standard_normal(8).astype(np.float32)
    qd = np.array([0.5], np.float32)
    if shape == "scalar expanded":
        expand = lambda x: np.lib.stride_tricks.as_strided(np.array([x], np.float32), shape=(3, 2), strides=(0, 0))
        kd, vd = expand(1.7), expand(0.3)
    else:
        kd = RNG.uniform(0.5, 2.0, (3, 2)).astype(np.float32)
        vd = RNG.uniform(0.5, 2.0, (3, 2)).astype(np.float32)
    out = np.full(q.shape, np.nan, np.float32)
    aiter_compat.unified_attention(q, kc, vc, out, cu_q, max(qlen), used, max(ctx), 0.25, True, (-1, -1), table, 0,
                                   qd, kd, vd, sinks=sinks)
    for b in range(len(ctx)):
        qs = slice(cu_q[b], cu_q[b + 1])
        k, v = contiguous(kc, b), contiguous(vc, b)
        want, _ = attention(q[qs] * qd[0], k * kd[b][None, :, None], v * vd[b][None, :, None], 0.25, True, (-1, -1),
                            sinks)
        np.testing.assert_allclose(out[qs], want, atol=2e-5, rtol=2e-5)
    plain = np.full(q.shape, np.nan, np.float32)
    aiter_compat.unified_attention(q, kc, vc, plain, cu_q, max(qlen), used, max(ctx), 0.25, True, (-1, -1), table, 0,
                                   None, None, None, sinks=sinks)
    assert np.abs(plain - out).max() > 1e-2, "the descales should change the result"


@pytest.mark.parametrize("name,value,needed", [
    ("k_descale", np.ones((3, 3), np.float32), "[3, 2] (batch, kv_heads) or broadcastable to it"),
    ("v_descale", np.ones((3, 2), np.float64), "float32"),
    ("q_descale", np.ones(2, np.float32), "one element"),
])
def test_unified_attention_descale_errors_name_the_argument(name, value, needed):
    ctx, qlen = [13, 1, 20], [13, 1, 3]
    q, kc, vc, table, used, cu_q, _ = paged_case(ctx, qlen, 8, 2, 16, 16)
    d = {"q_descale": None, "k_descale": None, "v_descale": None, name: value}
    out = np.zeros(q.shape, np.float32)
    with pytest.raises(Exception) as e:
        aiter_compat.unified_attention(q, kc, vc, out, cu_q, max(qlen), used, max(ctx), 0.25, True, (-1, -1), table, 0,
                                       d["q_descale"], d["k_descale"], d["v_descale"])
    assert name in str(e.value) and needed in str(e.value), str(e.value)


@pytest.mark.parametrize("sink_dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("with_sink", [True, False])
def test_sink_and_lse_worked_out_by_hand(sink_dtype, with_sink):
    """One query q = (1, 0) at scale 1 over k0 = (ln 4, 0), k1 = (0, 0) and a sink of 0: weights
    e^(ln 4) = 4, e^0 = 1 and the sink's e^0 = 1, so out = (4 v0 + v1) / 6 = (2/3, 1/6) with
    v0 = (1, 0), v1 = (0, 1), and LSE = ln 6 (ln 5 and (4/5, 1/5) without the sink). Independent
    of any reference code: the numbers are the test."""
    q = np.array([[[1.0, 0.0]]], np.float32)
    k = np.array([[[np.log(4.0), 0.0]], [[0.0, 0.0]]], np.float32)
    v = np.array([[[1.0, 0.0]], [[0.0, 1.0]]], np.float32)
    cu_q, cu_k = np.array([0, 1], np.int32), np.array([0, 2], np.int32)
    sinks, _held = sinks_in(sink_dtype, np.zeros(1)) if with_sink else (None, None)
    out, lse = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 1, 2, softmax_scale=1.0, sink_ptr=sinks,
                                                   return_lse=True)
    z = 6.0 if with_sink else 5.0
    np.testing.assert_allclose(out[0, 0], [4.0 / z, 1.0 / z], atol=1e-6, rtol=0)
    np.testing.assert_allclose(lse[0, 0], np.log(z), atol=1e-6, rtol=0)
