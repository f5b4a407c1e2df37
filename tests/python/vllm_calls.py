"""Makes vLLM's ROCM_AITER_FA calls through aiter_compat against whatever aiter is on sys.path,
and prints one JSON line per call: the route taken, what reached AITer, or the error.

The tensors are stand-ins that look like bf16 tensors on a ROCm GPU (shape, dtype and
__dlpack_device__ are all routing reads); fixture AITer packages record what they receive.
Run as: python3 vllm_calls.py  (with the fixture's folder on PYTHONPATH)
"""
import json
import sys

import aiter_compat


class RocmTensor:
    def __init__(self, *shape, dtype="bfloat16"):
        self.shape = tuple(shape)
        self.dtype = dtype

    def __dlpack_device__(self):
        return (10, 0)  # kDLROCM, device 0

    def __repr__(self):
        return f"RocmTensor{self.shape}"


def gpt_oss(head_dim=64, tokens=256, heads=64, kv_heads=8):
    q = RocmTensor(tokens, heads, head_dim)
    k = RocmTensor(tokens, kv_heads, head_dim)
    v = RocmTensor(tokens, kv_heads, head_dim)
    cu = RocmTensor(3, dtype="int32")
    return q, k, v, cu


def sinks_of(sinks):
    """None, or GPT-OSS's 64 sinks in float32 or in the model's bfloat16 (sinks="bfloat16")."""
    if not sinks:
        return None
    return RocmTensor(64, dtype=sinks if isinstance(sinks, str) else "float32")


def prefill(sinks, window=None, head_dim=64, return_lse=False, causal=True):
    q, k, v, cu = gpt_oss(head_dim)
    return dict(q=q, k=k, v=v, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=128, max_seqlen_k=128,
                min_seqlen_q=1, dropout_p=0.0, softmax_scale=0.125, causal=causal,
                window_size=window or (-1, -1), alibi_slopes=None, return_lse=return_lse,
                out=RocmTensor(256, 64, head_dim), sink_ptr=sinks_of(sinks))


def decode(sinks, window=(-1, -1)):
    q = RocmTensor(4, 64, 64)
    cache = RocmTensor(100, 16, 8, 64)
    return dict(q=q, k=cache, v=cache, out=RocmTensor(4, 64, 64), cu_seqlens_q=RocmTensor(5, dtype="int32"),
                max_seqlen_q=1, seqused_k=RocmTensor(4, dtype="int32"), max_seqlen_k=4096, softmax_scale=0.125,
                causal=True, window_size=window, block_table=RocmTensor(4, 256, dtype="int32"), softcap=0,
                q_descale=None, k_descale=None, v_descale=None, sinks=sinks_of(sinks))


CALLS = {
    "prefill": ("flash_attn_varlen_func", lambda: prefill(False)),
    "prefill+sinks": ("flash_attn_varlen_func", lambda: prefill(True)),
    "sliding_prefill+sinks": ("flash_attn_varlen_func", lambda: prefill(True, window=(127, 0))),
    "extend_new+sinks": ("flash_attn_varlen_func", lambda: prefill(True, return_lse=True)),
    "extend_cached+sinks": ("flash_attn_varlen_func", lambda: prefill(True, return_lse=True, causal=False)),
    "prefill_hd128+sinks": ("flash_attn_varlen_func", lambda: prefill(True, head_dim=128)),
    # causal with right bound 0 is no window: the v3 quirk still applies
    "prefill_hd128_right0+sinks": ("flash_attn_varlen_func", lambda: prefill(True, window=(-1, 0), head_dim=128)),
    "prefill+sinks_bf16": ("flash_attn_varlen_func", lambda: prefill("bfloat16")),
    "decode": ("unified_attention", lambda: decode(False)),
    "decode+sinks": ("unified_attention", lambda: decode(True)),
    "sliding_decode+sinks": ("unified_attention", lambda: decode(True, window=(127, 0))),
    "decode+sinks_bf16": ("unified_attention", lambda: decode("bfloat16")),
}


def call_record(fn, kwargs, args=()):
    """Calls fn(*args, **kwargs) and describes the outcome: the route, what reached AITer (the
    fixture records it), or the error."""
    record = {}
    try:
        result = fn(*args, **kwargs)
        import aiter  # imported by the AITer route
        called, received = aiter.CALLS.pop()
        given = dict(kwargs)
        record.update(route="aiter", called=called, result=repr(result),
                      received=sorted(received),
                      window=list(received.get("window_size") or []),
                      same_objects=all(received[key] is given[key] for key in received
                                       if key != "window_size" and key in given),
                      left_over=len(aiter.CALLS))  # AITer reached more than once: a recursion
    except aiter_compat.AiterCompatError as e:
        record.update(route="error", candidates=getattr(e, "candidates", None), argument=getattr(e, "argument", None),
                      message=str(e))
    except TypeError as e:  # the one thing that must never happen
        record.update(route="TypeError", error=str(e))
    return record


def main():
    for name, (op, make) in CALLS.items():
        record = {"call": name, "op": op}
        record.update(call_record(getattr(aiter_compat, op), make()))
        print(json.dumps(record))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
