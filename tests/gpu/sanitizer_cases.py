"""Small calls of every GPU kernel path (unsplit, split-KV + merge, paged, batch), for
compute-sanitizer's memcheck and racecheck. Each result is compared with the same call on CPU
tensors (the reference kernels); exits non-zero on a wrong result, naming the case and the seed
(AITER_COMPAT_TEST_SEED replays it)."""
import os
import sys

import torch

import aiter_compat

SEED_TEXT = os.environ.get("AITER_COMPAT_TEST_SEED", "")
SEED = int(SEED_TEXT, 0) if SEED_TEXT else 20240611  # the default of tests/gpu/conftest.py
torch.manual_seed(SEED)
dev = "cuda"
failures = []


def on_cpu(x):
    return x.cpu() if isinstance(x, torch.Tensor) else x


def check(name, fn, *args, bound=1e-2, **kwargs):
    """fn on the GPU tensors and on CPU copies: every output within bound (absolute below 1,
    relative above, as tests/gpu/test_gpu_kernels.py's record), NaN nowhere."""
    got = fn(*args, **kwargs)
    want = fn(*[on_cpu(a) for a in args], **{k: on_cpu(v) for k, v in kwargs.items()})
    torch.cuda.synchronize()
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = g.float().cpu(), w.float()
        finite = torch.isfinite(w)
        if torch.isnan(g).any() or not torch.equal(torch.isfinite(g), finite):
            failures.append(f"{name} output {i}: NaN or a different set of infinities")
            continue
        err = ((g[finite] - w[finite]).abs() / w[finite].abs().clamp(min=1)).max().item() if finite.any() else 0.0
        if err > bound:
            failures.append(f"{name} output {i}: error {err:.3g} > {bound}")


q = torch.randn(40, 8, 64, dtype=torch.bfloat16, device=dev)
k = torch.randn(50, 2, 64, dtype=torch.bfloat16, device=dev)
cu_q = torch.tensor([0, 7, 40], dtype=torch.int32, device=dev)
cu_k = torch.tensor([0, 10, 50], dtype=torch.int32, device=dev)
sinks = torch.randn(8, device=dev)
check("varlen window 15", aiter_compat.flash_attn_varlen_func, q, k, k, cu_q, cu_k, 33, 40, causal=True,
      sink_ptr=sinks, window_size=(15, 0))
# Long enough that the warpgroup kernels' stage ring wraps (more than 4 key tiles of 128 at d64
# and of 64 at d128), with a ragged last tile: run under AITER_COMPAT_WGMMA_PRODUCER=1 too.
cu_long = torch.tensor([0, 130, 150], dtype=torch.int32, device=dev)
cu_long_k = torch.tensor([0, 600, 650], dtype=torch.int32, device=dev)
for d in (64, 128):
    check(f"varlen d{d} ring wraps", aiter_compat.flash_attn_varlen_func,
          torch.randn(150, 8, d, dtype=torch.bfloat16, device=dev), *[torch.randn(650, 2, d, dtype=torch.bfloat16,
                                                                                   device=dev)] * 2,
          cu_long, cu_long_k, 130, 600, causal=True, sink_ptr=sinks)
# Head dim 256 on the row tiles: a ragged prefill (partial 64-row and 32-key tiles), and decode
# rows over a paged cache split across the keys.
q256 = torch.randn(40, 8, 256, dtype=torch.bfloat16, device=dev)
k256 = torch.randn(50, 2, 256, dtype=torch.bfloat16, device=dev)
check("varlen d256 window 15", aiter_compat.flash_attn_varlen_func, q256, k256, k256, cu_q, cu_k, 33, 40,
      causal=True, sink_ptr=sinks, window_size=(15, 0))
ctx256 = torch.tensor([3000, 17], dtype=torch.int32, device=dev)
table256 = torch.arange(2 * 188, dtype=torch.int32, device=dev).reshape(2, 188)
cache256 = torch.randn(2 * 188, 16, 2, 256, dtype=torch.bfloat16, device=dev)
check("split-KV decode d256", aiter_compat.paged_attention_decode, torch.randn(2, 8, 256, dtype=torch.bfloat16, device=dev),
      cache256, cache256, table256, ctx256, sinks=sinks)
