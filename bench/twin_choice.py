#!/usr/bin/env python3
"""Where the warpgroup kernels' producer twins win: head dim 64 prefill and extend shapes timed on
the default kernels (AITER_COMPAT_WGMMA_PRODUCER=0), on the twins (=1) and on the launcher's own
choice (=auto: launch.cpp, takes_producer_twin), each mode in its own process (the launcher reads
the variable when its kernels load), the modes alternated round by round on the same card.

A good choice makes "auto" the faster of the other two in every row (its ratio to their minimum
near 1.00); a row where it is not says which shape the choice gets wrong. GPT-OSS heads (64 query,
8 KV), sinks on, causal, bf16, timed eagerly (aiter_compat.bench.timed_pair's medians).

    bench/twin_choice.py [--rounds N] [--only REGEX] [--json OUT]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

MODES = {"default": "0", "twins": "1", "auto": "auto"}
# (batch, new tokens a sequence, keys a sequence, window left or -1): prefill where the two lengths
# are equal, extend (new tokens over a cached prefix) where they are not.
SHAPES = [(1, 1024, 1024, -1), (8, 1024, 1024, -1), (1, 4096, 4096, -1), (4, 4096, 4096, -1), (16, 4096, 4096, -1),
          (1, 16384, 16384, -1), (4, 4096, 4096, 1023), (4, 4096, 4096, 511), (4, 4096, 4096, 127), (64, 256, 256, -1),
          (4, 300, 4096, -1), (16, 300, 4096, -1), (4, 1536, 4096, -1), (1, 2048, 8192, -1), (32, 128, 4096, -1)]


def shape_name(batch, q_len, k_len, window):
    kind = f"{batch}x{q_len}" if q_len == k_len else f"extend {batch}x{q_len}/{k_len}"
    return f"d64 {kind} " + (f"win{window + 1}" if window >= 0 else "causal")


def worker(only):
    """This process's mode (from the environment), every shape: {name: microseconds}."""
    import torch
    import aiter_compat
    from aiter_compat import bench as B

    out = {}
    for batch, q_len, k_len, window in SHAPES:
        name = shape_name(batch, q_len, k_len, window)
        if only and not re.search(only, name):
            continue
        q = torch.randn(batch * q_len, 64, 64, dtype=torch.bfloat16, device="cuda")
        k = torch.randn(batch * k_len, 8, 64, dtype=torch.bfloat16, device="cuda")
        v = torch.randn_like(k)
        cq = torch.arange(0, (batch + 1) * q_len, q_len, dtype=torch.int32, device="cuda")
        ck = torch.arange(0, (batch + 1) * k_len, k_len, dtype=torch.int32, device="cuda")
        sinks, o = torch.randn(64, device="cuda"), torch.empty_like(q)
        w = (window, 0) if window >= 0 else (-1, -1)

        def call():
            aiter_compat.flash_attn_varlen_func(q, k, v, cq, ck, q_len, k_len, causal=True, window_size=w,
                                                sink_ptr=sinks, out=o)
        t, _ = B.timed_pair(call, call, reps=12, run=3)
        out[name] = t * 1e6
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", help="only the shapes whose name matches this regular expression")
    ap.add_argument("--json")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        json.dump(worker(args.only), sys.stdout)
        return
    times = {mode: {} for mode in MODES}
    for _ in range(args.rounds):
        for mode, value in MODES.items():
            env = dict(os.environ, AITER_COMPAT_WGMMA_PRODUCER=value)
            cmd = [sys.executable, __file__, "--worker"] + (["--only", args.only] if args.only else [])
            run = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"{mode} (AITER_COMPAT_WGMMA_PRODUCER={value}) failed:\n{run.stderr[-2000:]}")
            for name, us in json.loads(run.stdout).items():
                times[mode].setdefault(name, []).append(us)
    rows = []
    print(f"{'shape':34s} {'default':>9s} {'twins':>9s} {'auto':>9s}  auto / faster")
    for name in times["default"]:
        med = {mode: statistics.median(times[mode][name]) for mode in MODES}
        ratio = med["auto"] / min(med["default"], med["twins"])
        rows.append({"case": name, **{f"{mode}_us": med[mode] for mode in MODES}, "auto_over_faster": ratio})
        print(f"{name:34s} {med['default']:9.1f} {med['twins']:9.1f} {med['auto']:9.1f}  {ratio:5.2f}", flush=True)
    if args.json:
        import torch
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "rounds": args.rounds, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
