"""Every GPU fallback kernel through the Python module, against the CPU reference route of the
same module on the same inputs (random inputs seeded per test, see conftest.py; outputs
poisoned with NaN so an unwritten element fails). Bounds from docs: 2e-3 for decode, 1e-2 for bf16 prefill, absolute for
values below 1 and relative above (see record)."""
import pytest

import aiter_compat
from aiter_compat.bench import capture
from conftest import RESULTS

torch = pytest.importorskip("torch")
DEV = "cuda"


def record(case, got, want, bound):
    """Error against the reference, in units of the bound, scaled by the value's magnitude above 1:
    a 16-bit output of magnitude 2 to 4 is one rounding step (2^-6 in bf16) from its neighbours,
    so an absolute bound below that would fail on rounding alone."""
    err = (got.float().cpu() - want.float()).abs() / want.float().abs().clamp(min=1)
    assert not torch.isnan(got).any(), f"{case}: NaN in the output (unwritten element?)"
    worst = float(err.max()) if err.numel() else 0.0
    route = [r for r in aiter_compat.routes() if r["route"].startswith("fallback (gpu)")]
    RESULTS.append({"case": case, "route": "fallback (gpu)" if route else "?", "max_abs_err": worst, "bound": bound})
    assert worst <= bound, f"{case}: max error {worst} (absolute below 1, relative above) > {bound}"


def ragged(q_lens, k_lens, hq, hk, d, dtype):
    cu_q = torch.tensor([0] + torch.tensor(q_lens).cumsum(0).tolist(), dtype=torch.int32)
    cu_k = torch.tensor([0] + torch.tensor(k_lens).cumsum(0).tolist(), dtype=torch.int32)
    q = torch.randn(int(cu_q[-1]), hq, d, dtype=dtype)
    k = torch.randn(int(cu_k[-1]), hk, d, dtype=dtype)
    v = torch.randn(int(cu_k[-1]), hk, d, dtype=dtype)
    return q, k, v, cu_q, cu_k


def sinks_for(kind, hq):
    return {"random": torch.randn(hq), "large": torch.full((hq,), 1e4), "-inf": torch.full((hq,), float("-inf")),
            None: None}[kind]


VARLEN = [
    # name, q_lens, k_lens, hq, hk, d, causal, window, sinks, dtype, bound
    ("gpt-oss prefill full", [300, 77], [300, 77], 64, 8, 64, True, (-1, -1), "random", torch.bfloat16, 1e-2),
    ("gpt-oss prefill window 128", [300, 77], [300, 77], 64, 8, 64, True, (127, 0), "random", torch.bfloat16, 1e-2),
    ("head dim 128", [130, 5], [130, 5], 16, 4, 128, True, (-1, -1), "random", torch.bfloat16, 1e-2),
    ("fp16 non-causal ragged", [17, 1, 40], [33, 9, 40], 8, 2, 64, False, (-1, -1), "random", torch.float16, 2e-3),
    ("length-1 queries and keys", [1, 1, 1], [1, 7, 1], 8, 8, 64, True, (-1, -1), "random", torch.bfloat16, 1e-2),
    ("window wider than context", [20], [20], 8, 1, 64, True, (1000, 0), "random", torch.bfloat16, 1e-2),
    ("empty sequences", [0, 9, 0], [0, 9, 4], 8, 2, 64, True, (-1, -1), "random", torch.bfloat16, 1e-2),
    ("large sinks", [33], [33], 8, 2, 64, True, (-1, -1), "large", torch.bfloat16, 1e-2),
    ("-inf sinks", [33], [33], 8, 2, 64, True, (-1, -1), "-inf", torch.bfloat16, 1e-2),
    ("no sinks", [33], [50], 8, 2, 64, False, (5, 3), None, torch.float32, 1e-4),
    ("long causal with a cached prefix", [1100, 513], [1100, 700], 64, 8, 64, True, (-1, -1), "random",
     torch.bfloat16, 1e-2),
    ("long head dim 128 group 4", [600], [900], 32, 8, 128, True, (-1, -1), "random", torch.bfloat16, 1e-2),
    ("long fp16 window 100 right 20", [700], [700], 16, 2, 64, True, (100, 20), "random", torch.float16, 2e-3),
    ("fp16 head dim 128 ragged with a prefix", [257, 31], [300, 31], 16, 2, 128, True, (-1, -1), "random",
     torch.float16, 2e-3),
]


