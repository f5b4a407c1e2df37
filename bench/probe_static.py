#!/usr/bin/env python3
"""Wall time of `aiter-compat probe --aiter-root TREE` (static channel: start-up, reading the
sources with ast, native scan, GPU probe, matrix), against a peer measured in the same run:
the version-only check engines do today (`importlib.metadata.version`), which says nothing
about signatures. Median of N runs each.

    bench/probe_static.py [--cli build/aiter-compat] [--tree DIR] [--runs 30] [--json OUT]

TREE defaults to the newest published amd-aiter wheel in the test cache, unpacked, or else the
fixture of the matrix's main entry.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)


def default_tree(workdir):
    wheels = sorted(glob.glob(os.path.expanduser("~/.cache/aiter-compat/wheels/amd_aiter-*.whl")))
    if wheels:
        with zipfile.ZipFile(wheels[-1]) as z:
            z.extractall(workdir)
        return workdir, os.path.basename(wheels[-1])
    sys.path.insert(0, os.path.join(SOURCE, "tests", "fixtures"))
    import make_fixture
    make_fixture.make_fixture(make_fixture.load_matrix(os.path.join(SOURCE, "compat_matrix.yaml")), "main", workdir)
    return workdir, "fixture of matrix entry main"


def time_command(cmd, runs, env=None, check=True):
    times = []
    for _ in range(runs + 2):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=check, env=env)
        times.append((time.perf_counter() - t) * 1000)
    return times[2:]  # first runs warm the page cache


def count_sources(tree):
    files = [f for f in glob.glob(os.path.join(tree, "aiter", "**", "*.py"), recursive=True)]
    return len(files), sum(os.path.getsize(f) for f in files)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(SOURCE, "build", "aiter-compat"))
    ap.add_argument("--tree")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        tree, what = (args.tree, args.tree) if args.tree else default_tree(work)
        nfiles, nbytes = count_sources(tree)
        probe = time_command([args.cli, "probe", "--json", "--aiter-root", tree], args.runs)
        env = dict(os.environ, PYTHONPATH=tree)
        peer = time_command([sys.executable, "-c", "import importlib.metadata as m; m.version('amd-aiter')"],
                            args.runs, env, check=False)  # fails on a source tree: no metadata
        python_start = time_command([sys.executable, "-c", "pass"], args.runs)
    rows = {
        "aiter-compat probe (static, whole report)": probe,
        "peer: importlib.metadata.version only": peer,
        "floor: python3 -c pass": python_start,
    }
    print(f"tree: {what} ({nfiles} Python files, {nbytes / 1e6:.1f} MB)")
    print(f"{'what':45s} {'median ms':>10s} {'p90 ms':>8s}")
    for name, t in rows.items():
        print(f"{name:45s} {statistics.median(t):10.1f} {sorted(t)[int(0.9 * len(t)) - 1]:8.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"tree": what, "files": nfiles, "bytes": nbytes,
                       "median_ms": {k: statistics.median(v) for k, v in rows.items()}}, f, indent=2)
    return 0 if statistics.median(probe) < 100 else 1


if __name__ == "__main__":
    sys.exit(main())
