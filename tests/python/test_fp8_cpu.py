"""fp8 e4m3 KV caches (and fp8 queries and outputs) through the CPU route: the reference kernels
compute with the codes' values, decoded here by a decoder of this file's own; the descales and
output_scale apply as AITer applies them; bad combinations are refused naming the argument."""
import numpy as np
import pytest

import aiter_compat
from attention_reference import attention
from conftest import RNG
from dlpack_arrays import RawArray, bf16_bits, bf16_values

FORMATS = {"float8_e4m3fn": 7, "float8_e4m3fnuz": 8}  # bias


def decode(codes, fmt):
    """The values of e4m3 codes (NaN codes to NaN), from the format's definition."""
    c = np.asarray(codes, np.uint8).astype(np.int64)
    bias = FORMATS[fmt]
    e, m, s = (c >> 3) & 15, c & 7, np.where(c & 0x80, -1.0, 1.0)
    mag = np.where(e == 0, np.ldexp(m / 8.0, 1 - bias), np.ldexp(1.0 + m / 8.0, e - bias))
    nan = (c == 0x80) if fmt == "float8_e4m3fnuz" else ((c & 0x7F) == 0x7F)
    return np.where(nan, np.nan, s * mag)


def random_codes(shape, fmt):
    """Codes of normal-ish values (no NaN codes): the nearest code to each of a normal sample."""
    finite = np.array([c for c in range(256) if not np.isnan(decode(c, fmt))], np.uint8)
    values = decode(finite, fmt)
    x = RNG.standard_normal(shape)
    idx = np.abs(values[None, :] - x.reshape(-1, 1)).argmin(axis=1)
    return finite[idx].reshape(shape)