@pytest.mark.parametrize("case", VARLEN, ids=[c[0] for c in VARLEN])
def test_varlen(case):
    name, q_lens, k_lens, hq, hk, d, causal, window, sink_kind, dtype, bound = case
    q, k, v, cu_q, cu_k = ragged(q_lens, k_lens, hq, hk, d, dtype)
    sinks = sinks_for(sink_kind, hq)
    args = dict(causal=causal, window_size=window, return_lse=True)
    want, want_lse = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(q_lens), max(k_lens),
                                                         sink_ptr=sinks, **args)
    out = torch.full(q.shape, float("nan"), dtype=dtype, device=DEV)
    g = lambda t: None if t is None else t.to(DEV)
    got, lse = aiter_compat.flash_attn_varlen_func(g(q), g(k), g(v), g(cu_q), g(cu_k), max(q_lens), max(k_lens),
                                                   sink_ptr=g(sinks), out=out, **args)
    torch.cuda.synchronize()
    assert got is out
    record(f"varlen: {name}", got, want, bound)
    finite = torch.isfinite(want_lse)
    assert torch.equal(torch.isfinite(lse.cpu()), finite)
    if finite.any():
        assert ((lse.cpu()[finite] - want_lse[finite]).abs() / want_lse[finite].abs().clamp(min=1)).max().item() <= 1e-4


def test_max_seqlen_q_underestimated():
    """A max_seqlen_q below the real length costs time, not results: every query row is written."""
    q, k, v, cu_q, cu_k = ragged([700, 90], [700, 90], 64, 8, 64, torch.bfloat16)
    sinks = torch.randn(64)
    want = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 700, 700, causal=True, sink_ptr=sinks)
    out = torch.full(q.shape, float("nan"), dtype=q.dtype, device=DEV)
    got = aiter_compat.flash_attn_varlen_func(q.cuda(), k.cuda(), v.cuda(), cu_q.cuda(), cu_k.cuda(), 10, 700,
                                              causal=True, sink_ptr=sinks.cuda(), out=out)
    torch.cuda.synchronize()
    record("varlen: max_seqlen_q 10 for a 700-token sequence", got, want, 1e-2)


def test_flash_attn_func_batch():
    q = torch.randn(3, 50, 16, 64, dtype=torch.bfloat16)
    k = torch.randn(3, 70, 4, 64, dtype=torch.bfloat16)
    v = torch.randn(3, 70, 4, 64, dtype=torch.bfloat16)
    sinks = torch.randn(16)
    want, want_lse = aiter_compat.flash_attn_func(q, k, v, causal=True, sink_ptr=sinks, return_lse=True)
    got, lse = aiter_compat.flash_attn_func(q.cuda(), k.cuda(), v.cuda(), causal=True, sink_ptr=sinks.cuda(),
                                            return_lse=True)
    torch.cuda.synchronize()
    record("batch: flash_attn_func causal", got, want, 1e-2)
    assert (lse.cpu() - want_lse).abs().max().item() <= 1e-3


