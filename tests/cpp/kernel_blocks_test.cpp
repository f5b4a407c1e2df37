// The kernels' shared building blocks, built for the CPU (AC_HOST_MODEL) from the same source the
// GPU kernels use: the key range and its splits (key_range.hpp), the page addresser for every
// cache layout (kv_rows.hpp, against the host's own reading of each layout, cache_address), and
// the row finish with its one sink fold (row_finish.hpp, against the definition in double), the
// online softmax's reference max (online_softmax.hpp, against the softmax in double), and
// the division by the call's divisors as a multiply and a shift (fast_divide.hpp, against /).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "aiter_compat/shim/attention_args.hpp"
#include "test_seed.hpp"
#define AC_HOST_MODEL 1
#include "fast_divide.hpp"
#include "key_range.hpp"
#include "kv_rows.hpp"
#include "online_softmax.hpp"
#include "row_finish.hpp"

using namespace aiter_compat;

namespace {

ac_attention_params mask_params(bool causal, int window_left, int window_right) {
  ac_attention_params p{};
  p.causal = causal, p.window_left = window_left, p.window_right = window_right;
  return p;
}

// Which keys query t (of q_len, over k_len keys) sees, from the definition: bottom-right
// aligned positions, the causal and window limits.
bool sees(const ac_attention_params& p, int q_len, int k_len, int t, int j) {
  const int pos = t + k_len - q_len;
  if (j < 0 || j >= k_len) return false;
  if (p.causal && j > pos) return false;
  if (p.window_left >= 0 && j < pos - p.window_left) return false;
  if (p.window_right >= 0 && j > pos + p.window_right) return false;
  return true;
}

}  // namespace

// Every row's keys are inside the block's, the splits cut them at whole tiles without overlap or
// gap, and no row masks a key of the unmasked span: over random lengths, masks, rows and splits.
TEST(KernelBlocks, KeyRangeSplitsAndUnmaskedSpanAgreeWithTheDefinition) {
  std::mt19937 rng(testing_support::test_seed());
  for (int trial = 0; trial < 3000; ++trial) {
    const int k_len = std::uniform_int_distribution<int>(0, 300)(rng);
    const int q_len = std::uniform_int_distribution<int>(1, 80)(rng);
    const ac_attention_params p = mask_params(rng() % 2, static_cast<int>(rng() % 3) - 1 + (rng() % 2) * 40,
                                              rng() % 3 ? -1 : static_cast<int>(rng() % 20));
    const KeyRange range{p, q_len, k_len};
    const int t_first = std::uniform_int_distribution<int>(0, q_len - 1)(rng);
    const int t_last = std::uniform_int_distribution<int>(t_first, q_len - 1)(rng);
    const int tile = (rng() % 2) ? 1 : 64, splits = std::uniform_int_distribution<int>(1, 9)(rng);
    SCOPED_TRACE("k_len " + std::to_string(k_len) + " q_len " + std::to_string(q_len) + " rows " +
                 std::to_string(t_first) + ".." + std::to_string(t_last) + " tile " + std::to_string(tile) +
                 " splits " + std::to_string(splits) + " causal " + std::to_string(p.causal) + " window " +
                 std::to_string(p.window_left) + "," + std::to_string(p.window_right));
    for (int t = t_first; t <= t_last; ++t)
      for (int j = -1; j <= k_len; ++j)
        ASSERT_EQ(j >= range.lo(t) && j < range.hi(t), sees(p, q_len, k_len, t, j)) << "row " << t << " key " << j;
    std::vector<int> covered(static_cast<size_t>(k_len) + 1, 0);
    int next = range.lo(t_first);
    for (int s = 0; s < splits; ++s) {
      const KeySpan span = block_keys(range, t_first, t_last, s, splits, tile);
      if (span.begin >= span.end) continue;
      ASSERT_EQ(span.begin, next) << "split " << s << " starts past a gap or inside the previous one";
      ASSERT_EQ((span.begin - range.lo(t_first)) % tile, 0) << "split " << s << " starts inside a tile";
      for (int j = span.begin; j < span.end; ++j) ++covered[static_cast<size_t>(j)];
      next = span.end;
    }
    for (int t = t_first; t <= t_last; ++t)
      for (int j = 0; j < k_len; ++j)
        if (sees(p, q_len, k_len, t, j)) {
          ASSERT_EQ(covered[static_cast<size_t>(j)], 1) << "row " << t << " key " << j;
        }
    const int end = block_keys(range, t_first, t_last, splits - 1, splits, tile).end;
    const KeySpan unmasked = unmasked_keys(range, t_first, t_last, std::max(end, next));
    for (int t = t_first; t <= t_last; ++t)
      for (int j = unmasked.begin; j < unmasked.end; ++j) ASSERT_TRUE(sees(p, q_len, k_len, t, j)) << "row " << t << " key " << j;
  }
}

