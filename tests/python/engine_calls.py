"""Makes vLLM's ROCM_AITER_FA calls the way an unmodified engine does, through AITer's own names
(`from aiter import flash_attn_varlen_func` inside the call, `from aiter.ops.triton.
unified_attention import unified_attention`), after the vLLM plugin's function ran, and prints
one JSON line per call: the same call made through aiter_compat directly beside it.

First line: {"installed": [...], "originals": {path: id}}. Run as: python3 engine_calls.py
(with the built module and the fixture's folder on PYTHONPATH).
"""
import importlib
import inspect
import json
import sys

import aiter_compat
from aiter_compat import vllm_plugin
from aiter_compat._aiter_compat import PatchedFunction
from vllm_calls import CALLS, RocmTensor, call_record, decode

# Where engines import each entry point from: every path an unmodified engine may use.
PATHS = {
    "flash_attn_varlen_func": ["aiter", "aiter.ops.mha"],
    "unified_attention": ["aiter.ops.triton.unified_attention", "aiter.ops.triton.attention.unified_attention"],
}


def entry(path, op):
    try:
        module = importlib.import_module(path)
    except ModuleNotFoundError:
        return None
    return getattr(module, op, None)


def positional_decode(fn):
    """unified_attention with its arguments up to alibi_slopes given positionally, in the installed
    release's order (q_scales sits before alibi_slopes only from 0.1.15.post1)."""
    kwargs = decode(True)
    kwargs.update(alibi_slopes=RocmTensor(64, dtype="float32"), q_scales=None)
    names = list(inspect.signature(fn.__wrapped__).parameters)
    upto = names[:names.index("alibi_slopes") + 1]
    args = [kwargs.pop(n) for n in upto]
    rest = {k: v for k, v in kwargs.items() if k in names}
    return args, rest


def held():
    """{path.op: the object there} for every candidate path already imported (no import made:
    importing AITer's old unified_attention path is itself a change, see _install.py)."""
    return {f"{p}.{op}": vars(sys.modules[p]).get(op) for op, paths in PATHS.items() for p in paths
            if p in sys.modules and vars(sys.modules[p]).get(op) is not None}


def main():
    import aiter
    installed = vllm_plugin.register()
    after_install = held()
    originals = {k: getattr(v, "__wrapped__", None) for k, v in after_install.items()}
    print(json.dumps({"installed": installed,
                      "patched": sorted(k for k, v in after_install.items() if isinstance(v, PatchedFunction))}))
    for name, (op, make) in CALLS.items():
        for path in PATHS[op]:
            fn = entry(path, op)
            if fn is None:
                continue
            record = {"call": name, "op": op, "path": path, "patched": isinstance(fn, PatchedFunction)}
            record["through_aiter"] = call_record(fn, make())
            record["direct"] = call_record(getattr(aiter_compat, op), make())
            print(json.dumps(record))
    for path in PATHS["unified_attention"]:
        fn = entry(path, "unified_attention")
        if isinstance(fn, PatchedFunction):
            args, kwargs = positional_decode(fn)
            print(json.dumps({"call": "positional_decode", "path": path, "through_aiter": call_record(fn, kwargs, args)}))
    during = held()
    restored = aiter_compat.uninstall()
    after = held()
    print(json.dumps({"restored": restored,
                      "identical": sorted(k for k in originals if originals[k] is not None and after.get(k) is originals[k]),
                      "present": sorted(k for k, v in originals.items() if v is not None and k in after),
                      "gone": sorted(k for k in originals if k not in after),
                      "patched_during": sorted(k for k, v in during.items() if isinstance(v, PatchedFunction)),
                      "held_during": sorted(during),
                      "left_calls": len(aiter.CALLS)}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
