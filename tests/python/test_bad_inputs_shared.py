"""The shared table of bad inputs (tests/cases/bad_inputs.json) through the Python module: each
case is refused with AiterCompatError naming the argument and the value found. The C API runs
the same table (tests/cpp/capi_bad_inputs_test.cpp): both fronts answer alike."""
import json
import os

import numpy as np
import pytest

import aiter_compat
from conftest import SOURCE
from dlpack_arrays import RawArray, bf16_bits

CASES = json.load(open(os.path.join(SOURCE, "tests", "cases", "bad_inputs.json")))["cases"]
RNG = np.random.default_rng(7)

# Each op's base call: tensors as (dtype, shape) for random data or (dtype, values), and scalars.
BASE = {
    "varlen": ({"q": ("float32", (6, 8, 16)), "k": ("float32", (6, 2, 16)), "v": ("float32", (6, 2, 16)),
                "cu_seqlens_q": ("int32", [0, 2, 6]), "cu_seqlens_k": ("int32", [0, 2, 6]),
                "sinks": ("float32", [0.0] * 8), "out": ("float32", (6, 8, 16))},
               {"max_seqlen_q": 4, "max_seqlen_k": 4, "causal": 1, "window_left": -1, "window_right": -1,
                "softmax_scale": 0.0}),
    "batch": ({"q": ("float32", (2, 5, 4, 16)), "k": ("float32", (2, 7, 2, 16)), "v": ("float32", (2, 7, 2, 16)),
               "sinks": ("float32", [0.0] * 4), "out": ("float32", (2, 5, 4, 16))},
              {"causal": 1, "window_left": -1, "window_right": -1, "softmax_scale": 0.0}),
    "paged": ({"q": ("float32", (3, 4, 16)), "k_cache": ("float32", (5, 16, 2, 16)),
               "v_cache": ("float32", (5, 16, 2, 16)), "cu_seqlens_q": ("int32", [0, 1, 3]),
               "seqused_k": ("int32", [20, 3]), "block_table": ("int32", [0, 1, 2, 3]),
               "sinks": ("float32", [0.0] * 4), "out": ("float32", (3, 4, 16))},
              {"max_seqlen_q": 2, "max_seqlen_k": 20, "causal": 1, "window_left": -1, "window_right": -1,
               "softmax_scale": 0.25}),
    "decode": ({"q": ("float32", (2, 4, 16)), "k_cache": ("float32", (5, 16, 2, 16)),
                "v_cache": ("float32", (5, 16, 2, 16)), "block_table": ("int32", [0, 1, 2, 3]),
                "seqused_k": ("int32", [20, 3]), "sinks": ("float32", [0.0] * 4), "out": ("float32", (2, 4, 16))},
               {"window_left": -1, "window_right": -1, "softmax_scale": 0.0}),
    "merge": ({"output": ("float32", (3, 2, 8)), "prefix_output": ("float32", (3, 2, 8)),
               "prefix_lse": ("float32", (2, 3)), "suffix_output": ("float32", (3, 2, 8)),
               "suffix_lse": ("float32", (2, 3)), "sinks": ("float32", [0.0, 0.0])}, {}),
}
TABLES = {"block_table": (2, 2)}  # value lists laid out as [batch, blocks]


def number(x):
    return float(x) if isinstance(x, str) else x


def make(dtype, spec, name):
    if isinstance(spec, tuple):
        data = RNG.standard_normal(spec)
    else:
        data = np.array([number(x) for x in spec], np.float64)
        if name in TABLES:
            data = data.reshape(TABLES[name])
    if dtype == "bfloat16":
        return RawArray(bf16_bits(data.astype(np.float32)), "bfloat16")
    return data.astype(dtype)


def call(op, t, s):
    window = (s.get("window_left", -1), s.get("window_right", -1))
    scale = s.get("softmax_scale", 0.0) or None
    if op == "varlen":
        return aiter_compat.flash_attn_varlen_func(
            t["q"], t["k"], t["v"], t["cu_seqlens_q"], t["cu_seqlens_k"], s["max_seqlen_q"], s["max_seqlen_k"],
            softmax_scale=scale, causal=bool(s["causal"]), window_size=window, sink_ptr=t["sinks"], out=t["out"])
    if op == "batch":
        return aiter_compat.flash_attn_func(t["q"], t["k"], t["v"], softmax_scale=scale, causal=bool(s["causal"]),
                                            window_size=window, sink_ptr=t["sinks"])
    if op == "paged":
        return aiter_compat.unified_attention(
            t["q"], t["k_cache"], t["v_cache"], t["out"], t["cu_seqlens_q"], s["max_seqlen_q"], t["seqused_k"],
            s["max_seqlen_k"], s["softmax_scale"], bool(s["causal"]), window, t["block_table"], 0, None, None, None,
            sinks=t["sinks"])
    if op == "decode":
        return aiter_compat.paged_attention_decode(t["q"], t["k_cache"], t["v_cache"], t["block_table"], t["seqused_k"],
                                                   softmax_scale=scale, window_size=window, sinks=t["sinks"], out=t["out"])
    return aiter_compat.merge_attn_states(t["output"], t["prefix_output"], t["prefix_lse"], t["suffix_output"],
                                          t["suffix_lse"], sinks=t["sinks"])


def test_base_calls_are_good():
    """Every base call runs: each case's error comes from its one spoilt argument."""
    for op, (tensors, scalars) in BASE.items():
        call(op, {n: make(d, spec, n) for n, (d, spec) in tensors.items()}, scalars)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bad_input_is_named(case):
    tensors, scalars = BASE[case["op"]]
    spec = {n: list(v) for n, v in tensors.items()}
    for name, dtype in case.get("dtype", {}).items():
        spec[name][0] = dtype
    for name, shape in case.get("shape", {}).items():
        spec[name][1] = tuple(shape)
    for name, values in case.get("values", {}).items():
        spec[name][1] = values
    t = {n: make(d, s, n) for n, (d, s) in spec.items()}
    for name, other in case.get("alias", {}).items():
        t[name] = t[other]
    s = dict(scalars)
    s.update({k: number(v) for k, v in case.get("scalars", {}).items()})
    with pytest.raises(aiter_compat.AiterCompatError) as info:
        call(case["op"], t, s)
    assert info.value.argument == case["argument"], str(info.value)
    assert case["found"] in info.value.found, str(info.value)
