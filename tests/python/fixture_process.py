"""Runs Python code in a fresh process over a fixture AITer: the built module, the fixture's folder
and tests/python (vllm_calls' stand-in tensors and call_record) on its path, logging off; returns
the JSON document of its last line of output."""
import json
import os
import subprocess
import sys

from conftest import BUILD_PYTHON, SOURCE


def run_json(site, script, timeout=60):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([BUILD_PYTHON, site, os.path.join(SOURCE, "tests", "python")]),
               AITER_COMPAT_LOG_LEVEL="off", PYTHONNOUSERSITE="1")
    env.pop("AITER_COMPAT_INSTALL", None)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])
