"""mha_batch_prefill_func's page tables on the GPU kernels (CSR kv_indptr into kv_page_indices with
kv_last_page_lens, pages of one slot as 3-D or 4-D caches, a [batch, pages] block_table with
seqlen_k), and AITer's Triton names (sink=), against a float64 reference with the sink as one more
logit; outputs poisoned with NaN so an unwritten element fails."""
import pytest

import aiter_compat
from aiter_compat import triton_mha
from conftest import RESULTS

torch = pytest.importorskip("torch")
DEV = "cuda"


def reference(q, keys, values, scale, causal, window, sinks):
    """float64: q [Sq, Hq, D], keys/values [Sk, Hk, D] -> out [Sq, Hq, Dv], lse [Hq, Sq]."""
    q, k, v = (t.double() for t in (q, keys, values))
    sq, hq, _ = q.shape
    sk, hk, _ = k.shape
    k = k.repeat_interleave(hq // hk, dim=1)
    v = v.repeat_interleave(hq // hk, dim=1)
    s = torch.einsum("qhd,khd->hqk", q, k) * scale
    pos = torch.arange(sq)[:, None] + (sk - sq)
    j = torch.arange(sk)[None, :]
    allowed = torch.ones(sq, sk, dtype=torch.bool)
    if causal:
        allowed &= j <= pos
    if window[0] >= 0:
        allowed &= j >= pos - window[0]
    if window[1] >= 0:
        allowed &= j <= pos + window[1]
    s = s.masked_fill(~allowed[None], float("-inf"))
    sink = (sinks.double() if sinks is not None else torch.full((hq,), float("-inf"), dtype=torch.float64))
    full = torch.cat([s, sink[:, None, None].expand(hq, sq, 1)], dim=2)
    lse = torch.logsumexp(full, dim=2)
    p = torch.exp(full - lse[..., None]).nan_to_num(0.0)
    return torch.einsum("hqk,khd->qhd", p[:, :, :sk], v), lse


def record(case, got, want, bound, kernel):
    err = (got.double().cpu() - want).abs() / want.abs().clamp(min=1)
    assert not torch.isnan(got).any(), f"{case}: NaN in the output (unwritten element?)"
    worst = float(err.max()) if err.numel() else 0.0
    RESULTS.append({"case": case, "route": kernel, "max_abs_err": worst, "bound": bound})
    assert worst <= bound, f"{case}: max error {worst} > {bound} (kernel {kernel})"


def kernel_of(op):
    rows = [r for r in aiter_compat.routes() if r["op"] == op]
    return rows[-1].get("kernel", "?") if rows else "?"


def paged_batch(q_lens, k_lens, hq, hk, d, page, dtype):
    pages_of = [(n + page - 1) // page for n in k_lens]
    total = sum(pages_of) + 5
    kc = torch.randn(total, page, hk, d, dtype=dtype)
    vc = torch.randn(total, page, hk, d, dtype=dtype)
    order = torch.randperm(total).to(torch.int32)
    indptr, tables, keys, values, last = [0], [], [], [], []
    for n, p in zip(k_lens, pages_of):
        mine = order[indptr[-1]:indptr[-1] + p]
        indptr.append(indptr[-1] + p)
        tables.append(mine)
        keys.append(kc[mine.long()].reshape(-1, hk, d)[:n])
        values.append(vc[mine.long()].reshape(-1, hk, d)[:n])
        last.append(n - (p - 1) * page if p else page)
    block_table = torch.full((len(k_lens), max(pages_of + [1])), -3, dtype=torch.int32)
    for b, t in enumerate(tables):
        block_table[b, :len(t)] = t
    cu_q = torch.tensor([0] + torch.tensor(q_lens).cumsum(0).tolist(), dtype=torch.int32)
    q = torch.randn(int(cu_q[-1]), hq, d, dtype=dtype)
    return dict(q=q, k=kc, v=vc, cu_q=cu_q, indptr=torch.tensor(indptr, dtype=torch.int32),
                indices=order[:indptr[-1]].contiguous(), last=torch.tensor(last, dtype=torch.int32),
                block_table=block_table, seqlen_k=torch.tensor(k_lens, dtype=torch.int32), keys=keys, values=values)


CASES = [
    # name, q_lens, k_lens, hq, hk, d, page, causal, window, dtype, bound
    ("gpt-oss extend page 16", [300, 77, 1], [700, 77, 900], 64, 8, 64, 16, True, (-1, -1), torch.bfloat16, 1e-2),
    ("gpt-oss extend window (127, -1) page 16", [300, 77], [700, 200], 64, 8, 64, 16, True, (127, -1),
     torch.bfloat16, 1e-2),
    ("gpt-oss extend window (127, 0) page 64", [129, 5], [1000, 64], 64, 8, 64, 64, True, (127, 0),
     torch.bfloat16, 1e-2),
    ("token pool (page 1)", [64, 3], [200, 3], 64, 8, 64, 1, True, (-1, -1), torch.bfloat16, 1e-2),
    ("non-causal cached chunk fp16", [40, 9], [333, 17], 16, 2, 64, 16, False, (-1, -1), torch.float16, 2e-3),
    ("head dim 128 page 32", [130, 1], [530, 1], 16, 4, 128, 32, True, (-1, -1), torch.bfloat16, 1e-2),
    ("long prefill 1 x 2k page 16", [2048], [2048], 64, 8, 64, 16, True, (-1, -1), torch.bfloat16, 1e-2),
]


@pytest.mark.parametrize("table", ["csr", "csr_3d", "csr_strided", "block_table"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_batch_prefill(case, table):
    name, q_lens, k_lens, hq, hk, d, page, causal, window, dtype, bound = case
    if table == "csr_3d" and page != 1:
        pytest.skip("3-D caches are AITer's page size 1: the 'token pool' case covers them")
    b = paged_batch(q_lens, k_lens, hq, hk, d, page, dtype)
    sinks = torch.randn(hq)
    scale = d ** -0.5
    g = lambda t: t.to(DEV)
    k, v = g(b["k"]), g(b["v"])
    extra = {}
    if table == "csr_3d":
        k, v = k.view(-1, hk, d), v.view(-1, hk, d)
    if table == "block_table":
        extra = dict(block_table=g(b["block_table"]), seqlen_k=g(b["seqlen_k"]))
        indptr, indices = g(torch.zeros(len(q_lens) + 1, dtype=torch.int32)), g(torch.zeros(1, dtype=torch.int32))
    else:
        indptr, indices = g(b["indptr"]), g(b["indices"])
        if table == "csr_strided":  # a view whose entries are 2 apart, other values between them
            spaced = torch.full((2 * indices.numel(),), -5, dtype=torch.int32, device=DEV)
            spaced[::2] = indices
            indices = spaced[::2]
        if page > 1:
            extra = dict(kv_last_page_lens=g(b["last"]))
    out = torch.full(b["q"].shape, float("nan"), dtype=dtype, device=DEV)
    got, lse = aiter_compat.mha_batch_prefill_func(
        g(b["q"]), k, v, g(b["cu_q"]), indptr, indices, max(q_lens), max(k_lens), softmax_scale=scale, causal=causal,
        window_size=window, sink_ptr=g(sinks), return_lse=True, out=out, **extra)
    torch.cuda.synchronize()
    assert got is out
    wants, lses = [], []
    for i, n in enumerate(q_lens):
        q0 = int(b["cu_q"][i])
        o, l = reference(b["q"][q0:q0 + n], b["keys"][i], b["values"][i], scale, causal, window, sinks)
        wants.append(o)
        lses.append(l)
    record(f"batch_prefill {table}: {name}", got, torch.cat(wants), bound, kernel_of("mha_batch_prefill_func"))
    want_lse = torch.cat(lses, dim=1)
    assert (lse.double().cpu() - want_lse).abs().max().item() <= 2e-3


def test_batch_prefill_over_an_fp8_cache_with_descales():
    """bf16 queries over a float8_e4m3fn cache with per-tensor k/v descales (SGLang's fp8 KV)."""
    b = paged_batch([100, 7], [400, 90], 64, 8, 64, 16, torch.bfloat16)
    k8, v8 = (x.clamp(-200, 200).to(torch.float8_e4m3fn) for x in (b["k"] * 8, b["v"] * 8))
    kd, vd = torch.tensor([0.125]), torch.tensor([0.125])
    sinks = torch.randn(64)
    g = lambda t: t.to(DEV)
    got = aiter_compat.mha_batch_prefill_func(
        g(b["q"]), g(k8), g(v8), g(b["cu_q"]), g(b["indptr"]), g(b["indices"]), 100, 400, causal=True,
        sink_ptr=g(sinks), kv_last_page_lens=g(b["last"]), k_descale=g(kd), v_descale=g(vd))
    torch.cuda.synchronize()
    wants = []
    for i, n in enumerate([100, 7]):
        q0 = int(b["cu_q"][i])
        idx = b["indices"][int(b["indptr"][i]):int(b["indptr"][i + 1])].long()
        keys = (k8[idx].float() * 0.125).reshape(-1, 8, 64)[:[400, 90][i]]
        values = (v8[idx].float() * 0.125).reshape(-1, 8, 64)[:[400, 90][i]]
        wants.append(reference(b["q"][q0:q0 + n], keys, values, 64 ** -0.5, True, (-1, -1), sinks)[0])
    record("batch_prefill csr: fp8 e4m3fn cache, descales", got, torch.cat(wants), 1.5e-2,
           kernel_of("mha_batch_prefill_func"))


TRITON = [
    # name, q_lens, k_lens, hq, hk, d, causal, window
    ("gpt-oss prefill", [300, 77], [300, 77], 64, 8, 64, True, (-1, -1)),
    ("window (127, 0)", [300], [300], 64, 8, 64, True, (127, 0)),
    ("non-causal head dim 128", [50, 9], [80, 30], 16, 4, 128, False, (-1, -1)),
]


@pytest.mark.parametrize("case", TRITON, ids=[c[0] for c in TRITON])
def test_triton_names_with_sink(case):
    name, q_lens, k_lens, hq, hk, d, causal, window = case
    cu_q = torch.tensor([0] + torch.tensor(q_lens).cumsum(0).tolist(), dtype=torch.int32)
    cu_k = torch.tensor([0] + torch.tensor(k_lens).cumsum(0).tolist(), dtype=torch.int32)
    q = torch.randn(int(cu_q[-1]), hq, d, dtype=torch.bfloat16)
    k = torch.randn(int(cu_k[-1]), hk, d, dtype=torch.bfloat16)
    v = torch.randn(int(cu_k[-1]), hk, d, dtype=torch.bfloat16)
    sink = torch.randn(hq)
    g = lambda t: t.to(DEV)
    got, lse = triton_mha.flash_attn_varlen_func(g(q), g(k), g(v), g(cu_q), g(cu_k), max(q_lens), max(k_lens),
                                                 causal=causal, window_size=window, sink=g(sink), return_lse=True,
                                                 config={"BLOCK_M": 64})
    torch.cuda.synchronize()
    wants = []
    for i in range(len(q_lens)):
        wants.append(reference(q[cu_q[i]:cu_q[i + 1]], k[cu_k[i]:cu_k[i + 1]], v[cu_k[i]:cu_k[i + 1]], d ** -0.5,
                               causal, window, sink)[0])
    record(f"triton flash_attn_varlen_func sink=: {name}", got, torch.cat(wants), 1e-2,
           kernel_of("triton_flash_attn_varlen_func"))
    qb, kb, vb = q[:q_lens[0]][None], k[:k_lens[0]][None], v[:k_lens[0]][None]
    got_b = triton_mha.flash_attn_func(g(qb), g(kb), g(vb), causal=causal, window_size=window, sink=g(sink))
    torch.cuda.synchronize()
    record(f"triton flash_attn_func sink=: {name}", got_b[0], wants[0], 1e-2, kernel_of("triton_flash_attn_func"))
