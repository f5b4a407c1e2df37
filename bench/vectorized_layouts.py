#!/usr/bin/env python3
"""GPU timings of pa_decode_gluon's fallback (AITer's 5-D key cache with its 4-D or 5-D value
cache, read by the generic kernel's split addressing) beside, in the same run: the same decode
over the row layout on the tuned decode kernel (paged_attention_decode), torch's cuDNN SDPA on a
contiguous cache without sinks (the peer), and the copy-bandwidth ceiling. GPT-OSS decode shapes
(64 query heads, 8 KV heads, head dim 64, block 16, sinks). CUDA-graph replays behind a spin
kernel, medians (aiter_compat.bench's helpers); the KV copies together exceed the L2.

    bench/vectorized_layouts.py [--json OUT]
"""
import argparse
import json

import torch
from torch.nn.attention import SDPBackend

import aiter_compat
from aiter_compat.bench import copy_bandwidth, graph_replay, kv_copies, ratio, sdpa_decode, timed

HQ, HK, D, BLOCK, X = 64, 8, 64, 16, 8


def layouts(rows_k, rows_v):
    n, bs, hk, d = rows_k.shape
    k5 = rows_k.reshape(n, bs, hk, d // X, X).permute(0, 2, 3, 1, 4).contiguous()
    v4 = rows_v.permute(0, 2, 3, 1).contiguous()
    v5 = rows_v.reshape(n, bs // X, X, hk, d).permute(0, 3, 1, 4, 2).contiguous()
    return k5, v4, v5


def case(batch, ctx):
    blocks = (ctx + BLOCK - 1) // BLOCK
    kv_bytes = 2 * batch * ctx * HK * D * 2
    copies = kv_copies(kv_bytes)
    table = torch.arange(batch * blocks, dtype=torch.int32, device="cuda").reshape(batch, blocks)
    used = torch.full((batch,), ctx, dtype=torch.int32, device="cuda")
    q = torch.randn(batch, HQ, D, dtype=torch.bfloat16, device="cuda")
    out = torch.empty_like(q)
    sinks = torch.randn(HQ, device="cuda")
    caches = []
    for _ in range(copies):
        k = torch.randn(batch * blocks, BLOCK, HK, D, dtype=torch.bfloat16, device="cuda")
        v = torch.randn_like(k)
        caches.append((k, v) + layouts(k, v))
    rows = [lambda c=c: aiter_compat.paged_attention_decode(q, c[0], c[1], table, used, softmax_scale=0.125,
                                                            sinks=sinks, out=out) for c in caches]
    g4 = [lambda c=c: aiter_compat.pa_decode_gluon(out, q, c[2], c[3], used, table, 0.125, 1, 1, sinks=sinks)
          for c in caches]
    g5 = [lambda c=c: aiter_compat.pa_decode_gluon(out, q, c[2], c[4], used, table, 0.125, 1, 1, sinks=sinks)
          for c in caches]
    times = {name: timed(graph_replay(calls), reps=60) for name, calls in
             (("rows_decode", rows), ("gluon_v4", g4), ("gluon_v5", g5))}
    kernel = {r["op"]: r["kernel"] for r in aiter_compat.routes()}
    return times, kv_bytes + 2 * q.numel() * 2, kernel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    bw = copy_bandwidth()
    case(4, 1024)  # warm-up
    rows = []
    for batch, ctx in ((8, 4096), (32, 8192), (64, 2048)):
        times, moved, kernel = case(batch, ctx)
        cudnn = sdpa_decode(batch, ctx, SDPBackend.CUDNN_ATTENTION)
        row = {"case": f"decode b{batch} ctx{ctx}", "ceiling_us": moved / bw * 1e6, "cudnn_us": cudnn * 1e6,
               "kernels": kernel}
        for name, t in times.items():
            row[f"{name}_us"] = t * 1e6
            row[f"cudnn/{name}"] = ratio(row["cudnn_us"], t * 1e6)
        rows.append(row)
    print(f"copy ceiling {bw / 1e12:.2f} TB/s; kernels: {rows[0]['kernels']}")
    print(f"{'case':22s} {'ceiling':>8s} {'cudnn':>8s} {'rows':>8s} {'gluon v4':>9s} {'gluon v5':>9s} "
          f"{'cudnn/v4':>8s} {'cudnn/v5':>8s}")
    for r in rows:
        print(f"{r['case']:22s} {r['ceiling_us']:8.1f} {r['cudnn_us']:8.1f} {r['rows_decode_us']:8.1f} "
              f"{r['gluon_v4_us']:9.1f} {r['gluon_v5_us']:9.1f} {r['cudnn/gluon_v4']:8.2f} {r['cudnn/gluon_v5']:8.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"copy_TBps": bw / 1e12, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