def paged(ctx, qlen, hq, hk, d, block_size, dtype=torch.bfloat16):
    nblk = [(c + block_size - 1) // block_size for c in ctx]
    total = sum(nblk) + 2
    perm = torch.randperm(total)
    table = torch.zeros(len(ctx), max(nblk), dtype=torch.int32)
    start = 0
    for b, n in enumerate(nblk):
        table[b, :n] = perm[start:start + n]
        start += n
    kc = torch.randn(total, block_size, hk, d, dtype=dtype)
    vc = torch.randn(total, block_size, hk, d, dtype=dtype)
    cu_q = torch.tensor([0] + torch.tensor(qlen).cumsum(0).tolist(), dtype=torch.int32)
    q = torch.randn(int(cu_q[-1]), hq, d, dtype=dtype)
    return q, kc, vc, table, torch.tensor(ctx, dtype=torch.int32), cu_q


DECODE = [
    # name, ctx lens, block size, window, sinks[, head dim, dtype, q heads]
    ("head dim 128 fp16", [5000, 3, 64], 16, (-1, -1), "random", 128, torch.float16, 64),
    ("group 16", [3000, 7], 32, (-1, -1), "random", 64, torch.bfloat16, 128),
    ("gpt-oss decode block 16", [4096, 1, 100, 3000], 16, (-1, -1), "random"),
    ("gpt-oss decode block 32 window 128", [4096, 50, 129], 32, (127, 0), "random"),
    ("gpt-oss decode block 64", [777, 2048], 64, (-1, -1), "large"),
    ("split-KV 1 x 32k", [32768], 16, (-1, -1), "random"),
    ("split-KV 1 x 32k window 128", [32768], 16, (127, 0), "random"),
    ("split-KV no sinks", [20000, 9], 16, (-1, -1), None),
]


@pytest.mark.parametrize("case", DECODE, ids=[c[0] for c in DECODE])
def test_paged_decode(case):
    name, ctx, bs, window, sink_kind = case[:5]
    d, dtype, hq = case[5:] if len(case) > 5 else (64, torch.bfloat16, 64)
    q, kc, vc, table, used, _ = paged(ctx, [1] * len(ctx), hq, 8, d, bs, dtype)
    sinks = sinks_for(sink_kind, hq)
    want, want_lse = aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=0.125,
                                                         window_size=window, sinks=sinks, return_lse=True)
    g = lambda t: None if t is None else t.cuda()
    out = torch.full(q.shape, float("nan"), dtype=q.dtype, device=DEV)
    got, lse = aiter_compat.paged_attention_decode(g(q), g(kc), g(vc), g(table), g(used), softmax_scale=0.125,
                                                   window_size=window, sinks=g(sinks), out=out, return_lse=True)
    torch.cuda.synchronize()
    record(f"decode: {name}", got, want, 2e-3 if q.dtype != torch.bfloat16 else 1e-2)
    assert ((lse.cpu() - want_lse).abs() / want_lse.abs().clamp(min=1)).max().item() <= 1e-4


