"""`aiter-compat selftest` and `aiter-compat bench` where there is no GPU (this machine, CI): each
says so and exits 0; the module's warmup() and selftest_verdicts() answer without one. The GPU
side is tests/gpu/test_selftest.py."""
import json
import os

import pytest

from conftest import BUILD_PYTHON


def test_selftest_without_a_gpu_says_so(cli):
    proc = cli.run("selftest")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("no GPU to check: "), proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_selftest_json_without_a_gpu(cli):
    proc = cli.run("selftest", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["gpu"] is False
    assert report["no_gpu"]
    assert report["passed"] is True
    assert report["families"] == []


def test_selftest_refuses_an_unknown_dtype_naming_it(cli):
    proc = cli.run("selftest", "--dtype", "f8")
    # Read before the GPU is looked for: the same answer with a GPU and without.
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "dtypes: found 'f8', needed float32, float16, bfloat16, f16_kv8 or bf16_kv8" in proc.stderr


def test_selftest_help_names_exit_code_5(cli):
    proc = cli.run("selftest", "--help")
    assert proc.returncode == 0
    assert "exit 5 if one fails" in proc.stdout


def test_bench_without_torch_says_why(cli, tmp_path):
    try:
        import torch  # noqa: F401
        pytest.skip("torch is installed here: the bench would time a GPU (tests/gpu covers it)")
    except ImportError:
        pass
    proc = cli.run("bench", "--quick", env={"AITER_COMPAT_PYTHONPATH": BUILD_PYTHON,
                                             "AITER_COMPAT_PYTHON": "/usr/bin/python3"}, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "torch is not installed here; nothing to time" in proc.stdout


def test_bench_with_a_missing_python_names_it(cli):
    proc = cli.run("bench", env={"AITER_COMPAT_PYTHON": "/nonexistent/python"})
    assert proc.returncode == 127
    assert "cannot run /nonexistent/python" in proc.stderr
    assert "AITER_COMPAT_PYTHON" in proc.stderr


def test_module_warmup_and_verdicts_without_a_gpu(tmp_path):
    import subprocess
    import sys
    code = ("import json, aiter_compat\n"
            "rows = aiter_compat.warmup()\n"
            "print(json.dumps({'rows': rows, 'known': aiter_compat.selftest_verdicts()}))\n"
            "try:\n"
            "    aiter_compat.warmup(dtypes=['f8'])\n"
            "except aiter_compat.AiterCompatError as e:\n"
            "    print('refused:', e)\n")
    env = {**os.environ, "PYTHONPATH": BUILD_PYTHON, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert json.loads(lines[0]) == {"rows": [], "known": []}
    assert any("dtypes: found 'f8'" in line for line in lines[1:]), proc.stdout + proc.stderr
    assert not (tmp_path / "cache").exists(), "nothing checked, nothing cached"
