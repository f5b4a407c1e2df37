#!/usr/bin/env python3
"""GPU timings of the fallback kernels beside, in the same run, the measured ceilings (copy
bandwidth, bf16 matmul rate) and torch's SDPA backends (cuDNN, flash) on the same shapes without
sinks (SDPA has no sinks and no paged cache: its cache is contiguous). Decode calls are captured
as CUDA graphs (one per KV copy) and the replays timed with device events after warm-up,
medians; the KV copies together exceed the L2. Every timed call is queued behind a spin kernel,
so the events measure the device alone, not the GPU waiting for the host's launch. Sinks on and
off are timed on the same inputs in alternating runs (their difference is a few percent at most,
about what a 10 us call drifts between two measurements); for decode the sink cost is taken from
runs of ten replays back to back (means, finer than the timer's steps). The host cost of
a call is timed separately (eager, per call). Prefill (causal, window 128, head dim 64 and 128,
GPT-OSS heads) is timed eagerly; causal FLOPs count only the pairs computed. Ratios are peer
time / our time (above 1: we are faster). Prints a table, writes JSON.

    bench/gpu_attention.py [--json OUT] [--quick] [--only REGEX]
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

import aiter_compat

L2_BYTES = 60e6


SPIN_CYCLES = 400_000  # ~200 us at the H200's clock: longer than the host path of ten graph launches


def event_time(fn, queued=True):
    """Seconds of one call between two device events on the current stream. queued: the events
    and the call are enqueued behind a spin kernel, so the GPU starts them back to back and the
    time is the device's alone; otherwise a call of 10 us also holds the time the GPU waited
    for the host to launch it (a graph launch: 4-8 us, more on a slower host CPU)."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if queued:
        torch.cuda._sleep(SPIN_CYCLES)
    a.record()
    fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e-3