// The row finish against out = acc e^(m) / (l e^(m) + e^(sink)), lse = log(l e^m + e^sink), in
// both units, with and without a sink, for empty rows and NaN sums.
TEST(KernelBlocks, RowFinishEntersTheSinkOnceInBothUnits) {
  std::mt19937 rng(testing_support::test_seed());
  std::normal_distribution<double> n(0.0, 3.0);
  for (int trial = 0; trial < 2000; ++trial) {
    const double m = n(rng), sink = trial % 4 == 0 ? -INFINITY : n(rng), factor = 0.5 + (trial % 3);
    const double l = std::exp(n(rng) / 3) * (1 + trial % 7);
    const double total = l * std::exp(m) + (std::isinf(sink) ? 0.0 : std::exp(sink));
    const double want_scale = std::exp(m) * factor / total, want_lse = std::log(total);
    const RowFinish nat = finish_row<false>(static_cast<float>(m), static_cast<float>(l), static_cast<float>(sink),
                                            static_cast<float>(factor));
    const double log2e = 1.4426950408889634;
    const RowFinish b2 = finish_row<true>(static_cast<float>(m * log2e), static_cast<float>(l),
                                          static_cast<float>(sink * log2e), static_cast<float>(factor));
    for (const RowFinish& f : {nat, b2}) {
      EXPECT_NEAR(f.scale, want_scale, 2e-5 * want_scale + 1e-30);
      EXPECT_NEAR(f.lse, want_lse, 2e-5 * (1 + std::abs(want_lse)));
    }
  }
  // No key and no sink: zero output, LSE -inf; no key but a sink: zero output, LSE the sink.
  EXPECT_EQ(finish_row<false>(-INFINITY, 0.f, -INFINITY, 1.f).scale, 0.f);
  EXPECT_EQ(finish_row<false>(-INFINITY, 0.f, -INFINITY, 1.f).lse, -INFINITY);
  EXPECT_EQ(finish_row<true>(-INFINITY, 0.f, 2.f, 1.f).scale, 0.f);
  EXPECT_FLOAT_EQ(finish_row<true>(-INFINITY, 0.f, 2.f, 1.f).lse, 2.f * 0.6931471805599453f);
  // A NaN among the keys (its sum NaN) stays NaN, as in AITer's kernels.
  EXPECT_TRUE(std::isnan(finish_row<false>(1.f, NAN, 0.5f, 1.f).scale));
  EXPECT_TRUE(std::isnan(finish_row<true>(1.f, NAN, -INFINITY, 1.f).lse));
}

namespace {

// One row through the tiled kernels' online softmax (tiled_attention.hpp's per-tile step, in
// float): scores in log2 units, tile by tile, each key with a value; returns the output and the
// largest probability any tile produced, and counts the tiles that rescaled.
struct OnlineRow {
  double out = 0, max_p = 0;
  int rescales = 0;
};
template <bool kSlack>
OnlineRow online_row(const std::vector<std::vector<float>>& tiles, const std::vector<std::vector<float>>& values) {
  float m = -INFINITY, l = 0.f, o = 0.f, max_p = 0.f;
  int rescales = 0;
  for (size_t t = 0; t < tiles.size(); ++t) {
    float mx = -INFINITY;
    for (float s : tiles[t]) mx = std::fmax(mx, s);
    const MaxStep step = reference_max_step<kSlack>(m, mx);
    m = step.m;
    if (!step.moved) {
      EXPECT_EQ(step.corr, 1.f);
    }
    rescales += step.moved;
    const float base = exp_base(m);
    float sum = 0.f, pv = 0.f;
    for (size_t k = 0; k < tiles[t].size(); ++k) {
      const float p = std::exp2(tiles[t][k] - base);
      max_p = std::fmax(max_p, p), sum += p, pv += p * values[t][k];
    }
    l = l * step.corr + sum, o = o * step.corr + pv;
  }
  const RowFinish fin = finish_row<true>(m, l, -INFINITY, 1.f);
  return {o * fin.scale, max_p, rescales};
}

}  // namespace

