"""AITer's published parameter grid for unified_attention, through the drop-in on this GPU with
float32 sinks, against a float64 reference written here (torch, on the GPU), within AITer's own
tolerances (atol 1.5e-2, rtol 1e-2).

The grid is written from the parameter lists of AITer's unified_attention test (its query/KV
head pairs, head sizes, block sizes, sliding window, soft caps, 16-bit dtypes, sequence-length
sets and a 2,048-block cache), not copied from it. Left out, and refused with a reason by the
drop-in today: fp8 queries, KV cache and outputs with their descales."""
import itertools
import math
import zlib

import pytest

import aiter_compat

torch = pytest.importorskip("torch")
DEV = "cuda"

HEADS = [(4, 4), (8, 2), (16, 2)]
HEAD_SIZES = [64, 128, 256]
BLOCK_SIZES = [16, 64]
WINDOWS = [None, 256]
SOFT_CAPS = [0.0, 10.0, 50.0]
DTYPES = [torch.bfloat16, torch.float16]
SEQ_LENS = [[(1, 1328), (5, 18), (129, 463)], [(1, 523), (1, 37), (1, 2011)]]
NUM_BLOCKS = 2048
GRID = list(itertools.product(SEQ_LENS, HEADS, HEAD_SIZES, BLOCK_SIZES, WINDOWS, SOFT_CAPS, DTYPES))