def timed(fn, reps=30, warmup=5, queued=True):
    """Median of `reps` calls after `warmup`; queued=False keeps the host's launch cost in (the
    eager time of a call)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    return statistics.median(event_time(fn, queued) for _ in range(reps))


def timed_pair(fn_a, fn_b, reps=30, warmup=5, run=10):
    """Medians of two functions timed in alternating runs (`run` calls of a, then of b, ...), so
    that drifts of clocks and caches during the measurement fall on both alike: sinks on against
    sinks off."""
    for _ in range(warmup):
        fn_a()
        fn_b()
    torch.cuda.synchronize()
    times = ([], [])
    for _ in range(max(1, reps // run)):
        for fn, ts in zip((fn_a, fn_b), times):
            ts.extend(event_time(fn) for _ in range(run))
    return statistics.median(times[0]), statistics.median(times[1])


def back_to_back(fn_a, fn_b, calls=10, rounds=20):
    """Mean seconds per call of two functions, each timed as `calls` calls queued back to back
    behind a spin kernel between one pair of events, alternating, `rounds` times each; medians
    over the rounds. Finer than per-call medians, whose ~7 us decodes move in whole steps of
    0.16 us: the sink comparison of decode."""
    times = ([], [])
    for _ in range(rounds):
        for fn, ts in zip((fn_a, fn_b), times):
            ts.append(event_time(lambda: [fn() for _ in range(calls)]) / calls)
    return statistics.median(times[0]), statistics.median(times[1])


def graph_replay(calls):
    """A function replaying one CUDA graph per call in rotation (no host cost)."""
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
    return replay


def timed_graphs(calls, reps=30):
    """Median time of one call, replaying a CUDA graph per call in rotation (no host cost)."""
    return timed(graph_replay(calls), reps=reps)


def matmul_rate():
    """bf16 dense matmul rate measured in this run (8192^3)."""
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    b = torch.randn_like(a)
    return 2 * 8192 ** 3 / timed(lambda: a @ b, reps=10)


def copy_bandwidth():
    x = torch.empty(int(2e9) // 2, dtype=torch.bfloat16, device="cuda")
    y = torch.empty_like(x)
    t = timed(lambda: y.copy_(x), reps=10)
    return 2 * x.numel() * 2 / t


def decode_case(batch, ctx, window, block=16, hq=64, hk=8, d=64):
    """Graph-replay times with sinks and without, bytes moved, eager time of a call."""
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
    s = torch.randn(hq, device="cuda")

    def calls(sinks):
        return [lambda kc=kc, vc=vc: aiter_compat.paged_attention_decode(
            q, kc, vc, table, used, softmax_scale=0.125, window_size=window, sinks=sinks, out=out)
            for kc, vc in caches]
    # Sinks on and off: two sets of graphs on the same inputs, timed in alternating runs of ten
    # replays (each replay queued behind a spin kernel, so a switch of graph costs the GPU
    # nothing), 90 replays each, medians.
    on, off = graph_replay(calls(s)), graph_replay(calls(None))
    t, t_off = timed_pair(on, off, reps=90, run=10)
    mean_on, mean_off = back_to_back(on, off)
    # The same replays, each launched onto an idle GPU (the measure before version 9): the
    # device time plus the graph launch's latency, what one isolated graph per call costs.
    t_idle = timed(on, queued=False)
    host = timed(calls(s)[0], reps=20, queued=False)  # eager: kernel plus the host path of one call
    read = 2 * batch * min(ctx, window[0] + 1 if window[0] >= 0 else ctx) * hk * d * 2
    return t, t_off, read + 2 * q.numel() * 2, host, t_idle, mean_on / mean_off - 1


def sdpa_decode(batch, ctx, backend, hq=64, hk=8, d=64):
    kv_bytes = 2 * batch * ctx * hk * d * 2
    copies = max(1, int(3 * L2_BYTES // kv_bytes) + 1)
    kvs = [tuple(torch.randn(batch, hk, ctx, d, dtype=torch.bfloat16, device="cuda") for _ in range(2))
           for _ in range(copies)]  # K and V apart: each byte read once, as in ours
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


def prefill_case(batch, seqlen, d, window, hq=64, hk=8):
    """Our varlen prefill (causal) timed eagerly with sinks and without, alternating; FLOPs with
    causal (and window) pairs only."""
    q = torch.randn(batch * seqlen, hq, d, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(batch * seqlen, hk, d, dtype=torch.bfloat16, device="cuda")
    v = torch.randn_like(k)
    cu = torch.arange(0, (batch + 1) * seqlen, seqlen, dtype=torch.int32, device="cuda")
    s = torch.randn(hq, device="cuda")
    out = torch.empty_like(q)

    def call(sinks):
        return lambda: aiter_compat.flash_attn_varlen_func(q, k, v, cu, cu, seqlen, seqlen, causal=True,
                                                           window_size=window, sink_ptr=sinks, out=out)
    t, t_off = timed_pair(call(s), call(None), reps=12, run=3)
    span = window[0] + 1 if window[0] >= 0 else seqlen
    pairs = sum(min(i + 1, span) for i in range(seqlen)) * batch
    return t, t_off, 4 * pairs * hq * d


def sdpa_prefill(batch, seqlen, d, backend, hq=64, hk=8):
    q = torch.randn(batch, hq, seqlen, d, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(batch, hk, seqlen, d, dtype=torch.bfloat16, device="cuda")
    v = torch.randn_like(k)
    from torch.nn.attention import sdpa_kernel

    def run():
        with sdpa_kernel(backend):
            F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    try:
        return timed(run, reps=10)
    except RuntimeError:
        return float("nan")


def ratio(peer_us, ours_us):
    return peer_us / ours_us if peer_us == peer_us else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", help="run only the cases whose name matches this regular expression")
    args = ap.parse_args()
    import re
    wanted = (lambda name: re.search(args.only, name) is not None) if args.only else (lambda name: True)
    from torch.nn.attention import SDPBackend
    peers = (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION))
    bw = copy_bandwidth()
    matmul = matmul_rate()
    rows = []
    shapes = [(1, 32768), (4, 32768), (64, 4096), (128, 4096)] if args.quick else \
        [(b, c) for b in (1, 4, 16, 64, 128) for c in (4096, 32768)]
    decode_case(*shapes[0], (-1, -1))  # warm-up: clocks, the memory pool, module loading
    for batch, ctx in shapes:
        for window in ((-1, -1), (127, 0)):
            name = f"decode {batch}x{ctx // 1024}k {'win128' if window[0] >= 0 else 'full'}"
            if not wanted(name):
                continue
            t, t_off, moved, host, t_idle, sink_cost = decode_case(batch, ctx, window)
            row = {"case": name,
                   "us": t * 1e6, "TB/s": moved / t / 1e12, "pct_ceiling": 100 * moved / t / bw,
                   "sinks_off_us": t_off * 1e6, "sinks_cost_pct": 100 * sink_cost,
                   "sinks_cost_pct_medians": 100 * (t / t_off - 1),
                   "eager_call_us": host * 1e6, "idle_launch_us": t_idle * 1e6}
            if window[0] < 0:
                for name, be in peers:
                    row[f"{name}_us"] = sdpa_decode(batch, ctx, be) * 1e6
                    row[f"{name}/ours"] = ratio(row[f"{name}_us"], row["us"])
            rows.append(row)
    prefill = [(4, 4096), (1, 16384)] if not args.quick else [(4, 4096)]
    for d in (64, 128):
        for batch, seqlen in prefill:
            for window in ((-1, -1), (127, 0)):
                name = f"prefill d{d} {batch}x{seqlen // 1024}k {'win128' if window[0] >= 0 else 'causal'}"
                if not wanted(name):
                    continue
                t, t_off, flops = prefill_case(batch, seqlen, d, window)
                row = {"case": name,
                       "us": t * 1e6, "TFLOP/s": flops / t / 1e12, "pct_ceiling": 100 * flops / t / matmul,
                       "sinks_off_us": t_off * 1e6, "sinks_cost_pct": 100 * (t / t_off - 1)}
                if window[0] < 0:
                    for name, be in peers:
                        row[f"{name}_us"] = sdpa_prefill(batch, seqlen, d, be) * 1e6
                        row[f"{name}/ours"] = ratio(row[f"{name}_us"], row["us"])
                rows.append(row)
    print(f"copy bandwidth (read + write): {bw / 1e12:.2f} TB/s; bf16 dense matmul: "
          f"{matmul / 1e12:.0f} TFLOP/s (the two ceilings)")
    print(f"{'case':28s} {'us':>9s} {'rate':>7s} {'%ceil':>6s} {'no-sink us':>10s} {'sink %':>6s} {'eager us':>9s} {'idle us':>8s} "
          f"{'cudnn us':>9s} {'cudnn/us':>8s} {'flash us':>9s} {'flash/us':>8s}")
    nan = float("nan")
    for r in rows:
        rate = r.get("TB/s", r.get("TFLOP/s"))
        print(f"{r['case']:28s} {r['us']:9.1f} {rate:7.2f} {r['pct_ceiling']:6.1f} {r['sinks_off_us']:10.1f} "
              f"{r['sinks_cost_pct']:6.1f} {r.get('eager_call_us', nan):9.1f} {r.get('idle_launch_us', nan):8.1f} {r.get('cudnn_us', nan):9.1f} "
              f"{r.get('cudnn/ours', nan):8.2f} {r.get('flash_us', nan):9.1f} {r.get('flash/ours', nan):8.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"copy_bandwidth_TBps": bw / 1e12, "matmul_TFLOPs": matmul / 1e12,
                       "device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
