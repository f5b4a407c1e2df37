"""Runs SGLang's GPT-OSS attention calls the way an unmodified SGLang does, over whatever aiter is
on sys.path, and prints one JSON line per call: the route taken, what reached AITer, or the error.

As in SGLang's scheduler: first the `sglang.srt.plugins` entry point (aiter_compat's
sglang_plugin.register), then the import of the attention backend module, which binds AITer's
names at import (`from aiter import mha_batch_prefill_func, ...`). The backend module here is a
stand-in at SGLang's real path (sglang/srt/layers/attention/aiter_backend.py, written by the test
into a folder on sys.path) holding the same import statements; the calls below are SGLang
0.5.23's call forms (positional and keyword exactly as its aiter_backend.py makes them), written
as this project's own test data. Tensors are ROCm stand-ins (vllm_calls.RocmTensor).

First line: {"installed": [...], "bound": {name: patched?}}. Run as: python3 sglang_calls.py
"""
import json
import sys

from aiter_compat import sglang_plugin
from vllm_calls import RocmTensor, call_record

BACKEND_SOURCE = '''"""Stand-in for sglang/srt/layers/attention/aiter_backend.py: its AITer imports, as it makes them."""
try:
    from aiter import (
        flash_attn_varlen_fp8_pertensor_func,
        flash_attn_varlen_func,
        mha_batch_prefill_func,
    )
    from aiter.ops.triton.attention.unified_attention import unified_attention
    AITER_IMPORTED = True
except ImportError as exc:  # SGLang then uses another backend
    AITER_IMPORTED = False
    IMPORT_ERROR = str(exc)
'''

HEADS, KV_HEADS, DIM = 64, 8, 64  # GPT-OSS-120B
W = 128                           # its sliding window


def sinks():
    return RocmTensor(HEADS, dtype="float32")


def extend(window, with_sinks=True, out=True):
    """forward_extend's mha_batch_prefill_func: q [tokens, H, D], the token-level KV pool
    ([slots, Hk, D]: pages of one slot), qo_indptr, kv_indptr and the page table positionally."""
    args = (RocmTensor(300, HEADS, DIM), RocmTensor(4096, KV_HEADS, DIM), RocmTensor(4096, KV_HEADS, DIM),
            RocmTensor(3, dtype="int32"), RocmTensor(3, dtype="int32"), RocmTensor(900, dtype="int32"), 200, 600)
    kwargs = dict(causal=True, logits_soft_cap=0.0, alibi_slopes=None, return_lse=False, return_attn_probs=False,
                  window_size=window, sink_ptr=sinks() if with_sinks else None, q_descale=None, k_descale=None,
                  v_descale=None)
    if out:
        kwargs["out"] = RocmTensor(300, HEADS, DIM)
    return args, kwargs


def decode(window):
    """forward_decode's unified_attention over the SWA pool (block size = the server's page size)."""
    cache = RocmTensor(512, 16, KV_HEADS, DIM)
    return (), dict(q=RocmTensor(4, HEADS, DIM), k=cache, v=cache, out=RocmTensor(4, HEADS, DIM),
                    cu_seqlens_q=RocmTensor(5, dtype="int32"), max_seqlen_q=1, seqused_k=RocmTensor(4, dtype="int32"),
                    max_seqlen_k=4096, softmax_scale=0.125, causal=True, window_size=window,
                    block_table=RocmTensor(4, 256, dtype="int32"), softcap=0.0, q_descale=None, k_descale=None,
                    v_descale=None, sinks=sinks())


CALLS = {
    # name: (bound name, make)
    "extend_full+sinks": ("mha_batch_prefill_func", lambda: extend((-1, -1))),
    "extend_sliding+sinks": ("mha_batch_prefill_func", lambda: extend((W - 1, -1))),
    "extend_full": ("mha_batch_prefill_func", lambda: extend((-1, -1), with_sinks=False)),
    "decode_full+sinks": ("unified_attention", lambda: decode((-1, -1))),
    "decode_sliding+sinks": ("unified_attention", lambda: decode((W - 1, 0))),
}


def main(backend_dir):
    import os
    path = os.path.join(backend_dir, "sglang", "srt", "layers", "attention")
    os.makedirs(path, exist_ok=True)
    for d in ("sglang", "sglang/srt", "sglang/srt/layers", "sglang/srt/layers/attention"):
        open(os.path.join(backend_dir, d, "__init__.py"), "a").close()
    with open(os.path.join(path, "aiter_backend.py"), "w") as f:
        f.write(BACKEND_SOURCE)
    sys.path.insert(0, backend_dir)

    installed = sglang_plugin.register()  # the plug-in group runs first in every scheduler process
    import importlib
    backend = importlib.import_module("sglang.srt.layers.attention.aiter_backend")
    from aiter_compat._aiter_compat import PatchedFunction
    names = ["mha_batch_prefill_func", "flash_attn_varlen_func", "flash_attn_varlen_fp8_pertensor_func",
             "unified_attention"]
    bound = {n: isinstance(vars(backend).get(n), PatchedFunction) for n in names if n in vars(backend)}
    print(json.dumps({"installed": installed, "imported": backend.AITER_IMPORTED, "bound": bound,
                      "import_error": getattr(backend, "IMPORT_ERROR", None)}))
    if not backend.AITER_IMPORTED:
        return
    for name, (fn_name, make) in CALLS.items():
        args, kwargs = make()
        record = {"call": name, "op": fn_name}
        record.update(call_record(vars(backend)[fn_name], kwargs, args))
        print(json.dumps(record))
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
