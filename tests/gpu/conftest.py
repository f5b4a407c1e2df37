"""GPU suite: runs only where torch sees a CUDA or ROCm GPU; says why it skips otherwise."""
import json
import os
import sys

import pytest

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.environ.get("AITER_COMPAT_PYTHONPATH", os.path.join(SOURCE, "build", "python")))

RESULTS = []

# Random inputs that can be replayed: torch's generator is seeded afresh before each test with
# one seed (fixed, or AITER_COMPAT_TEST_SEED), and a failure names it.
DEFAULT_SEED = 20240611


def replay_seed():
    text = os.environ.get("AITER_COMPAT_TEST_SEED", "")
    try:
        return int(text, 0) if text else DEFAULT_SEED
    except ValueError:
        raise pytest.UsageError(f"AITER_COMPAT_TEST_SEED={text!r} is not a number") from None


@pytest.fixture(autouse=True)
def _seeded_random():
    try:
        import torch
    except ImportError:  # the suite skips, saying so
        yield
        return
    torch.manual_seed(replay_seed())
    yield


def pytest_report_header(config):
    return f"random inputs from seed {replay_seed()} (AITER_COMPAT_TEST_SEED replays another)"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        seed = replay_seed()
        report.sections.append(("random inputs", f"seed {seed}; replay: AITER_COMPAT_TEST_SEED={seed} "
                                                 f"python3 -m pytest '{item.nodeid}'"))


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
