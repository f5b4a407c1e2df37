"""Head dim 256 (Gemma 2 and 3) and AITer's unequal q/k and v head dims (192/128) on the GPU: the
row tiles take head dim 256 (prefill, extend and decode), the generic kernel 192/128; a GPU route
needs a group's queries to fit the generic kernel's block (query heads per KV head x head dim up
to 2048); against the CPU reference, with sinks, windows and the soft cap."""
import pytest

import aiter_compat
from test_gpu_kernels import DEV, paged, ragged, record

torch = pytest.importorskip("torch")

CASES = [
    # name, q_lens, k_lens, hq, hk, d, dv, dtype, window, softcap, bound
    ("d256 group 2 causal", [300, 45], [300, 60], 8, 4, 256, 256, torch.bfloat16, (-1, -1), 0.0, 1e-2),
    ("d256 group 8 window 128 softcap 50", [200], [260], 16, 2, 256, 256, torch.bfloat16, (127, 0), 50.0, 1e-2),
    ("d256 fp16 non-causal", [33, 7], [90, 7], 4, 2, 256, 256, torch.float16, (-1, -1), 0.0, 2e-3),
    ("d192/128", [129, 64], [129, 200], 16, 16, 192, 128, torch.bfloat16, (-1, -1), 0.0, 1e-2),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_wide_head_dims_varlen(case):
    name, q_lens, k_lens, hq, hk, d, dv, dtype, window, cap, bound = case
    q, k, _, cu_q, cu_k = ragged(q_lens, k_lens, hq, hk, d, dtype)
    v = torch.randn(k.shape[0], hk, dv, dtype=dtype)
    sinks = torch.randn(hq)
    causal = "non-causal" not in name
    kw = dict(causal=causal, window_size=window, logits_soft_cap=cap)
    want = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(q_lens), max(k_lens), sink_ptr=sinks, **kw)
    g = lambda t: t.to(DEV)
    got = aiter_compat.flash_attn_varlen_func(g(q), g(k), g(v), g(cu_q), g(cu_k), max(q_lens), max(k_lens),
                                              sink_ptr=g(sinks), **kw)
    torch.cuda.synchronize()
    record(f"wide head dims: {name}", got, want, bound)
    kernel = "tiled_rows" if d == 256 else "generic"
    route = [r for r in aiter_compat.routes() if r["route"] == "fallback (gpu)" and r["kernel"] == kernel]
    assert route, f"the {kernel} kernels should have taken it: {aiter_compat.routes()}"


def test_d256_paged_decode_split():
    """Decode over a paged cache at head dim 256: the row tiles, split over a long context."""
    q, kc, vc, table, used, _ = paged([9000, 33], [1, 1], 8, 4, 256, 16)
    sinks = torch.randn(8)
    want = aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=0.0625, sinks=sinks)
    g = lambda t: t.to(DEV)
    got = aiter_compat.paged_attention_decode(g(q), g(kc), g(vc), g(table), g(used), softmax_scale=0.0625,
                                              sinks=g(sinks))
    torch.cuda.synchronize()
    record("wide head dims: d256 paged decode", got, want, 1e-2)


def test_group_too_wide_for_the_block_is_refused_with_the_reason():
    """The GPU route needs the generic kernel to take the call (every launch fits it, should a
    faster row not): 16 query heads per KV head at 256 is more than its block holds."""
    q, k, v, cu_q, cu_k = ragged([10], [10], 32, 2, 256, torch.bfloat16)
    g = lambda t: t.to(DEV)
    with pytest.raises(Exception) as e:
        aiter_compat.flash_attn_varlen_func(g(q), g(k), g(v), g(cu_q), g(cu_k), 10, 10, causal=True,
                                            sink_ptr=torch.zeros(32, device=DEV))
    assert "16 query heads per KV head x head dim 256 = 4096: at most 2048" in str(e.value)