@pytest.mark.parametrize("block_size", [16, 32])
def test_decode_skips_pages_outside_the_cache(block_size):
    """GPU kernels cannot check block-table contents without a sync: entries outside the cache
    are skipped (their keys take no weight), and nothing outside the cache is read."""
    ctx, hq, hk, d = [1000, 300], 64, 8, 64
    q, kc, vc, table, used, _ = paged(ctx, [1, 1], hq, hk, d, block_size)
    bad = [(0, 3), (0, 20), (1, 0)]
    for b, i in bad:
        table[b, i] = kc.shape[0] + 7 if i else -2
    sinks = torch.randn(hq)
    out = aiter_compat.paged_attention_decode(q.cuda(), kc.cuda(), vc.cuda(), table.cuda(), used.cuda(),
                                              softmax_scale=0.125, sinks=sinks.cuda())
    torch.cuda.synchronize()
    for b, n in enumerate(ctx):
        rows = [j for j in range(n) if (b, j // block_size) not in bad]
        pages = table[b, torch.tensor(rows) // block_size].long()
        slots = torch.tensor(rows) % block_size
        k = kc[pages, slots].float().repeat_interleave(hq // hk, dim=1)  # [rows, hq, d]
        v = vc[pages, slots].float().repeat_interleave(hq // hk, dim=1)
        logits = torch.einsum("hd,rhd->hr", q[b].float(), k) * 0.125
        weights = torch.softmax(torch.cat([logits, sinks[:, None]], dim=1), dim=1)[:, :-1]
        want = torch.einsum("hr,rhd->hd", weights, v)
        record(f"decode: pages outside the cache skipped (block {block_size}, sequence {b})", out[b], want, 1e-2)


@pytest.mark.parametrize("block_size", [16, 32, 64])
def test_unified_attention_extend(block_size):
    ctx, qlen = [300, 1, 64, 1000], [300, 1, 7, 33]  # prefill, decode, extend, extend
    q, kc, vc, table, used, cu_q = paged(ctx, qlen, 64, 8, 64, block_size)
    sinks = torch.randn(64)
    want = torch.empty_like(q)
    args = (cu_q, max(qlen), used, max(ctx), 0.125, True, (127, 0))
    aiter_compat.unified_attention(q, kc, vc, want, *args, table, 0, None, None, None, sinks=sinks)
    got = torch.full(q.shape, float("nan"), dtype=q.dtype, device=DEV)
    g = lambda t: t.cuda()
    aiter_compat.unified_attention(g(q), g(kc), g(vc), got, g(cu_q), max(qlen), g(used), max(ctx), 0.125, True,
                                   (127, 0), g(table), 0, None, None, None, sinks=g(sinks))
    torch.cuda.synchronize()
    record(f"unified_attention extend block {block_size}", got, want, 1e-2)


def test_unified_attention_decode_batch():
    ctx = [4096, 17, 300, 2048]
    q, kc, vc, table, used, cu_q = paged(ctx, [1] * 4, 64, 8, 64, 16)
    sinks = torch.randn(64)
    want = torch.empty_like(q)
    aiter_compat.unified_attention(q, kc, vc, want, cu_q, 1, used, max(ctx), 0.125, True, (-1, -1), table, 0,
                                   None, None, None, sinks=sinks)
    got = torch.full(q.shape, float("nan"), dtype=q.dtype, device=DEV)
    g = lambda t: t.cuda()
    aiter_compat.unified_attention(g(q), g(kc), g(vc), got, g(cu_q), 1, g(used), max(ctx), 0.125, True, (-1, -1),
                                   g(table), 0, None, None, None, sinks=g(sinks))
    torch.cuda.synchronize()
    record("unified_attention decode (max_seqlen_q 1)", got, want, 1e-2)


def test_outputs_come_back_as_torch_on_the_device():
    q, k, v, cu_q, cu_k = ragged([5], [5], 8, 2, 64, torch.bfloat16)
    out = aiter_compat.flash_attn_varlen_func(q.cuda(), k.cuda(), v.cuda(), cu_q.cuda(), cu_k.cuda(), 5, 5)
    assert isinstance(out, torch.Tensor) and out.is_cuda and out.dtype == torch.bfloat16


def test_probe_sees_the_gpu_and_matching_kernels():
    report = aiter_compat.probe()
    assert report["device"]["present"] and report["device"]["arch"].startswith("sm_")
    assert all(k["matches_device"] for k in report["fallback_kernels"])


@pytest.mark.parametrize("sink_kind", ["random", "-inf"])
def test_merge_attn_states_chunked_prefill(sink_kind):
    """Chunks attended without sinks and merged with the sink once equal one pass with sinks."""
    hq, hk, d, ctx, new = 64, 8, 64, 900, 100
    q = torch.randn(new, hq, d, dtype=torch.bfloat16)
    k = torch.randn(ctx + new, hk, d, dtype=torch.bfloat16)
    v = torch.randn(ctx + new, hk, d, dtype=torch.bfloat16)
    sinks = sinks_for(sink_kind, hq)
    cu = lambda n: torch.tensor([0, n], dtype=torch.int32, device=DEV)
    g = lambda t: t.to(DEV)
    cached, cached_lse = aiter_compat.flash_attn_varlen_func(g(q), g(k[:ctx]), g(v[:ctx]), cu(new), cu(ctx), new, ctx,
                                                             causal=False, return_lse=True)
    fresh, fresh_lse = aiter_compat.flash_attn_varlen_func(g(q), g(k[ctx:]), g(v[ctx:]), cu(new), cu(new), new, new,
                                                           causal=True, return_lse=True)
    out = torch.full(q.shape, float("nan"), dtype=q.dtype, device=DEV)
    out_lse = torch.full((hq, new), float("nan"), device=DEV)
    aiter_compat.merge_attn_states(out, cached, cached_lse, fresh, fresh_lse, output_lse=out_lse, sinks=g(sinks))
    torch.cuda.synchronize()
    cpu_cu = lambda n: torch.tensor([0, n], dtype=torch.int32)
    want, want_lse = aiter_compat.flash_attn_varlen_func(q, k, v, cpu_cu(new), cpu_cu(ctx + new), new, ctx + new,
                                                         causal=True, sink_ptr=sinks, return_lse=True)
    record(f"merge_attn_states chunked prefill ({sink_kind} sinks)", out, want, 1e-2)
    assert ((out_lse.cpu() - want_lse).abs() / want_lse.abs().clamp(min=1)).max().item() <= 1e-4


def test_many_threads_share_the_gpu_route():
    """16 Python threads call the GPU route at once (the kernels run with the GIL released):
    no deadlock, one route, every result equal to the single-thread one."""
    import threading
    q, kc, vc, table, used, _ = paged([3000, 17, 900], [1] * 3, 64, 8, 64, 16)
    g = [t.cuda() for t in (q, kc, vc, table, used)]
    sinks = torch.randn(64, device=DEV)
    want = aiter_compat.paged_attention_decode(*g, sinks=sinks)
    torch.cuda.synchronize()
    results, errors = [None] * 16, []

    def worker(i):
        try:
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                for _ in range(20):
                    out = aiter_compat.paged_attention_decode(*g, sinks=sinks)
                stream.synchronize()
            results[i] = out
        except Exception as e:  # reported below with the thread's index
            errors.append((i, repr(e)))
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread is still running after 120 s (deadlock?)"
    assert not errors, errors
    for out in results:
        assert torch.equal(out, want)
    assert any(r["route"].startswith("fallback (gpu)") for r in aiter_compat.routes()
               if r["op"] == "paged_attention_decode")


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "stride 2"])
@pytest.mark.parametrize("sink_dtype", [torch.bfloat16, torch.float16], ids=["bf16 sinks", "fp16 sinks"])
def test_sinks_in_the_models_dtype(sink_dtype, strided):
    """GPT-OSS keeps its sinks in bf16: every kernel that reads sinks (tiled prefill and decode,
    the direct-load decode, the generic kernel, the split merge, merge_attn_states) reads them in
    their own dtype and stride, against the CPU route given float32 sinks of the same values."""
    tag = f"{str(sink_dtype).split('.')[-1]} sinks{' stride 2' if strided else ''}"
    values = torch.randn(64).to(sink_dtype)
    if strided:
        buf = torch.full((128,), 99.0, dtype=sink_dtype, device=DEV)
        buf[::2] = values.to(DEV)
        gpu_sinks = buf[::2]
    else:
        gpu_sinks = values.to(DEV)
    ref_sinks = values.float()
    g = lambda t: t.to(DEV)
    # tiled prefill (rows / warpgroup), and the generic kernel on float32
    for dtype, bound, what in ((torch.bfloat16, 1e-2, "prefill tiled"), (torch.float32, 1e-4, "prefill generic fp32")):
        q, k, v, cu_q, cu_k = ragged([300, 77], [300, 77], 64, 8, 64, dtype)
        want = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 300, 300, causal=True, sink_ptr=ref_sinks)
        got = aiter_compat.flash_attn_varlen_func(g(q), g(k), g(v), g(cu_q), g(cu_k), 300, 300, causal=True,
                                                  sink_ptr=gpu_sinks)
        torch.cuda.synchronize()
        record(f"{what}, {tag}", got, want, bound)
    # tiled decode (sinks loaded first), split-KV with the merge, and the direct-load decode (an
    # output whose head stride is no multiple of 8 keeps the tiled kernels off)
    for ctx, odd_out, what in (([4096, 17, 300, 2048], False, "decode tiled"), ([32768], False, "decode split-KV"),
                               ([3000, 40], True, "decode direct-load")):
        q, kc, vc, table, used, _ = paged(ctx, [1] * len(ctx), 64, 8, 64, 16)
        want = aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=0.125, sinks=ref_sinks)
        out = torch.full((len(ctx), 64, 65), float("nan"), dtype=q.dtype, device=DEV)[..., :64] if odd_out else None
        got = aiter_compat.paged_attention_decode(g(q), g(kc), g(vc), g(table), g(used), softmax_scale=0.125,
                                                  sinks=gpu_sinks, out=out)
        torch.cuda.synchronize()
        record(f"{what}, {tag}", got, want, 1e-2)
    # merge_attn_states adds the sink once
    x, y = torch.randn(50, 64, 64, dtype=torch.bfloat16), torch.randn(50, 64, 64, dtype=torch.bfloat16)
    lx, ly = torch.randn(64, 50), torch.randn(64, 50)
    want = torch.empty_like(x)
    aiter_compat.merge_attn_states(want, x, lx, y, ly, sinks=ref_sinks)
    got = torch.full(x.shape, float("nan"), dtype=x.dtype, device=DEV)
    aiter_compat.merge_attn_states(got, g(x), g(lx), g(y), g(ly), sinks=gpu_sinks)
    torch.cuda.synchronize()
    record(f"merge_attn_states, {tag}", got, want, 1e-2)


GENERIC = [
    # name, q_lens, k_lens, hq, hk, d, dv, dtype, bound: head dims only the generic kernel takes
    ("head dim 80", [200, 33], [250, 33], 16, 2, 80, 80, torch.bfloat16, 1e-2),
    ("head dims 96/64", [77], [90], 8, 8, 96, 64, torch.float16, 2e-3),
    ("head dim 32, group 16", [40, 1], [40, 500], 32, 2, 32, 32, torch.bfloat16, 1e-2),
]


@pytest.mark.parametrize("case", GENERIC, ids=[c[0] for c in GENERIC])
def test_generic_kernel_head_dims(case):
    """The generic kernel takes head dims up to 128 (q/k and v apart): the GPU route takes what
    the kernel table's generic row says, and the results agree."""
    name, q_lens, k_lens, hq, hk, d, dv, dtype, bound = case
    q, k, _, cu_q, cu_k = ragged(q_lens, k_lens, hq, hk, d, dtype)
    v = torch.randn(k.shape[0], hk, dv, dtype=dtype)
    sinks = torch.randn(hq)
    want = aiter_compat.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(q_lens), max(k_lens), causal=True,
                                               sink_ptr=sinks)
    g = lambda t: t.to(DEV)
    got = aiter_compat.flash_attn_varlen_func(g(q), g(k), g(v), g(cu_q), g(cu_k), max(q_lens), max(k_lens),
                                              causal=True, sink_ptr=g(sinks))
    torch.cuda.synchronize()
    record(f"generic: {name}", got, want, bound)
    route = [r for r in aiter_compat.routes() if r["route"] == "fallback (gpu)" and r["kernel"] == "generic"]
    assert route, "the route should name the generic kernel"


