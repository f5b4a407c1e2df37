#!/usr/bin/env python3
"""Head dim 256 on the GPU: the row tiles (the default route) beside the generic kernel they
replaced (forced with the module's _force_kernel_row), torch's SDPA backends (cuDNN, flash) on
the same shapes without sinks, and the bf16 matmul ceiling, all in one run. Prefill: one causal
4k sequence, 64 query heads over 8 KV heads (the shape the generic kernel was measured on);
decode: batch 64 over 4k keys in a paged cache (16-key pages), 8 query heads per KV head.
Medians of device times (events, each call queued behind a spin kernel); the generic kernel's
prefill takes about half a second a call, so it is timed on 3 calls.

    bench/head_dim_256.py [--json OUT]
"""
import argparse
import sys

import torch

import aiter_compat
from aiter_compat.bench import copy_bandwidth, matmul_rate, ratio, sdpa_prefill, timed, write_results

D, HQ, HK = 256, 64, 8


def prefill_call(seqlen):
    q = torch.randn(seqlen, HQ, D, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(seqlen, HK, D, dtype=torch.bfloat16, device="cuda")
    v = torch.randn_like(k)
    cu = torch.tensor([0, seqlen], dtype=torch.int32, device="cuda")
    sinks = torch.randn(HQ, device="cuda")
    out = torch.empty_like(q)
    return lambda: aiter_compat.flash_attn_varlen_func(q, k, v, cu, cu, seqlen, seqlen, causal=True, sink_ptr=sinks,
                                                       out=out)


def decode_call(batch, ctx, block=16):
    pages = (ctx + block - 1) // block
    kc = torch.randn(batch * pages, block, HK, D, dtype=torch.bfloat16, device="cuda")
    vc = torch.randn_like(kc)
    table = torch.arange(batch * pages, dtype=torch.int32, device="cuda").reshape(batch, pages)
    used = torch.full((batch,), ctx, dtype=torch.int32, device="cuda")
    q = torch.randn(batch, HQ, D, dtype=torch.bfloat16, device="cuda")
    sinks = torch.randn(HQ, device="cuda")
    return lambda: aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=D ** -0.5, sinks=sinks)


def timed_on_generic(call, reps):
    """call timed with every launch forced onto the generic kernel (what head dim 256 ran on before)."""
    aiter_compat._force_kernel_row("generic")
    try:
        return timed(call, reps=reps)
    finally:
        aiter_compat._force_kernel_row(None)


def kernel_of(call):
    """The kernel row the last call of this kind ran on (the route table's record)."""
    call()
    torch.cuda.synchronize()
    ran = [r.get("kernel") for r in aiter_compat.routes() if r.get("route") == "fallback (gpu)"]
    return ran[-1] if ran else "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("head dim 256 bench skipped: no GPU")
        return 0
    matmul, bw = matmul_rate(), copy_bandwidth()
    seqlen = 4096
    flops = 4 * sum(i + 1 for i in range(seqlen)) * HQ * D  # causal pairs only
    rows = []
    prefill = prefill_call(seqlen)
    tiled = timed(prefill, reps=10)
    generic = timed_on_generic(prefill, reps=3)
    row = {"case": "prefill d256 1x4k causal", "us": tiled * 1e6, "kernel": kernel_of(prefill),
           "TFLOP/s": flops / tiled / 1e12, "pct_ceiling": 100 * flops / tiled / matmul, "generic_us": generic * 1e6,
           "generic/ours": generic / tiled}
    from torch.nn.attention import SDPBackend
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        row[f"{name}_us"] = sdpa_prefill(1, seqlen, D, be) * 1e6
        row[f"{name}/ours"] = ratio(row[f"{name}_us"], row["us"])
    rows.append(row)

    decode = decode_call(64, 4096)
    tiled = timed(decode, reps=20)
    generic = timed_on_generic(decode, reps=10)
    moved = 2 * 64 * 4096 * HK * D * 2
    rows.append({"case": "decode d256 64x4k", "us": tiled * 1e6, "kernel": kernel_of(decode),
                 "TB/s": moved / tiled / 1e12, "pct_ceiling": 100 * moved / tiled / bw, "generic_us": generic * 1e6,
                 "generic/ours": generic / tiled})
    print(f"bf16 dense matmul {matmul / 1e12:.0f} TFLOP/s, copy {bw / 1e12:.2f} TB/s (the ceilings)")
    nan = float("nan")
    for r in rows:
        rate = r.get("TFLOP/s", r.get("TB/s"))
        print(f"{r['case']:26s} {r['kernel']:11s} {r['us']:10.1f} us {rate:7.2f} {r['pct_ceiling']:5.1f}% of ceiling; "
              f"generic {r['generic_us']:10.1f} us ({r['generic/ours']:.0f}x); cuDNN {r.get('cudnn_us', nan):8.1f} us "
              f"({r.get('cudnn/ours', nan):.2f}x ours); flash {r.get('flash_us', nan):8.1f} us ({r.get('flash/ours', nan):.2f}x)")
    if args.json:
        write_results(args.json, rows, bw, matmul)
    return 0


if __name__ == "__main__":
    sys.exit(main())
