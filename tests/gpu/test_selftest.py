"""The self-test on the GPU: every family built for this GPU passes on its device, within the
cost goal; a family perturbed by AITER_COMPAT_SELFTEST_FAULT (one per process: selftest_child.py)
is caught, the call goes to the next family (or, for the generic kernel, is refused with the
reason, there being no AITer here) and results stay right; verdicts are cached between
processes; a capture that needs a check is refused naming warmup(), and works after it."""
import json
import os
import subprocess
import sys

import pytest

import aiter_compat

HERE = os.path.dirname(os.path.abspath(__file__))
BOUND = 1e-2  # bf16, as test_gpu_kernels.py
GOAL_MS = 50  # all families of one dtype and head dim


def child(tmp_path, *args, fault=None, mode="always"):
    # The module the suite imports (conftest.py puts it first on sys.path) for the child too.
    module_dir = os.path.dirname(os.path.dirname(os.path.abspath(aiter_compat.__file__)))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "AITER_COMPAT_SELFTEST": mode,
           "PYTHONPATH": os.pathsep.join([module_dir] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    env.pop("AITER_COMPAT_SELFTEST_FAULT", None)
    if fault:
        env["AITER_COMPAT_SELFTEST_FAULT"] = fault
    proc = subprocess.run([sys.executable, os.path.join(HERE, "selftest_child.py"), *args], capture_output=True,
                          text=True, env=env, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_every_family_passes_and_the_checks_are_cheap():
    # Every family measured once (module loaded, reference outputs computed), whatever this
    # process or the cache already knew: the second pass is what a later check pays.
    aiter_compat.warmup(fresh=True)
    rows = aiter_compat.warmup(fresh=True)
    families = {r["family"] for r in rows}
    arch = rows[0]["arch"]
    expected = {"generic", "decode", "split_merge", "merge_states"}
    if arch.startswith("sm_"):
        expected |= {"tiled_keys", "tiled_rows"} | ({"tiled_wgmma"} if arch == "sm_90" else set())
    assert families >= expected, (families, arch)
    failed = [r for r in rows if r["verdict"] != "pass"]
    assert not failed, json.dumps(failed, indent=1)
    groups = {}
    for r in rows:
        groups.setdefault((r["dtype"], r["head_dim"]), []).append(r["millis"])
    print("\nself-test cost per dtype and head dim (ms): " +
          ", ".join(f"{t} d{d}: {sum(ms):.1f}" for (t, d), ms in sorted(groups.items())))
    for (t, d), ms in groups.items():
        assert sum(ms) < GOAL_MS, f"{t} d{d}: {sum(ms):.1f} ms for {len(ms)} families (goal {GOAL_MS} ms)"


@pytest.mark.parametrize("row", ["tiled_keys", "tiled_wgmma", "tiled_rows", "decode", "split_merge"])
def test_a_faulty_family_is_caught_and_calls_stay_right(tmp_path, row):
    result, log = child(tmp_path, fault=f"{row}:bf16:64")
    verdicts = {(v["family"], v["dtype"], v["head_dim"]): v for v in result["verdicts"]}
    if (row, "bf16", 64) not in verdicts:
        pytest.skip(f"{row} is not built for this GPU (verdicts: {sorted(verdicts)})")
    v = verdicts[(row, "bf16", 64)]
    assert v["verdict"] == "fail", v
    assert v["max_error"] is None or v["max_error"] > v["bound"], v
    assert log.count(f"fallback kernel family {row} bf16 d64 failed its self-test") == 1, log  # one warning
    assert not result["raised"], result["raised"]
    for case, e in result["errors"].items():
        assert e <= BOUND, f"{case}: error {e} with {row} perturbed"
    # The routes show the reason beside the family.
    reasons = [r for route in result["routes"] for k in route["kernels"] if k["name"] == row for r in k["reasons"]]
    if row != "split_merge":
        assert any("failed its self-test" in r for r in reasons), result["routes"]
    # Every other family still passed.
    others = [x for k, x in verdicts.items() if k != (row, "bf16", 64) and x["verdict"] != "pass"]
    assert not others, others


def test_a_faulty_generic_family_refuses_with_the_reason(tmp_path):
    result, _ = child(tmp_path, fault="generic:bf16:64")
    # No AITer on this machine: the project's error, naming the self-test and the error measured.
    for case in ("prefill", "decode", "prefill (first use)", "decode (first use)"):
        assert case in result["raised"], result
        assert "failed its self-test" in result["raised"][case] and "max error" in result["raised"][case]
    assert result["errors"]["merge"] <= BOUND  # merge_attn_states is its own family


def test_a_faulty_merge_family_refuses_merges_only(tmp_path):
    result, _ = child(tmp_path, fault="merge_states:bf16:64")
    for case in ("merge", "merge (first use)"):
        assert case in result["raised"] and "failed its self-test" in result["raised"][case], result
    for case in ("prefill", "decode", "decode split", "prefill (first use)"):
        assert result["errors"][case] <= BOUND


def test_verdicts_are_cached_for_the_next_process(tmp_path):
    first, _ = child(tmp_path, mode="first-use")
    assert all(v["source"] == "measured" for v in first["verdicts"]), first["verdicts"]
    path = tmp_path / "cache" / "aiter-compat" / "selftest-verdicts.json"
    cached = json.loads(path.read_text())
    assert cached["schema"] == 1 and len(cached["entries"]) == 1, cached
    second, _ = child(tmp_path, mode="first-use")
    # warmup() in the child keeps cached verdicts: every one came from the file.
    assert second["verdicts"] and all(v["source"] == "cache" for v in second["verdicts"]), second["verdicts"]
    assert max(second["errors"].values()) <= BOUND
    third, _ = child(tmp_path, mode="always")  # always: measured again despite the cache
    assert all(v["source"] == "measured" for v in third["verdicts"])


def test_capture_is_refused_until_warmup(tmp_path):
    result, _ = child(tmp_path, "capture")
    assert "aiter_compat.warmup()" in result["first"], result
    assert set(result["warmup"]) == {"pass"}, result
    assert result["after_warmup_error"] <= BOUND


def test_cli_selftest_exit_codes(tmp_path):
    cli = os.environ.get("AITER_COMPAT_CLI", os.path.join(HERE, "..", "..", "build-gpu", "aiter-compat"))
    if not os.path.exists(cli):
        pytest.skip(f"no CLI at {cli} (set AITER_COMPAT_CLI)")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("AITER_COMPAT_SELFTEST_FAULT", None)
    ok = subprocess.run([cli, "selftest", "--json"], capture_output=True, text=True, env=env, timeout=240)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    report = json.loads(ok.stdout)
    assert report["gpu"] and report["passed"] and report["families"]
    bad = subprocess.run([cli, "selftest"], capture_output=True, text=True, timeout=240,
                         env={**env, "AITER_COMPAT_SELFTEST_FAULT": "generic:bf16:64"})
    assert bad.returncode == 5, bad.stdout + bad.stderr
    assert "generic" in bad.stdout and "fail" in bad.stdout