@pytest.mark.parametrize("block_size", [1, 8, 128])
def test_decode_block_sizes_beyond_16_32_64(block_size):
    """Any block size: the tiled decode looks each key's page up (shift or division)."""
    q, kc, vc, table, used, _ = paged([700, 33, 260], [1] * 3, 64, 8, 64, block_size)
    sinks = torch.randn(64)
    want = aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=0.125, sinks=sinks)
    g = lambda t: t.cuda()
    got = aiter_compat.paged_attention_decode(g(q), g(kc), g(vc), g(table), g(used), softmax_scale=0.125,
                                              sinks=g(sinks))
    torch.cuda.synchronize()
    record(f"decode: block size {block_size}", got, want, 1e-2)


def test_explicit_stream_is_used():
    """stream= runs the kernels there: work queued behind a long kernel on that stream waits."""
    q, kc, vc, table, used, _ = paged([3000, 17], [1, 1], 64, 8, 64, 16)
    g = [t.cuda() for t in (q, kc, vc, table, used)]
    sinks = torch.randn(64, device=DEV)
    want = aiter_compat.paged_attention_decode(*g, sinks=sinks)
    side = torch.cuda.Stream()
    out = torch.full_like(want, float("nan"))
    side.wait_stream(torch.cuda.current_stream())
    torch.cuda._sleep(10_000_000)  # on the current stream: if the call ran there, out would stay NaN below
    aiter_compat.paged_attention_decode(*g, sinks=sinks, out=out, stream=side)
    side.synchronize()  # the side stream alone: done although the current stream still sleeps
    assert not torch.isnan(out).any()
    assert torch.equal(out, want)
    torch.cuda.synchronize()


