#!/usr/bin/env python3
"""Plants each fault of tests/mutation/faults.yaml, one at a time, in a copy of the source tree,
rebuilds what it touches and runs the tests named for it: every fault must make them fail.

The copy (default build/mutation/src, built in build/mutation/src/build) is made once and kept:
a later run rewrites only the files that changed, so it rebuilds incrementally. Each fault is
applied, built (only the test targets its selections need), tested and reverted. Before any
fault, the selections run on the unchanged copy and must pass, or a "killed" fault would mean
nothing.

Exit status: 0 when every fault was caught; 1 when one survived (each is named); 2 when the list
is out of step with the code (an `old` text not found exactly once), a fault does not build, or
the unchanged copy fails its selections.

  python3 tests/mutation/run_mutations.py [--only TEXT ...] [--list] [--work DIR] [--archs gfx942]
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FAULTS = os.path.join(ROOT, "tests", "mutation", "faults.yaml")
sys.path.insert(0, os.path.join(ROOT, "tools"))
from fresh_code_objects import fresh_code_objects  # noqa: E402
# Directories never copied: builds (this one included), caches, results.
SKIP_DIRS = {".git", "__pycache__", "gpu-results", ".pytest_cache"}
# Each kind of selection: the test binary it runs (a gtest filter) or, for pytest, the extension.
TARGETS = {"gtest": "aiter_compat_unit_tests", "kernel": "aiter_compat_kernel_host_tests",
           "hip": "aiter_compat_hip_launcher_tests",
           "selftest": "aiter_compat_hip_selftest_tests", "pytest": "_aiter_compat"}
# Everything else a selection's tests run, so that a fault reaches each of them rebuilt: pytest
# drives the CLI (the probe's tests) and loads the C library with ctypes (the C API's tests).
# Without these, a test that goes through the CLI or the C library runs a stale (or missing)
# binary. The gtest binaries link the C library and depend on the stand-in runtimes they load:
# building them rebuilds those.
ALSO_BUILT = {"pytest": ["aiter-compat", "aiter_compat"]}
# The environment a gtest binary runs in, as ctest gives it (tests/CMakeLists.txt).
GTEST_ENV = {
    "gtest": {},
    # The kernels' headers built for the CPU: a fault in one rebuilds no code object.
    "kernel": {},
    # The stand-in HIP runtime records launches and computes nothing: the self-test of each
    # kernel family (first use) would fail every one of them.
    "hip": {"LD_LIBRARY_PATH": ("tests", "fake_hip"), "AITER_COMPAT_SELFTEST": "off"},
    # The self-test's own tests run the stand-in's kernels on the host (the gfx942 code object:
    # the copy builds no nvcc one, so the CUDA build of these tests would skip every test).
    "selftest": {"LD_LIBRARY_PATH": ("tests", "fake_hip")},
}


TEST_TIMEOUT = 600


def targets_of(kinds):
    return {t for kind in kinds for t in [TARGETS[kind], *ALSO_BUILT.get(kind, [])]}


def say(*parts):
    print(*parts, flush=True)


def load_faults(only):
    with open(FAULTS) as f:
        faults = yaml.safe_load(f)["faults"]
    for fault in faults:
        missing = {"name", "file", "old", "new"} - set(fault)
        if missing:
            raise SystemExit(f"faults.yaml: '{fault.get('name', fault)}' lacks {sorted(missing)}")
        if not any(k in fault for k in TARGETS):
            raise SystemExit(f"faults.yaml: '{fault['name']}' names no tests ({', '.join(TARGETS)})")
    return [f for f in faults if not only or any(text in f["name"] for text in only)]


def check_in_step(faults):
    """Each fault's old text occurs exactly once in the source, and differs from its new text."""
    problems = []
    for fault in faults:
        path = os.path.join(ROOT, fault["file"])
        if not os.path.isfile(path):
            problems.append(f"{fault['name']}: {fault['file']} does not exist")
            continue
        with open(path) as f:
            count = f.read().count(fault["old"])
        if count != 1:
            problems.append(f"{fault['name']}: its old text occurs {count} times in {fault['file']} "
                            f"(needed exactly once):\n    {fault['old']!r}")
        if fault["old"] == fault["new"]:
            problems.append(f"{fault['name']}: old and new are the same")
    return problems


