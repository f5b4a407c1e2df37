#!/usr/bin/env python3
"""Two builds of `aiter-compat probe --json --aiter-root TREE` timed in alternation (which one
runs first swaps every round, so both share the machine's load), per tree: each build's median
and the median of the paired differences (B - A). For a change to the static channel, where the
difference is a few milliseconds in a probe of a hundred on a shared machine.

    bench/probe_static_ab.py --a OLD_CLI --b NEW_CLI --tree DIR [--tree DIR ...] [--rounds 40]

A tree holds an `aiter` package (an unpacked release: see bench/probe_static.py); run
`python3 -m compileall -q TREE/aiter` on a copy to time an install whose __pycache__ files
exist, as pip writes them.
"""
import argparse
import statistics
import subprocess
import time


def once(cli, tree):
    start = time.perf_counter()
    subprocess.run([cli, "probe", "--json", "--aiter-root", tree], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - start) * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="the build before the change")
    ap.add_argument("--b", required=True, help="the build after it")
    ap.add_argument("--tree", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    times = {(w, t): [] for w in "ab" for t in args.tree}
    for r in range(args.rounds):
        for t in args.tree:
            for w in ("ab" if r % 2 else "ba"):
                times[(w, t)].append(once(args.a if w == "a" else args.b, t))
    for t in args.tree:
        a, b = times[("a", t)], times[("b", t)]
        diff = statistics.median(y - x for x, y in zip(a, b))
        print(f"{t}: A {statistics.median(a):.1f} ms, B {statistics.median(b):.1f} ms, paired median B - A {diff:+.1f} ms")


if __name__ == "__main__":
    main()
