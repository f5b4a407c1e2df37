#!/usr/bin/env python3
"""Added cost per call of aiter_compat on the AITer route, against calling the same AITer
function directly in the same run (goal: under 1 microsecond, median).

The AITer here is the fixture package of a matrix entry (default main), whose functions only
record their arguments, and the tensors are stand-ins with shape, dtype and __dlpack_device__:
so the difference between the two timings is the shim alone (binding the call, reading the
features, looking the route up, forwarding by keyword). The last columns time the same calls
through AITer's own names after aiter_compat.install() (what an unmodified engine calls).

    bench/dispatch_overhead.py [--release main] [--calls 20000] [--repeats 15] [--json OUT]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)

CHILD = r'''
import json, statistics, sys, timeit
import aiter, aiter_compat
sys.path.insert(0, sys.argv[1])
from vllm_calls import prefill, decode
calls, repeats = int(sys.argv[2]), int(sys.argv[3])
rows = {}
for name, op, kwargs in [("flash_attn_varlen_func (vLLM prefill, sinks)", "flash_attn_varlen_func", prefill(True)),
                         ("unified_attention (vLLM decode, sinks)", "unified_attention", decode(True))]:
    ours = getattr(aiter_compat, op)
    ours(**kwargs)  # first call probes and decides the route
    direct = getattr(aiter, op) if hasattr(aiter, op) else getattr(
        __import__("aiter.ops.triton.attention.unified_attention", fromlist=[op]), op)
    direct_kwargs = kwargs  # what vLLM passes to a current AITer
    direct(**direct_kwargs)
    def clear():
        aiter.CALLS.clear()
    t_ours, t_direct = [], []
    for _ in range(repeats):
        clear()
        t_direct.append(min(timeit.repeat(lambda: direct(**direct_kwargs), number=calls, repeat=1)) / calls * 1e9)
        clear()
        t_ours.append(min(timeit.repeat(lambda: ours(**kwargs), number=calls, repeat=1)) / calls * 1e9)
    rows[name] = {"direct_ns": statistics.median(t_direct), "aiter_compat_ns": statistics.median(t_ours),
                  "added_ns": statistics.median(o - d for o, d in zip(t_ours, t_direct)),
                  "op": op, "kwargs": kwargs, "t_direct": t_direct}
# The same calls through AITer's own names after install() (what an unmodified engine calls).
aiter_compat.install()
for name, row in rows.items():
    op, kwargs, t_direct = row.pop("op"), row.pop("kwargs"), row.pop("t_direct")
    module = aiter if op != "unified_attention" else __import__(
        "aiter.ops.triton.attention.unified_attention", fromlist=[op])
    patched = getattr(module, op)
    t_patched = []
    for _ in range(repeats):
        aiter.CALLS.clear()
        t_patched.append(min(timeit.repeat(lambda: patched(**kwargs), number=calls, repeat=1)) / calls * 1e9)
    row["installed_ns"] = statistics.median(t_patched)
    row["installed_added_ns"] = statistics.median(p - d for p, d in zip(t_patched, t_direct))
print(json.dumps(rows))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--release", default="main")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--build-python", default=os.path.join(SOURCE, "build", "python"))
    ap.add_argument("--json")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(SOURCE, "tests", "fixtures"))
    import make_fixture
    with tempfile.TemporaryDirectory() as site:
        make_fixture.make_fixture(make_fixture.load_matrix(os.path.join(SOURCE, "compat_matrix.yaml")),
                                  args.release, site)
        env = dict(os.environ, PYTHONPATH=f"{args.build_python}:{site}", AITER_COMPAT_LOG_LEVEL="off")
        proc = subprocess.run([sys.executable, "-c", CHILD, os.path.join(SOURCE, "tests", "python"),
                               str(args.calls), str(args.repeats)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(proc.stderr)
    rows = json.loads(proc.stdout)
    print(f"AITer fixture {args.release}; medians of {args.repeats} runs of {args.calls} calls")
    print(f"{'call':48s} {'direct ns':>10s} {'via shim ns':>12s} {'added ns':>9s} {'installed ns':>13s} "
          f"{'added ns':>9s}")
    for name, r in rows.items():
        print(f"{name:48s} {r['direct_ns']:10.0f} {r['aiter_compat_ns']:12.0f} {r['added_ns']:9.0f} "
              f"{r['installed_ns']:13.0f} {r['installed_added_ns']:9.0f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"release": args.release, "rows": rows}, f, indent=2)
    return 0 if all(r["added_ns"] < 1000 for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
