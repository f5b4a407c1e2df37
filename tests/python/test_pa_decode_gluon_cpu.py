"""pa_decode_gluon (AITer's Gluon paged decode, SGLang's and ATOM's fast decode) on CPU tensors:
its 5-D key cache [blocks, Hk, D / x, block_size, x] with either value cache ([blocks, Hk, D,
block_size] or [blocks, Hk, block_size / x, D, x]), query_length queries per sequence (MTP: causal
within the sequence), sinks, sliding_window, grouped-query heads and fp8 caches with per-tensor
scales, against the independent float64 reference; the layouts of mha_batch_prefill_func and of
unified_attention's shuffled_kv_cache through the same addressing; and what stays refused (per-token
scales, ALiBi) or is a caller's mistake, each named."""
import numpy as np
import pytest

import aiter_compat
from attention_reference import attention
from conftest import RNG
from dlpack_arrays import RawArray, bf16_bits, bf16_values
from test_fp8_cpu import decode, random_codes


def to_vectorized_k(rows, x):
    """[blocks, block, Hk, D] rows -> [blocks, Hk, D / x, block, x]."""
    n, bs, hk, d = rows.shape
    return np.ascontiguousarray(rows.reshape(n, bs, hk, d // x, x).transpose(0, 2, 3, 1, 4))


def to_vectorized_v(rows, x):
    """[blocks, block, Hk, D] rows -> [blocks, Hk, block / x, D, x]."""
    n, bs, hk, d = rows.shape
    return np.ascontiguousarray(rows.reshape(n, bs // x, x, hk, d).transpose(0, 3, 1, 4, 2))


def to_dim_major_v(rows):
    """[blocks, block, Hk, D] rows -> [blocks, Hk, D, block]."""
    return np.ascontiguousarray(rows.transpose(0, 2, 3, 1))


def paged(ctx, hk, d, bs, make=lambda shape: RNG.standard_normal(shape).astype(np.float32), spare=2):
    """Row caches of shuffled blocks, the block table and each sequence's keys and values in order."""
    nblk = [(c + bs - 1) // bs for c in ctx]
    total = sum(nblk) + spare
    order = RNG.permutation(total).astype(np.int32)
    table = np.full((len(ctx), max(nblk) + 1), total + 5, np.int32)  # entries past a sequence: never read
    start = 0
    for b, n in enumerate(nblk):
        table[b, :n] = order[start:start + n]
        start += n
    kr, vr = make((total, bs, hk, d)), make((total, bs, hk, d))

    def in_order(cache, b):
        return np.stack([cache[table[b, j // bs], j % bs] for j in range(ctx[b])])
    return kr, vr, table, np.array(ctx, np.int32), in_order


def value_cache(vr, layout, x):
    return to_dim_major_v(vr) if layout == "dim_major" else to_vectorized_v(vr, x)


def reference(q, qlen, kv_of, ctx, scale, window, sinks):
    outs = []
    for b in range(len(ctx)):
        k, v = kv_of(b)
        o, _ = attention(q[b * qlen:(b + 1) * qlen], k, v, scale, True, window, sinks)
        outs.append(o)
    return np.concatenate(outs)


CASES = [
    # ctx, qlen, hq, hk, d, block, sliding_window
    ([7, 33, 16], 1, 8, 2, 16, 16, 0),      # decode, GQA, a partial last block
    ([40, 9], 4, 8, 1, 16, 16, 0),          # MTP: 4 queries per sequence, causal among them
    ([70, 5], 2, 64, 8, 64, 16, 24),        # GPT-OSS's heads with its sliding layer (window 24 here)
    ([130], 3, 4, 4, 32, 64, 50),           # block 64, a window spanning blocks
    ([3, 1], 1, 2, 1, 8, 8, 0),             # a context of one key
]


@pytest.mark.parametrize("v_layout", ["dim_major", "vectorized"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_pa_decode_gluon_against_reference(case, v_layout):
    ctx, qlen, hq, hk, d, bs, window = CASES[case]
    x = 4  # 16 bytes of float32
    kr, vr, table, used, in_order = paged(ctx, hk, d, bs)
    q = RNG.standard_normal((len(ctx) * qlen, hq, d)).astype(np.float32)
    sinks = RNG.standard_normal(hq).astype(np.float32)
    out = np.full(q.shape, np.nan, np.float32)  # poisoned: every element must be written
    scale = d ** -0.5
    res = aiter_compat.pa_decode_gluon(out, q, to_vectorized_k(kr, x), value_cache(vr, v_layout, x), used, table,
                                       scale, qlen, 4, sinks=sinks, sliding_window=window)
    assert res is None  # AITer's function writes output and returns nothing
    want = reference(q, qlen, lambda b: (in_order(kr, b), in_order(vr, b)), ctx, scale,
                     (window - 1, 0) if window else (-1, -1), sinks)
    assert np.abs(out - want).max() < 2e-5
    route = {r["op"]: r for r in aiter_compat.routes()}["pa_decode_gluon"]
    assert route["route"] == "fallback (cpu)", route


def test_the_last_query_of_a_window_sees_exactly_the_window():
    # sliding_window counts the query's own key: window W sees keys [p - W + 1, p], as AITer's
    # kernel masks (key j valid when j >= context - W for the last query).
    ctx, hk, d, bs = [12], 1, 8, 8
    kr, vr, table, used, in_order = paged(ctx, hk, d, bs)
    q = RNG.standard_normal((1, 1, d)).astype(np.float32)
    out = np.zeros_like(q)
    aiter_compat.pa_decode_gluon(out, q, to_vectorized_k(kr, 4), to_dim_major_v(vr), used, table, 1.0, 1, 1,
                                 sliding_window=3)
    k, v = in_order(kr, 0)[-3:], in_order(vr, 0)[-3:]
    want, _ = attention(q, k, v, 1.0, False)
    assert np.abs(out - want).max() < 2e-5


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e4m3fnuz"])
def test_pa_decode_gluon_over_an_fp8_cache_with_per_tensor_scales(fmt):
    ctx, qlen, hq, hk, d, bs, x = [20, 45], 2, 8, 2, 32, 16, 16  # 16 bytes of fp8
    kr, vr, table, used, in_order = paged(ctx, hk, d, bs, make=lambda shape: random_codes(shape, fmt))
    qbits = bf16_bits(RNG.standard_normal((len(ctx) * qlen, hq, d)))
    out_bits = np.zeros(qbits.shape, np.uint16)
    sinks = RNG.standard_normal(hq).astype(np.float32)
    ks, vs = np.array([0.7], np.float32), np.array([1.6], np.float32)
    aiter_compat.pa_decode_gluon(RawArray(out_bits, "bfloat16"), RawArray(qbits, "bfloat16"),
                                 RawArray(to_vectorized_k(kr, x), fmt), RawArray(to_vectorized_v(vr, x), fmt), used,
                                 table, 0.2, qlen, 1, key_scale=ks, value_scale=vs, sinks=sinks, sliding_window=30)
    want = reference(bf16_values(qbits).astype(np.float64), qlen,
                     lambda b: (decode(in_order(kr, b), fmt) * ks[0], decode(in_order(vr, b), fmt) * vs[0]), ctx, 0.2,
                     (29, 0), sinks)
    np.testing.assert_allclose(bf16_values(out_bits), want, rtol=2.0 ** -8, atol=1e-6)
    assert np.abs(bf16_values(out_bits)).max() > 0.05


def test_scales_over_a_16_bit_cache_are_ignored_as_aiter_ignores_them():
    ctx, hk, d, bs = [9], 1, 8, 8
    kr, vr, table, used, in_order = paged(ctx, hk, d, bs)
    q = RNG.standard_normal((1, 2, d)).astype(np.float32)
    out = np.zeros_like(q)
    aiter_compat.pa_decode_gluon(out, q, to_vectorized_k(kr, 4), to_dim_major_v(vr), used, table, 0.3, 1, 1,
                                 key_scale=np.array([5.0], np.float32), value_scale=np.array([5.0], np.float32))
    want, _ = attention(q, in_order(kr, 0), in_order(vr, 0), 0.3, True)
    assert np.abs(out - want).max() < 2e-5


def gluon_args(**over):
    ctx, hk, d, bs = [9, 4], 2, 8, 8
    kr, vr, table, used, _ = paged(ctx, hk, d, bs)
    args = dict(output=np.zeros((2, 4, d), np.float32), query=RNG.standard_normal((2, 4, d)).astype(np.float32),
                key_cache=to_vectorized_k(kr, 4), value_cache=to_dim_major_v(vr), context_lengths=used,
                block_tables=table, softmax_scale=0.3, query_length=1, max_context_partition_num=1)
    args.update(over)
    return args


def test_per_token_scales_are_refused_with_their_reason():
    fmt = "float8_e4m3fn"
    kr, vr, table, used, _ = paged([9], 1, 16, 16, make=lambda shape: random_codes(shape, fmt))
    per_token = np.ones((kr.shape[0], 1, 16, 1), np.float32)  # [blocks, Hk, block, 1]
    with pytest.raises(aiter_compat.AiterCompatError) as e:
        aiter_compat.pa_decode_gluon(RawArray(np.zeros((1, 2, 16), np.uint16), "bfloat16"),
                                     RawArray(bf16_bits(np.ones((1, 2, 16))), "bfloat16"),
                                     RawArray(to_vectorized_k(kr, 16), fmt), RawArray(to_dim_major_v(vr), fmt), used,
                                     table, 0.3, 1, 1, key_scale=per_token, value_scale=per_token)
    assert "fp8 scales per token (key_scale, value_scale or query_scale" in str(e.value)


def test_alibi_is_refused_by_its_name():
    with pytest.raises(aiter_compat.AiterCompatError) as e:
        aiter_compat.pa_decode_gluon(**gluon_args(alibi_slopes=np.ones(4, np.float32)))
    assert "alibi_slopes is not supported" in str(e.value)


@pytest.mark.parametrize("over, argument, needed", [
    (lambda a: dict(query_length=3), "query_length", "divides query's 2 tokens"),
    (lambda a: dict(sliding_window=-2), "sliding_window", "0 (off)"),
    (lambda a: dict(key_cache=a["key_cache"].reshape(a["key_cache"].shape[0], 2, 8, 8)), "key_cache", "5"),
    (lambda a: dict(value_cache=a["value_cache"][:, :, :4]), "output", "value_cache's head_dim"),
    (lambda a: dict(value_cache=to_vectorized_v(np.zeros((a["key_cache"].shape[0], 4, 2, 8), np.float32), 4)),
     "value_cache", "key_cache's 8"),
    (lambda a: dict(context_lengths=np.array([9, 40], np.int32)), "context_lengths[1]", "at most"),
    (lambda a: dict(block_tables=np.full_like(a["block_tables"], 99)), "block_tables[0, 0]", "a block index"),
    (lambda a: dict(output=np.zeros((2, 4, 8), np.float64)), "output", "float32"),
])
def test_bad_gluon_inputs_are_named(over, argument, needed):
    args = gluon_args()
    args.update(over(args))
    with pytest.raises(aiter_compat.AiterCompatError) as e:
        aiter_compat.pa_decode_gluon(**args)
    assert e.value.argument == argument, str(e.value)
    assert needed in e.value.needed, str(e.value)


def test_batch_prefill_over_5d_vectorized_caches():
    # mha_batch_prefill_func's vectorized layout: the same 5-D pair, read by the same addressing.
    ctx, q_lens, hq, hk, d, bs, x = [13, 8], [3, 8], 4, 2, 8, 4, 4
    kr, vr, table, used, in_order = paged(ctx, hk, d, bs)
    indptr = np.concatenate([[0], np.cumsum([(c + bs - 1) // bs for c in ctx])]).astype(np.int32)
    indices = np.concatenate([table[b, :(c + bs - 1) // bs] for b, c in enumerate(ctx)]).astype(np.int32)
    last = np.array([c - ((c + bs - 1) // bs - 1) * bs for c in ctx], np.int32)
    cu_q = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    q = RNG.standard_normal((cu_q[-1], hq, d)).astype(np.float32)
    sinks = RNG.standard_normal(hq).astype(np.float32)
    out = aiter_compat.mha_batch_prefill_func(q, to_vectorized_k(kr, x), to_vectorized_v(vr, x), cu_q, indptr, indices,
                                              max(q_lens), max(ctx), causal=True, window_size=(5, -1),
                                              kv_last_page_lens=last, sink_ptr=sinks)
    for b in range(2):
        qs = slice(cu_q[b], cu_q[b + 1])
        want, _ = attention(q[qs], in_order(kr, b), in_order(vr, b), d ** -0.5, True, (5, -1), sinks)
        assert np.abs(np.asarray(out)[qs] - want).max() < 2e-5


def test_unified_attention_with_shuffled_kv_cache_on_cpu():
    ctx, q_lens, hq, hk, d, bs, x = [20, 6], [2, 1], 8, 2, 16, 8, 4
    kr, vr, table, used, in_order = paged(ctx, hk, d, bs)
    cu_q = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    q = RNG.standard_normal((cu_q[-1], hq, d)).astype(np.float32)
    sinks = RNG.standard_normal(hq).astype(np.float32)
    out = np.full_like(q, np.nan)
    aiter_compat.unified_attention(q, to_vectorized_k(kr, x), to_vectorized_v(vr, x), out, cu_q, 2, used, 20, 0.25,
                                   True, (9, 0), table, 0.0, None, None, None, sinks=sinks, shuffled_kv_cache=True)
    for b in range(2):
        qs = slice(cu_q[b], cu_q[b + 1])
        want, _ = attention(q[qs], in_order(kr, b), in_order(vr, b), 0.25, True, (9, 0), sinks)
        assert np.abs(out[qs] - want).max() < 2e-5


def test_shuffled_kv_cache_with_4d_caches_is_a_callers_mistake():
    kr, vr, table, used, _ = paged([5], 2, 8, 8)
    q = np.zeros((1, 4, 8), np.float32)
    with pytest.raises(aiter_compat.AiterCompatError) as e:
        aiter_compat.unified_attention(q, kr, vr, np.zeros_like(q), np.array([0, 1], np.int32), 1, used, 5, 0.25, True,
                                       (-1, -1), table, 0.0, None, None, None, shuffled_kv_cache=True)
    assert e.value.argument == "k"
    assert "shuffled_kv_cache=True" in e.value.found