def test_split_decode_graph_replays_with_new_inputs():
    """A split-KV decode (1 x 32k: the merge is the split kernel's programmatic dependent on
    sm_90) captured once and replayed behind a long kernel, with new queries, cache and sinks
    copied in before each replay: each replay's output against the CPU route on its own inputs.
    A merge that read the partial rows before the split kernel had written them would return the
    previous replay's (or the poison's) values."""
    q, kc, vc, table, used, _ = paged([32768], [1], 64, 8, 64, 16)
    sinks = torch.randn(64)
    g = [t.cuda() for t in (q, kc, vc, table, used)]
    g_sinks = sinks.cuda()
    out = torch.full(q.shape, float("nan"), dtype=q.dtype, device=DEV)
    graph = capture(lambda: aiter_compat.paged_attention_decode(*g, softmax_scale=0.125, sinks=g_sinks, out=out))
    for replay in range(4):
        q, kc, vc = torch.randn_like(q), torch.randn_like(kc), torch.randn_like(vc)
        sinks = torch.randn(64)
        want = aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=0.125, sinks=sinks)
        for dst, src in zip((g[0], g[1], g[2], g_sinks), (q, kc, vc, sinks)):
            dst.copy_(src)
        out.fill_(float("nan"))
        torch.cuda._sleep(2_000_000)  # the replay queued behind a long kernel
        graph.replay()
        torch.cuda.synchronize()
        record(f"decode: split 1 x 32k graph replay {replay}", out, want, 1e-2)


