#!/usr/bin/env python3
"""What the self-test costs on this GPU: every family built for it, measured afresh `--repeats`
times after one warm-up pass (the code object loaded, the CPU reference's outputs computed), the
median milliseconds per family, the sum per dtype and head dim (the goal: under 50 ms on the
H200), and the total. The host's clock around each family's check: staging, launches, copies
back, comparison.

    bench/selftest_cost.py [--json OUT] [--repeats N]
"""
import argparse
import json
import statistics
import sys
import time

import aiter_compat

GOAL_MS = 50.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    start = time.perf_counter()
    first = aiter_compat.warmup(fresh=True)
    first_ms = (time.perf_counter() - start) * 1e3
    if not first:
        print("no GPU: nothing to time")
        return 0
    runs = [aiter_compat.warmup(fresh=True) for _ in range(args.repeats)]
    rows = []
    for i, r in enumerate(first):
        ms = [run[i]["millis"] for run in runs]
        rows.append({"family": r["family"], "dtype": r["dtype"], "head_dim": r["head_dim"], "arch": r["arch"],
                     "verdict": runs[-1][i]["verdict"], "median_ms": statistics.median(ms), "first_ms": r["millis"]})
    groups = {}
    for r in rows:
        groups.setdefault(f"{r['dtype']} d{r['head_dim']}", []).append(r["median_ms"])
    print(f"{'family':14s} {'dtype':5s} {'dim':>4s} {'median ms':>10s} {'first ms':>9s} verdict")
    for r in rows:
        print(f"{r['family']:14s} {r['dtype']:5s} {r['head_dim']:4d} {r['median_ms']:10.2f} {r['first_ms']:9.2f} "
              f"{r['verdict']}")
    worst = 0.0
    for name, ms in groups.items():
        worst = max(worst, sum(ms))
        print(f"{name}: {sum(ms):.1f} ms for {len(ms)} families (goal {GOAL_MS:.0f} ms)")
    total = sum(r["median_ms"] for r in rows)
    print(f"all {len(rows)} families: {total:.1f} ms; the first pass in this process, module load included: "
          f"{first_ms:.1f} ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"arch": rows[0]["arch"], "rows": rows, "per_group_ms": {k: sum(v) for k, v in groups.items()},
                       "total_ms": total, "first_pass_ms": first_ms, "goal_ms": GOAL_MS}, f, indent=1)
    return 0 if worst < GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
