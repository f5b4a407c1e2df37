#!/usr/bin/env python3
"""Eager cost per call of the GPU route, where the host's work sets the pace: a tiny decode (one
token per sequence, 256 keys, GPT-OSS heads, block 16, bf16 sinks) called back to back, beside
torch.add on tiny tensors and torch SDPA on the same tiny decode (both eager, same run), and the
same decode replayed as a CUDA graph (device time plus a graph launch). Per call: wall time of
`calls` calls between two synchronisations, median of `repeats`. Goal: within 5 us of torch.add.

    bench/eager_overhead.py [--calls 2000] [--repeats 7] [--json OUT]
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import aiter_compat


def per_call_us(fn, calls, repeats):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args()
    dev = "cuda"
    batch, hq, hk, d, ctx, block = 1, 64, 8, 64, 256, 16
    q = torch.randn(batch, hq, d, dtype=torch.bfloat16, device=dev)
    kc = torch.randn(ctx // block * batch, block, hk, d, dtype=torch.bfloat16, device=dev)
    vc = torch.randn_like(kc)
    table = torch.arange(ctx // block * batch, dtype=torch.int32, device=dev).reshape(batch, -1)
    used = torch.full((batch,), ctx, dtype=torch.int32, device=dev)
    cu = torch.arange(batch + 1, dtype=torch.int32, device=dev)
    sinks = torch.randn(hq, device=dev).to(torch.bfloat16)
    out = torch.empty_like(q)
    stream = torch.cuda.current_stream()

    def unified():  # vLLM's decode call, all keywords
        aiter_compat.unified_attention(q=q, k=kc, v=vc, out=out, cu_seqlens_q=cu, max_seqlen_q=1, seqused_k=used,
                                       max_seqlen_k=ctx, softmax_scale=0.125, causal=True, window_size=(-1, -1),
                                       block_table=table, softcap=0, q_descale=None, k_descale=None, v_descale=None,
                                       sinks=sinks)

    def decode():
        aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=0.125, sinks=sinks, out=out)

    rows = {}
    rows["aiter_compat.unified_attention"] = per_call_us(unified, args.calls, args.repeats)
    rows["aiter_compat.paged_attention_decode"] = per_call_us(decode, args.calls, args.repeats)
    try:
        def decode_on_stream():
            aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=0.125, sinks=sinks, out=out,
                                                stream=stream)
        decode_on_stream()
        rows["aiter_compat.paged_attention_decode(stream=)"] = per_call_us(decode_on_stream, args.calls, args.repeats)
    except (TypeError, aiter_compat.AiterCompatError) as e:  # a build without stream=
        print(f"stream= not taken: {e}", file=sys.stderr)
    a, b = torch.randn(64, device=dev), torch.randn(64, device=dev)
    rows["torch.add"] = per_call_us(lambda: torch.add(a, b), args.calls, args.repeats)
    sq = q.view(batch, hq, 1, d)
    sk = torch.randn(batch, hq, ctx, d, dtype=torch.bfloat16, device=dev)
    rows["torch SDPA"] = per_call_us(lambda: F.scaled_dot_product_attention(sq, sk, sk), args.calls, args.repeats)
    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        unified()
        with torch.cuda.graph(graph):
            unified()
    torch.cuda.synchronize()
    rows["graph replay of unified_attention"] = per_call_us(graph.replay, args.calls, args.repeats)
    print(f"{'call (tiny decode: 1 token, 256 keys)':48s} {'us/call':>8s} {'- torch.add':>11s}")
    for name, us in rows.items():
        print(f"{name:48s} {us:8.2f} {us - rows['torch.add']:+11.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "calls": args.calls, "repeats": args.repeats,
                       "us_per_call": rows}, f, indent=1)


if __name__ == "__main__":
    main()