def paged_fp8(ctx, qlen, hq, hk, d, block_size, fmt):
    nblk = [(c + block_size - 1) // block_size for c in ctx]
    total = sum(nblk) + 2
    perm = RNG.permutation(total)
    table = np.zeros((len(ctx), max(nblk)), np.int32)
    start = 0
    for b, n in enumerate(nblk):
        table[b, :n] = perm[start:start + n]
        start += n
    kc = random_codes((total, block_size, hk, d), fmt)
    vc = random_codes((total, block_size, hk, d), fmt)
    cu_q = np.concatenate([[0], np.cumsum(qlen)]).astype(np.int32)

    def contiguous(cache, b):
        return np.stack([cache[table[b, j // block_size], j % block_size] for j in range(ctx[b])])
    return kc, vc, table, np.array(ctx, np.int32), cu_q, contiguous


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("queries", ["bfloat16", "fp8"])
@pytest.mark.parametrize("output", ["bfloat16", "fp8"])
def test_unified_attention_over_an_fp8_cache(fmt, queries, output):
    ctx, qlen, hq, hk, d = [13, 1, 40], [13, 1, 3], 8, 2, 16
    kc, vc, table, used, cu_q, contiguous = paged_fp8(ctx, qlen, hq, hk, d, 16, fmt)
    if queries == "fp8":
        qcodes = random_codes((cu_q[-1], hq, d), fmt)
        q, qv = RawArray(qcodes, fmt), decode(qcodes, fmt)
    else:
        qbits = bf16_bits(RNG.standard_normal((cu_q[-1], hq, d)))
        q, qv = RawArray(qbits, "bfloat16"), bf16_values(qbits).astype(np.float64)
    out_store = np.zeros((cu_q[-1], hq, d), np.uint8 if output == "fp8" else np.uint16)
    out = RawArray(out_store, fmt if output == "fp8" else "bfloat16")
    sinks = RNG.standard_normal(hq).astype(np.float32)
    qd = np.array([0.8], np.float32)
    kd = RNG.uniform(0.5, 2.0, (3, hk)).astype(np.float32)  # per sequence and KV head
    vd = np.array([1.3], np.float32)
    oscale = np.array([2.5], np.float32)
    aiter_compat.unified_attention(q, RawArray(kc, fmt), RawArray(vc, fmt), out, cu_q, max(qlen), used, max(ctx), 0.25,
                                   True, (-1, -1), table, 0, qd, kd, vd, sinks=sinks, output_scale=oscale)
    got = decode(out_store, fmt) if output == "fp8" else bf16_values(out_store)
    for b in range(len(ctx)):
        qs = slice(cu_q[b], cu_q[b + 1])
        k = decode(contiguous(kc, b), fmt) * kd[b][None, :, None]
        v = decode(contiguous(vc, b), fmt) * vd[0]
        want, _ = attention(qv[qs] * qd[0], k, v, 0.25, True, (-1, -1), sinks)
        want = want / oscale[0]
        # The output's own rounding: an e4m3 step (2^-3 of the value) or a bf16 one (2^-8).
        rel = 2.0 ** -4 if output == "fp8" else 2.0 ** -8
        np.testing.assert_allclose(got[qs], want, rtol=rel, atol=rel * 2.0 ** -6 if output == "fp8" else 1e-6)
    assert np.abs(got).max() > 0.05, "the output should not be all zeros"


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_paged_attention_decode_over_an_fp8_cache_with_fp8_queries(fmt):
    ctx = [5, 33]
    kc, vc, table, used, _, contiguous = paged_fp8(ctx, [1, 1], 8, 2, 16, 16, fmt)
    qcodes = random_codes((2, 8, 16), fmt)
    sinks = RNG.standard_normal(8).astype(np.float32)
    out_store = np.zeros((2, 8, 16), np.uint16)
    aiter_compat.paged_attention_decode(RawArray(qcodes, fmt), RawArray(kc, fmt), RawArray(vc, fmt), table, used,
                                        softmax_scale=0.25, sinks=sinks, out=RawArray(out_store, "bfloat16"),
                                        k_descale=np.array([0.5], np.float32))
    got = bf16_values(out_store)
    for b in range(2):
        k, v = decode(contiguous(kc, b), fmt) * 0.5, decode(contiguous(vc, b), fmt)
        want, _ = attention(decode(qcodes[b:b + 1], fmt), k, v, 0.25, True, (-1, -1), sinks)
        np.testing.assert_allclose(got[b:b + 1], want, rtol=2.0 ** -8, atol=1e-6)


def test_a_nan_code_makes_the_queries_that_see_it_nan():
    fmt = "float8_e4m3fn"
    ctx, qlen = [20, 20], [4, 4]
    kc, vc, table, used, cu_q, _ = paged_fp8(ctx, qlen, 4, 1, 16, 16, fmt)
    kc[table[1, 0], 2, 0, 3] = 0x7F  # NaN: sequence 1's key 2, seen by every query of it
    q = RNG.standard_normal((8, 4, 16)).astype(np.float32)
    qbits = bf16_bits(q)
    out_store = np.zeros((8, 4, 16), np.uint16)
    aiter_compat.unified_attention(RawArray(qbits, "bfloat16"), RawArray(kc, fmt), RawArray(vc, fmt),
                                   RawArray(out_store, "bfloat16"), cu_q, 4, used, 20, 0.25, True, (-1, -1), table, 0,
                                   None, None, None)
    got = bf16_values(out_store)
    assert np.isfinite(got[:4]).all() and np.isnan(got[4:]).all()


def call_args(fmt="float8_e4m3fn", qdtype="bfloat16", kdtype=None, out_dtype="bfloat16", **extra):
    ctx, qlen = [13, 1], [13, 1]
    kc, vc, table, used, cu_q, _ = paged_fp8(ctx, qlen, 8, 2, 16, 16, fmt)
    width = {"bfloat16": np.uint16, "float16": np.float16, "float32": np.float32}
    def tensor(name, shape):
        if name in FORMATS:
            return RawArray(np.zeros(shape, np.uint8), name)
        store = np.zeros(shape, width[name])
        return RawArray(store, name) if name == "bfloat16" else store
    k = tensor(kdtype or fmt, kc.shape)
    args = dict(q=tensor(qdtype, (14, 8, 16)), k=k, v=RawArray(vc, fmt) if kdtype is None else tensor(kdtype, vc.shape),
                out=tensor(out_dtype, (14, 8, 16)), cu_seqlens_q=cu_q, max_seqlen_q=13, seqused_k=used,
                max_seqlen_k=13, softmax_scale=0.25, causal=True, window_size=(-1, -1), block_table=table, softcap=0.0,
                q_descale=None, k_descale=None, v_descale=None)
    args.update(extra)
    return args


@pytest.mark.parametrize("change,name,found,needed", [
    (dict(qdtype="float32"), "k", "float8_e4m3fn", "q's dtype float32"),
    (dict(qdtype="float8_e4m3fnuz"), "k", "float8_e4m3fn", "q's dtype float8_e4m3fnuz"),
    (dict(out_dtype="float16"), "out", "float16", "q's dtype bfloat16 or the cache's float8_e4m3fn"),
    (dict(out_dtype="float8_e4m3fnuz"), "out", "float8_e4m3fnuz", "the cache's float8_e4m3fn"),
    (dict(output_scale=np.ones(2, np.float32)), "output_scale", "[2]", "one element"),
    (dict(output_scale=np.ones(1, np.float64)), "output_scale", "float64", "float32"),
])
def test_fp8_combinations_refused_name_the_argument(change, name, found, needed):
    extra = {k: v for k, v in change.items() if k == "output_scale"}
    kw = {k: v for k, v in change.items() if k != "output_scale"}
    args = call_args(**kw, **extra)
    with pytest.raises(aiter_compat.AiterCompatError) as e:
        aiter_compat.unified_attention(**args)
    text = str(e.value)
    assert name in text and found in text and needed in text, text


def test_fp8_on_the_varlen_entry_point_is_refused_naming_q():
    q = RawArray(np.zeros((4, 2, 16), np.uint8), "float8_e4m3fn")
    cu = np.array([0, 4], np.int32)
    with pytest.raises(aiter_compat.AiterCompatError) as e:
        aiter_compat.flash_attn_varlen_func(q, q, q, cu, cu, 4, 4)
    assert "float8_e4m3fn" in str(e.value) and "q" in str(e.value), str(e.value)
