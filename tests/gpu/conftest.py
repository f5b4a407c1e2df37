"""GPU suite: runs only where torch sees a CUDA or ROCm GPU; says why it skips otherwise."""
import json
import os
import sys

import pytest

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.environ.get("AITER_COMPAT_PYTHONPATH", os.path.join(SOURCE, "build", "python")))

RESULTS = []


def pytest_collection_modifyitems(config, items):
    try:
        import torch
        reason = None if torch.cuda.is_available() else "torch sees no GPU"
    except ImportError:
        reason = "torch is not installed"
    if reason:
        print(f"\nGPU suite skipped: {reason}")
        for item in items:
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_sessionfinish(session, exitstatus):
    if not RESULTS:
        return
    width = max(len(r["case"]) for r in RESULTS)
    print("\n" + f"{'case':{width}s}  {'route':14s} {'max abs err':>11s} {'bound':>7s}")
    for r in RESULTS:
        print(f"{r['case']:{width}s}  {r['route']:14s} {r['max_abs_err']:11.2e} {r['bound']:7.0e}")
    path = os.environ.get("AITER_COMPAT_GPU_SUMMARY")
    if path:
        with open(path, "w") as f:
            json.dump(RESULTS, f, indent=1)