ctx = torch.tensor([3000, 17], dtype=torch.int32, device=dev)  # long enough to split
table = torch.arange(2 * 188, dtype=torch.int32, device=dev).reshape(2, 188)
cache = torch.randn(2 * 188, 16, 2, 64, dtype=torch.bfloat16, device=dev)
dq = torch.randn(2, 8, 64, dtype=torch.bfloat16, device=dev)
check("split-KV decode with LSE", aiter_compat.paged_attention_decode, dq, cache, cache, table, ctx, sinks=sinks,
      return_lse=True)  # bf16 outputs: the GPU suite's 1e-2 (half a bf16 step at 1 is 0.0039)
hq = torch.randn(3, 8, 128, dtype=torch.float16, device=dev)
hcache = torch.randn(40, 32, 2, 128, dtype=torch.float16, device=dev)
htable = torch.randint(0, 40, (3, 20), dtype=torch.int32, device=dev)
htable[0, 2], htable[2, 0] = 40, -1  # entries outside the cache: skipped, never read
hctx = [600, 1, 33]
hdec = aiter_compat.paged_attention_decode(hq, hcache, hcache, htable, torch.tensor(hctx, dtype=torch.int32, device=dev),
                                           softmax_scale=128 ** -0.5, window_size=(127, 0), sinks=sinks)
