"""Bad inputs to every public function: AiterCompatError naming the argument, the value found and
the value needed; never a TypeError, never a crash."""
import numpy as np
import pytest

import aiter_compat
from aiter_compat import AiterCompatError
from conftest import RNG
from dlpack_arrays import RawArray


def varlen_args():
    q = RNG.standard_normal((6, 8, 16)).astype(np.float32)
    k = RNG.standard_normal((6, 2, 16)).astype(np.float32)
    v = RNG.standard_normal((6, 2, 16)).astype(np.float32)
    cu = np.array([0, 2, 6], np.int32)
    return dict(q=q, k=k, v=v, cu_seqlens_q=cu, cu_seqlens_k=cu.copy(), max_seqlen_q=4, max_seqlen_k=4,
                causal=True, sink_ptr=np.zeros(8, np.float32))


def paged_args():
    q = RNG.standard_normal((2, 4, 16)).astype(np.float32)
    kc = RNG.standard_normal((5, 16, 2, 16)).astype(np.float32)
    return dict(q=q, k_cache=kc, v_cache=kc.copy(), block_table=np.array([[0, 1], [2, 3]], np.int32),
                seqused_k=np.array([20, 3], np.int32), sinks=np.zeros(4, np.float32))


VARLEN_BAD = [
    ("int32 q", lambda a: a.update(q=a["q"].astype(np.int32)), "q", "int32"),
    ("k float16", lambda a: a.update(k=a["k"].astype(np.float16)), "k", "float16"),
    ("2-D q", lambda a: a.update(q=a["q"][:, 0]), "q", "2 dimensions"),
    ("head ratio", lambda a: a.update(k=a["k"][:, :1].repeat(3, 1), v=a["v"][:, :1].repeat(3, 1)), "k", "3 heads"),
    ("head dim", lambda a: a.update(k=a["k"][..., :8]), "k", "[6, 2, 8]"),
    ("strided head dim", lambda a: a.update(v=np.repeat(a["v"], 2, axis=2)[..., ::2]), "v", "stride 2"),
    ("int64 cu_seqlens", lambda a: a.update(cu_seqlens_q=a["cu_seqlens_q"].astype(np.int64)), "cu_seqlens_q", "int64"),
    ("non-monotonic", lambda a: a.update(cu_seqlens_k=np.array([0, 5, 3], np.int32)), "cu_seqlens_k", "after 5"),
    ("lengths beyond q", lambda a: a.update(cu_seqlens_q=np.array([0, 2, 9], np.int32), max_seqlen_q=7),
     "cu_seqlens_q", "last entry 9"),
    ("max_seqlen too small", lambda a: a.update(max_seqlen_k=1), "max_seqlen_k", "1"),
    ("sinks length", lambda a: a.update(sink_ptr=np.zeros(4, np.float32)), "sinks", "[4]"),
    ("NaN sinks", lambda a: a.update(sink_ptr=np.full(8, np.nan, np.float32)), "sinks", "NaN"),
    ("inf sinks", lambda a: a.update(sink_ptr=np.full(8, np.inf, np.float32)), "sinks", "+inf"),
    ("int8 sinks", lambda a: a.update(sink_ptr=np.zeros(8, np.int8)), "sinks", "dtype int8"),
    ("float64 sinks", lambda a: a.update(sink_ptr=np.zeros(8, np.float64)), "sinks", "dtype float64"),
    ("fp8 sinks", lambda a: a.update(sink_ptr=RawArray(np.zeros(8, np.uint8), "float8_e4m3fn")), "sinks",
     "dtype float8_e4m3fn"),
    ("out overlapping q", lambda a: a.update(out=a["q"]), "out", "overlapping q"),
    ("out wrong shape", lambda a: a.update(out=np.zeros((6, 8, 8), np.float32)), "out", "[6, 8, 8]"),
    ("read-only out", lambda a: a.update(out=np.broadcast_to(np.zeros((1, 8, 16), np.float32), (6, 8, 16))), "out",
     "cannot be exported"),
    ("window type", lambda a: a.update(window_size="wide"), "window_size", "4 values"),
    ("window arity", lambda a: a.update(window_size=(1, 2, 3, 4)), "window_size", "4 values"),
    ("not a tensor", lambda a: a.update(v=[1, 2, 3]), "v", "list"),
    ("unknown keyword", lambda a: a.update(sinks=np.zeros(8, np.float32)), "flash_attn_varlen_func(sinks=...)",
     "unknown keyword"),
]


