#!/usr/bin/env bash
# GPT-OSS through vLLM's ROCM_AITER_FA backend on an AITer without sink_ptr, with the
# aiter-compat plugin. Not run by this project (no ROCm machine here): written from vLLM's
# documented plugin mechanism (entry-point group vllm.general_plugins) and its source (0.34.0).
# See README.md next to this file.
set -euo pipefail

MODEL=${MODEL:-openai/gpt-oss-120b}
TP=${TP:-8}

# 1. Once: aiter-compat next to the vLLM and AITer already installed (registers the plugin).
#    pip install /path/to/aiter-compat
python3 -m aiter_compat probe --live    # what the installed AITer offers, and which quirks apply

# 2. Serve, with the routes under AITer and a trace per process.
export VLLM_ROCM_USE_AITER=1                          # vLLM's AITer kernels
export AITER_COMPAT_LOG_LEVEL=info                    # install's line, the first reroute per op
export AITER_COMPAT_TRACE=/tmp/aiter-compat-%p.jsonl  # one file per vLLM process
exec vllm serve "$MODEL" --tensor-parallel-size "$TP" --attention-backend ROCM_AITER_FA
