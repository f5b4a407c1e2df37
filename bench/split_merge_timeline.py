#!/usr/bin/env python3
"""Where a split-KV decode's time goes: the split kernel, the merge and what lies between them,
read from the GPU's own kernel timestamps (torch.profiler, CUPTI) over graph replays of one
decode call (GPT-OSS heads, paged cache, block 16, sinks). Run it twice to compare the merge
launched as the split kernel's programmatic dependent (the default on sm_90) with the merge
launched after it (AITER_COMPAT_NO_PDL=1).

    bench/split_merge_timeline.py [--batch 1] [--ctx 32768] [--kv bf16|fp8] [--compare] [--json OUT]

--compare captures the call twice in one process, once as each launch (the flag is read when the
call is captured), and replays the two graphs alternately: both medians from the same minutes.

Per replay: split kernel start to end, merge start to end, the merge's start after the split's
end (negative: it was resident before the split kernel finished) and the whole call (split start
to merge end); medians over the replays."""
import argparse
import json
import os
import statistics
import sys

import torch

import aiter_compat
from aiter_compat.bench import kv_cache, kv_scales


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--ctx", type=int, default=32768)
    ap.add_argument("--kv", choices=("bf16", "fp8"), default="bf16")
    ap.add_argument("--replays", type=int, default=50)
    ap.add_argument("--compare", action="store_true", help="both launches, alternately, in this one run")
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
    modes = (False, True) if args.compare else (os.environ.get("AITER_COMPAT_NO_PDL", "0") not in ("", "0"),)
    graphs = [capture(call, stream, no_pdl) for no_pdl in modes]
    for _ in range(10):
        for graph in graphs:
            graph.replay()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(args.replays):
            for graph in graphs:  # alternately, when comparing
                graph.replay()
                torch.cuda.synchronize()  # one replay at a time: each call's own timeline
    kernels = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                      and e.name.startswith("ac_")), key=lambda e: e.time_range.start)
    splits = [e for e in kernels if not e.name.startswith("ac_merge")]
    merges = [e for e in kernels if e.name.startswith("ac_merge")]
    if not merges or len(splits) != len(merges) or len(splits) != args.replays * len(graphs):
        print(f"no split call: {len(splits)} kernels ({sorted({e.name for e in splits})}), {len(merges)} merges")
        return 1
    results = []
    for i, no_pdl in enumerate(modes):
        rows = [timeline(s, m) for s, m in list(zip(splits, merges))[i::len(modes)]]
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        result = {"case": f"decode {args.batch}x{args.ctx // 1024}k {args.kv}", "split_kernel": splits[0].name,
                  "programmatic_merge": not no_pdl, "replays": len(rows), "medians": med,
                  "device": torch.cuda.get_device_name()}
        print(f"{result['case']} ({result['split_kernel']}, programmatic merge: {result['programmatic_merge']}), "
              f"medians of {len(rows)} replays: split {med['split_us']:.1f} us, merge {med['merge_us']:.1f} us, "
              f"merge start - split end {med['merge_start_after_split_end_us']:.1f} us, call {med['call_us']:.1f} us")
        results.append(result)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results if args.compare else results[0], f, indent=1)
    return 0


def capture(call, stream, no_pdl):
    """The call captured in a graph with the merge launched as the flag says (read at capture)."""
    before = os.environ.get("AITER_COMPAT_NO_PDL")
    os.environ["AITER_COMPAT_NO_PDL"] = "1" if no_pdl else "0"
    try:
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                call()
        stream.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            call()
        return graph
    finally:
        if before is None:
            del os.environ["AITER_COMPAT_NO_PDL"]
        else:
            os.environ["AITER_COMPAT_NO_PDL"] = before


def timeline(s, m):
    return {"split_us": s.time_range.end - s.time_range.start,
            "merge_us": m.time_range.end - m.time_range.start,
            "merge_start_after_split_end_us": m.time_range.start - s.time_range.end,
            "call_us": m.time_range.end - s.time_range.start}


if __name__ == "__main__":
    sys.exit(main())
