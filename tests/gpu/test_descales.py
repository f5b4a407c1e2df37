"""unified_attention's q/k/v descales on a 16-bit cache, as vLLM passes them (its scalar scales
expanded to [num_seqs, num_kv_heads], stride 0) and per sequence and KV head: every GPU kernel
family (tiled prefill, extend and decode, split-KV, the generic kernel) against the CPU route."""
import pytest

import aiter_compat
from test_gpu_kernels import DEV, paged, record

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("kind", ["vllm scalar expanded", "per sequence and kv head"])
@pytest.mark.parametrize("d", [64, 128, 80])
def test_descales_on_every_gpu_kernel(kind, d):
    g = lambda t: t.to(DEV)
    for ctx, qlen, what in (([300, 1, 64, 1000], [300, 1, 7, 33], "prefill/extend/decode"),
                            ([32768, 5], [1, 1], "decode split-KV")):
        q, kc, vc, table, used, cu_q = paged(ctx, qlen, 64, 8, d, 16)
        batch = len(ctx)
        if kind.startswith("vllm"):
            kd, vd = torch.tensor([1.5]).expand(batch, 8), torch.tensor([0.7]).expand(batch, 8)
        else:
            kd, vd = torch.rand(batch, 8) + 0.5, torch.rand(batch, 8) + 0.5
        qd = torch.tensor([0.8])
        sinks = torch.randn(64)
        args = (cu_q, max(qlen), used, max(ctx), d ** -0.5, True, (-1, -1))
        want = torch.empty_like(q)
        aiter_compat.unified_attention(q, kc, vc, want, *args, table, 0, qd, kd, vd, sinks=sinks)
        got = torch.full(q.shape, float("nan"), dtype=q.dtype, device=DEV)
        aiter_compat.unified_attention(g(q), g(kc), g(vc), got, g(cu_q), max(qlen), g(used), max(ctx), d ** -0.5, True,
                                       (-1, -1), g(table), 0, g(qd), g(kd), g(vd), sinks=g(sinks))
        torch.cuda.synchronize()
        record(f"descales ({kind}) d{d} {what}", got, want, 1e-2)
