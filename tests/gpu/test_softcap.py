"""The logits soft cap (softcap tanh(s / softcap) of each scaled score, before masks and the sink)
on every GPU kernel family that takes attention: tiled prefill (warpgroup or mma.sync rows),
tiled decode and its split-KV, the direct-load decode, the generic kernel; against the CPU
reference route, which applies the cap in double precision. AITer's own test grid uses soft caps
of 10 and 50; a cap of 2 bends nearly every score."""
import pytest

import aiter_compat
from test_gpu_kernels import DEV, paged, ragged, record

torch = pytest.importorskip("torch")


def kernel_of_last_gpu_route():
    gpu = [r for r in aiter_compat.routes() if r["route"] == "fallback (gpu)"]
    return {r["kernel"] for r in gpu}


@pytest.mark.parametrize("cap", [2.0, 10.0, 50.0])
def test_softcap_varlen_prefill(cap):
    g = lambda t: t.to(DEV)
    for dtype, d, bound, window in ((torch.bfloat16, 64, 1e-2, (-1, -1)), (torch.float16, 128, 2e-3, (100, 0)),
                                    (torch.float32, 64, 1e-4, (-1, -1))):
        q, k, v, cu_q, cu_k = ragged([300, 77], [300, 90], 16, 2, d, dtype)
        q = q * 4  # scores of several units, where the cap bends them
        sinks = torch.randn(16)
        kw = dict(causal=True, window_size=window, logits_soft_cap=cap)
        want = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 300, 300, sink_ptr=sinks, **kw)
        got = aiter_compat.flash_attn_varlen_func(g(q), g(k), g(v), g(cu_q), g(cu_k), 300, 300, sink_ptr=g(sinks), **kw)
        torch.cuda.synchronize()
        record(f"softcap {cap} prefill {str(dtype).split('.')[-1]} d{d}", got, want, bound)
        uncapped = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 300, 300, sink_ptr=sinks, causal=True,
                                                       window_size=window)
        assert (uncapped.float() - want.float()).abs().max() > 10 * bound, "the cap should change the result"


@pytest.mark.parametrize("cap", [2.0, 50.0])
def test_softcap_paged_decode_every_kernel(cap):
    """Tiled decode, split-KV with the merge, the direct-load decode (an output whose head stride is
    no multiple of 8 keeps the tiled kernels off), and extend through unified_attention."""
    g = lambda t: t.to(DEV)
    for ctx, odd_out, what in (([4096, 17, 300, 2048], False, "decode tiled"), ([32768], False, "decode split-KV"),
                               ([3000, 40], True, "decode direct-load")):
        q, kc, vc, table, used, _ = paged(ctx, [1] * len(ctx), 64, 8, 64, 16)
        q = q * 4
        sinks = torch.randn(64)
        want = aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=0.125, sinks=sinks,
                                                   softcap=cap)
        out = torch.full((len(ctx), 64, 65), float("nan"), dtype=q.dtype, device=DEV)[..., :64] if odd_out else None
        got = aiter_compat.paged_attention_decode(g(q), g(kc), g(vc), g(table), g(used), softmax_scale=0.125,
                                                  sinks=g(sinks), out=out, softcap=cap)
        torch.cuda.synchronize()
        record(f"softcap {cap} {what}", got, want, 1e-2)
        kernels = kernel_of_last_gpu_route()
        assert kernels, "a GPU route should have run"
    ctx, qlen = [300, 1, 64, 1000], [300, 1, 7, 33]
    q, kc, vc, table, used, cu_q = paged(ctx, qlen, 64, 8, 64, 16)
    sinks = torch.randn(64)
    want = torch.empty_like(q)
    args = (cu_q, max(qlen), used, max(ctx), 0.125, True, (127, 0))
    aiter_compat.unified_attention(q, kc, vc, want, *args, table, cap, None, None, None, sinks=sinks)
    got = torch.full(q.shape, float("nan"), dtype=q.dtype, device=DEV)
    aiter_compat.unified_attention(g(q), g(kc), g(vc), got, g(cu_q), max(qlen), g(used), max(ctx), 0.125, True,
                                   (127, 0), g(table), cap, None, None, None, sinks=g(sinks))
    torch.cuda.synchronize()
    record(f"softcap {cap} unified_attention extend", got, want, 1e-2)
