"""fp8 e4m3 KV caches (and fp8 queries and outputs) on the GPU kernels, against a float64
reference computed here from the codes' values, within AITer's fp8 tolerances (atol and rtol
1.5e-1) or, where the output is 16-bit, the 16-bit tolerances the rest of the suite uses.

The grid is written from the parameter lists of AITer's unified_attention test (its fp8 rows:
bf16 q over an fp8 cache with k/v descales; fp8 q and cache with q/k/v descales into bf16; the
same into fp8 with an output_scale; its head pairs, head sizes, block sizes, sliding window and
soft cap), not copied from it; both e4m3 formats (OCP's e4m3fn and gfx942's e4m3fnuz). Then the
fast kernels by name (each family forced on the same call), split-KV decode, per sequence and
KV head descales, NaN codes in the cache, and the route naming the fp8 family."""
import itertools
import math
import zlib

import pytest

import aiter_compat

torch = pytest.importorskip("torch")
DEV = "cuda"
FP8 = {"e4m3fn": torch.float8_e4m3fn, "e4m3fnuz": torch.float8_e4m3fnuz}

SEQ_LENS = [[(1, 1328), (5, 18), (129, 463)], [(1, 523), (1, 37), (1, 2011)]]
HEADS = [(8, 8), (8, 1)]
HEAD_SIZES = [64, 128, 256]
BLOCK_SIZES = [16, 64]
WINDOWS = [None, 256]
SOFT_CAPS = [0.0, 50.0]
# (q, cache, out, q_descale, kv descales, output_scale) as AITer's fp8 rows give them; "fp8" is
# the format under test.
DTYPES = [("bf16", "fp8", "bf16", False, True, False), ("fp8", "fp8", "bf16", True, True, False),
          ("fp8", "fp8", "fp8", True, True, True), ("f16", "fp8", "f16", False, True, False)]
GRID = [g for g in itertools.product(SEQ_LENS, HEADS, HEAD_SIZES, BLOCK_SIZES, WINDOWS, SOFT_CAPS, DTYPES, FP8)
        # e4m3fnuz on a part of the grid: its decode differs from e4m3fn's in two constants and a
        # NaN mask, checked on every code on the host; here on every kernel shape, without the cap.
        if g[7] == "e4m3fn" or g[5] == 0.0]
NUM_BLOCKS = 2048


def as_torch(name, fmt):
    return {"bf16": torch.bfloat16, "f16": torch.float16, "fp8": FP8[fmt]}[name]