def reference(q, kc, vc, table, q_lens, k_lens, scale, window, cap, sinks):
    """float64: causal from the end of each sequence's keys, the window's last `window` keys, the
    cap on the scaled score, each head's sink one more logit with no value."""
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    hq, hk, block = q.shape[1], kc.shape[2], kc.shape[1]
    start = 0
    for b, (ql, kl) in enumerate(zip(q_lens, k_lens)):
        blocks = table[b, : (kl + block - 1) // block].long()
        k = kc[blocks].reshape(-1, hk, kc.shape[3])[:kl].double().repeat_interleave(hq // hk, dim=1)
        v = vc[blocks].reshape(-1, hk, vc.shape[3])[:kl].double().repeat_interleave(hq // hk, dim=1)
        qs = q[start : start + ql].double()
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
        out[start : start + ql] = torch.einsum("htk,khd->thd", p, v)
        start += ql
    return out


@pytest.mark.parametrize("seq_lens,heads,head_size,block_size,window,cap,dtype", GRID)
def test_unified_attention_grid(seq_lens, heads, head_size, block_size, window, cap, dtype):
    torch.manual_seed(zlib.crc32(repr((seq_lens, heads, head_size, block_size, window, cap, str(dtype))).encode()))
    hq, hk = heads
    q_lens, k_lens = [s[0] for s in seq_lens], [s[1] for s in seq_lens]
    per_seq = max((k + block_size - 1) // block_size for k in k_lens)
    q = torch.randn(sum(q_lens), hq, head_size, dtype=dtype, device=DEV)
    kc = torch.randn(NUM_BLOCKS, block_size, hk, head_size, dtype=dtype, device=DEV)
    vc = torch.randn(NUM_BLOCKS, block_size, hk, head_size, dtype=dtype, device=DEV)
    table = torch.randint(0, NUM_BLOCKS, (len(seq_lens), per_seq), dtype=torch.int32, device=DEV)
    cu_q = torch.tensor([0] + list(itertools.accumulate(q_lens)), dtype=torch.int32, device=DEV)
    used = torch.tensor(k_lens, dtype=torch.int32, device=DEV)
    sinks = torch.randn(hq, dtype=torch.float32, device=DEV)
    scale = 1.0 / math.sqrt(head_size)
    win = (window - 1, 0) if window else (-1, -1)
    out = torch.full_like(q, float("nan"))
    aiter_compat.unified_attention(q, kc, vc, out, cu_q, max(q_lens), used, max(k_lens), scale, True, win, table, cap,
                                   None, None, None, sinks=sinks)
    want = reference(q, kc, vc, table, q_lens, k_lens, scale, window, cap, sinks)
    torch.testing.assert_close(out.double(), want, atol=1.5e-2, rtol=1e-2)


# flash_attn_varlen_func: AITer's varlen test's head sizes (odd ones too), causal or not, a local
# window or none, MHA / GQA / MQA over 6 query heads, its (seqlen_q, seqlen_k) pairs.
VARLEN_HEAD_SIZES = [32, 59, 64, 96, 111, 128, 160, 192, 224, 256]
VARLEN_SEQLENS = [(1, 147), (113, 203), (128, 217), (108, 256), (256, 512), (512, 256), (1023, 1024)]
VARLEN_GRID = list(itertools.product(VARLEN_HEAD_SIZES, [False, True], [False, True], [6, 2, 1], VARLEN_SEQLENS))


def varlen_reference(q, k, v, cu_q, cu_k, scale, causal, window, sinks):
    out = torch.empty(q.shape[:2] + (v.shape[2],), dtype=torch.float64, device=q.device)
    hq, hk = q.shape[1], k.shape[1]
    for b in range(len(cu_q) - 1):
        qs = q[cu_q[b] : cu_q[b + 1]].double()
        ks = k[cu_k[b] : cu_k[b + 1]].double().repeat_interleave(hq // hk, dim=1)
        vs = v[cu_k[b] : cu_k[b + 1]].double().repeat_interleave(hq // hk, dim=1)
        ql, kl = qs.shape[0], ks.shape[0]
        s = torch.einsum("thd,khd->htk", qs, ks) * scale
        pos = torch.arange(ql, device=q.device)[:, None] + kl - ql
        j = torch.arange(kl, device=q.device)[None, :]
        visible = torch.ones(ql, kl, dtype=torch.bool, device=q.device)
        if causal:
            visible &= j <= pos
        if window[0] >= 0:
            visible &= j >= pos - window[0]
        if window[1] >= 0:
            visible &= j <= pos + window[1]
        s = s.masked_fill(~visible[None], float("-inf"))
        s = torch.cat([s, sinks.double()[:, None, None].expand(hq, ql, 1)], dim=2)
        out[cu_q[b] : cu_q[b + 1]] = torch.einsum("htk,khd->thd", torch.softmax(s, dim=2)[..., :kl], vs)
    return out


@pytest.mark.parametrize("head_size,causal,local,hk,seqlens", VARLEN_GRID)
def test_flash_attn_varlen_grid(head_size, causal, local, hk, seqlens):
    torch.manual_seed(zlib.crc32(repr((head_size, causal, local, hk, seqlens)).encode()))
    hq, (sq, sk), batch = 6, seqlens, 3
    q_lens = [max(1, sq - i) for i in range(batch)]
    k_lens = [max(1, sk - 2 * i) for i in range(batch)]
    window = tuple(int(x) for x in torch.randint(0, sk, (2,))) if local else (-1, -1)
    if causal and local:
        window = (window[0], 0)
    dtype = torch.bfloat16 if head_size % 2 else torch.float16
    cu_q = torch.tensor([0] + list(itertools.accumulate(q_lens)), dtype=torch.int32, device=DEV)
    cu_k = torch.tensor([0] + list(itertools.accumulate(k_lens)), dtype=torch.int32, device=DEV)
    q = torch.randn(sum(q_lens), hq, head_size, dtype=dtype, device=DEV)
    k = torch.randn(sum(k_lens), hk, head_size, dtype=dtype, device=DEV)
    v = torch.randn(sum(k_lens), hk, head_size, dtype=dtype, device=DEV)
    sinks = torch.randn(hq, dtype=torch.float32, device=DEV)
    scale = 1.0 / math.sqrt(head_size)
    out = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(q_lens), max(k_lens), softmax_scale=scale,
                                              causal=causal, window_size=window, sink_ptr=sinks)
    want = varlen_reference(q, k, v, cu_q.tolist(), cu_k.tolist(), scale, causal, window, sinks)
    torch.testing.assert_close(out.double(), want, atol=1.5e-2, rtol=1e-2)
