"""AITer's other cache layouts on the GPU kernels (the generic kernel's split addressing):
pa_decode_gluon's 5-D key cache with either value cache, query_length 1-4 (MTP), sinks, sliding
windows and fp8 caches with per-tensor scales; mha_batch_prefill_func's and unified_attention's
(shuffled_kv_cache) 5-D pair; against a float64 reference with the sink as one more logit,
outputs poisoned with NaN so an unwritten element fails."""
import pytest

import aiter_compat
from conftest import RESULTS
from test_batch_prefill import kernel_of, record, reference

torch = pytest.importorskip("torch")
DEV = "cuda"


def to_vectorized_k(rows, x):
    n, bs, hk, d = rows.shape
    return rows.reshape(n, bs, hk, d // x, x).permute(0, 2, 3, 1, 4).contiguous()


def to_vectorized_v(rows, x):
    n, bs, hk, d = rows.shape
    return rows.reshape(n, bs // x, x, hk, d).permute(0, 3, 1, 4, 2).contiguous()


def to_dim_major_v(rows):
    return rows.permute(0, 2, 3, 1).contiguous()


def paged(ctx, hk, d, bs, dtype):
    nblk = [(c + bs - 1) // bs for c in ctx]
    total = sum(nblk) + 3
    order = torch.randperm(total).to(torch.int32)
    table = torch.full((len(ctx), max(nblk) + 2), total + 7, dtype=torch.int32)  # never read past a sequence
    start = 0
    for b, n in enumerate(nblk):
        table[b, :n] = order[start:start + n]
        start += n
    kr = torch.randn(total, bs, hk, d).to(dtype)
    vr = torch.randn(total, bs, hk, d).to(dtype)

    def in_order(cache, b):
        idx = torch.arange(ctx[b])
        return cache[table[b, idx // bs].long(), idx % bs]
    return kr, vr, table, torch.tensor(ctx, dtype=torch.int32), in_order


GLUON = [
    # name, ctx, qlen, hq, hk, d, block, window, bound
    ("gpt-oss decode block 16", [900, 33, 4000], 1, 64, 8, 64, 16, 0, 1e-2),
    ("gpt-oss decode sliding 128 block 16", [900, 33, 4000], 1, 64, 8, 64, 16, 128, 1e-2),
    ("mtp 4 d128 block 64", [700, 64], 4, 16, 2, 128, 64, 0, 1e-2),
    ("mtp 2 sliding 100 block 64", [513, 65], 2, 8, 1, 128, 64, 100, 1e-2),
    ("decode block 1024", [2100], 1, 8, 8, 64, 1024, 0, 1e-2),
]


@pytest.mark.parametrize("v_layout", ["dim_major", "vectorized"])
@pytest.mark.parametrize("case", GLUON, ids=[c[0] for c in GLUON])
def test_pa_decode_gluon_layouts(case, v_layout):
    name, ctx, qlen, hq, hk, d, bs, window, bound = case
    x = 8  # 16 bytes of bf16
    kr, vr, table, used, in_order = paged(ctx, hk, d, bs, torch.bfloat16)
    q = torch.randn(len(ctx) * qlen, hq, d).to(torch.bfloat16)
    sinks = torch.randn(hq, dtype=torch.float32)
    vc = to_dim_major_v(vr) if v_layout == "dim_major" else to_vectorized_v(vr, x)
    out = torch.full((q.shape[0], hq, d), float("nan"), dtype=torch.bfloat16, device=DEV)
    scale = d ** -0.5
    aiter_compat.pa_decode_gluon(out, q.to(DEV), to_vectorized_k(kr, x).to(DEV), vc.to(DEV), used.to(DEV),
                                 table.to(DEV), scale, qlen, 8, sinks=sinks.to(DEV), sliding_window=window)
    torch.cuda.synchronize()
    win = (window - 1, 0) if window else (-1, -1)
    for b in range(len(ctx)):
        rows = slice(b * qlen, (b + 1) * qlen)
        want, _ = reference(q[rows], in_order(kr, b), in_order(vr, b), scale, True, win, sinks)
        record(f"pa_decode_gluon {name} v {v_layout} seq {b}", out[rows], want, bound, kernel_of("pa_decode_gluon"))


@pytest.mark.parametrize("fmt", ["float8_e4m3fn"])
def test_pa_decode_gluon_fp8_cache_per_tensor_scales(fmt):
    ctx, qlen, hq, hk, d, bs, x = [800, 45], 2, 64, 8, 64, 16, 16  # 16 bytes of fp8
    kr, vr, table, used, in_order = paged(ctx, hk, d, bs, torch.float32)
    k8, v8 = kr.to(getattr(torch, fmt)), vr.to(getattr(torch, fmt))
    q = torch.randn(len(ctx) * qlen, hq, d).to(torch.bfloat16)
    sinks = torch.randn(hq, dtype=torch.float32)
    ks, vs = torch.tensor([0.7]), torch.tensor([1.6])
    out = torch.full((q.shape[0], hq, d), float("nan"), dtype=torch.bfloat16, device=DEV)
    aiter_compat.pa_decode_gluon(out, q.to(DEV), to_vectorized_k(k8, x).to(DEV), to_vectorized_v(v8, x).to(DEV),
                                 used.to(DEV), table.to(DEV), 0.125, qlen, 4, key_scale=ks.to(DEV),
                                 value_scale=vs.to(DEV), sinks=sinks.to(DEV), sliding_window=128)
    torch.cuda.synchronize()
    for b in range(len(ctx)):
        rows = slice(b * qlen, (b + 1) * qlen)
        k = in_order(k8, b).float() * ks[0]
        v = in_order(v8, b).float() * vs[0]
        want, _ = reference(q[rows], k, v, 0.125, True, (127, 0), sinks)
        record(f"pa_decode_gluon fp8 {fmt} seq {b}", out[rows], want, 1e-2, kernel_of("pa_decode_gluon"))


def test_batch_prefill_and_shuffled_unified_attention_over_5d_caches():
    ctx, q_lens, hq, hk, d, bs, x = [700, 200], [300, 1], 64, 8, 64, 16, 8
    kr, vr, table, used, in_order = paged(ctx, hk, d, bs, torch.bfloat16)
    nblk = [(c + bs - 1) // bs for c in ctx]
    indptr = torch.tensor([0, nblk[0], nblk[0] + nblk[1]], dtype=torch.int32)
    indices = torch.cat([table[b, :n] for b, n in enumerate(nblk)]).contiguous()
    last = torch.tensor([c - (n - 1) * bs for c, n in zip(ctx, nblk)], dtype=torch.int32)
    cu_q = torch.tensor([0, q_lens[0], sum(q_lens)], dtype=torch.int32)
    q = torch.randn(sum(q_lens), hq, d).to(torch.bfloat16)
    sinks = torch.randn(hq, dtype=torch.float32)
    k5, v5 = to_vectorized_k(kr, x).to(DEV), to_vectorized_v(vr, x).to(DEV)
    out = aiter_compat.mha_batch_prefill_func(q.to(DEV), k5, v5, cu_q.to(DEV), indptr.to(DEV), indices.to(DEV),
                                              max(q_lens), max(ctx), causal=True, window_size=(127, -1),
                                              kv_last_page_lens=last.to(DEV), sink_ptr=sinks.to(DEV))
    out2 = torch.full((sum(q_lens), hq, d), float("nan"), dtype=torch.bfloat16, device=DEV)
    aiter_compat.unified_attention(q.to(DEV), k5, v5, out2, cu_q.to(DEV), max(q_lens), used.to(DEV), max(ctx), d ** -0.5,
                                   True, (127, 0), table.to(DEV), 0.0, None, None, None, sinks=sinks.to(DEV),
                                   shuffled_kv_cache=True)
    torch.cuda.synchronize()
    for b in range(2):
        rows = slice(int(cu_q[b]), int(cu_q[b + 1]))
        want, _ = reference(q[rows], in_order(kr, b), in_order(vr, b), d ** -0.5, True, (127, -1), sinks)
        record(f"mha_batch_prefill_func 5-D seq {b}", out[rows], want, 1e-2, kernel_of("mha_batch_prefill_func"))
        record(f"unified_attention shuffled seq {b}", out2[rows], want, 1e-2, kernel_of("unified_attention"))