def reference(q, kc, vc, table, q_lens, k_lens, scale, window, cap, sinks, qd, kd, vd, out_scale):
    """float64 from the codes' values; descales as AITer's reference applies them (q times
    q_descale, each cache times its descale; here per sequence and KV head where given so), the
    output divided by output_scale."""
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    hq, hk, block = q.shape[1], kc.shape[2], kc.shape[1]
    start = 0
    for b, (ql, kl) in enumerate(zip(q_lens, k_lens)):
        blocks = table[b, : (kl + block - 1) // block].long()
        kdb = kd[b].double() if kd.dim() == 2 else kd.double().expand(hk)
        vdb = vd[b].double() if vd.dim() == 2 else vd.double().expand(hk)
        k = (kc[blocks].reshape(-1, hk, kc.shape[3])[:kl].double() * kdb[:, None]).repeat_interleave(hq // hk, dim=1)
        v = (vc[blocks].reshape(-1, hk, vc.shape[3])[:kl].double() * vdb[:, None]).repeat_interleave(hq // hk, dim=1)
        qs = q[start: start + ql].double() * qd.double()
        s = torch.einsum("thd,khd->htk", qs, k) * scale
        if cap > 0:
            s = cap * torch.tanh(s / cap)
        pos = torch.arange(ql, device=q.device)[:, None] + kl - ql
        j = torch.arange(kl, device=q.device)[None, :]
        visible = j <= pos
        if window:
            visible &= j > pos - window
        s = s.masked_fill(~visible[None], float("-inf"))
        s = torch.cat([s, sinks.double()[:, None, None].expand(hq, ql, 1)], dim=2)
        p = torch.softmax(s, dim=2)[..., :kl]
        out[start: start + ql] = torch.einsum("htk,khd->thd", p, v)
        start += ql
    return out / out_scale.double()


def uniform(lo, hi, *shape):
    return (torch.rand(*shape, device=DEV) * (hi - lo) + lo).float()


def make_call(seq_lens, heads, d, block, window, cap, dtypes, fmt, per_head_descales=False):
    hq, hk = heads
    qn, kvn, on, use_qd, use_kvd, use_os = dtypes
    q_lens, k_lens = [s[0] for s in seq_lens], [s[1] for s in seq_lens]
    per_seq = max((k + block - 1) // block for k in k_lens)
    q = torch.randn(sum(q_lens), hq, d, device=DEV).to(as_torch(qn, fmt))
    kc = torch.randn(NUM_BLOCKS, block, hk, d, device=DEV).to(as_torch(kvn, fmt))
    vc = torch.randn(NUM_BLOCKS, block, hk, d, device=DEV).to(as_torch(kvn, fmt))
    table = torch.randint(0, NUM_BLOCKS, (len(seq_lens), per_seq), dtype=torch.int32, device=DEV)
    cu_q = torch.tensor([0] + list(itertools.accumulate(q_lens)), dtype=torch.int32, device=DEV)
    used = torch.tensor(k_lens, dtype=torch.int32, device=DEV)
    sinks = torch.randn(hq, dtype=torch.float32, device=DEV)
    # AITer's test draws its descales from [1e-4, 1) and its output_scale as 1 / that.
    qd = uniform(1e-4, 1.0, 1) if use_qd else None
    shape = (len(seq_lens), hk) if per_head_descales else (1,)
    kd = uniform(1e-4, 1.0, *shape) if use_kvd else None
    vd = uniform(1e-4, 1.0, *shape) if use_kvd else None
    os_ = 1.0 / uniform(1e-4, 1.0, 1) if use_os else None
    out = torch.full((sum(q_lens), hq, d), float("nan"), device=DEV).to(as_torch(on, fmt))
    scale = 1.0 / math.sqrt(d)
    win = (window - 1, 0) if window else (-1, -1)
    call = dict(q=q, k=kc, v=vc, out=out, cu_seqlens_q=cu_q, max_seqlen_q=max(q_lens), seqused_k=used,
                max_seqlen_k=max(k_lens), softmax_scale=scale, causal=True, window_size=win, block_table=table,
                softcap=cap, q_descale=qd, k_descale=kd, v_descale=vd, output_scale=os_, sinks=sinks)
    one = torch.ones(1, device=DEV)
    want = reference(q, kc, vc, table, q_lens, k_lens, scale, window, cap, sinks, qd if qd is not None else one,
                     kd if kd is not None else one, vd if vd is not None else one, os_ if os_ is not None else one)
    return call, want


def tolerances(dtypes):
    qn, kvn, on = dtypes[:3]
    if on == "fp8":
        return 1.5e-1, 1.5e-1  # AITer's fp8 tolerances: an e4m3 output is 3 mantissa bits
    # A 16-bit output of exact fp8 inputs: the 16-bit kernels' own error (P rounded to the tile type).
    return (1.5e-2, 1e-2) if on == "bf16" else (1.5e-2, 1e-2)


@pytest.mark.parametrize("seq_lens,heads,head_size,block_size,window,cap,dtypes,fmt", GRID)
def test_unified_attention_fp8_grid(seq_lens, heads, head_size, block_size, window, cap, dtypes, fmt):
    torch.manual_seed(zlib.crc32(repr((seq_lens, heads, head_size, block_size, window, cap, dtypes, fmt)).encode()))
    call, want = make_call(seq_lens, heads, head_size, block_size, window, cap, dtypes, fmt)
    aiter_compat.unified_attention(**call)
    atol, rtol = tolerances(dtypes)
    torch.testing.assert_close(call["out"].double(), want, atol=atol, rtol=rtol)


@pytest.mark.parametrize("fmt", list(FP8))
@pytest.mark.parametrize("family", ["tiled_keys", "tiled_wgmma", "tiled_rows", "decode", "generic"])
@pytest.mark.parametrize("dtypes", DTYPES[:3])
def test_each_fast_family_by_name(family, dtypes, fmt):
    """Each family forced on calls it takes (decode shapes for the keys and decode kernels,
    extend for the row kernels; the generic one takes both), per sequence and KV head descales."""
    decode = family in ("tiled_keys", "decode")
    seq_lens = [(1, 4100), (1, 37), (1, 700)] if decode else [(200, 900), (17, 17), (65, 300)]
    for d in (64, 128):
        torch.manual_seed(zlib.crc32(repr((family, dtypes, fmt, d)).encode()))
        call, want = make_call(seq_lens, (64, 8), d, 16, 128 if d == 64 else None, 0.0, dtypes, fmt,
                               per_head_descales=True)
        aiter_compat._force_kernel_row(family)
        try:
            aiter_compat.unified_attention(**call)
        finally:
            aiter_compat._force_kernel_row(None)
        atol, rtol = tolerances(dtypes)
        torch.testing.assert_close(call["out"].double(), want, atol=atol, rtol=rtol, msg=lambda m: f"{family} d{d}: {m}")


@pytest.mark.parametrize("fmt", list(FP8))
def test_paged_decode_fp8_split_kv_against_the_cpu_route(fmt):
    """paged_attention_decode over an fp8 cache with vLLM's scalar scales: long contexts split
    across blocks (the merge enters the sink once), against the CPU route on the same codes."""
    hq, hk, d, block = 64, 8, 64, 16
    ctx = [32768, 5, 4000]
    blocks = [(c + block - 1) // block for c in ctx]
    kc = torch.randn(sum(blocks), block, hk, d).to(FP8[fmt])
    vc = torch.randn(sum(blocks), block, hk, d).to(FP8[fmt])
    table = torch.zeros(len(ctx), max(blocks), dtype=torch.int32)
    at = 0
    for b, n in enumerate(blocks):
        table[b, :n] = torch.arange(at, at + n)
        at += n
    used = torch.tensor(ctx, dtype=torch.int32)
    q = torch.randn(len(ctx), hq, d, dtype=torch.bfloat16)
    sinks = torch.randn(hq)
    kd, vd = torch.tensor([0.7]), torch.tensor([1.3])
    kw = dict(softmax_scale=0.125, window_size=(-1, -1), k_descale=kd, v_descale=vd)
    want = aiter_compat.paged_attention_decode(q, kc, vc, table, used, sinks=sinks, **kw)
    g = lambda t: t.to(DEV)
    got = aiter_compat.paged_attention_decode(g(q), g(kc), g(vc), g(table), g(used), sinks=g(sinks),
                                              softmax_scale=0.125, window_size=(-1, -1), k_descale=g(kd), v_descale=g(vd))
    torch.cuda.synchronize()
    assert got.dtype == torch.bfloat16
    err = (got.float().cpu() - want.float()).abs() / want.float().abs().clamp(min=1)
    assert float(err.max()) <= 1e-2, f"max error {float(err.max())}"
    route = [r for r in aiter_compat.routes() if r["route"].startswith("fallback (gpu)") and r["op"] == "paged_attention_decode"]
    assert route and route[-1]["kernel"] in ("tiled_keys", "decode"), route


@pytest.mark.parametrize("fmt", list(FP8))
@pytest.mark.parametrize("family", ["tiled_keys", "tiled_rows", "decode", "generic"])
def test_a_nan_code_in_the_cache_is_nan_in_the_output(family, fmt):
    """A NaN code among the keys a query sees makes that query's output NaN (as AITer's kernels,
    which convert codes to floats, give it); queries that do not see it stay finite."""
    torch.manual_seed(7)
    hq, hk, d, block = 8, 1, 64, 16
    decode = family in ("tiled_keys", "decode")
    q_lens = [1, 1] if decode else [40, 40]
    kc = torch.randn(8, block, hk, d).to(FP8[fmt])
    vc = torch.randn(8, block, hk, d).to(FP8[fmt])
    kc.view(torch.uint8)[4, 3, 0, 5] = 0x7F if fmt == "e4m3fn" else 0x80  # NaN: sequence 1's key 3 (blocks 4..7)
    table = torch.tensor([[0, 1, 2, 3], [4, 5, 6, 7]], dtype=torch.int32)
    used = torch.tensor([50, 50], dtype=torch.int32)
    cu_q = torch.tensor([0] + list(itertools.accumulate(q_lens)), dtype=torch.int32)
    q = torch.randn(sum(q_lens), hq, d, dtype=torch.bfloat16)
    out = torch.empty(sum(q_lens), hq, d, dtype=torch.bfloat16, device=DEV)
    g = lambda t: t.to(DEV)
    aiter_compat._force_kernel_row(family)
    try:
        aiter_compat.unified_attention(g(q), g(kc), g(vc), out, g(cu_q), max(q_lens), g(used), 50, 0.125, True, (-1, -1),
                                       g(table), 0.0, None, None, None, sinks=torch.zeros(hq, device=DEV))
    finally:
        aiter_compat._force_kernel_row(None)
    torch.cuda.synchronize()
    first, second = out[: q_lens[0]].float(), out[q_lens[0]:].float()
    assert torch.isfinite(first).all(), "sequence 0 sees no NaN code"
    # Sequence 1: every query whose keys include key 3 (positions from 50 - q_len on: all of them).
    assert torch.isnan(second).all(dim=-1).all(), "every query of sequence 1 sees the NaN key"


@pytest.mark.parametrize("family", ["tiled_keys", "decode", "generic"])
def test_bf16_queries_beyond_f16_range_over_an_fp8_cache(family):
    """The decode tiles over an fp8 cache are f16: bf16 queries larger than f16 holds (65504) are
    divided by a power of two first and the scores multiplied back, so they stay right."""
    torch.manual_seed(11)
    seq_lens = [(1, 4100), (1, 37), (1, 700)]
    call, _ = make_call(seq_lens, (64, 8), 64, 16, None, 0.0, DTYPES[0], "e4m3fn")
    q = (call["q"].float() * 1e5).to(torch.bfloat16)  # |q| up to ~4e5
    assert float(q.float().abs().max()) > 65504
    call.update(q=q, softmax_scale=1e-5, k_descale=None, v_descale=None)
    one = torch.ones(1, device=DEV)
    want = reference(q, call["k"], call["v"], call["block_table"], [1, 1, 1], [4100, 37, 700], 1e-5, None, 0.0,
                     call["sinks"], one, one, one, one)
    aiter_compat._force_kernel_row(family)
    try:
        aiter_compat.unified_attention(**call)
    finally:
        aiter_compat._force_kernel_row(None)
    torch.testing.assert_close(call["out"].double(), want, atol=1.5e-2, rtol=1e-2)
