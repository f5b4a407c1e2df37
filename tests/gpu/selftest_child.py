"""One process of tests/gpu/test_selftest.py (the fault variable is read once per process):
runs a GPT-OSS-shaped prefill, a decode, a long split decode and a merge on the GPU and on the
CPU route (at first use, and again after warmup()), and prints one JSON line: each case's error
or the error it raised, the verdicts and the kernel rows the routes list with their reasons.

    python selftest_child.py [capture]
"""
import json
import sys

import torch

import aiter_compat

DEV = "cuda"


def err(got, want):
    return float(((got.float().cpu() - want.float()).abs() / want.float().abs().clamp(min=1)).max())


def prefill():
    torch.manual_seed(1)
    lens = [300, 77]
    cu = torch.tensor([0, 300, 377], dtype=torch.int32)
    q = torch.randn(377, 64, 64, dtype=torch.bfloat16)
    k, v = torch.randn(377, 8, 64, dtype=torch.bfloat16), torch.randn(377, 8, 64, dtype=torch.bfloat16)
    s = torch.randn(64)
    want = aiter_compat.flash_attn_varlen_func(q, k, v, cu, cu, 300, 300, causal=True, window_size=(127, 0), sink_ptr=s)
    g = lambda t: t.to(DEV)  # noqa: E731
    got = aiter_compat.flash_attn_varlen_func(g(q), g(k), g(v), g(cu), g(cu), max(lens), max(lens), causal=True,
                                              window_size=(127, 0), sink_ptr=g(s))
    torch.cuda.synchronize()
    return err(got, want)


def decode(ctx):
    torch.manual_seed(2)
    batch, block = len(ctx), 16
    blocks = [(c + block - 1) // block for c in ctx]
    kc = torch.randn(sum(blocks), block, 8, 64, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    table = torch.zeros(batch, max(blocks), dtype=torch.int32)
    at = 0
    for b, n in enumerate(blocks):
        table[b, :n] = torch.arange(at, at + n)
        at += n
    used = torch.tensor(ctx, dtype=torch.int32)
    q = torch.randn(batch, 64, 64, dtype=torch.bfloat16)
    s = torch.randn(64)
    args = dict(softmax_scale=0.125)
    want = aiter_compat.paged_attention_decode(q, kc, vc, table, used, sinks=s, **args)
    g = lambda t: t.to(DEV)  # noqa: E731
    got = aiter_compat.paged_attention_decode(g(q), g(kc), g(vc), g(table), g(used), sinks=g(s), **args)
    torch.cuda.synchronize()
    return err(got, want)


def merge():
    torch.manual_seed(3)
    p, sfx = torch.randn(9, 64, 64, dtype=torch.bfloat16), torch.randn(9, 64, 64, dtype=torch.bfloat16)
    pl, sl, s = torch.randn(64, 9), torch.randn(64, 9), torch.randn(64)
    want = torch.empty_like(p)
    aiter_compat.merge_attn_states(want, p, pl, sfx, sl, sinks=s)
    got = torch.empty_like(p).to(DEV)
    g = lambda t: t.to(DEV)  # noqa: E731
    aiter_compat.merge_attn_states(got, g(p), g(pl), g(sfx), g(sl), sinks=g(s))
    torch.cuda.synchronize()
    return err(got, want)


def capture():
    """A decode captured into a CUDA graph before any check ran, then after warmup()."""
    out = {}
    torch.manual_seed(4)
    kc = torch.randn(8, 16, 8, 64, dtype=torch.bfloat16, device=DEV)
    vc, q = torch.randn_like(kc), torch.randn(1, 64, 64, dtype=torch.bfloat16, device=DEV)
    table, used = torch.arange(8, dtype=torch.int32, device=DEV).view(1, 8), torch.tensor([128], dtype=torch.int32, device=DEV)
    o = torch.empty_like(q)
    call = lambda: aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=0.125, out=o)  # noqa: E731
    aiter_compat.probe()  # the dispatch state made outside capture
    side = torch.cuda.Stream()
    try:
        with torch.cuda.stream(side):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                call()
        out["first"] = "captured"
    except Exception as e:  # noqa: BLE001 (what was raised is the result)
        out["first"] = f"{type(e).__name__}: {e}"
    torch.cuda.synchronize()
    out["warmup"] = [r["verdict"] for r in aiter_compat.warmup(dtypes=["bf16"], head_dims=[64])]
    with torch.cuda.stream(side):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            call()
    g.replay()
    torch.cuda.synchronize()
    want = aiter_compat.paged_attention_decode(q.cpu(), kc.cpu(), vc.cpu(), table.cpu(), used.cpu(), softmax_scale=0.125)
    out["after_warmup_error"] = err(o, want)
    return out


def main():
    if sys.argv[1:] == ["capture"]:
        print(json.dumps(capture()))
        return
    result = {"errors": {}, "raised": {}}
    calls = (("prefill", prefill), ("decode", lambda: decode([4096, 17, 300, 2048])),
             ("decode split", lambda: decode([32768])), ("merge", merge))
    # First use (each family checked as a call meets it), then every bf16 d64 family checked
    # (rows no call here reaches, such as the direct-load decode), then the calls again: routes
    # decided with every verdict known, whose kernel rows show the reasons.
    for rnd in ("first use", "after warmup"):
        for name, fn in calls:
            key = name if rnd == "after warmup" else f"{name} ({rnd})"
            try:
                result["errors"][key] = fn()
            except aiter_compat.AiterCompatError as e:
                result["raised"][key] = str(e)
        if rnd == "first use":
            aiter_compat.warmup(dtypes=["bf16"], head_dims=[64])
    result["verdicts"] = aiter_compat.selftest_verdicts()
    result["routes"] = [{"op": r["op"], "route": r["route"], "kernels": r["kernels"]} for r in aiter_compat.routes()]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
