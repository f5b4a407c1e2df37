#!/usr/bin/env python3
"""One call of each tuned case, for a profiler (ncu --kernel-name regex:ac_tiled ...):
decode 64 x 4k (paged, block 16, GPT-OSS heads, sinks), full and window 128 (with and without
sinks, also at batch 128, 1 and 16), full decode 1 x 32k (split
and merge), and causal prefill 4 x 4k at head dim 64 and 128. Warm-up calls first so that the
profiled launches are not the first."""
import torch

import aiter_compat

torch.manual_seed(0)
dev = "cuda"
batch, ctx, hq, hk, d = 64, 4096, 64, 8, 64
kc = torch.randn(batch * ctx // 16, 16, hk, d, dtype=torch.bfloat16, device=dev)
vc = torch.randn_like(kc)
table = torch.arange(batch * ctx // 16, dtype=torch.int32, device=dev).reshape(batch, -1)
used = torch.full((batch,), ctx, dtype=torch.int32, device=dev)
q = torch.randn(batch, hq, d, dtype=torch.bfloat16, device=dev)
sinks = torch.randn(hq, device=dev)
for _ in range(3):
    aiter_compat.paged_attention_decode(q, kc, vc, table, used, window_size=(-1, -1), sinks=sinks)
for s in (sinks, None):  # window 128 at batch 64, with sinks and without (their cost is under study)
    for _ in range(3):
        aiter_compat.paged_attention_decode(q, kc, vc, table, used, window_size=(127, 0), sinks=s)
for s in (sinks, None):  # and at batch 128 (two waves of blocks)
    q2, t2, u2 = q.repeat(2, 1, 1), torch.cat([table, table]), torch.cat([used, used])
    for _ in range(3):
        aiter_compat.paged_attention_decode(q2, kc, vc, t2, u2, window_size=(127, 0), sinks=s)
for n in (1, 16):  # window 128 at batch 1 and 16, with sinks and without, five calls each
    for s in (sinks, None):
        for _ in range(5):
            aiter_compat.paged_attention_decode(q[:n], kc, vc, table[:n], used[:n], window_size=(127, 0), sinks=s)
one = torch.arange(32768 // 16, dtype=torch.int32, device=dev)[None]  # batch 1 x 32k: split + merge
for _ in range(3):
    aiter_compat.paged_attention_decode(q[:1], kc, vc, one, used[:1] * 8, window_size=(-1, -1), sinks=sinks)
for dim in (64, 128):
    n = 4 * 4096
    pq = torch.randn(n, hq, dim, dtype=torch.bfloat16, device=dev)
    pk = torch.randn(n, hk, dim, dtype=torch.bfloat16, device=dev)
    cu = torch.arange(0, n + 1, 4096, dtype=torch.int32, device=dev)
    for _ in range(2):
        aiter_compat.flash_attn_varlen_func(pq, pk, pk, cu, cu, 4096, 4096, causal=True, sink_ptr=sinks)
torch.cuda.synchronize()
print("profile cases ran")