def source_files():
    """The files of the working tree that git would track (tracked or not ignored), else every
    file outside build directories."""
    if os.path.isdir(os.path.join(ROOT, ".git")) and shutil.which("git"):
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                             capture_output=True).stdout
        return [p for p in out.decode().split("\0") if p and os.path.isfile(os.path.join(ROOT, p))]
    files = []
    for folder, dirs, names in os.walk(ROOT):
        rel = os.path.relpath(folder, ROOT)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not (rel == "." and d.startswith("build"))]
        files += [os.path.normpath(os.path.join(rel, n)) for n in names]
    return files


def sync_copy(copy):
    """Writes into the copy each source file whose bytes differ (unchanged files keep their
    times, so the build stays incremental); also undoes a fault left by an interrupted run."""
    written = 0
    for rel in source_files():
        src, dst = os.path.join(ROOT, rel), os.path.join(copy, rel)
        with open(src, "rb") as f:
            data = f.read()
        if os.path.isfile(dst):
            with open(dst, "rb") as f:
                if f.read() == data:
                    continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(data)
        shutil.copymode(src, dst)
        written += 1
    return written


# The files the code objects are compiled from (cmake/FallbackKernels.cmake).
KERNEL_SOURCES = "fallback_kernels/gpu/"


def borrowed_kernels(faults, archs):
    """The main build's folder of code objects (build/kernels) when the copy may take them rather
    than compile its own: each arch the copy needs is there and newer than every kernel source,
    and no fault planted in a kernel source runs a selection that loads a code object (hip,
    selftest; the kernel selections build the sources for the CPU). None otherwise."""
    if any(f["file"].startswith(KERNEL_SOURCES) and ("hip" in f or "selftest" in f) for f in faults):
        return None
    return fresh_code_objects(ROOT, list(filter(None, archs.split(";"))))


def configure(copy, archs, kernels_from):
    """Configures the copy once (again only when these settings change): no benchmarks, code
    objects for the archs the hip selections load (none of the nvcc ones, which take minutes;
    copied from the main build where borrowed_kernels allows), -O1 without debug information
    (quicker compiles and links of each fault), lld if present."""
    build = os.path.join(copy, "build")
    args = ["cmake", "-S", copy, "-B", build, "-G", "Ninja", f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DAITER_COMPAT_GPU_ARCHS={archs}", "-DAITER_COMPAT_BUILD_BENCH=OFF", "-DCMAKE_BUILD_TYPE=Release",
            "-DCMAKE_CXX_FLAGS_RELEASE=-O1", "-DCMAKE_C_FLAGS_RELEASE=-O1",
            f"-DAITER_COMPAT_KERNELS_FROM={kernels_from or ''}"]
    if shutil.which("ld.lld"):
        args += [f"-DCMAKE_{kind}_LINKER_FLAGS=-fuse-ld=lld" for kind in ("EXE", "SHARED", "MODULE")]
    stamp = os.path.join(build, "mutation-configure.txt")
    if os.path.isfile(os.path.join(build, "build.ninja")) and os.path.isfile(stamp):
        with open(stamp) as f:
            if f.read() == repr(args):
                return build
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        say(proc.stdout[-3000:], proc.stderr[-3000:])
        raise SystemExit("mutation: configuring the copy failed")
    write(stamp, repr(args))
    return build


def write(path, text):
    with open(path, "w") as fh:
        fh.write(text)


def build_targets(build, targets):
    proc = subprocess.run(["cmake", "--build", build, "--target", *sorted(targets)], capture_output=True, text=True)
    return proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def selections(fault):
    """(kind, what) of each test selection of a fault: a gtest filter or pytest's arguments."""
    return [(kind, fault[kind]) for kind in TARGETS if kind in fault]


