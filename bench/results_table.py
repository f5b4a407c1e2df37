#!/usr/bin/env python3
"""Markdown table of a bench/gpu_attention.py JSON (for docs/kernel-notes.md and the README).

    bench/results_table.py bench/results/h200.json
"""
import json
import sys


def fmt(v, digits=1):
    return "" if v is None or v != v else f"{v:.{digits}f}"


def main(path):
    d = json.load(open(path))
    print(f"{d['device']}, torch {d.get('torch', '?')}; ceilings measured in the same run: copy "
          f"{d['copy_bandwidth_TBps']:.2f} TB/s (read + write), bf16 matmul {d['matmul_TFLOPs']:.0f} TFLOP/s. "
          "Ratios: peer time / our time (above 1: ours is faster); peers have no sinks and a contiguous cache. "
          "Device times: each call queued behind a spin kernel; idle-GPU graph: the same graph replay "
          "launched onto an idle GPU (device time plus the launch latency); eager: one call from Python.\n")
    print("| case | ours µs | TB/s or TFLOP/s | % of ceiling | sinks off µs | sink cost % | idle-GPU graph µs "
          "| eager µs | cuDNN µs | cuDNN/ours | flash µs | flash/ours |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in d["rows"]:
        rate = r.get("TB/s", r.get("TFLOP/s"))
        print(f"| {r['case']} | {fmt(r['us'])} | {fmt(rate, 2)} | {fmt(r['pct_ceiling'])} | {fmt(r['sinks_off_us'])} "
              f"| {fmt(r['sinks_cost_pct'])} | {fmt(r.get('idle_launch_us'))} | {fmt(r.get('eager_call_us'))} "
              f"| {fmt(r.get('cudnn_us'))} | {fmt(r.get('cudnn/ours'), 2)} "
              f"| {fmt(r.get('flash_us'))} | {fmt(r.get('flash/ours'), 2)} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/results/h200.json")
