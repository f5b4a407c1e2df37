#!/usr/bin/env python3
"""Decode timings of the build on PYTHONPATH, for comparing builds of the project in one GPU run.

Run it once per build, alternating the builds (A, B, A, B), each with its own PYTHONPATH and
AITER_COMPAT_PYTHONPATH; the runs' medians are then comparable because the card, its clocks and
the inputs are the same. Our kernel only: paged cache (block 16), GPT-OSS heads (64 query, 8 KV,
head dim 64), sinks on, one CUDA graph per KV copy replayed in rotation, each replay queued
behind a spin kernel (aiter_compat.bench: the same inputs as gpu_attention.py's decode cases),
median of 60. Peers and ceilings are gpu_attention.py's; this script is the quick A/B.

    bench/decode_builds.py TAG [--json OUT] [--only REGEX]
"""
import argparse
import json
import re

import torch

import aiter_compat
from aiter_compat import bench as B

# (batch, context, window, KV cache type)
CASES = [(64, 4096, (127, 0), "bf16"), (128, 4096, (127, 0), "bf16"), (64, 4096, (-1, -1), "bf16"),
         (1, 32768, (-1, -1), "bf16"), (64, 4096, (-1, -1), "fp8"), (128, 4096, (-1, -1), "fp8")]


def case_name(batch, ctx, window, kv):
    return f"{batch}x{ctx // 1024}k {'win128' if window[0] >= 0 else 'full'} {kv}"


def decode_time(batch, ctx, window, kv, block=16, hq=64, hk=8, d=64):
    """Seconds per call: median of 60 graph replays, each on fresh KV bytes (copies beyond the L2)."""
    per = (ctx + block - 1) // block
    elem = 1 if kv == "fp8" else 2
    copies = B.kv_copies(2 * batch * ctx * hk * d * elem)
    caches = [(B.kv_cache((batch * per, block, hk, d), kv), B.kv_cache((batch * per, block, hk, d), kv)) for _ in range(copies)]
    scales = B.kv_scales(kv)
    table = torch.arange(batch * per, dtype=torch.int32, device="cuda").reshape(batch, per)
    used = torch.full((batch,), ctx, dtype=torch.int32, device="cuda")
    q = torch.randn(batch, hq, d, dtype=torch.bfloat16, device="cuda")
    out = torch.empty_like(q)
    sinks = torch.randn(hq, device="cuda")
    calls = [lambda kc=kc, vc=vc: aiter_compat.paged_attention_decode(
        q, kc, vc, table, used, softmax_scale=0.125, window_size=window, sinks=sinks, out=out, **scales) for kc, vc in caches]
    return B.timed(B.graph_replay(calls), reps=60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tag", help="the build's name in the output")
    ap.add_argument("--json")
    ap.add_argument("--only", help="only the cases whose name matches this regular expression")
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
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "build": args.tag, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