def run_selection(copy, build, kind, what):
    env = dict(os.environ, AITER_COMPAT_LOG_LEVEL="off")
    # Each run its own temporary folder: selections run at once, and tests write fixed names there.
    env["TEST_TMPDIR"] = env["TMPDIR"] = tempfile.mkdtemp(prefix="mutation-")
    env.pop("AITER_COMPAT_PYTHONPATH", None)  # the copy's own module
    env.pop("AITER_COMPAT_SOURCE", None)
    if kind in GTEST_ENV:
        cmd = [os.path.join(build, "tests", TARGETS[kind]), f"--gtest_filter={what}", "--gtest_brief=1"]
        for name, value in GTEST_ENV[kind].items():
            env[name] = os.path.join(build, *value) if isinstance(value, tuple) else value
    else:
        cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *what]
    try:
        proc = subprocess.run(cmd, cwd=copy, capture_output=True, text=True, env=env, timeout=TEST_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {TEST_TIMEOUT}s"
    finally:
        shutil.rmtree(env["TMPDIR"], ignore_errors=True)
    return proc.returncode, (proc.stdout + proc.stderr)[-3000:]


def ran_nothing(kind, output):
    """A gtest selection whose tests all skipped (or matched nothing) cannot catch anything."""
    if kind not in GTEST_ENV:
        return False  # pytest exits 5 when it collects nothing
    match = re.search(r"\[  PASSED  \] (\d+) test", output)
    return not match or int(match.group(1)) == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "mutation"), help="where the copy lives")
    ap.add_argument("--only", action="append", help="only the faults whose name contains this text (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the faults and check them against the code")
    ap.add_argument("--archs", default="gfx942", help="code objects for the copy (the hip selections need gfx942)")
    args = ap.parse_args()
    start = time.monotonic()
    faults = load_faults(args.only)
    problems = check_in_step(faults)
    if problems:
        say("mutation: the fault list is out of step with the code:")
        for p in problems:
            say("  " + p)
        return 2
    if args.list:
        for f in faults:
            say(f"{f['file']}: {f['name']}")
        return 0
    copy = os.path.join(args.work, "src")
    os.makedirs(copy, exist_ok=True)
    written = sync_copy(copy)
    kernels_from = borrowed_kernels(faults, args.archs)
    build = configure(copy, args.archs, kernels_from)
    needed = targets_of(kind for f in faults for kind, _ in selections(f))
    ok, log = build_targets(build, needed)
    if not ok:
        say(log)
        return 2
    say(f"mutation: copy at {copy} ({written} files updated), built in {time.monotonic() - start:.0f}s"
        + (f", its code objects copied from {kernels_from}" if kernels_from else ""))

    # The unchanged copy must pass every selection, and run it rather than skip it.
    # The selections share nothing but the built copy, which no baseline run writes: as many run
    # at once as there are cores.
    unique = {}
    for f in faults:
        for kind, what in selections(f):
            unique.setdefault((kind, repr(what)), (kind, what))
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(lambda sel: run_selection(copy, build, *sel), unique.values()))
    for (kind, what), (rc, out) in zip(unique.values(), results):
        if rc != 0 or ran_nothing(kind, out):
            say(out)
            say(f"mutation: the unchanged copy {'runs no test of' if rc == 0 else 'fails'} {kind} {what}; "
                f"fix that first (a fault caught by it would mean nothing)")
            return 2
    say(f"mutation: {len(unique)} selections pass on the unchanged copy ({time.monotonic() - start:.0f}s)")

    # Faults of one file run one after another, the file reverted only when the next fault is
    # elsewhere: each touched object compiles once per fault plus once to revert.
    faults = sorted(faults, key=lambda f: f["file"])
    survivors, broken = [], []
    originals = {}
    try:
        for i, fault in enumerate(faults, 1):
            t0 = time.monotonic()
            for other, text in list(originals.items()):
                if other != fault["file"]:
                    write(os.path.join(copy, other), originals.pop(other))
            path = os.path.join(copy, fault["file"])
            if fault["file"] not in originals:
                with open(path) as fh:
                    originals[fault["file"]] = fh.read()
            write(path, originals[fault["file"]].replace(fault["old"], fault["new"], 1))
            ok, log = build_targets(build, targets_of(kind for kind, _ in selections(fault)))
            detail = ""
            if not ok:
                broken.append(fault["name"])
                verdict, detail = "DOES NOT BUILD", log
            else:
                caught = []
                for kind, what in selections(fault):
                    rc, _ = run_selection(copy, build, kind, what)
                    if rc != 0:
                        caught.append(kind if rc is not None else kind + " (timeout)")
                verdict = "caught by " + ", ".join(caught) if caught else "SURVIVED"
                if not caught:
                    survivors.append(fault)
            say(f"[{i:2d}/{len(faults)}] {verdict:28s} {time.monotonic() - t0:5.1f}s  {fault['name']}")
            if detail:
                say(detail)
    finally:
        for other, text in originals.items():
            write(os.path.join(copy, other), text)
    # Leave the copy built as the source is, so the next run starts from a clean build.
    build_targets(build, needed)
    say(f"mutation: {len(faults) - len(survivors) - len(broken)} of {len(faults)} faults caught "
        f"in {time.monotonic() - start:.0f}s")
    for fault in survivors:
        say(f"  SURVIVED: {fault['name']} ({fault['file']}): no test named for it fails")
    for name in broken:
        say(f"  DOES NOT BUILD: {name}: mend the fault's new text")
    return 2 if broken else 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
