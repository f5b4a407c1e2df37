"""pa_decode_bf16_asm (AITer's gfx1250 paged decode, ATOM's decode with sinks) on CPU tensors:
Q [batch, mtp + 1, kv_heads, gqa, head_dim], the 5-D caches K [pages, Hk, D / x, page, x] and
V [pages, Hk, page / x, D, x] behind a CSR page table with context_lens, the MTP border (query i
of a sequence sees its first context - mtp + i keys), sinks, fp8 Q/K/V with per-tensor scales and
bfloat16 out; and AITer's persistent schedule: rows work_info splits go to split_o / split_lse, and
a reduce written here from pa_reduce_v1's definition must give the same out back. Against the
independent float64 reference; bad inputs named."""
import numpy as np
import pytest

import aiter_compat
from attention_reference import attention
from conftest import RNG
from dlpack_arrays import RawArray, bf16_values
from test_fp8_cpu import decode, random_codes
from test_pa_decode_gluon_cpu import paged, to_vectorized_k, to_vectorized_v


def csr(table, ctx, page):
    """kv_indptr and kv_indices of a [batch, max_pages] table."""
    pages = [(c + page - 1) // page for c in ctx]
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    indices = np.concatenate([table[b, :n] for b, n in enumerate(pages)] + [np.zeros(0, np.int32)]).astype(np.int32)
    return indptr, indices


def reference(q5, kv_of, ctx, scale, sinks):
    """Q [B, L, Hk, G, D] -> out [B, L, Hk, G, Dv]: query i of sequence b sees ctx[b] - (L-1) + i keys."""
    b_, l_, hk, g, d = q5.shape
    out = []
    for b in range(b_):
        k, v = kv_of(b)
        o, _ = attention(q5[b].reshape(l_, hk * g, d), k, v, scale, True, (-1, -1), sinks)
        out.append(o.reshape(l_, hk, g, -1))
    return np.stack(out)


def schedule(ctx, indptr, qlen, hk, gqa, pages_per_piece):
    """A persistent schedule shaped as AITer's: for each sequence and KV head, its pages in pieces
    of pages_per_piece; a sequence in one piece goes to out (partial row -1), the pieces of a
    longer one to partial rows shared by the KV heads (each its own heads)."""
    rows, work, next_row = [], [], 0
    for b, c in enumerate(ctx):
        first, last = int(indptr[b]), int(indptr[b + 1])
        starts = list(range(first, last, pages_per_piece)) or [first]
        locs = [-1] if len(starts) == 1 else list(range(next_row, next_row + qlen * len(starts), qlen))
        next_row += 0 if len(starts) == 1 else qlen * len(starts)
        for kh in range(hk):
            for s, loc in zip(starts, locs):
                heads = ((kh + 1) * gqa) << 16 | kh * gqa
                work.append([b, loc, b * qlen, (b + 1) * qlen, s, min(s + pages_per_piece, last), 0, heads])
        if locs != [-1]:
            rows.append((b * qlen, (b + 1) * qlen, locs))
    return np.array(work, np.int32).reshape(-1, 8), rows, max(next_row, 1)


def reduce(out5, split_o, split_lse, groups):
    """pa_reduce_v1's definition: out rows of a split group = the partials weighted by exp(lse - logsumexp(lse))."""
    flat = out5.reshape(-1, split_o.shape[2], split_o.shape[3])
    for q0, q1, locs in groups:
        for i in range(q1 - q0):
            lses = np.stack([split_lse[loc + i, 0, :, 0] for loc in locs]).astype(np.float64)
            m = lses.max(axis=0)
            g = m + np.log(np.exp(lses - m).sum(axis=0))
            flat[q0 + i] = sum(split_o[loc + i, 0].astype(np.float64) * np.exp(l - g)[:, None] for loc, l in zip(locs, lses))
    return out5


CASES = [
    # ctx, mtp, hk, gqa, d, page, pages_per_piece
    ([40, 7, 100], 0, 2, 4, 16, 16, 2),   # decode; sequence 2 split in 4 pieces, 1 in one
    ([33, 64], 1, 1, 8, 32, 16, 1),       # MTP 1 (two queries per sequence), ATOM's gqa 8
    ([5, 0, 19], 0, 2, 2, 16, 8, 8),       # a padded sequence with no keys (a CUDA graph's)
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_pa_decode_bf16_asm_against_reference_with_its_schedule(case):
    ctx, mtp, hk, gqa, d, page, per_piece = CASES[case]
    qlen, x = mtp + 1, 4  # 16 bytes of float32
    kr, vr, table, used, in_order = paged([max(c, 1) for c in ctx], hk, d, page)
    indptr, indices = csr(table, ctx, page)
    q5 = RNG.standard_normal((len(ctx), qlen, hk, gqa, d)).astype(np.float32)
    sinks = RNG.standard_normal(hk * gqa).astype(np.float32)
    work, groups, nrows = schedule(ctx, indptr, qlen, hk, gqa, per_piece)
    split_o = np.full((nrows, 1, hk * gqa, d), np.nan, np.float32)  # poisoned: every row a piece owns is written
    split_lse = np.full((nrows, 1, hk * gqa, 1), np.nan, np.float32)
    out = aiter_compat.pa_decode_bf16_asm(q5, to_vectorized_k(kr, x), to_vectorized_v(vr, x), indices,
                                          np.array(ctx, np.int32), d ** -0.5, indptr, gqa=gqa, mtp=mtp,
                                          work_indptr=np.array([0, len(work)], np.int32), work_info=work,
                                          split_o=split_o, split_lse=split_lse, sink=sinks)
    assert out.shape == q5.shape
    want = reference(q5, lambda b: (in_order(kr, b)[:ctx[b]], in_order(vr, b)[:ctx[b]]), ctx, d ** -0.5, sinks)
    assert np.abs(out - want).max() < 2e-5
    owned = sorted({loc + i for _, _, locs in groups for loc in locs for i in range(qlen)})
    assert not np.isnan(split_o[owned]).any() and not np.isnan(split_lse[owned]).any()
    reduced = reduce(np.zeros_like(out), split_o, split_lse, groups)
    for q0, q1, _ in groups:  # the reduce gives the same rows back
        rows = slice(q0, q1)
        np.testing.assert_allclose(reduced.reshape(-1, hk * gqa, d)[rows], want.reshape(-1, hk * gqa, d)[rows],
                                   atol=2e-5)
    route = {r["op"]: r for r in aiter_compat.routes()}["pa_decode_bf16_asm"]
    assert route["route"] == "fallback (cpu)", route


def test_without_a_schedule_every_row_goes_to_out():
    ctx, hk, gqa, d, page = [30, 9], 1, 8, 16, 16
    kr, vr, table, used, in_order = paged(ctx, hk, d, page)
    indptr, indices = csr(table, ctx, page)
    q5 = RNG.standard_normal((2, 1, hk, gqa, d)).astype(np.float32)
    out = np.full(q5.shape, np.nan, np.float32)
    res = aiter_compat.pa_decode_bf16_asm(q5, to_vectorized_k(kr, 4), to_vectorized_v(vr, 4), indices,
                                          np.array(ctx, np.int32), 0.3, indptr, gqa=gqa, out=out)
    assert res is out
    want = reference(q5, lambda b: (in_order(kr, b), in_order(vr, b)), ctx, 0.3, None)
    assert np.abs(out - want).max() < 2e-5


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e4m3fnuz"])
def test_fp8_q_k_v_with_per_tensor_scales_into_bfloat16(fmt):
    # AITer's contract: fp8 Q, K and V, one-element scales (the scores times query_scale x
    # key_scale x softmax_scale, the output times value_scale), out in bfloat16.
    ctx, mtp, hk, gqa, d, page, x = [50, 17], 1, 2, 8, 64, 32, 16  # 16 bytes of fp8
    kr, vr, table, used, in_order = paged(ctx, hk, d, page, make=lambda shape: random_codes(shape, fmt))
    indptr, indices = csr(table, ctx, page)
    q5 = random_codes((2, mtp + 1, hk, gqa, d), fmt)
    qs, ks, vs = (np.array([s], np.float32) for s in (0.9, 0.6, 1.7))
    sinks = RNG.standard_normal(hk * gqa).astype(np.float32)
    out_bits = np.zeros(q5.shape, np.uint16)
    aiter_compat.pa_decode_bf16_asm(RawArray(q5, fmt), RawArray(to_vectorized_k(kr, x), fmt),
                                    RawArray(to_vectorized_v(vr, x), fmt), indices, np.array(ctx, np.int32), 0.125,
                                    indptr, gqa=gqa, mtp=mtp, query_scale=qs, key_scale=ks, value_scale=vs, sink=sinks,
                                    out=RawArray(out_bits, "bfloat16"))
    got = bf16_values(out_bits)
    want = reference(decode(q5, fmt) * qs[0],
                     lambda b: (decode(in_order(kr, b), fmt) * ks[0], decode(in_order(vr, b), fmt) * vs[0]),
                     ctx, 0.125, sinks)
    np.testing.assert_allclose(got, want, rtol=2.0 ** -8, atol=1e-6)
    assert np.abs(got).max() > 0.05


def asm_args(**over):
    ctx, hk, gqa, d, page = [9, 20], 2, 2, 8, 8
    kr, vr, table, used, _ = paged(ctx, hk, d, page)
    indptr, indices = csr(table, ctx, page)
    args = dict(Q=RNG.standard_normal((2, 1, hk, gqa, d)).astype(np.float32), K=to_vectorized_k(kr, 4),
                V=to_vectorized_v(vr, 4), kv_indices=indices, context_lens=np.array(ctx, np.int32),
                softmax_scale=0.3, kv_indptr=indptr, gqa=gqa, mtp=0)
    args.update(over)
    return args


def one_piece_schedule(row):
    return dict(work_indptr=np.array([0, 1], np.int32), work_info=np.array([[1, row, 1, 2, 2, 5, 0, 4 << 16]], np.int32),
                split_o=np.zeros((2, 1, 4, 8), np.float32), split_lse=np.zeros((2, 1, 4, 1), np.float32))


@pytest.mark.parametrize("over, argument, needed", [
    (lambda a: dict(mtp=1), "mtp", "Q.shape[1] - 1 = 0"),
    (lambda a: dict(gqa=8), "gqa", "Q.shape[3] = 2"),
    (lambda a: dict(Q=a["Q"].reshape(2, 1, 1, 4, 8), gqa=4), "K", "Q's kv_heads"),
    (lambda a: dict(V=a["V"][..., 0]), "V", "5"),
    (lambda a: dict(context_lens=np.array([9, 25], np.int32)), "context_lens[1]", "in [0, 24]"),
    (lambda a: dict(kv_indices=np.full_like(a["kv_indices"], 99)), "kv_indices[0]", "a block index"),
    (lambda a: dict(Q=np.ascontiguousarray(a["Q"].transpose(0, 1, 3, 2, 4)).transpose(0, 1, 3, 2, 4)), "Q",
     "kv_heads and gqa one stride apart"),
    (lambda a: dict(out=np.zeros((2, 1, 2, 1, 8), np.float32)), "out", "Q's shape"),
    (lambda a: dict(out=np.zeros((2, 1, 2, 2, 4), np.float32)), "out", "V's head_dim"),
    (lambda a: dict(work_info=np.zeros((1, 8), np.int32)), "split_o", "float32"),
    (lambda a: one_piece_schedule(1) | dict(work_info=np.array([[1, 1, 0, 2, 2, 5, 0, 4 << 16]], np.int32)),
     "work_info[0][1]", "rows within split_o's 2"),
    (lambda a: one_piece_schedule(0) | dict(work_info=np.array([[5, 0, 1, 2, 2, 5, 0, 4 << 16]], np.int32)),
     "work_info[0][0]", "a sequence in [0, 2)"),
    (lambda a: one_piece_schedule(0) | dict(work_info=np.array([[1, 0, 1, 2, 2, 5, 0, 9 << 16]], np.int32)),
     "work_info[0][7]", "within the 4 query heads"),
    (lambda a: one_piece_schedule(0) | dict(work_indptr=np.array([0, 3], np.int32)), "work_indptr[-1]", "in [0, 1]"),
    (lambda a: one_piece_schedule(0) | dict(split_lse=np.zeros((3, 1, 4, 1), np.float32)), "split_lse",
     "split_o's 2 rows"),
])
def test_bad_pa_decode_bf16_asm_inputs_are_named(over, argument, needed):
    args = asm_args()
    args.update(over(args))
    with pytest.raises(aiter_compat.AiterCompatError) as e:
        aiter_compat.pa_decode_bf16_asm(**args)
    assert e.value.argument == argument, str(e.value)
    assert needed in e.value.needed, str(e.value)


def test_a_valid_one_piece_schedule_writes_its_rows():
    args = asm_args(**one_piece_schedule(0))
    out = aiter_compat.pa_decode_bf16_asm(**args)
    # sequence 1's only piece starts at its first page: its partial rows are its whole rows
    np.testing.assert_allclose(args["split_o"][0, 0], out[1, 0].reshape(4, 8), atol=1e-6)
    assert np.isfinite(args["split_lse"][0]).all()
    assert (args["split_o"][1] == 0).all() and (args["split_lse"][1] == 0).all()  # a row no piece owns
