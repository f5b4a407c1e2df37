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
GPT-OSS heads; head dim 256 causal on the same heads) is timed eagerly; causal FLOPs count only the pairs computed.
vLLM's Triton kernel (bench/vllm_triton_peer.py: paged, sinks on, every case) is the third peer
where vLLM is importable. Ratios are peer
time / our time (above 1: we are faster). Prints a table, writes JSON. The cases and the timing
helpers are aiter_compat.bench's (what `aiter-compat bench` runs for users), one definition.

    bench/gpu_attention.py [--json OUT] [--quick] [--only REGEX]
"""
import argparse
import sys

import torch  # noqa: F401 (the GPU; aiter_compat.bench imports it too)

import vllm_triton_peer

from aiter_compat.bench import (  # noqa: F401 (the shared cases and timing helpers)
    L2_BYTES, back_to_back, copy_bandwidth, decode_case, decode_name, decode_shapes, event_time, graph_replay,
    matmul_rate, prefill_case, prefill_name, prefill_shapes, prefill_windows, ratio, sdpa_decode, sdpa_prefill, timed, timed_graphs,
    timed_pair, write_results, DECODE_WINDOWS, FP8_DECODE_WINDOWS, PREFILL_DIMS, PREFILL_WINDOWS)


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
    vllm, why_not = vllm_triton_peer.load()
    if why_not:
        print(f"vLLM Triton column left empty: {why_not}")

    def vllm_peer(row, timing):
        """vLLM's Triton kernel on the same case (sinks on, paged), where vLLM is installed."""
        if not vllm:
            return
        try:
            row["vllm_us"] = timing() * 1e6
        except Exception as e:  # a failure of the peer's kernel on this case: its column empty, and why
            print(f"vLLM Triton on {row['case']}: {type(e).__name__}: {str(e)[:300]}")
            row["vllm_us"] = float("nan")
        row["vllm/ours"] = ratio(row["vllm_us"], row["us"])
    bw = copy_bandwidth()
    matmul = matmul_rate()
    rows = []

    def keep(row):
        """A finished case: kept, and the JSON rewritten, so that a run cut short keeps its rows."""
        rows.append(row)
        if args.json:
            write_results(args.json, rows, bw, matmul)
    shapes = decode_shapes(args.quick)
    decode_case(*shapes[0], (-1, -1))  # warm-up: clocks, the memory pool, module loading
    for batch, ctx in shapes:
        for window in DECODE_WINDOWS:
            name = decode_name(batch, ctx, window)
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
            vllm_peer(row, lambda: vllm_triton_peer.decode_time(vllm, batch, ctx, window))
            keep(row)
    # Decode over an fp8 cache: half the bytes of the same shape in bf16; the peers are the bf16
    # ones on that shape (torch's SDPA takes no fp8 cache under bf16 queries).
    for batch, ctx in shapes:
        for window in FP8_DECODE_WINDOWS:
            name = decode_name(batch, ctx, window, "fp8")
            if not wanted(name):
                continue
            t, t_off, moved, host, t_idle, sink_cost = decode_case(batch, ctx, window, kv="fp8")
            row = {"case": name,
                   "us": t * 1e6, "TB/s": moved / t / 1e12, "pct_ceiling": 100 * moved / t / bw,
                   "sinks_off_us": t_off * 1e6, "sinks_cost_pct": 100 * sink_cost,
                   "sinks_cost_pct_medians": 100 * (t / t_off - 1),
                   "eager_call_us": host * 1e6, "idle_launch_us": t_idle * 1e6}
            for peer, be in peers:
                row[f"{peer}_us"] = sdpa_decode(batch, ctx, be) * 1e6
                row[f"{peer}/ours"] = ratio(row[f"{peer}_us"], row["us"])
            vllm_peer(row, lambda: vllm_triton_peer.decode_time(vllm, batch, ctx, window, kv="fp8"))
            keep(row)
    for d in PREFILL_DIMS:
        for batch, seqlen in prefill_shapes(args.quick, d):
            for window in prefill_windows(d):
                name = prefill_name(d, batch, seqlen, window)
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
                vllm_peer(row, lambda: vllm_triton_peer.prefill_time(vllm, batch, seqlen, d, window))
                keep(row)
    print(f"copy bandwidth (read + write): {bw / 1e12:.2f} TB/s; bf16 dense matmul: "
          f"{matmul / 1e12:.0f} TFLOP/s (the two ceilings)")
    print(f"{'case':28s} {'us':>9s} {'rate':>7s} {'%ceil':>6s} {'no-sink us':>10s} {'sink %':>6s} {'eager us':>9s} {'idle us':>8s} "
          f"{'cudnn us':>9s} {'cudnn/us':>8s} {'flash us':>9s} {'flash/us':>8s} {'vllm us':>9s} {'vllm/us':>8s}")
    nan = float("nan")
    for r in rows:
        rate = r.get("TB/s", r.get("TFLOP/s"))
        print(f"{r['case']:28s} {r['us']:9.1f} {rate:7.2f} {r['pct_ceiling']:6.1f} {r['sinks_off_us']:10.1f} "
              f"{r['sinks_cost_pct']:6.1f} {r.get('eager_call_us', nan):9.1f} {r.get('idle_launch_us', nan):8.1f} {r.get('cudnn_us', nan):9.1f} "
              f"{r.get('cudnn/ours', nan):8.2f} {r.get('flash_us', nan):9.1f} {r.get('flash/ours', nan):8.2f} "
              f"{r.get('vllm_us', nan):9.1f} {r.get('vllm/ours', nan):8.2f}")


if __name__ == "__main__":
    sys.exit(main())
