#!/usr/bin/env python3
"""What the plugin and the trace do with vLLM's GPT-OSS calls, without vLLM or a GPU: a fixture
AITer 0.1.9 (the release's real parameter lists, from compat_matrix.yaml; functions that only
record their arguments), stand-in ROCm tensors, and the calls vLLM 0.34.0's ROCM_AITER_FA backend
makes, through AITer's own names after the plugin's function ran.

    PYTHONPATH=build/python python3 examples/vllm/simulate_vllm_calls.py [--release 0.1.9] TRACE_FILE

On this project's machines there is no GPU, so calls the GPU fallback would take on a ROCm
machine are refused here ("no GPU was found at start-up"); see README.md.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))

CHILD = r'''
import aiter_compat
from aiter_compat import vllm_plugin
vllm_plugin.register()                       # what vLLM does in each process
import aiter, vllm_calls as V
from aiter.ops.triton.unified_attention import unified_attention   # as vLLM's forward does
def call(fn, kwargs):
    try:
        fn(**kwargs)
    except aiter_compat.AiterCompatError as e:
        pass                                 # vLLM would stop here with this error
for layer in range(4):                       # GPT-OSS alternates sliding (127, 0) and full layers
    window = (127, 0) if layer % 2 == 0 else (-1, -1)
    call(aiter.flash_attn_varlen_func, V.prefill("bfloat16", window=window))
    for step in range(8):
        call(unified_attention, V.decode("bfloat16", window=window))
print(aiter_compat.stats())
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--release", default="0.1.9")
    ap.add_argument("trace")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(SOURCE, "tests", "fixtures"))
    import make_fixture
    with tempfile.TemporaryDirectory() as site:
        make_fixture.make_fixture(make_fixture.load_matrix(os.path.join(SOURCE, "compat_matrix.yaml")),
                                  args.release, site)
        path = [os.environ.get("PYTHONPATH", ""), os.path.join(SOURCE, "tests", "python"), site]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in path if p), AITER_COMPAT_TRACE=args.trace,
                   AITER_COMPAT_LOG_LEVEL=os.environ.get("AITER_COMPAT_LOG_LEVEL", "info"))
        return subprocess.run([sys.executable, "-c", CHILD], env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
