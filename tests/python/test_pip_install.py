"""`pip install .`'s wheel installs the aiter_compat module and the aiter-compat command into a
fresh virtual environment. The session's wheel (`pip wheel .`, pip's build step of `pip install
.`) is installed rather than building a second time."""
import os
import subprocess

import pytest

from wheel_support import make_venv, run_pip


def test_pip_install_into_a_venv(built_wheel, tmp_path):
    venv = tmp_path / "venv"
    python = make_venv(venv, system_site_packages=True)  # numpy from the system, for the call
    run_pip(python, "install", "-q", "--no-index", "--no-deps", built_wheel)
    code = ("import aiter_compat as a, numpy as np; q=np.ones((3,2,8),np.float32); cu=np.array([0,3],np.int32);"
            "o=a.flash_attn_varlen_func(q,q,q,cu,cu,3,3,causal=True); print(a.__file__, float(o.sum()))")
    env = dict(os.environ, AITER_COMPAT_LOG_LEVEL="off", PYTHONPATH="")
    run = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=str(tmp_path), env=env)
    assert run.returncode == 0, run.stderr
    path, total = run.stdout.split()
    assert path.startswith(str(venv)) and float(total) == pytest.approx(3 * 2 * 8)
    # The console script, and the same command through -m.
    script = venv / "bin" / "aiter-compat"
    assert script.is_file()
    for argv in ([str(script), "--version"], [python, "-m", "aiter_compat", "--version"]):
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=str(tmp_path), env=env)
        assert proc.returncode == 0 and proc.stdout.startswith("aiter-compat "), proc.stdout + proc.stderr