@pytest.mark.parametrize("d", [64, 128])
def test_split_decode_folded_merge_and_merge_kernel_agree(d, monkeypatch):
    """The "keys" split kernel folds the merge into the last split block of each KV head; with
    AITER_COMPAT_SPLIT_MERGE=kernel (the default) the merge kernel merges instead. Both against the CPU route, on
    sequences of unequal lengths (a few splits each, some with no keys in their last splits) and
    the log-sum-exp, whose row the fold writes too."""
    q, kc, vc, table, used, _ = paged([9000, 40, 2500], [1] * 3, 64, 8, d, 16)
    sinks = torch.randn(64)
    want, want_lse = aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=0.125, sinks=sinks,
                                                         return_lse=True)
    g = [t.cuda() for t in (q, kc, vc, table, used)]
    for mode in ("fold", "kernel"):
        monkeypatch.setenv("AITER_COMPAT_SPLIT_MERGE", mode)
        got, lse = aiter_compat.paged_attention_decode(*g, softmax_scale=0.125, sinks=sinks.cuda(), return_lse=True)
        torch.cuda.synchronize()
        what = "merge kernel" if mode == "kernel" else "folded merge"
        record(f"decode: split d{d}, {what}", got, want, 1e-2)
        assert torch.allclose(lse.cpu(), want_lse, atol=1e-3, rtol=1e-3), f"{what}: LSE"


def test_split_decode_graph_beside_eager_calls_on_another_stream(monkeypatch):
    """Correct across streams: a split decode captured on one stream is replayed on a second while
    eager split decodes of other inputs run on the first, with nothing ordering the two. Each
    call's arrival counters are its own scratch, zeroed at its start; counters shared between
    calls (reset by their last block) would let one call's blocks count as another's."""
    monkeypatch.setenv("AITER_COMPAT_SPLIT_MERGE", "fold")
    torch.manual_seed(3)
    a = paged([32768], [1], 64, 8, 64, 16)
    b = paged([20000], [1], 64, 8, 64, 16)
    sinks_a, sinks_b = torch.randn(64), torch.randn(64)
    want_a = aiter_compat.paged_attention_decode(*a[:5], softmax_scale=0.125, sinks=sinks_a)
    want_b = aiter_compat.paged_attention_decode(*b[:5], softmax_scale=0.125, sinks=sinks_b)
    ga, gb = [t.cuda() for t in a[:5]], [t.cuda() for t in b[:5]]
    ga_sinks, gb_sinks = sinks_a.cuda(), sinks_b.cuda()
    out_a = torch.empty(a[0].shape, dtype=a[0].dtype, device=DEV)
    first, second = torch.cuda.Stream(), torch.cuda.Stream()
    graph = capture(lambda: aiter_compat.paged_attention_decode(*ga, softmax_scale=0.125, sinks=ga_sinks, out=out_a),
                    first)
    outs_b = [torch.empty(b[0].shape, dtype=b[0].dtype, device=DEV) for _ in range(8)]
    for i in range(8):
        out_a.fill_(float("nan"))
        torch.cuda.synchronize()
        with torch.cuda.stream(second):
            graph.replay()
        with torch.cuda.stream(first):
            for out_b in outs_b[:4] if i % 2 else outs_b[4:]:
                aiter_compat.paged_attention_decode(*gb, softmax_scale=0.125, sinks=gb_sinks, out=out_b)
        torch.cuda.synchronize()
        record(f"decode: split graph replay {i} on a second stream", out_a, want_a, 1e-2)
    for j, out_b in enumerate(outs_b):
        record(f"decode: split eager call {j} beside graph replays", out_b, want_b, 1e-2)
