#!/usr/bin/env python3
"""Decode and prefill timings of the build on PYTHONPATH, for comparing builds of the project in one GPU run.

Run it once per build, alternating the builds (A, B, A, B), each with its own PYTHONPATH and
AITER_COMPAT_PYTHONPATH; the runs' medians are then comparable because the card, its clocks and
the inputs are the same. Our kernel only: paged cache (block 16), GPT-OSS heads (64 query, 8 KV,
head dim 64), sinks on, one CUDA graph per KV copy replayed in rotation, each replay queued
behind a spin kernel (aiter_compat.bench: the same inputs as gpu_attention.py's decode cases),
median of 60. Prefill (`--prefill`): gpu_attention.py's quick prefill cases (causal and window 128
at head dims 64 and 128, causal at 256), GPT-OSS heads, sinks on, timed eagerly (aiter_compat.bench.prefill_case). Peers and
ceilings are gpu_attention.py's; this script is the quick A/B.

    bench/decode_builds.py TAG [--json OUT] [--only REGEX] [--prefill]
"""
import argparse
import json
import re

import torch

from aiter_compat import bench as B

# (batch, context, window, KV cache type)
CASES = [(64, 4096, (127, 0), "bf16"), (128, 4096, (127, 0), "bf16"), (64, 4096, (-1, -1), "bf16"),
         (1, 32768, (-1, -1), "bf16"), (64, 4096, (-1, -1), "fp8"), (128, 4096, (-1, -1), "fp8")]


def case_name(batch, ctx, window, kv):
    return f"{batch}x{ctx // 1024}k {'win128' if window[0] >= 0 else 'full'} {kv}"


def decode_time(batch, ctx, window, kv):
    """Seconds per call: median of 60 graph replays with sinks, each on fresh KV bytes."""
    calls, sinks, _ = B.decode_calls(batch, ctx, window, kv=kv)
    return B.timed(B.graph_replay(calls(sinks)), reps=60)


# (head dim, batch, sequence length, window): the quick table's prefill cases (aiter_compat.bench's)
PREFILL = [(d, batch, seqlen, window) for d in B.PREFILL_DIMS for batch, seqlen in B.prefill_shapes(True, d)
           for window in B.prefill_windows(d)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tag", help="the build's name in the output")
    ap.add_argument("--json")
    ap.add_argument("--only", help="only the cases whose name matches this regular expression")
    ap.add_argument("--prefill", action="store_true", help="the prefill cases too")
    args = ap.parse_args()
    decode_time(64, 4096, (-1, -1), "bf16")  # warm-up: module load, first graphs
    rows = []
    for batch, ctx, window, kv in CASES:
        name = case_name(batch, ctx, window, kv)
        if args.only and not re.search(args.only, name):
            continue
        t = decode_time(batch, ctx, window, kv)
        rows.append({"case": name, "us": t * 1e6})
        print(f"{args.tag:6s} {name:22s} {t * 1e6:8.1f} us", flush=True)
    for d, batch, seqlen, window in PREFILL if args.prefill else []:
        name = B.prefill_name(d, batch, seqlen, window)
        if args.only and not re.search(args.only, name):
            continue
        t, _, flops = B.prefill_case(batch, seqlen, d, window)
        rows.append({"case": name, "us": t * 1e6, "TFLOP/s": flops / t / 1e12})
        print(f"{args.tag:6s} {name:22s} {t * 1e6:8.1f} us {flops / t / 1e12:6.1f} TFLOP/s", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "build": args.tag, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