// Rows whose maxima climb slowly (the reference lags by up to the slack), jump (it moves),
// start masked (-inf tiles first), or fall: the online result is the softmax's in double with the
// slack (NVIDIA's tiles) and without (the running max: AMD's), no probability passes
// 2^kRescaleSlack, and a slow climb rescales only when it passes the slack.
TEST(KernelBlocks, OnlineSoftmaxAgainstAReferenceMaxIsTheSoftmax) {
  std::mt19937 rng(testing_support::test_seed());
  std::normal_distribution<float> n(0.f, 1.f);
  for (int trial = 0; trial < 400; ++trial) {
    const int kind = trial % 4, n_tiles = 2 + trial % 30, keys = 1 + trial % 16;
    std::vector<std::vector<float>> tiles(n_tiles), values(n_tiles);
    for (int t = 0; t < n_tiles; ++t)
      for (int k = 0; k < keys; ++k) {
        float s = 3.f * n(rng);
        if (kind == 0) s += 0.7f * t;                        // slow climb: 0.7 per tile
        if (kind == 1 && t == n_tiles / 2) s += 40.f;        // one jump
        if (kind == 2 && t < n_tiles / 3) s = -INFINITY;     // masked first tiles
        if (kind == 3) s -= 12.f * t;                        // falling
        tiles[t].push_back(s), values[t].push_back(n(rng));
      }
    double mx = -INFINITY, l = 0, o = 0;
    for (const auto& tile : tiles)
      for (float s : tile) mx = std::max(mx, static_cast<double>(s));
    for (int t = 0; t < n_tiles; ++t)
      for (int k = 0; k < keys; ++k) {
        const double p = std::exp2(tiles[t][k] - mx);
        l += p, o += p * values[t][k];
      }
    SCOPED_TRACE("trial " + std::to_string(trial));
    const OnlineRow got = online_row<true>(tiles, values), running = online_row<false>(tiles, values);
    EXPECT_NEAR(got.out, o / l, 2e-5 * (1 + std::abs(o / l)));
    EXPECT_NEAR(running.out, o / l, 2e-5 * (1 + std::abs(o / l)));
    EXPECT_LE(got.max_p, std::exp2(kRescaleSlack));
    EXPECT_LE(running.max_p, 1.f);  // the running max itself (AMD's tiles)
    if (kind == 0) {
      EXPECT_LE(got.rescales, 2 + static_cast<int>((0.7f * n_tiles + 20.f) / kRescaleSlack));
    }
    if (kind == 3) {
      EXPECT_EQ(got.rescales, 1);  // the first tile only
    }
  }
  // A row with nothing valid yet moves to its first finite max with corr 0; -inf tiles and NaN
  // never move it.
  const MaxStep first = reference_max_step(-INFINITY, 3.f);
  EXPECT_TRUE(first.moved);
  EXPECT_EQ(first.m, 3.f);
  EXPECT_EQ(first.corr, 0.f);
  EXPECT_FALSE(reference_max_step(-INFINITY, -INFINITY).moved);
  EXPECT_EQ(exp_base(-INFINITY), 0.f);
  EXPECT_FALSE(reference_max_step(1.f, NAN).moved);
  // Inside the slack the reference stays; past it, it moves and the old scale is exp2(m - m_new).
  EXPECT_FALSE(reference_max_step(1.f, 1.f + kRescaleSlack).moved);
  const MaxStep past = reference_max_step(1.f, 1.5f + kRescaleSlack);
  EXPECT_TRUE(past.moved);
  EXPECT_FLOAT_EQ(past.corr, std::exp2(-0.5f - kRescaleSlack));
  // Without the slack: the running max, a rescale (by 1 when the max stays) in every tile.
  const MaxStep up = reference_max_step<false>(1.f, 2.f), stay = reference_max_step<false>(2.f, 1.f);
  EXPECT_EQ(up.m, 2.f);
  EXPECT_FLOAT_EQ(up.corr, 0.5f);
  EXPECT_EQ(stay.m, 2.f);
  EXPECT_EQ(stay.corr, 1.f);
  EXPECT_EQ(reference_max_step<false>(-INFINITY, -INFINITY).m, -INFINITY);
}

