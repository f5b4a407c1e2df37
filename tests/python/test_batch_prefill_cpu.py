"""mha_batch_prefill_func on CPU tensors runs on the reference kernels: every page-table form AITer
takes (CSR kv_indptr into kv_page_indices with kv_last_page_lens, pages of one slot as 3-D or 4-D
caches, a [batch, pages] block_table with seqlen_k), with sinks, causal or not, windows, against
the independent float64 reference; and the refusal of sink_size and bad page tables, each named
(the 5-D vectorized caches: test_pa_decode_gluon_cpu.py)."""
import numpy as np
import pytest

import aiter_compat
from attention_reference import attention
from conftest import RNG


def paged_batch(q_lens, k_lens, hq, hk, d, page, dtype=np.float32, spare_pages=3):
    """Random q and a cache of pages in shuffled order: per sequence its pages (CSR and a padded
    block table), the keys and values in order for the reference."""
    pages_of = [(n + page - 1) // page for n in k_lens]
    total = sum(pages_of) + spare_pages
    k_cache = RNG.standard_normal((total, page, hk, d)).astype(dtype)
    v_cache = RNG.standard_normal((total, page, hk, d)).astype(dtype)
    order = RNG.permutation(total).astype(np.int32)
    indices, indptr, tables, keys, values, last = [], [0], [], [], [], []
    for n, p in zip(k_lens, pages_of):
        mine = order[len(indices):len(indices) + p]
        indices.extend(mine)
        indptr.append(len(indices))
        tables.append(mine)
        keys.append(k_cache[mine].reshape(-1, hk, d)[:n])
        values.append(v_cache[mine].reshape(-1, hk, d)[:n])
        last.append(n - (p - 1) * page if p else page)
    width = max(pages_of + [1])
    block_table = np.full((len(k_lens), width), -7, np.int32)  # unused entries: never read
    for b, t in enumerate(tables):
        block_table[b, :len(t)] = t
    cu_q = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    q = RNG.standard_normal((cu_q[-1], hq, d)).astype(dtype)
    return dict(q=q, k=k_cache, v=v_cache, cu_q=cu_q, indptr=np.array(indptr, np.int32),
                indices=np.array(indices, np.int32), last=np.array(last, np.int32), block_table=block_table,
                seqlen_k=np.array(k_lens, np.int32), keys=keys, values=values)


def reference(batch, q_lens, scale, causal, window, sinks):
    outs, lses = [], []
    for b, n in enumerate(q_lens):
        q0 = batch["cu_q"][b]
        o, l = attention(batch["q"][q0:q0 + n], batch["keys"][b], batch["values"][b], scale, causal, window, sinks)
        outs.append(o)
        lses.append(l)
    return np.concatenate(outs), np.concatenate(lses, axis=1)


CASES = [
    # q_lens, k_lens, hq, hk, d, page, causal, window
    ([3, 1, 5], [7, 9, 5], 8, 2, 16, 4, True, (-1, -1)),      # extend: new tokens after cached ones
    ([4, 2], [4, 6], 4, 4, 8, 16, True, (2, -1)),             # SGLang's window form (W, -1), causal
    ([5], [11], 2, 1, 8, 1, False, (-1, -1)),                 # pages of one slot
    ([2, 3], [13, 3], 64, 8, 64, 16, True, (127, 0)),         # GPT-OSS shape, sliding layer
    ([1, 1], [1, 17], 4, 2, 8, 16, True, (-1, -1)),           # a one-key sequence: last page of 1
]


@pytest.mark.parametrize("table", ["csr", "csr_3d", "csr_strided", "block_table"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_batch_prefill_against_reference(case, table):
    q_lens, k_lens, hq, hk, d, page, causal, window = CASES[case]
    if table == "csr_3d" and page != 1:
        page = 1  # the 3-D cache is AITer's page size 1
    batch = paged_batch(q_lens, k_lens, hq, hk, d, page)
    sinks = RNG.standard_normal(hq).astype(np.float32)
    scale = d ** -0.5
    out = np.full((batch["cu_q"][-1], hq, d), np.nan, np.float32)  # poisoned: every element written
    k, v = batch["k"], batch["v"]
    extra = {}
    if table == "csr_3d":
        k, v = k.reshape(-1, hk, d), v.reshape(-1, hk, d)
    if table == "block_table":
        extra = dict(block_table=batch["block_table"], seqlen_k=batch["seqlen_k"])
        indptr, indices = np.zeros(len(q_lens) + 1, np.int32), np.zeros(1, np.int32)  # ignored, as AITer does
    else:
        indptr, indices = batch["indptr"], batch["indices"]
        if table == "csr_strided":  # a view whose entries are 2 apart, other values between them
            spaced = np.full(2 * indices.size, -5, np.int32)
            spaced[::2] = indices
            indices = spaced[::2]
        if page > 1:
            extra = dict(kv_last_page_lens=batch["last"])
    res, lse = aiter_compat.mha_batch_prefill_func(
        batch["q"], k, v, batch["cu_q"], indptr, indices, max(q_lens), max(k_lens), softmax_scale=scale,
        causal=causal, window_size=window, sink_ptr=sinks, return_lse=True, out=out, **extra)
    assert res is out
    want, want_lse = reference(batch, q_lens, scale, causal, window, sinks)
    assert np.abs(out - want).max() < 2e-5
    assert np.abs(lse - want_lse).max() < 2e-5


def test_batch_prefill_without_out_returns_a_new_tensor_and_honours_no_sinks():
    batch = paged_batch([2, 3], [5, 3], 4, 2, 8, 4)
    res = aiter_compat.mha_batch_prefill_func(
        batch["q"], batch["k"], batch["v"], batch["cu_q"], batch["indptr"], batch["indices"], 3, 5, causal=True,
        kv_last_page_lens=batch["last"], sink_ptr=None)
    want, _ = reference(batch, [2, 3], 8 ** -0.5, True, (-1, -1), None)
    assert np.abs(np.asarray(res) - want).max() < 2e-5


def test_batch_prefill_route_is_the_cpu_reference():
    batch = paged_batch([2], [5], 4, 2, 8, 4)
    aiter_compat.mha_batch_prefill_func(batch["q"], batch["k"], batch["v"], batch["cu_q"], batch["indptr"],
                                        batch["indices"], 2, 5, kv_last_page_lens=batch["last"], causal=True)
    ops = {r["op"]: r for r in aiter_compat.routes()}
    assert ops["mha_batch_prefill_func"]["route"] == "fallback (cpu)", ops["mha_batch_prefill_func"]


def test_the_token_pool_is_pages_of_one_slot_to_the_router():
    # The GPU kernel rows are chosen by block size: a 3-D pool [slots, Hk, D] is page size 1, not
    # pages of its head count.
    batch = paged_batch([2], [5], 4, 2, 8, 1)
    pool = batch["k"].reshape(-1, 2, 8)
    explained = aiter_compat.explain("mha_batch_prefill_func", q=batch["q"], k=pool, v=pool, cu_seqlens_q=batch["cu_q"],
                                     kv_indptr=batch["indptr"], kv_page_indices=batch["indices"], max_seqlen_q=2,
                                     max_seqlen_k=5, causal=True)
    assert dict(explained["features"])["block_size"] == "1", explained["features"]


def call_with(batch, **over):
    args = dict(q=batch["q"], k=batch["k"], v=batch["v"], cu_seqlens_q=batch["cu_q"], kv_indptr=batch["indptr"],
                kv_page_indices=batch["indices"], max_seqlen_q=8, max_seqlen_k=32, causal=True,
                kv_last_page_lens=batch["last"])
    args.update(over)
    return aiter_compat.mha_batch_prefill_func(**args)


@pytest.mark.parametrize("change, argument, needed", [
    (lambda b: dict(kv_last_page_lens=None), "kv_last_page_lens", "for page size 4 > 1"),
    (lambda b: dict(kv_indptr=b["indptr"][::-1].copy()), "kv_indptr", "0"),
    (lambda b: dict(kv_indptr=np.array([0, 2, 1], np.int32)), "kv_indptr[2]", "non-decreasing"),
    (lambda b: dict(kv_indptr=np.array([0, 2, 99], np.int32)), "kv_indptr[2]", "within kv_page_indices"),
    (lambda b: dict(kv_page_indices=np.where(b["indices"] == b["indices"][0], 999, b["indices"]).astype(np.int32)),
     "kv_page_indices[0]", "a block index in [0, "),
    (lambda b: dict(kv_last_page_lens=np.array([0, 5], np.int32)), "kv_last_page_lens[0]", "in [1, 4]"),
    (lambda b: dict(kv_indptr=b["indptr"].astype(np.int64)), "kv_indptr", "int32"),
    (lambda b: dict(kv_page_indices=b["indices"].reshape(1, -1)), "kv_page_indices", "1 dimensions"),
    (lambda b: dict(max_seqlen_k=2), "max_seqlen_k", "at least"),
])
def test_bad_page_tables_are_named(change, argument, needed):
    batch = paged_batch([2, 3], [5, 7], 4, 2, 8, 4)
    with pytest.raises(aiter_compat.AiterCompatError) as e:
        call_with(batch, **change(batch))
    assert e.value.argument == argument, str(e.value)
    assert needed in e.value.needed, str(e.value)


def test_sink_size_is_refused_by_the_fallbacks_by_its_name():
    batch = paged_batch([2], [8], 4, 2, 8, 4)
    with pytest.raises(aiter_compat.AiterCompatError) as e:
        call_with(batch, sink_size=4)
    assert "sink_size is not supported" in str(e.value)
