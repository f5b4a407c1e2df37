"""Small calls of every GPU kernel path (unsplit, split-KV + merge, paged, batch), for
compute-sanitizer's memcheck and racecheck. Exits non-zero on a wrong result."""
import sys

import torch

import aiter_compat

torch.manual_seed(0)
dev = "cuda"
q = torch.randn(40, 8, 64, dtype=torch.bfloat16, device=dev)
k = torch.randn(50, 2, 64, dtype=torch.bfloat16, device=dev)
cu_q = torch.tensor([0, 7, 40], dtype=torch.int32, device=dev)
cu_k = torch.tensor([0, 10, 50], dtype=torch.int32, device=dev)
sinks = torch.randn(8, device=dev)
out = aiter_compat.flash_attn_varlen_func(q, k, k, cu_q, cu_k, 33, 40, causal=True, sink_ptr=sinks,
                                          window_size=(15, 0))
ctx = torch.tensor([3000, 17], dtype=torch.int32, device=dev)  # long enough to split
table = torch.arange(2 * 188, dtype=torch.int32, device=dev).reshape(2, 188)
cache = torch.randn(2 * 188, 16, 2, 64, dtype=torch.bfloat16, device=dev)
dq = torch.randn(2, 8, 64, dtype=torch.bfloat16, device=dev)
dec, lse = aiter_compat.paged_attention_decode(dq, cache, cache, table, ctx, sinks=sinks, return_lse=True)
hq = torch.randn(3, 8, 128, dtype=torch.float16, device=dev)
hcache = torch.randn(40, 32, 2, 128, dtype=torch.float16, device=dev)
htable = torch.randint(0, 40, (3, 20), dtype=torch.int32, device=dev)
htable[0, 2], htable[2, 0] = 40, -1  # entries outside the cache: skipped, never read
hdec = aiter_compat.paged_attention_decode(hq, hcache, hcache, htable, torch.tensor([600, 1, 33], dtype=torch.int32,
                                           device=dev), window_size=(127, 0), sinks=sinks)
bq = torch.randn(2, 9, 8, 64, dtype=torch.float16, device=dev)
bk = torch.randn(2, 11, 2, 64, dtype=torch.float16, device=dev)
batch = aiter_compat.flash_attn_func(bq, bk, bk, causal=True, sink_ptr=sinks)
# bf16 sinks with a stride: the narrow predicated load of the tiled decode, and the other readers
bf16_sinks = torch.randn(16, device=dev).to(torch.bfloat16)[::2]
bdec = aiter_compat.paged_attention_decode(dq, cache, cache, table, ctx, sinks=bf16_sinks)
bout = aiter_compat.flash_attn_varlen_func(q, k, k, cu_q, cu_k, 33, 40, causal=True, sink_ptr=bf16_sinks)
# head dim 80 (the generic kernel only) and a block size of 8
gq = torch.randn(30, 8, 80, dtype=torch.bfloat16, device=dev)
gk = torch.randn(40, 2, 80, dtype=torch.bfloat16, device=dev)
gen = aiter_compat.flash_attn_varlen_func(gq, gk, gk, torch.tensor([0, 30], dtype=torch.int32, device=dev),
                                          torch.tensor([0, 40], dtype=torch.int32, device=dev), 30, 40, causal=True,
                                          sink_ptr=sinks)
cache8 = torch.randn(100, 8, 2, 64, dtype=torch.bfloat16, device=dev)
table8 = torch.randperm(100, device=dev).to(torch.int32).reshape(2, 50)
dec8 = aiter_compat.paged_attention_decode(dq, cache8, cache8, table8, torch.tensor([399, 5], dtype=torch.int32, device=dev),
                                           sinks=sinks)
torch.cuda.synchronize()
ok = all(torch.isfinite(t).all().item() for t in (out, dec, lse, batch, hdec, bdec, bout, gen, dec8))
routes = sorted({r["route"] for r in aiter_compat.routes()})
print("sanitizer cases ran:", routes, "finite" if ok else "NOT FINITE")
sys.exit(0 if ok and routes == ["fallback (gpu)"] else 1)
