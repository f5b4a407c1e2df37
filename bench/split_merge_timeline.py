#!/usr/bin/env python3
"""Where a split-KV decode's time goes, read from the GPU's own kernel timestamps (torch.profiler,
CUPTI) over graph replays of one decode call (GPT-OSS heads, paged cache, block 16, sinks). A
split call is two kernels, in one of four modes, captured each in its own graph and replayed
alternately, so that every mode's medians come from the same minutes:

  fold         the kernel that zeroes the arrival counters, then the "keys" split kernel, which
               folds the merge into each KV head's last split block, as its programmatic
               dependent on sm_90 (AITER_COMPAT_SPLIT_MERGE=fold)
  fold-plain   the same, launched one after the other (and AITER_COMPAT_NO_PDL=1)
  merge        the split kernel, then the merge kernel as its programmatic dependent
               (AITER_COMPAT_SPLIT_MERGE=kernel, the default)
  merge-plain  the same, launched one after the other (and AITER_COMPAT_NO_PDL=1)

    bench/split_merge_timeline.py [--batch 1] [--ctx 32768] [--kv bf16|fp8] [--modes fold,merge]
                                  [--max-splits N] [--json OUT]

The flags are read when a call is captured. Per replay: each kernel's start to end, the second's
start after the first's end (negative: it was resident before the first finished) and the whole
call (first start to second end); medians over the replays."""
import argparse
import json
import os
import statistics
import sys

import torch

import aiter_compat
from aiter_compat.bench import capture, kv_cache, kv_scales


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--ctx", type=int, default=32768)
    ap.add_argument("--kv", choices=("bf16", "fp8"), default="bf16")
    ap.add_argument("--replays", type=int, default=50)
    ap.add_argument("--modes", default="fold,merge", help="comma-separated: " + ", ".join(MODES))
    ap.add_argument("--max-splits", type=int, default=0, help="AITER_COMPAT_MAX_SPLITS for every mode (0: the launcher's count)")
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.manual_seed(0)
    dev, hq, hk, d, bs = "cuda", 64, 8, 64, 16
    pages = args.batch * args.ctx // bs
    kc, vc = kv_cache((pages, bs, hk, d), args.kv), kv_cache((pages, bs, hk, d), args.kv)
    scales = kv_scales(args.kv)
    table = torch.randperm(pages, device=dev).to(torch.int32).reshape(args.batch, -1)
    used = torch.full((args.batch,), args.ctx, dtype=torch.int32, device=dev)
    q = torch.randn(args.batch, hq, d, dtype=torch.bfloat16, device=dev)
    sinks = torch.randn(hq, device=dev)
    out = torch.empty_like(q)
    call = lambda: aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=0.125, sinks=sinks,
                                                       out=out, **scales)
    stream = torch.cuda.Stream()
    modes = args.modes.split(",")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        print(f"unknown modes {unknown}: choose from {', '.join(MODES)}")
        return 2
    cap = {"AITER_COMPAT_MAX_SPLITS": str(args.max_splits)} if args.max_splits > 0 else {}
    graphs = [capture_in_mode(call, stream, {**MODES[mode], **cap}) for mode in modes]
    for _ in range(10):
        for graph in graphs:
            graph.replay()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(args.replays):
            for graph in graphs:  # alternately
                graph.replay()
                torch.cuda.synchronize()  # one replay at a time: each call's own timeline
    kernels = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                      and e.name.startswith("ac_")), key=lambda e: e.time_range.start)
    if len(kernels) != 2 * args.replays * len(graphs):
        print(f"not two kernels per split call: {len(kernels)} kernels ({sorted({e.name for e in kernels})}) "
              f"for {args.replays * len(graphs)} calls")
        return 1
    calls = list(zip(kernels[0::2], kernels[1::2]))
    results = []
    for i, mode in enumerate(modes):
        rows = [timeline(a, b) for a, b in calls[i::len(modes)]]
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        first, second = calls[i][0].name, calls[i][1].name
        result = {"case": f"decode {args.batch}x{args.ctx // 1024}k {args.kv}", "mode": mode,
                  "max_splits": args.max_splits or None, "first_kernel": first,
                  "second_kernel": second, "replays": len(rows), "medians": med, "device": torch.cuda.get_device_name()}
        print(f"{result['case']} {mode:11s} ({first} then {second}), medians of {len(rows)} replays: "
              f"first {med['first_us']:.1f} us, second {med['second_us']:.1f} us, "
              f"second start - first end {med['second_start_after_first_end_us']:.1f} us, call {med['call_us']:.1f} us")
        results.append(result)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


MODES = {"fold": {"AITER_COMPAT_SPLIT_MERGE": "fold"},
         "fold-plain": {"AITER_COMPAT_SPLIT_MERGE": "fold", "AITER_COMPAT_NO_PDL": "1"},
         "merge": {"AITER_COMPAT_SPLIT_MERGE": "kernel"},
         "merge-plain": {"AITER_COMPAT_SPLIT_MERGE": "kernel", "AITER_COMPAT_NO_PDL": "1"}}
FLAGS = ("AITER_COMPAT_NO_PDL", "AITER_COMPAT_SPLIT_MERGE", "AITER_COMPAT_MAX_SPLITS")


def capture_in_mode(call, stream, flags):
    """The call captured in a graph under the mode's flags (read at capture)."""
    before = {k: os.environ.get(k) for k in FLAGS}
    for k in FLAGS:
        os.environ.pop(k, None)
    os.environ.update(flags)
    try:
        return capture(call, stream)
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def timeline(a, b):
    return {"first_us": a.time_range.end - a.time_range.start,
            "second_us": b.time_range.end - b.time_range.start,
            "second_start_after_first_end_us": b.time_range.start - a.time_range.end,
            "call_us": b.time_range.end - a.time_range.start}


if __name__ == "__main__":
    sys.exit(main())
