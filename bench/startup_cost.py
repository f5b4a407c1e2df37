#!/usr/bin/env python3
"""What aiter_compat_autoinstall.pth costs every Python process: `python3 -c pass` timed with the
.pth and its module in a site-packages folder (a user site under a temporary PYTHONUSERBASE, which
site processes at start-up exactly as the environment's own site-packages), with
AITER_COMPAT_INSTALL unset (the hook does nothing) and =1 (the hook is armed: a finder on
sys.meta_path, aiter not imported), against the same empty folder without them. The runs of the
three cases are interleaved (drift hits all alike); the median of each, and the differences.
Also the figures inside one process, without the noise of starting one: site processing the .pth
with the variable unset (the line reads it and imports nothing), and `-X importtime`'s for the
hook's module with AITER_COMPAT_INSTALL=1.

    bench/startup_cost.py [--runs N] [--python PYTHON] [--json OUT]
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE = pathlib.Path(__file__).resolve().parent.parent
FILES = ("aiter_compat_autoinstall.pth", "_aiter_compat_autoinstall.py")
MODULE = "_aiter_compat_autoinstall"


def user_site(python, env):
    out = subprocess.run([python, "-c", "import site; print(site.ENABLE_USER_SITE, site.getusersitepackages())"],
                         capture_output=True, text=True, env=env, check=True).stdout.split()
    if out[0] != "True":
        sys.exit(f"user site-packages are disabled for {python} (site.ENABLE_USER_SITE={out[0]}): cannot time the .pth")
    return pathlib.Path(out[1])


def env_for(base, flag):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONSTARTUP", "AITER_COMPAT_INSTALL")}
    env["PYTHONUSERBASE"] = str(base)
    if flag is not None:
        env["AITER_COMPAT_INSTALL"] = flag
    return env


def once(python, env, argv=("-c", "pass")):
    start = time.perf_counter()
    proc = subprocess.run([python, *argv], capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{python} {' '.join(argv)} failed: {proc.stderr}")
    return elapsed * 1e3, proc.stderr


def import_time_us(python, env, runs):
    """Median of -X importtime's cumulative microseconds for the hook's module."""
    found = []
    for _ in range(runs):
        _, err = once(python, env, ("-X", "importtime", "-c", "pass"))
        for line in err.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) == 3 and parts[2] == MODULE:
                found.append(int(parts[1]))
    return statistics.median(found) if found else None


PROCESS_PTH = """
import site, statistics, sys, time
folder, name, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
times = []
for _ in range(reps):
    start = time.perf_counter()
    site.addpackage(folder, name, set())
    times.append(time.perf_counter() - start)
print(statistics.median(times) * 1e6)
"""


def pth_us(python, env, site_dir, reps=2000):
    """Microseconds site takes to process the .pth, in one process (variable unset: the line runs,
    nothing is imported), median of `reps` passes: the figure without process start-up's noise."""
    out = subprocess.run([python, "-c", PROCESS_PTH, str(site_dir), FILES[0], str(reps)], capture_output=True,
                         text=True, env=env, check=True).stdout
    return float(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200, help="interpreter starts per case (default 200)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bare, hooked = pathlib.Path(tmp, "bare"), pathlib.Path(tmp, "hooked")
        for base in (bare, hooked):
            user_site(args.python, env_for(base, None)).mkdir(parents=True)
        site_dir = user_site(args.python, env_for(hooked, None))
        for name in FILES:
            shutil.copy(SOURCE / "python" / name, site_dir / name)
        # Its bytecode, as pip writes it at install time (without it, each start compiles the
        # module, about a millisecond more, where PYTHONDONTWRITEBYTECODE keeps it from being cached).
        subprocess.run([args.python, "-m", "py_compile", str(site_dir / f"{MODULE}.py")], check=True)
        cases = {"no .pth": env_for(bare, None), ".pth, AITER_COMPAT_INSTALL unset": env_for(hooked, None),
                 ".pth, AITER_COMPAT_INSTALL=1": env_for(hooked, "1")}
        for env in cases.values():  # warm-up: the module's bytecode written, the files in the page cache
            for _ in range(3):
                once(args.python, env)
        times = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, env in cases.items():
                times[name].append(once(args.python, env)[0])
        importtime = {name: import_time_us(args.python, env, max(10, args.runs // 10))
                      for name, env in cases.items() if name != "no .pth"}
        unset_pth_us = pth_us(args.python, cases[".pth, AITER_COMPAT_INSTALL unset"], site_dir)
    median = {name: statistics.median(t) for name, t in times.items()}
    base = median["no .pth"]
    print(f"{args.python} -c pass, median of {args.runs} starts each:")
    for name, ms in median.items():
        extra = "" if name == "no .pth" else f"   {ms - base:+.2f} ms"
        print(f"  {name:34s} {ms:7.2f} ms{extra}")
    on, off = median[".pth, AITER_COMPAT_INSTALL=1"], median[".pth, AITER_COMPAT_INSTALL unset"]
    print(f"  AITER_COMPAT_INSTALL=1 against unset: {on - off:+.2f} ms")
    print(f"  in one process, site processing the .pth with AITER_COMPAT_INSTALL unset: {unset_pth_us:.1f} us")
    for name, us in importtime.items():
        print(f"  -X importtime, {MODULE} ({name[6:]}): {us} us" if us is not None else
              f"  -X importtime: {MODULE} not imported ({name})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"python": args.python, "runs": args.runs, "median_ms": median,
                       "importtime_us": importtime, "unset_pth_us": unset_pth_us}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