namespace {

// A cache view of `layout` over a buffer, for cache_address (the host's reading of the layout).
TensorView cache_view(CacheLayout layout, int64_t blocks, int64_t bs, int64_t hk, int64_t d, int64_t x) {
  TensorView t;
  t.dtype = DType::bf16;
  std::vector<int64_t> shape;
  switch (layout) {
    case CacheLayout::rows: shape = {blocks, bs, hk, d}; break;
    case CacheLayout::vectorized_k: shape = {blocks, hk, d / x, bs, x}; break;
    case CacheLayout::vectorized_v: shape = {blocks, hk, bs / x, d, x}; break;
    case CacheLayout::dim_major_v: shape = {blocks, hk, d, bs}; break;
  }
  t.ndim = static_cast<int>(shape.size());
  int64_t stride = 1;
  for (int i = t.ndim - 1; i >= 0; --i) t.shape[i] = shape[static_cast<size_t>(i)], t.strides[i] = stride, stride *= t.shape[i];
  return t;
}

}  // namespace

// Key j of a paged sequence at the element the host's reading of the layout names, for NHD pages
// (power-of-two and other block sizes) and AITer's split layouts; an entry outside the cache
// reads nothing; contiguous keys one token stride apart from the sequence's first.
TEST(KernelBlocks, PageAddresserFindsEveryKeyOfEveryLayout) {
  struct Case {
    CacheLayout k_layout, v_layout;
    int64_t bs, x;
  };
  for (const Case c : {Case{CacheLayout::rows, CacheLayout::rows, 16, 1}, Case{CacheLayout::rows, CacheLayout::rows, 12, 1},
                       Case{CacheLayout::vectorized_k, CacheLayout::vectorized_v, 16, 8},
                       Case{CacheLayout::vectorized_k, CacheLayout::dim_major_v, 32, 8}}) {
    const int64_t blocks = 9, hk = 2, d = 64;
    const TensorView kt = cache_view(c.k_layout, blocks, c.bs, hk, d, c.x), vt = cache_view(c.v_layout, blocks, c.bs, hk, d, c.x);
    const CacheAddress ka = cache_address(kt, c.k_layout), va = cache_address(vt, c.v_layout);
    std::vector<int32_t> table = {3, 0, 7, 12, 5, -1, 2};  // 12 and -1: outside the cache
    ac_attention_params p{};
    p.block_table = table.data();
    p.bt_col = 1;
    p.block_size = static_cast<int32_t>(c.bs);
    p.num_blocks = static_cast<int32_t>(blocks);
    p.k_tok = ka.block, p.v_tok = va.block;
    const bool split = c.k_layout != CacheLayout::rows;
    if (split) {
      p.k_slot = ka.slot, p.k_slot_in = ka.slot_in, p.k_slot_x = ka.slot_x;
      p.v_slot = va.slot, p.v_slot_in = va.slot_in, p.v_slot_x = va.slot_x;
    } else {
      p.k_slot = ka.slot_in, p.v_slot = va.slot_in;
    }
    const int32_t shift = page_shift_of(p);
    EXPECT_EQ(shift, c.bs == 16 ? 4 : c.bs == 32 ? 5 : -1);
    for (int32_t j = 0; j < static_cast<int32_t>(table.size() * c.bs); ++j) {
      const int32_t block = table[static_cast<size_t>(j / c.bs)];
      const KvRow r = split ? KvRows<KvLayout::split_pages>{p, 0, 0, shift}.at(j) : KvRows<KvLayout::pages>{p, 0, 0, shift}.at(j);
      const bool inside = block >= 0 && block < blocks;
      ASSERT_EQ(r.ok, inside) << "key " << j;
      if (!inside) continue;
      EXPECT_EQ(r.k, block * ka.block + ka.slot_offset(j % c.bs)) << "key " << j;
      EXPECT_EQ(r.v, block * va.block + va.slot_offset(j % c.bs)) << "key " << j;
    }
  }
  ac_attention_params p{};
  p.k_tok = 24, p.v_tok = 40;  // packed K/V views: token strides of their own
  const KvRow r = KvRows<KvLayout::contiguous>{p, 0, 5, -1}.at(3);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.k, 8 * 24);
  EXPECT_EQ(r.v, 8 * 40);
}

