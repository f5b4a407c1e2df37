#!/usr/bin/env python3
"""Whether an fp8 decode is held back by the width of its rows (kernel-notes, "What falls short").

In the paged cache [pages, block, KV heads, head dim] the rows of one KV head are a KV-head
stride apart. An fp8 row at head dim 64 is 64 bytes, half of a 128-byte line; the line's other half
is the next KV head's row, which another block reads. A bf16 row at head dim 64, and an fp8 row at
head dim 128, is a whole line. This script times our decode over a bf16 cache and over an fp8
cache at head dims 64 and 128 (GPT-OSS's heads otherwise: 64 query heads, 8 KV heads, 64 x 4k, block
16, sinks on). It prints each case's share of the copy ceiling measured in the same run, and the
fp8 case's speed over the bf16 case at its head dim (the bytes allow 2x).

    bench/fp8_row_width.py [--batch 64] [--ctx 4096] [--json OUT]

If fp8 runs at the bf16 case's share of the ceiling at head dim 128 and below it at 64, the half
lines are what costs. If fp8 is below at both head dims, the cost is in the kernel's work per key."""
import argparse
import json
import sys

import torch

from aiter_compat.bench import copy_bandwidth, decode_case


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--json")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("fp8_row_width: no GPU visible to torch; nothing timed")
        return 2
    bw = copy_bandwidth()
    print(f"{torch.cuda.get_device_name(0)}; copy ceiling (read + write) {bw / 1e12:.2f} TB/s")
    rows = []
    for d in (64, 128):
        times = {}
        for kv in ("bf16", "fp8"):
            t, _, moved, *_ = decode_case(args.batch, args.ctx, (-1, -1), d=d, kv=kv)
            times[kv] = t
            row = {"head_dim": d, "kv": kv, "row_bytes": d * (1 if kv == "fp8" else 2), "us": t * 1e6,
                   "TB/s": moved / t / 1e12, "pct_ceiling": 100 * moved / t / bw}
            rows.append(row)
            print(f"decode {args.batch}x{args.ctx // 1024}k d{d} {kv:4s} (rows of {row['row_bytes']:3d} bytes): "
                  f"{row['us']:8.1f} us, {row['TB/s']:.2f} TB/s, {row['pct_ceiling']:5.1f}% of the ceiling")
        print(f"  fp8 over bf16 at d{d}: {times['bf16'] / times['fp8']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "copy_bandwidth_TBps": bw / 1e12,
                       "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
