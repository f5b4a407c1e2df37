#!/usr/bin/env python3
"""GPU timings of the fallback kernels beside, in the same run, the measured copy bandwidth and
torch's SDPA backends (cuDNN, flash) on the same shapes without sinks (SDPA has no sinks and no
paged cache: its cache is contiguous). Calls are captured as CUDA graphs (one per KV copy) and
the replays timed with device events after warm-up, medians; the KV copies together exceed the
L2. The host cost of a call is timed separately (eager, per call). Prints a table, writes JSON.

    bench/gpu_attention.py [--json OUT] [--quick]
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

import aiter_compat

L2_BYTES = 60e6


def timed(fn, reps=30, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(times)


def timed_graphs(calls, reps=30):
    """Median time of one call, replaying a CUDA graph per call in rotation (no host cost)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for call in calls:
            call()
    torch.cuda.current_stream().wait_stream(side)
    graphs = []
    for call in calls:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            call()
        graphs.append(g)
    it = [0]

    def replay():
        graphs[it[0] % len(graphs)].replay()
        it[0] += 1
    return timed(replay, reps=reps)


def copy_bandwidth():
    x = torch.empty(int(2e9) // 2, dtype=torch.bfloat16, device="cuda")
    y = torch.empty_like(x)
    t = timed(lambda: y.copy_(x), reps=10)
    return 2 * x.numel() * 2 / t


def decode_case(batch, ctx, window, block=16, hq=64, hk=8, d=64, sinks=True):
    blocks_per = (ctx + block - 1) // block
    kv_bytes = 2 * batch * ctx * hk * d * 2
    copies = max(1, int(3 * L2_BYTES // kv_bytes) + 1)
    caches = []
    for _ in range(copies):
        kc = torch.randn(batch * blocks_per, block, hk, d, dtype=torch.bfloat16, device="cuda")
        caches.append((kc, torch.randn_like(kc)))
    table = torch.arange(batch * blocks_per, dtype=torch.int32, device="cuda").reshape(batch, blocks_per)
    used = torch.full((batch,), ctx, dtype=torch.int32, device="cuda")
    q = torch.randn(batch, hq, d, dtype=torch.bfloat16, device="cuda")
    out = torch.empty_like(q)
    s = torch.randn(hq, device="cuda") if sinks else None
    calls = [lambda kc=kc, vc=vc: aiter_compat.paged_attention_decode(
        q, kc, vc, table, used, softmax_scale=0.125, window_size=window, sinks=s, out=out) for kc, vc in caches]
    t = timed_graphs(calls)
    host = timed(calls[0], reps=20)  # eager: kernel plus the host path of one call
    read = 2 * batch * min(ctx, window[0] + 1 if window[0] >= 0 else ctx) * hk * d * 2
    return t, read + 2 * q.numel() * 2, host


def sdpa_decode(batch, ctx, backend, hq=64, hk=8, d=64):
    kv_bytes = 2 * batch * ctx * hk * d * 2
    copies = max(1, int(3 * L2_BYTES // kv_bytes) + 1)
    kvs = [(torch.randn(batch, hk, ctx, d, dtype=torch.bfloat16, device="cuda"),) * 2 for _ in range(copies)]
    q = torch.randn(batch, hq, 1, d, dtype=torch.bfloat16, device="cuda")
    from torch.nn.attention import sdpa_kernel

    def make(k, v):
        def run():
            with sdpa_kernel(backend):
                F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        return run
    try:
        return timed_graphs([make(k, v) for k, v in kvs])
    except RuntimeError:
        return float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    from torch.nn.attention import SDPBackend
    bw = copy_bandwidth()
    rows = []
    shapes = [(1, 32768), (4, 32768), (64, 4096), (128, 4096)] if args.quick else \
        [(b, c) for b in (1, 4, 16, 64, 128) for c in (4096, 32768)]
    for batch, ctx in shapes:
        for window in ((-1, -1), (127, 0)):
            t, moved, host = decode_case(batch, ctx, window)
            t_off, _, _ = decode_case(batch, ctx, window, sinks=False)
            row = {"case": f"decode {batch}x{ctx // 1024}k {'win128' if window[0] >= 0 else 'full'}",
                   "us": t * 1e6, "TB/s": moved / t / 1e12, "pct_copy": 100 * moved / t / bw,
                   "sinks_off_us": t_off * 1e6, "eager_call_us": host * 1e6}
            if window[0] < 0:
                for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
                    row[f"{name}_us"] = sdpa_decode(batch, ctx, be) * 1e6
            rows.append(row)
    print(f"copy bandwidth (read + write): {bw / 1e12:.2f} TB/s")
    print(f"{'case':26s} {'us':>9s} {'TB/s':>6s} {'%copy':>6s} {'no-sink us':>10s} {'eager us':>9s} "
          f"{'cudnn us':>9s} {'flash us':>9s}")
    for r in rows:
        print(f"{r['case']:26s} {r['us']:9.1f} {r['TB/s']:6.2f} {r['pct_copy']:6.1f} {r['sinks_off_us']:10.1f} "
              f"{r['eager_call_us']:9.1f} {r.get('cudnn_us', float('nan')):9.1f} {r.get('flash_us', float('nan')):9.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"copy_bandwidth_TBps": bw / 1e12, "device": torch.cuda.get_device_name(), "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    sys.exit(main())