// A CSR page table over a strided kv_page_indices (a view whose entries are bt_col apart): each
// sequence's keys on the pages the CPU reference reads, entry (kv_indptr[b] + n) x stride, with
// kv_last_page_lens keys in its last page; an empty sequence has none.
TEST(KernelBlocks, CsrPagesOfAStridedIndexList) {
  const int32_t stride = 3, bs = 16;
  const std::vector<int32_t> indptr = {0, 2, 5, 5, 6}, pages = {4, 1, 7, 0, 2, 5}, last = {16, 3, 1, 9};
  std::vector<int32_t> buf(pages.size() * stride, -9);  // the entries between are another tensor's
  for (size_t i = 0; i < pages.size(); ++i) buf[i * stride] = pages[i];
  ac_attention_params p{};
  p.paged = 1;
  p.block_table = buf.data();
  p.bt_col = stride;
  p.kv_indptr = indptr.data();
  p.kv_last_page_lens = last.data();
  p.num_page_indices = static_cast<int32_t>(pages.size());
  p.block_size = bs;
  p.num_blocks = 8;
  for (int32_t b = 0; b < 4; ++b) {
    const PagedKeys keys = paged_keys(p, b);
    const int32_t n = indptr[b + 1] - indptr[b];
    ASSERT_EQ(keys.k_len, n ? (n - 1) * bs + last[b] : 0) << "sequence " << b;
    const KvRows<KvLayout::pages> rows{p, keys.table_row, 0, page_shift_of(p)};
    for (int32_t j = 0; j < keys.k_len; ++j) {
      ASSERT_EQ(rows.page(j), pages[indptr[b] + j / bs]) << "sequence " << b << ", key " << j;
      ASSERT_EQ(rows.page32(j), pages[indptr[b] + j / bs]) << "sequence " << b << ", key " << j;
    }
  }
}

// The tiled kernels' 32-bit forms (page32, bytes32) name the same entry and the same rows, in
// bytes, as the element forms, up to the largest strides the launcher gives them
// (strides_fit_32_bits): a page stride just below 4 GiB at the last entry of a cache of 2^31 - 1
// pages, where a 32-bit product would wrap, and a table row 4 bytes wide per entry.
TEST(KernelBlocks, ThirtyTwoBitFormsMatchTheElementForms) {
  for (const int elem : {1, 2}) {
    std::vector<int32_t> table = {3, 0, 7, 2147483646, 5, 1};
    ac_attention_params p{};
    p.block_table = table.data();
    p.bt_col = 1;
    p.block_size = 16;
    p.num_blocks = 2147483647;
    p.k_tok = (int64_t{0xffffffff} / elem) & ~int64_t{7};  // a page just below 4 GiB
    p.v_tok = 16 * 8 * 64;
    p.k_slot = (p.k_tok / 16) & ~int64_t{7}, p.v_slot = 8 * 64;
    const KvRows<KvLayout::pages> rows{p, 0, 0, page_shift_of(p)};
    for (int32_t j = 0; j < static_cast<int32_t>(table.size() * 16); ++j) {
      const int32_t block = rows.page32(j);
      ASSERT_EQ(block, rows.page(j)) << "key " << j;
      const KvRow r = rows.at(j, block);
      ASSERT_TRUE(r.ok);
      const KvBytes b = elem == 1 ? rows.bytes32<1>(j, block) : rows.bytes32<2>(j, block);
      EXPECT_EQ(b.k, static_cast<uint64_t>(r.k) * elem) << "key " << j << ", " << elem << "-byte elements";
      EXPECT_EQ(b.v, static_cast<uint64_t>(r.v) * elem) << "key " << j << ", " << elem << "-byte elements";
    }
  }
  // A block table whose entries are columns of a wide row (bt_col) and sequences that start deep in it.
  std::vector<int32_t> wide(3 * 1000);
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<int32_t>(i * 7 % 1009);
  ac_attention_params p{};
  p.block_table = wide.data();
  p.bt_col = 3, p.block_size = 12, p.num_blocks = 1009;  // block size 12: the division, not a shift
  const KvRows<KvLayout::pages> rows{p, 2, 0, page_shift_of(p)};
  for (int32_t j = 0; j < 12 * 999; j += 5) ASSERT_EQ(rows.page32(j), rows.page(j)) << "key " << j;
  // Contiguous keys: token k_start + j, up to a token stride just below 4 GiB.
  ac_attention_params c{};
  c.k_tok = 0xfffffff8, c.v_tok = 40;
  const KvRows<KvLayout::contiguous> keys{c, 0, 1 << 30, -1};
  const KvBytes b = keys.bytes32<1>(5, 0);
  EXPECT_EQ(b.k, static_cast<uint64_t>(keys.k_row(5, 0)));
  EXPECT_EQ(b.v, static_cast<uint64_t>((1 << 30) + 5) * 40);
  c.k_tok = 0x7ffffff8;  // 16-bit elements: a token stride just below 4 GiB
  const KvBytes h = keys.bytes32<2>(5, 0);
  EXPECT_EQ(h.k, static_cast<uint64_t>(keys.k_row(5, 0)) * 2);
  EXPECT_EQ(h.v, static_cast<uint64_t>((1 << 30) + 5) * 80);
}

