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


def csr(table, ctx, bs):
    nblk = [(c + bs - 1) // bs for c in ctx]
    indptr = torch.tensor([0] + [sum(nblk[:i + 1]) for i in range(len(nblk))], dtype=torch.int32)
    indices = torch.cat([table[b, :n] for b, n in enumerate(nblk)]).contiguous()
    return indptr, indices


ASM = [
    # name, ctx, mtp, hk, gqa, d, page, q dtype, bound
    ("atom gfx1250 shape fp8 page 256", [3000, 1, 700, 257], 0, 8, 8, 64, 256, "float8_e4m3fn", 1e-2),
    ("mtp 1 fp8 page 256", [2048, 300], 1, 8, 8, 64, 256, "float8_e4m3fn", 1e-2),
    ("bf16 d128 gqa 4 page 16", [900, 33], 0, 4, 4, 128, 16, "bfloat16", 1e-2),
]


@pytest.mark.parametrize("case", ASM, ids=[c[0] for c in ASM])
def test_pa_decode_bf16_asm_with_its_split_rows(case):
    # Every sequence split into pieces of 2 pages by a schedule shaped as AITer's; the split rows
    # merged as pa_reduce_v1 defines it must give out back, and out itself must be the reference.
    name, ctx, mtp, hk, gqa, d, page, qdt, bound = case
    fp8 = qdt.startswith("float8")
    kvdt = getattr(torch, qdt) if fp8 else torch.bfloat16
    kr, vr, table, used, in_order = paged(ctx, hk, d, page, torch.float32)
    k8, v8 = kr.to(kvdt), vr.to(kvdt)
    x = 16 if fp8 else 8
    indptr, indices = csr(table, ctx, page)
    qlen, hq = mtp + 1, hk * gqa
    q = torch.randn(len(ctx), qlen, hk, gqa, d).to(kvdt)
    sinks = torch.randn(hq, dtype=torch.float32)
    qs, ks, vs = (torch.tensor([s]) for s in (0.8, 0.6, 1.5)) if fp8 else (None, None, None)
    work, groups, row = [], [], 0
    for b in range(len(ctx)):
        first, last = int(indptr[b]), int(indptr[b + 1])
        starts = list(range(first, last, 2)) or [first]
        locs = [-1] if len(starts) == 1 else [row + i * qlen for i in range(len(starts))]
        row += 0 if len(starts) == 1 else qlen * len(starts)
        for kh in range(hk):
            for s, loc in zip(starts, locs):
                work.append([b, loc, b * qlen, (b + 1) * qlen, s, min(s + 2, last), 0, ((kh + 1) * gqa) << 16 | kh * gqa])
        if locs != [-1]:
            groups.append((b * qlen, locs))
    work_info = torch.tensor(work, dtype=torch.int32, device=DEV)
    split_o = torch.full((max(row, 1), 1, hq, d), float("nan"), device=DEV)
    split_lse = torch.full((max(row, 1), 1, hq, 1), float("nan"), device=DEV)
    dev = lambda t: None if t is None else t.to(DEV)  # noqa: E731
    out = aiter_compat.pa_decode_bf16_asm(q.to(DEV), to_vectorized_k(k8, x).to(DEV), to_vectorized_v(v8, x).to(DEV),
                                          indices.to(DEV), used.to(DEV), d ** -0.5, indptr.to(DEV), gqa=gqa, mtp=mtp,
                                          query_scale=dev(qs), key_scale=dev(ks), value_scale=dev(vs),
                                          work_indptr=torch.tensor([0, len(work)], dtype=torch.int32, device=DEV),
                                          work_info=work_info, split_o=split_o, split_lse=split_lse, sink=sinks.to(DEV))
    torch.cuda.synchronize()
    assert out.dtype == torch.bfloat16 and out.shape == q.shape
    flat = out.reshape(-1, hq, d)
    reduced = flat.float().clone()
    for q0, locs in groups:  # pa_reduce_v1's definition
        for i in range(qlen):
            lses = torch.stack([split_lse[loc + i, 0, :, 0] for loc in locs])
            g = torch.logsumexp(lses, dim=0)
            reduced[q0 + i] = sum(split_o[loc + i, 0] * torch.exp(l - g)[:, None] for loc, l in zip(locs, lses))
    sq, sk, sv = (float(s[0]) for s in (qs, ks, vs)) if fp8 else (1.0, 1.0, 1.0)
    for b in range(len(ctx)):
        rows = slice(b * qlen, (b + 1) * qlen)
        qb = q[b].reshape(qlen, hq, d).float() * sq
        want, _ = reference(qb, in_order(k8, b).float() * sk, in_order(v8, b).float() * sv, d ** -0.5, True,
                            (-1, -1), sinks)
        record(f"pa_decode_bf16_asm {name} seq {b}", flat[rows], want, bound, kernel_of("pa_decode_bf16_asm"))
        record(f"pa_decode_bf16_asm {name} seq {b} reduced", reduced[rows], want, bound, kernel_of("pa_decode_bf16_asm"))