@pytest.mark.parametrize("case", VARLEN_BAD, ids=[c[0] for c in VARLEN_BAD])
def test_varlen_bad_inputs(case):
    _, spoil, argument, found = case
    args = varlen_args()
    spoil(args)
    with pytest.raises(AiterCompatError) as info:
        aiter_compat.flash_attn_varlen_func(**args)
    assert info.value.argument == argument, str(info.value)
    assert found in info.value.found, str(info.value)
    assert info.value.needed


def test_missing_required_and_too_many_positional():
    with pytest.raises(AiterCompatError) as info:
        aiter_compat.flash_attn_varlen_func(np.zeros((1, 1, 1), np.float32))
    assert info.value.argument == "k" and "required" in info.value.needed
    with pytest.raises(AiterCompatError):
        aiter_compat.flash_attn_func(*([None] * 30))


PAGED_BAD = [
    ("block out of range", lambda a: a["block_table"].__setitem__((0, 1), 7), "block_table[0, 1]", "7"),
    ("negative block", lambda a: a["block_table"].__setitem__((1, 0), -1), "block_table[1, 0]", "-1"),
    ("context beyond table", lambda a: a["seqused_k"].__setitem__(0, 40), "seqused_k[0]", "40"),
    ("v_cache heads", lambda a: a.update(v_cache=a["v_cache"][:, :, :1]), "v_cache", "[5, 16, 1, 16]"),
    ("NHD expected", lambda a: a.update(k_cache=a["k_cache"][0]), "k_cache", "3 dimensions"),
    ("table dtype", lambda a: a.update(block_table=a["block_table"].astype(np.int64)), "block_table", "int64"),
    ("seqused batch", lambda a: a.update(seqused_k=np.array([3], np.int32)), "seqused_k", "[1]"),
]


@pytest.mark.parametrize("case", PAGED_BAD, ids=[c[0] for c in PAGED_BAD])
def test_paged_decode_bad_inputs(case):
    _, spoil, argument, found = case
    args = paged_args()
    spoil(args)
    with pytest.raises(AiterCompatError) as info:
        aiter_compat.paged_attention_decode(**args)
    assert info.value.argument == argument, str(info.value)
    assert found in info.value.found, str(info.value)


def test_unified_attention_bad_inputs():
    a = paged_args()
    out = np.zeros_like(a["q"])
    cu = np.array([0, 1, 2], np.int32)
    good = (a["q"], a["k_cache"], a["v_cache"], out, cu, 1, a["seqused_k"], 20, 0.25, True, (-1, -1),
            a["block_table"], 0, None, None, None)
    assert aiter_compat.unified_attention(*good, sinks=a["sinks"]) is None
    with pytest.raises(AiterCompatError) as info:
        aiter_compat.unified_attention(*good, sinks=np.zeros(3, np.float32))
    assert info.value.argument == "sinks"
    bad_out = good[:3] + (a["q"],) + good[4:]
    with pytest.raises(AiterCompatError) as info:
        aiter_compat.unified_attention(*bad_out)
    assert info.value.argument == "out" and "overlapping q" in info.value.found


def test_unsupported_call_lists_every_candidate():
    args = varlen_args()
    with pytest.raises(AiterCompatError) as info:
        aiter_compat.flash_attn_varlen_func(**args, dropout_p=0.2, alibi_slopes=np.zeros(8, np.float32))
    names = [c["name"] for c in info.value.candidates]
    assert len(names) == 3 and names[1] == "fallback varlen_fwd (cpu reference)"
    assert info.value.candidates[1]["reasons"] == ["dropout_p is not supported", "alibi_slopes is not supported"]
    assert "inputs:" in str(info.value) and "candidates:" in str(info.value)
    assert not isinstance(info.value, TypeError)
