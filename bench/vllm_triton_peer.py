"""vLLM's Triton attention kernel (`unified_attention` of vllm.v1.attention.ops.triton_unified_attention,
the kernel of vLLM's TRITON_ATTN backend) as a peer of the fallback kernels on the same shapes: a
paged KV cache of block 16 in vLLM's layout [blocks, 16, KV heads, head dim], sinks on, the
arguments vLLM's backend passes (16 softmax segments, its 3D split below 128 // KV heads
sequences, per-tensor scales for an fp8 cache). Decode is timed as CUDA-graph replays over KV
copies that exceed the L2, prefill eagerly: as the fallback kernels are.

Needs vLLM installed (its package, not its engine); without it `load()` says why and the bench
leaves the column empty. These arguments make vLLM 0.26's kernel compute what the fallback kernels
do: under Triton's interpreter (TRITON_INTERPRET=1, CPU, fp16; 2 sequences of 300 and 263 keys,
16 query heads over 2 KV heads, sinks on) it agrees with aiter_compat's CPU route within 2.4e-4,
causal and with window (127, 0).
"""
import torch

from aiter_compat.bench import kv_cache, kv_copies, timed, timed_graphs

BLOCK = 16
SEGMENTS = 16          # vLLM's NUM_PAR_SOFTMAX_SEGMENTS
MIN_LAUNCH_GRID_2D = 128  # vLLM's MIN_LAUNCH_GRID_SIZE_2D: the 3D (split) kernel below this many programs


def load():
    """(unified_attention, KVQuantMode), or (None, why not)."""
    try:
        from vllm.v1.attention.ops.triton_unified_attention import unified_attention
        from vllm.v1.kv_cache_interface import KVQuantMode
    except Exception as e:  # ImportError, or vLLM's own import-time failures on this machine
        return None, f"vLLM's Triton kernel not importable ({type(e).__name__}: {e})"
    return (unified_attention, KVQuantMode), None


def _call(kernel, q, kc, vc, cu_q, max_q, used, max_k, table, window, kv, sinks, out):
    unified_attention, mode = kernel
    batch, hq, hk, d = used.numel(), q.shape[1], kc.shape[2], q.shape[2]
    threshold = MIN_LAUNCH_GRID_2D // hk
    width = 1 << (d - 1).bit_length()
    segm_out = torch.empty(threshold, hq, SEGMENTS, width, dtype=torch.float32, device="cuda")
    segm_max = torch.empty(threshold, hq, SEGMENTS, dtype=torch.float32, device="cuda")
    segm_sum = torch.empty_like(segm_max)
    scale = torch.tensor([0.9 if kv == "fp8" else 1.0], device="cuda").expand(batch, hk)
    return lambda: unified_attention(
        q=q, k=kc, v=vc, out=out, cu_seqlens_q=cu_q, max_seqlen_q=max_q, seqused_k=used, max_seqlen_k=max_k,
        softmax_scale=d ** -0.5, causal=True, window_size=window, block_table=table, softcap=0,
        q_descale=None, k_descale=scale, v_descale=scale, seq_threshold_3D=threshold,
        num_par_softmax_segments=SEGMENTS, softmax_segm_output=segm_out, softmax_segm_max=segm_max,
        softmax_segm_expsum=segm_sum, sinks=sinks,
        kv_quant_mode=mode.FP8_PER_TENSOR if kv == "fp8" else mode.NONE)


def _paged(batch, ctx, hk, d):
    """The cache's shape in vLLM's layout and the block table giving each sequence its blocks."""
    blocks = (ctx + BLOCK - 1) // BLOCK
    table = torch.arange(batch * blocks, dtype=torch.int32, device="cuda").reshape(batch, blocks)
    return (batch * blocks, BLOCK, hk, d), table


def decode_time(kernel, batch, ctx, window, kv="bf16", hq=64, hk=8, d=64):
    """Median seconds of one decode step (graph replays, KV copies rotated past the L2)."""
    shape, table = _paged(batch, ctx, hk, d)
    copies = kv_copies(2 * batch * ctx * hk * d * (1 if kv == "fp8" else 2))
    q = torch.randn(batch, hq, d, dtype=torch.bfloat16, device="cuda")
    out = torch.empty_like(q)
    cu_q = torch.arange(batch + 1, dtype=torch.int32, device="cuda")
    used = torch.full((batch,), ctx, dtype=torch.int32, device="cuda")
    sinks = torch.randn(hq, device="cuda")
    calls = [_call(kernel, q, kc, vc, cu_q, 1, used, ctx, table, window, kv, sinks, out)
             for kc, vc in ((kv_cache(shape, kv), kv_cache(shape, kv)) for _ in range(copies))]
    return timed_graphs(calls)


def prefill_time(kernel, batch, seqlen, d, window, hq=64, hk=8):
    """Median seconds of one causal prefill of `batch` sequences of `seqlen` over a paged cache
    holding their keys (what vLLM's backend does after writing the new keys to the cache)."""
    shape, table = _paged(batch, seqlen, hk, d)
    kc, vc = kv_cache(shape, "bf16"), kv_cache(shape, "bf16")
    q = torch.randn(batch * seqlen, hq, d, dtype=torch.bfloat16, device="cuda")
    out = torch.empty_like(q)
    cu_q = torch.arange(0, (batch + 1) * seqlen, seqlen, dtype=torch.int32, device="cuda")
    used = torch.full((batch,), seqlen, dtype=torch.int32, device="cuda")
    sinks = torch.randn(hq, device="cuda")
    return timed(_call(kernel, q, kc, vc, cu_q, seqlen, used, seqlen, table, window, "bf16", sinks, out), reps=10)

