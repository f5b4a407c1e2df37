#!/usr/bin/env python3
"""Wall time of `aiter-compat probe --json` (static channel: start-up, the tree walk, native scan,
GPU runtime, matrix) on real AITer release trees, on the fixture tree of the matrix's main entry
and with no AITer installed, against a peer measured in the same run: the version-only check
engines do today (importlib.metadata.version, reading the distribution metadata only), which
says nothing about signatures. Cases alternate round by round, so they share the machine's
load; medians and 90th percentiles of --runs rounds. Then the same probes with
AITER_COMPAT_LOG_LEVEL=debug, for where the time goes (the probe's "phase" lines).

    bench/probe_static.py --tree DIR [--tree DIR ...] [--cli build/aiter-compat] [--runs 30]
                          [--json OUT] [--label TEXT]

A tree is a folder holding an `aiter` package: site-packages, an unpacked wheel, or a release
extracted from AITer's repository (never part of this one), e.g.
    git -C AITER_REPO archive v0.1.20.post1 aiter | tar -x -C /tmp/aiter-v0.1.20.post1
Exits 1 when a release tree's median is 100 ms or more, or the no-AITer median 30 ms or more.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
TREE_LIMIT_MS, NO_AITER_LIMIT_MS = 100.0, 30.0
PHASE = re.compile(r"phase (.+): ([0-9.]+) ms$")


def count_sources(tree):
    files = glob.glob(os.path.join(tree, "aiter", "**", "*.py"), recursive=True)
    return len(files), sum(os.path.getsize(f) for f in files)


def run_once(cmd, env, check_rc=None):
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    ms = (time.perf_counter() - start) * 1000
    if check_rc is not None and proc.returncode != check_rc:
        sys.exit(f"{' '.join(cmd)}: exit status {proc.returncode}, expected {check_rc}\n{proc.stderr.decode()}")
    return ms, proc.stderr.decode(errors="replace")


def summary(times):
    ordered = sorted(times)
    return {"median_ms": statistics.median(ordered), "p90_ms": ordered[max(0, int(0.9 * len(ordered)) - 1)],
            "runs": len(ordered)}


def phases_of(stderr):
    out = {}
    for line in stderr.splitlines():
        m = PHASE.search(line)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(2))
    return out


def make_fixture_tree(workdir):
    sys.path.insert(0, os.path.join(SOURCE, "tests", "fixtures"))
    import make_fixture
    make_fixture.make_fixture(make_fixture.load_matrix(os.path.join(SOURCE, "compat_matrix.yaml")), "main", workdir)
    return workdir


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", required=True, help="a folder holding a real aiter package")
    ap.add_argument("--cli", default=os.path.join(SOURCE, "build", "aiter-compat"))
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--phase-runs", type=int, default=10, help="debug-logged runs per probe case for the breakdown")
    ap.add_argument("--json")
    ap.add_argument("--label", default="", help="what was measured (kept in the JSON), e.g. the build's commit")
    args = ap.parse_args()
    for tree in args.tree:
        if not os.path.isfile(os.path.join(tree, "aiter", "__init__.py")):
            sys.exit(f"--tree {tree}: no aiter/__init__.py in it; needed: a folder holding an aiter package")

    with tempfile.TemporaryDirectory() as work:
        fixture = make_fixture_tree(os.path.join(work, "fixture"))
        empty = os.path.join(work, "empty")
        home = os.path.join(work, "home")
        os.makedirs(empty)
        os.makedirs(home)
        # A clean environment: no aiter on PYTHONPATH unless a case puts one there, no ~/.aiter/jit.
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "PYTHONNOUSERSITE": "1"}
        probe_env = dict(base, PYTHONPATH=empty)
        cases = {}
        for tree in args.tree:
            cases[f"aiter-compat probe, tree {tree}"] = ([args.cli, "probe", "--json", "--aiter-root", tree], probe_env, 0)
        cases["aiter-compat probe, fixture tree (matrix main)"] = (
            [args.cli, "probe", "--json", "--aiter-root", fixture], probe_env, 0)
        cases["aiter-compat probe, no aiter installed"] = ([args.cli, "probe", "--json"], probe_env, 0)
        peer = [sys.executable, "-c", "import importlib.metadata as m; print(m.version('amd-aiter'))"]
        cases["peer: importlib.metadata.version, fixture site"] = (peer, dict(base, PYTHONPATH=fixture), 0)
        cases["peer: importlib.metadata.version, no aiter"] = (peer, probe_env, 1)  # PackageNotFoundError
        cases["floor: python3 -c pass"] = ([sys.executable, "-c", "pass"], base, 0)
        cases["floor: python3 -S -c pass"] = ([sys.executable, "-S", "-c", "pass"], base, 0)

        nothing = json.loads(subprocess.run(cases["aiter-compat probe, no aiter installed"][0], env=probe_env,
                                            capture_output=True, text=True).stdout)
        if nothing["aiter"]["found"]:
            sys.exit(f"the no-aiter case found one at {nothing['aiter']['path']}; needed: no aiter on the search path")

        times = {name: [] for name in cases}
        for round_no in range(args.runs + 2):  # two warm-up rounds fill the page cache
            for name, (cmd, env, rc) in cases.items():
                ms, _ = run_once(cmd, env, rc)
                if round_no >= 2:
                    times[name].append(ms)

        phases = {}
        for name, (cmd, env, rc) in cases.items():
            if not name.startswith("aiter-compat"):
                continue
            samples = []
            for _ in range(args.phase_runs):
                ms, stderr = run_once(cmd, dict(env, AITER_COMPAT_LOG_LEVEL="debug"), rc)
                p = phases_of(stderr)
                p["process start and exit (wall - main)"] = ms - p.get("main (to exit)", 0.0)
                samples.append(p)
            keys = sorted({k for s in samples for k in s})
            phases[name] = {k: statistics.median([s.get(k, 0.0) for s in samples]) for k in keys}

    results = {name: summary(t) for name, t in times.items()}
    trees = {tree: dict(zip(("files", "bytes"), count_sources(tree))) for tree in args.tree}
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end, "
          f"python {platform.python_version()}")
    for tree, info in trees.items():
        print(f"tree {tree}: {info['files']} Python files, {info['bytes'] / 1e6:.1f} MB")
    print(f"\n{'what':62s} {'median ms':>10s} {'p90 ms':>8s}")
    for name, r in results.items():
        print(f"{name:62s} {r['median_ms']:10.1f} {r['p90_ms']:8.1f}")
    for name, p in phases.items():
        print(f"\nwhere the time goes, {name} (medians of {args.phase_runs} debug-logged runs):")
        for phase, ms in p.items():
            print(f"  {phase:60s} {ms:8.2f} ms")

    failures = [f"{name}: {r['median_ms']:.1f} ms, needed < {TREE_LIMIT_MS:.0f}" for name, r in results.items()
                if name.startswith("aiter-compat probe, tree") and r["median_ms"] >= TREE_LIMIT_MS]
    none = results["aiter-compat probe, no aiter installed"]["median_ms"]
    if none >= NO_AITER_LIMIT_MS:
        failures.append(f"no aiter installed: {none:.1f} ms, needed < {NO_AITER_LIMIT_MS:.0f}")
    for f in failures:
        print("over the target:", f)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"label": args.label, "cli": args.cli, "date": datetime.date.today().isoformat(),
                       "cores": os.cpu_count(), "load_average_at_end": os.getloadavg()[0],
                       "python": platform.python_version(), "trees": trees, "results": results,
                       "phases_ms": phases, "over_target": failures}, f, indent=2)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