// Every divisor a call can give (query heads per KV head up to the largest head count, split
// counts up to 65535) at the dividends the kernels divide (rows, grid z: below 2^31), the
// multiplier's edges (multiples of the divisor and their neighbours) included.
TEST(KernelBlocks, FastDivisionAgreesWithIntegerDivision) {
  std::mt19937 rng(testing_support::test_seed());
  std::vector<int32_t> divisors;
  for (int32_t d = 1; d <= 1100; ++d) divisors.push_back(d);
  for (int32_t d : {4095, 4096, 4097, 65535, 65536, 1 << 20, (1 << 30) - 1, 1 << 30, INT32_MAX}) divisors.push_back(d);
  for (int i = 0; i < 200; ++i) divisors.push_back(1 + static_cast<int32_t>(rng() % INT32_MAX));
  for (int32_t d : divisors) {
    const ac_divisor v = ac_divisor_of(d);
    auto check = [&](int64_t n) {
      if (n < 0 || n > INT32_MAX) return;
      ASSERT_EQ(ac_fast_div(static_cast<int32_t>(n), v.mul, v.shift), static_cast<int32_t>(n / d)) << "n " << n << " d " << d;
    };
    for (int64_t n = 0; n < 3000; ++n) check(n);
    for (int64_t k : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{1000}, INT32_MAX / int64_t{d} - 1, INT32_MAX / int64_t{d}})
      for (int64_t e = -1; e <= 1; ++e) check(k * d + e);
    for (int i = 0; i < 2000; ++i) check(static_cast<int64_t>(rng() % (uint64_t{INT32_MAX} + 1)));
    check(INT32_MAX);
  }
}

// The launcher's parameters: the group and the divisors of hq / hk and of the split count.
TEST(KernelBlocks, SetDivisorsDescribesTheGroupAndTheSplits) {
  ac_attention_params p{};
  p.hq = 64, p.hk = 8, p.num_splits = 33;
  ac_set_divisors(p);
  EXPECT_EQ(p.group, 8);
  for (int32_t n : {0, 7, 8, 63, 64, 1000000}) {
    EXPECT_EQ(ac_row_token(p, n), n / 8);
    EXPECT_EQ(ac_row_head(p, n), n % 8);
    EXPECT_EQ(ac_split_sequence(p, n), n / 33);
  }
  p.hq = 12, p.hk = 12, p.num_splits = 1;  // group 1, unsplit: the identity
  ac_set_divisors(p);
  EXPECT_EQ(p.group, 1);
  EXPECT_EQ(ac_row_token(p, 12345), 12345);
  EXPECT_EQ(ac_split_sequence(p, 12345), 12345);
}