torch.cuda.synchronize()
# The CPU route refuses such a table, so the reference is written out here: the keys of the
# valid pages inside the window, and the sink column.
for b, n in enumerate(hctx):
    rows = [j for j in range(max(0, n - 1 - 127), n) if 0 <= int(htable[b, j // 32]) < 40]
    pages = htable[b, torch.tensor(rows, dtype=torch.long) // 32].long().cpu()
    slots = torch.tensor(rows, dtype=torch.long) % 32
    kv = hcache.cpu()[pages, slots].float().repeat_interleave(4, dim=1)  # [rows, 8, 128]
    logits = torch.einsum("hd,rhd->hr", hq[b].float().cpu(), kv) * 128 ** -0.5
    weights = torch.softmax(torch.cat([logits, sinks.cpu()[:, None]], dim=1), dim=1)[:, :-1]
    want = torch.einsum("hr,rhd->hd", weights, kv)
    err = ((hdec[b].float().cpu() - want).abs() / want.abs().clamp(min=1)).max().item()
    if torch.isnan(hdec[b]).any() or err > 2e-3:
        failures.append(f"decode with pages outside the cache, sequence {b}: error {err:.3g} > 0.002")
bq = torch.randn(2, 9, 8, 64, dtype=torch.float16, device=dev)
bk = torch.randn(2, 11, 2, 64, dtype=torch.float16, device=dev)
check("batch", aiter_compat.flash_attn_func, bq, bk, bk, causal=True, sink_ptr=sinks)
# bf16 sinks with a stride: the narrow predicated load of the tiled decode, and the other readers
bf16_sinks = torch.randn(16, device=dev).to(torch.bfloat16)[::2]
check("decode bf16 strided sinks", aiter_compat.paged_attention_decode, dq, cache, cache, table, ctx,
      sinks=bf16_sinks)
check("varlen bf16 strided sinks", aiter_compat.flash_attn_varlen_func, q, k, k, cu_q, cu_k, 33, 40, causal=True,
      sink_ptr=bf16_sinks)
# head dim 80 (the generic kernel only) and a block size of 8
gq = torch.randn(30, 8, 80, dtype=torch.bfloat16, device=dev)
gk = torch.randn(40, 2, 80, dtype=torch.bfloat16, device=dev)
check("varlen head dim 80", aiter_compat.flash_attn_varlen_func, gq, gk, gk,
      torch.tensor([0, 30], dtype=torch.int32, device=dev), torch.tensor([0, 40], dtype=torch.int32, device=dev),
      30, 40, causal=True, sink_ptr=sinks)
cache8 = torch.randn(100, 8, 2, 64, dtype=torch.bfloat16, device=dev)
table8 = torch.randperm(100, device=dev).to(torch.int32).reshape(2, 50)
check("decode block size 8", aiter_compat.paged_attention_decode, dq, cache8, cache8, table8,
      torch.tensor([399, 5], dtype=torch.int32, device=dev), sinks=sinks)
# fp8 caches (both formats): split-KV decode with bf16 queries (f16 tiles, the unscale), an
# extend with fp8 queries and an fp8 output with an output_scale on the row kernels.
for fmt in (torch.float8_e4m3fn, torch.float8_e4m3fnuz):
    cache_fp8 = cache.float().to(fmt)
    check(f"fp8 {fmt} split-KV decode", aiter_compat.paged_attention_decode, dq, cache_fp8, cache_fp8, table, ctx,
          sinks=sinks, k_descale=torch.tensor([0.8], device=dev), v_descale=torch.tensor([1.2], device=dev))
    eq = torch.randn(60, 8, 64, device=dev).to(fmt)
    e_cu = torch.tensor([0, 45, 60], dtype=torch.int32, device=dev)
    e_used = torch.tensor([2000, 15], dtype=torch.int32, device=dev)
    e_out = torch.empty(60, 8, 64, device=dev).to(fmt)
    scale_out = torch.tensor([2.0], device=dev)

    def extend(q_, k_, v_, out_, cu_, used_, table_, osc):
        aiter_compat.unified_attention(q_, k_, v_, out_, cu_, 45, used_, 3000, 0.125, True, (-1, -1), table_, 0.0,
                                       None, None, None, sinks=sinks.to(q_.device), output_scale=osc)
        return out_.float()
    check(f"fp8 {fmt} extend, fp8 out", extend, eq, cache_fp8, cache_fp8, e_out, e_cu, e_used, table, scale_out,
          bound=1.5e-1)
# mha_batch_prefill_func's CSR page tables: the tiled rows (page 16) and the generic kernel
# (page 1, a 3-D pool), checked against the CPU route; then a table the CPU route would refuse
# (kv_indptr past kv_page_indices, a decreasing entry, page ids outside the cache, last-page
# fills of 0 and 99): the kernels must read nothing outside the tensors (memcheck says).
pq = torch.randn(70, 8, 64, dtype=torch.bfloat16, device=dev)
pcache = torch.randn(60, 16, 2, 64, dtype=torch.bfloat16, device=dev)
p_cu = torch.tensor([0, 50, 70], dtype=torch.int32, device=dev)
p_indptr = torch.tensor([0, 30, 41], dtype=torch.int32, device=dev)
p_pages = torch.randperm(60, device=dev).to(torch.int32)[:41].contiguous()
p_last = torch.tensor([9, 16], dtype=torch.int32, device=dev)
check("batch prefill csr page 16", aiter_compat.mha_batch_prefill_func, pq, pcache, pcache, p_cu, p_indptr, p_pages,
      50, 480, causal=True, sink_ptr=sinks, kv_last_page_lens=p_last)
pool = pcache.view(-1, 2, 64)
check("batch prefill csr token pool", aiter_compat.mha_batch_prefill_func, pq[:30], pool, pool,
      torch.tensor([0, 20, 30], dtype=torch.int32, device=dev), p_indptr, p_pages, 20, 30, causal=True, sink_ptr=sinks)
bad_indptr = torch.tensor([0, 999, 7], dtype=torch.int32, device=dev)
bad_pages = p_pages.clone()
bad_pages[::3] = 1000
aiter_compat.mha_batch_prefill_func(pq, pcache, pcache, p_cu, bad_indptr, bad_pages, 50, 480, causal=True,
                                    sink_ptr=sinks, kv_last_page_lens=torch.tensor([0, 99], dtype=torch.int32,
                                                                                 device=dev))


def gluon(out, *args, **kwargs):
    aiter_compat.pa_decode_gluon(out, *args, **kwargs)
    return out


# pa_decode_gluon over its 5-D key cache [blocks, Hk, D / 8, 16, 8], value caches [blocks, Hk, D,
# 16] and [blocks, Hk, 2, D, 8]; MTP 2; then table entries outside the cache and a context past
# the table (clamped: nothing outside the tensors read).
gk = torch.randn(60, 2, 8, 16, 8, dtype=torch.bfloat16, device=dev)
gv4 = torch.randn(60, 2, 64, 16, dtype=torch.bfloat16, device=dev)
gv5 = torch.randn(60, 2, 2, 64, 8, dtype=torch.bfloat16, device=dev)
gtable = torch.randperm(60, dtype=torch.int32, device=dev)[:58].reshape(2, 29)
gctx = torch.tensor([450, 37], dtype=torch.int32, device=dev)
gq = torch.randn(4, 8, 64, dtype=torch.bfloat16, device=dev)
for name, gv in (("4-D", gv4), ("5-D", gv5)):
    check(f"pa_decode_gluon v {name} mtp 2", gluon, torch.zeros(4, 8, 64, dtype=torch.bfloat16, device=dev), gq, gk, gv,
          gctx, gtable, 0.125, 2, 4, sinks=sinks, sliding_window=128)
bad_table = gtable.clone()
bad_table[0, ::4] = 999
bad_table[1, 0] = -5
aiter_compat.pa_decode_gluon(torch.zeros(4, 8, 64, dtype=torch.bfloat16, device=dev), gq, gk, gv5,
                             torch.tensor([9999, 37], dtype=torch.int32, device=dev), bad_table, 0.125, 2, 4, sinks=sinks)
torch.cuda.synchronize()


def asm_decode(split_o, split_lse, *args, **kwargs):
    out = aiter_compat.pa_decode_bf16_asm(*args, split_o=split_o, split_lse=split_lse, **kwargs)
    return out, split_o, split_lse


# pa_decode_bf16_asm over 5-D fp8 caches [pages, Hk, D / 16, 32, 16] / [pages, Hk, 2, D, 16],
# CSR pages, MTP 1, with a schedule splitting sequence 0 in two pieces (the split rows compared
# with the CPU's); then a schedule whose rows, heads, sequences and count point outside every
# buffer (clamped on the GPU: nothing outside the tensors written).
f8 = torch.float8_e4m3fn
ak = torch.randn(40, 2, 4, 32, 16, device=dev).to(f8)
av = torch.randn(40, 2, 2, 64, 16, device=dev).to(f8)
aq = torch.randn(2, 2, 2, 4, 64, device=dev).to(f8)
aindptr = torch.tensor([0, 6, 9], dtype=torch.int32, device=dev)
aindices = torch.randperm(40, dtype=torch.int32, device=dev)[:9]
actx = torch.tensor([170, 70], dtype=torch.int32, device=dev)
awork = torch.tensor([[0, 0, 0, 2, 0, 3, 0, 4 << 16], [0, 2, 0, 2, 3, 6, 0, 4 << 16],
                      [0, 0, 0, 2, 0, 3, 0, 8 << 16 | 4], [0, 2, 0, 2, 3, 6, 0, 8 << 16 | 4],
                      [1, -1, 2, 4, 6, 9, 0, 8 << 16]], dtype=torch.int32, device=dev)
aone = torch.ones(1, device=dev)
check("pa_decode_bf16_asm fp8 mtp 1 with split rows", asm_decode, torch.zeros(4, 1, 8, 64, device=dev),
      torch.zeros(4, 1, 8, 1, device=dev), aq, ak, av, aindices, actx, 0.125, aindptr, gqa=4, mtp=1,
      query_scale=aone, key_scale=aone * 0.5, value_scale=aone, work_info=awork,
      work_indptr=torch.tensor([0, 5], dtype=torch.int32, device=dev), sink=sinks[:8])
wild = torch.tensor([[0, 3, 0, 4, 0, 3, 0, 99 << 16], [7, 0, 0, 2, 0, 3, 0, 4 << 16], [1, 1, -3, 9, 6, 9, 0, 8 << 16],
                     [-1, 0, 0, 2, 0, 3, 0, 4 << 16], [0, 0, 0, 2, 0, 3, 0, 4 << 16]], dtype=torch.int32, device=dev)
aiter_compat.pa_decode_bf16_asm(aq, ak, av, aindices, actx, 0.125, aindptr, gqa=4, mtp=1, work_info=wild,
                                work_indptr=torch.tensor([0, 99], dtype=torch.int32, device=dev),
                                split_o=torch.zeros(4, 1, 8, 64, device=dev), split_lse=torch.zeros(4, 1, 8, 1, device=dev),
                                sink=sinks[:8])
torch.cuda.synchronize()
routes = sorted({r["route"] for r in aiter_compat.routes()})
print("sanitizer cases ran:", routes, "; seed", SEED, "(replay: AITER_COMPAT_TEST_SEED=%d)" % SEED)
for f in failures:
    print("WRONG:", f)
# Both routes ran: the GPU kernels under the sanitizer and the CPU reference they are checked with.
sys.exit(0 if not failures and routes == ["fallback (cpu)", "fallback (gpu)"] else 1)
