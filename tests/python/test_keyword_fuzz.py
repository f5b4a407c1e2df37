"""Fuzzing of the Python module's argument binding: random calls of each entry point (random
positional counts, keywords the signature has, repeats of positionals, unknown keywords, and
values of every kind: None, numbers, strings, tuples, arrays of many dtypes and shapes, host
arrays in bfloat16 and fp8, stand-ins for GPU tensors, hostile objects) must each return or raise
AiterCompatError: never TypeError or another exception, never a crash. The entry points added
since the first fuzzing (mha_batch_prefill_func, pa_decode_gluon, the fp8 per-tensor names and
Triton's names) with the earlier ones. Seeded: a failure names the call and the seed."""
import functools
import math

import numpy as np
import pytest

import aiter_compat
import aiter_compat.triton_mha
from aiter_compat import AiterCompatError
from conftest import MATRIX_PATH, RNG
from dlpack_arrays import RawArray
import make_fixture
from vllm_calls import RocmTensor

CALLS_PER_OP = 300

# Each entry point and the matrix key whose newest parameter list (the `main` entry) it binds.
OPS = {
    "mha_batch_prefill_func": (aiter_compat.mha_batch_prefill_func, "mha_batch_prefill_func"),
    "pa_decode_gluon": (aiter_compat.pa_decode_gluon, "pa_decode_gluon"),
    "flash_attn_varlen_fp8_pertensor_func": (aiter_compat.flash_attn_varlen_fp8_pertensor_func,
                                             "flash_attn_varlen_fp8_pertensor_func"),
    "flash_attn_fp8_pertensor_func": (aiter_compat.flash_attn_fp8_pertensor_func, "flash_attn_fp8_pertensor_func"),
    "triton_mha.flash_attn_varlen_func": (aiter_compat.triton_mha.flash_attn_varlen_func,
                                          "triton_flash_attn_varlen_func"),
    "triton_mha.flash_attn_func": (aiter_compat.triton_mha.flash_attn_func, "triton_flash_attn_func"),
    "flash_attn_varlen_func": (aiter_compat.flash_attn_varlen_func, "flash_attn_varlen_func"),
    "flash_attn_func": (aiter_compat.flash_attn_func, "flash_attn_func"),
    "unified_attention": (aiter_compat.unified_attention, "unified_attention"),
}


class Hostile:
    """An object whose every tensor-like attribute raises: reading it must not leak the error."""

    @property
    def shape(self):
        raise RuntimeError("shape of a hostile object")

    @property
    def dtype(self):
        raise RuntimeError("dtype of a hostile object")

    def __dlpack_device__(self):
        raise RuntimeError("device of a hostile object")

    def __index__(self):
        raise RuntimeError("index of a hostile object")

    def __float__(self):
        raise RuntimeError("float of a hostile object")

    def __bool__(self):
        raise RuntimeError("truth of a hostile object")

    def __len__(self):
        raise RuntimeError("length of a hostile object")


@functools.lru_cache(maxsize=None)
def newest_ops():
    main = next(r for r in make_fixture.load_matrix(MATRIX_PATH)["releases"] if r["version"] == "main")
    return main["ops"]


def params_of(key):
    return list(newest_ops()[key]["params"])


def random_shape(rng):
    return tuple(int(n) for n in rng.integers(0, 5, size=int(rng.integers(0, 5))))


def random_value(rng):
    kind = int(rng.integers(0, 16))
    if kind == 0:
        return None
    if kind == 1:
        return bool(rng.integers(0, 2))
    if kind == 2:
        return int(rng.choice([0, 1, -1, 7, 128, 2 ** 31, -2 ** 63, 2 ** 64]))
    if kind == 3:
        return float(rng.choice([0.0, -0.5, 0.125, math.nan, math.inf, -math.inf, 1e300]))
    if kind == 4:
        return str(rng.choice(["", "bf16", "x" * 40]))
    if kind == 5:
        return tuple(int(x) for x in rng.integers(-2, 130, size=int(rng.integers(0, 5))))
    if kind == 6:
        return [int(x) for x in rng.integers(-2, 5, size=int(rng.integers(0, 4)))]
    if kind == 7:
        return {"a": 1}
    if kind == 8:
        return Hostile()
    if kind == 9:
        return RocmTensor(*random_shape(rng), dtype=str(rng.choice(["bfloat16", "float16", "float32", "int32",
                                                                     "float8_e4m3fn", "float8_e4m3fnuz"])))
    if kind == 10:
        return RawArray(rng.integers(0, 255, size=random_shape(rng)).astype(np.uint8),
                        str(rng.choice(["float8_e4m3fn", "float8_e4m3fnuz", "int8"])))
    if kind == 11:
        return RawArray(rng.integers(0, 2 ** 16, size=random_shape(rng)).astype(np.uint16), "bfloat16")
    if kind == 12:
        return rng.integers(-3, 20, size=random_shape(rng)).astype(str(rng.choice(["int32", "int64", "uint8"])))
    if kind == 13:
        return np.zeros(random_shape(rng), np.bool_)
    # float arrays, the commonest argument; sometimes a strided view
    a = rng.standard_normal(random_shape(rng)).astype(str(rng.choice(["float32", "float16", "float64"])))
    return a[..., ::2] if a.ndim and kind == 14 else a


def random_call(rng, params):
    """(positionals, keywords): some leading positionals, then keywords, some repeating a
    positional, some unknown."""
    positionals = [random_value(rng) for _ in range(int(rng.integers(0, len(params) + 3)))]
    keywords = {}
    for name in params:
        if rng.random() < 0.15:
            keywords[name] = random_value(rng)
    if rng.random() < 0.1:
        keywords["no_such_parameter"] = random_value(rng)
    if rng.random() < 0.1 and positionals:  # a keyword given twice (once by position)
        keywords[params[min(len(positionals), len(params)) - 1]] = random_value(rng)
    return positionals, keywords


@pytest.mark.parametrize("name", list(OPS))
def test_random_calls_end_in_a_result_or_aiter_compat_error(name):
    fn, key = OPS[name]
    params = params_of(key)
    assert len(params) >= 3, params
    outcomes = {"returned": 0, "refused": 0}
    for _ in range(CALLS_PER_OP):
        args, kwargs = random_call(RNG, params)
        try:
            fn(*args, **kwargs)
            outcomes["returned"] += 1
        except AiterCompatError as e:
            assert str(e), f"{name}: an AiterCompatError without a message"
            outcomes["refused"] += 1
        except BaseException as e:  # TypeError above all: the binding must never raise it
            shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
            pytest.fail(f"{name}({shown}) raised {type(e).__name__}: {e}")
    assert outcomes["refused"] > 0, outcomes  # the calls reached the checks, not only the binding


def test_repeated_and_unknown_keywords_are_named():
    """The two binding errors the random calls make most, named for each new entry point."""
    for name, (fn, key) in OPS.items():
        params = params_of(key)
        with pytest.raises(AiterCompatError) as info:
            fn(None, **{params[0]: None})
        assert params[0] in str(info.value), (name, str(info.value))
        with pytest.raises(AiterCompatError) as info:
            fn(no_such_parameter=1)
        assert "no_such_parameter" in str(info.value), (name, str(info.value))
