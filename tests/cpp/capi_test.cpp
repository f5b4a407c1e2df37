// The C API over host tensors: routes, results, and errors through status codes and the
// thread-local message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "aiter_compat.h"
#include "host_tensor.hpp"
#include "dense_attention.hpp"
#include "test_seed.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {

// Two sequences, GQA 4, a window that cuts (3 keys back, or 2 back and 1 ahead without the
// causal mask) and random sinks: a route that drops the window or the sink gives another result.
struct VarlenCase {
  static constexpr int64_t kHq = 8, kHk = 2, kD = 16;
  std::vector<int64_t> q_lens{5, 7}, k_lens{8, 10};
  HostTensor q{DType::f32, {12, kHq, kD}}, k{DType::f32, {18, kHk, kD}}, v{DType::f32, {18, kHk, kD}},
      out{DType::f32, {12, kHq, kD}}, lse{DType::f32, {kHq, 12}}, sinks{DType::f32, {kHq}};
  HostTensor cu_q = i32_tensor({0, 5, 12}), cu_k = i32_tensor({0, 8, 18});
  Dl dq{q}, dk{k}, dv{v}, dout{out}, dlse{lse}, dsinks{sinks}, dcu_q{cu_q}, dcu_k{cu_k};
  aiter_compat_varlen_args args{};
  VarlenCase(std::mt19937& rng, bool causal = true, Window window = {3, 0, 0}) {
    q.fill_random(rng), k.fill_random(rng), v.fill_random(rng), sinks.fill_random(rng);
    out.fill(NAN), lse.fill(NAN);
    args = {&dq.t, &dk.t, &dv.t, &dcu_q.t, &dcu_k.t, &dsinks.t, &dout.t, &dlse.t, 7, 10, 0.0, causal ? 1 : 0,
            window.left, window.right, 0.0};
  }
  Window window() const { return {args.window_left, args.window_right, 0}; }

  // The dense formulation of the same call, with the window and sink given (the call's own by
  // default): out [12, Hq, D] and lse [Hq, 12] as doubles.
  std::pair<std::vector<double>, std::vector<double>> dense(Window w, bool with_sinks) const {
    std::vector<double> o(static_cast<size_t>(out.numel())), l(static_cast<size_t>(lse.numel()));
    const double scale = 1.0 / std::sqrt(static_cast<double>(kD));
    int64_t q0 = 0, k0 = 0;
    for (size_t b = 0; b < q_lens.size(); ++b) {
      for (int64_t h = 0; h < kHq; ++h) {
        const int64_t kh = h / (kHq / kHk);
        Dense r = dense_attention(rows(q, q0, q_lens[b], h), rows(k, k0, k_lens[b], kh), rows(v, k0, k_lens[b], kh), kD,
                                  scale, args.causal != 0, w, with_sinks ? sinks.get(h) : kNoSink);
        for (int64_t i = 0; i < q_lens[b]; ++i) {
          for (int64_t e = 0; e < kD; ++e) o[static_cast<size_t>(((q0 + i) * kHq + h) * kD + e)] = r.out[i * kD + e];
          l[static_cast<size_t>(h * 12 + q0 + i)] = r.lse[i];
        }
      }
      q0 += q_lens[b], k0 += k_lens[b];
    }
    return {o, l};
  }
};

double max_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

std::vector<double> values(const HostTensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get(i);
  return v;
}

// The call's output and LSE against the dense reference, and the case against itself: the
// window must cut and the sinks must matter, or a route dropping them would pass unseen.
void expect_matches_dense(const VarlenCase& c) {
  auto [want, want_lse] = c.dense(c.window(), true);
  EXPECT_LT(max_difference(values(c.out), want), 2e-6);
  EXPECT_LT(max_difference(values(c.lse), want_lse), 1e-5);
  EXPECT_GT(max_difference(c.dense({-1, -1, 0}, true).first, want), 1e-2) << "the window cuts nothing here";
  EXPECT_GT(max_difference(c.dense(c.window(), false).first, want), 1e-2) << "the sinks change nothing here";
  EXPECT_GT(max_difference(c.dense(c.window(), false).second, want_lse), 1e-2) << "the sinks leave the LSE alone";
}

}  // namespace

TEST(CApi, VarlenOnCpuMatchesTheDenseReference) {
  SeededRng rng;
  for (auto [causal, window] : {std::pair<bool, Window>{true, {3, 0, 0}}, {false, {2, 1, 0}}, {true, {0, 0, 0}}}) {
    SCOPED_TRACE("causal " + std::to_string(causal) + " window (" + std::to_string(window.left) + ", " +
                 std::to_string(window.right) + ")");
    VarlenCase c(rng, causal, window);
    ASSERT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
    expect_matches_dense(c);
  }
  EXPECT_EQ(aiter_compat_abi_version(), AITER_COMPAT_ABI_VERSION);
}

TEST(CApi, BadArgumentsNameTheArgument) {
  EXPECT_EQ(aiter_compat_varlen_attention(nullptr, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("args"), std::string::npos);
  SeededRng rng;
  VarlenCase c(rng);
  c.args.q = nullptr;
  EXPECT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(aiter_compat_last_error()), "q: found NULL, needed a tensor");
  VarlenCase nan_sinks(rng);
  nan_sinks.sinks.set(2, NAN);
  EXPECT_EQ(aiter_compat_varlen_attention(&nan_sinks.args, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("sinks: found NaN at head 2"), std::string::npos);
  VarlenCase i64(rng);
  i64.dcu_q.t.dtype = {kDLInt, 64, 1};
  EXPECT_EQ(aiter_compat_varlen_attention(&i64.args, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("cu_seqlens_q: found dtype int64"), std::string::npos);
  VarlenCase dims(rng);
  dims.dq.t.ndim = 9;
  EXPECT_EQ(aiter_compat_varlen_attention(&dims.args, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("9 dimensions"), std::string::npos);
}

TEST(CApi, GpuTensorsWithoutKernelsAreRefusedWithEveryReason) {
  SeededRng rng;
  VarlenCase c(rng);
  for (Dl* d : {&c.dq, &c.dk, &c.dv, &c.dout, &c.dlse, &c.dsinks, &c.dcu_q, &c.dcu_k}) d->t.device = {kDLCUDA, 0};
  ASSERT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_NO_ROUTE);
  std::string msg = aiter_compat_last_error();
  EXPECT_NE(msg.find("AITer is not installed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("runs on CPU tensors; these are on cuda"), std::string::npos) << msg;
  // No GPU here: refused because none was found, or none of the kernels were built.
  EXPECT_TRUE(msg.find("no GPU was found at start-up") != std::string::npos ||
              msg.find("no GPU fallback kernels are built") != std::string::npos)
      << msg;
}

TEST(CApi, ExplainAndPolicy) {
  SeededRng rng;
  VarlenCase c(rng);
  char buf[4096];
  ASSERT_EQ(aiter_compat_explain_varlen(&c.args, buf, sizeof buf), AITER_COMPAT_OK);
  EXPECT_NE(std::string(buf).find("route: fallback (cpu)"), std::string::npos) << buf;
  EXPECT_EQ(aiter_compat_set_policy("fastest"), AITER_COMPAT_INVALID_ARGUMENT);
  ASSERT_EQ(aiter_compat_set_policy("aiter-only"), AITER_COMPAT_OK);
  EXPECT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_NO_ROUTE);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("policy aiter-only"), std::string::npos);
  ASSERT_EQ(aiter_compat_set_policy(nullptr), AITER_COMPAT_OK);
  EXPECT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
}

namespace {

// Rows [0, count) of one KV head of a sequence in an NHD paged cache [blocks, block, heads, dim].
Rows paged_rows(const HostTensor& cache, const HostTensor& table, int64_t seq, int64_t count, int64_t head) {
  const int64_t block = cache.view.shape[1], heads = cache.view.shape[2], d = cache.view.shape[3];
  const int64_t per_seq = table.view.shape[1];
  Rows out;
  for (int64_t j = 0; j < count; ++j) {
    const int64_t blk = static_cast<int64_t>(table.get(seq * per_seq + j / block));
    std::vector<double> row;
    for (int64_t e = 0; e < d; ++e) row.push_back(cache.get(((blk * block + j % block) * heads + head) * d + e));
    out.push_back(row);
  }
  return out;
}

}  // namespace

// Decode over a shuffled block table with a window of 3 keys back (it cuts both sequences) and
// sinks, against the dense reference on the keys gathered in order.
TEST(CApi, PagedDecodeOnCpuMatchesTheDenseReference) {
  constexpr int64_t kHq = 4, kHk = 2, kD = 16;
  HostTensor q(DType::f32, {2, kHq, kD}), kc(DType::f32, {4, 16, kHk, kD}), vc(DType::f32, {4, 16, kHk, kD}),
      out(DType::f32, {2, kHq, kD}), sinks(DType::f32, {kHq});
  SeededRng rng;
  q.fill_random(rng), kc.fill_random(rng), vc.fill_random(rng), sinks.fill_random(rng);
  out.fill(NAN);
  HostTensor cu = i32_tensor({0, 1, 2}), used = i32_tensor({20, 5}), bt = i32_tensor({3, 1, 0, 2}, {2, 2});
  Dl dq(q), dk(kc), dv(vc), dout(out), ds(sinks), dcu(cu), du(used), dbt(bt);
  aiter_compat_paged_args a{&dq.t, &dk.t, &dv.t, &dcu.t, &du.t, &dbt.t, &ds.t, &dout.t, nullptr, 1, 20, 0.0, 1, 3, -1, 0.0};
  ASSERT_EQ(aiter_compat_paged_attention(&a, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
  const double scale = 1.0 / std::sqrt(static_cast<double>(kD));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < kHq; ++h) {
      const int64_t ctx = static_cast<int64_t>(used.get(b)), kh = h / (kHq / kHk);
      Rows keys = paged_rows(kc, bt, b, ctx, kh), vals = paged_rows(vc, bt, b, ctx, kh), query = rows(q, b, 1, h);
      Dense want = dense_attention(query, keys, vals, kD, scale, true, {3, -1, 0}, sinks.get(h));
      Dense unwindowed = dense_attention(query, keys, vals, kD, scale, true, {-1, -1, 0}, sinks.get(h));
      Dense sinkless = dense_attention(query, keys, vals, kD, scale, true, {3, -1, 0}, kNoSink);
      double cut = 0, sunk = 0;
      for (int64_t e = 0; e < kD; ++e) {
        EXPECT_NEAR(out.get((b * kHq + h) * kD + e), want.out[e], 2e-6) << "sequence " << b << " head " << h;
        cut = std::max(cut, std::abs(unwindowed.out[e] - want.out[e]));
        sunk = std::max(sunk, std::abs(sinkless.out[e] - want.out[e]));
      }
      EXPECT_GT(cut, 1e-3) << "the window cuts nothing in sequence " << b;
      EXPECT_GT(sunk, 1e-3) << "the sink changes nothing in sequence " << b << " head " << h;
    }
  bt.set(1, 9);
  EXPECT_EQ(aiter_compat_paged_attention(&a, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("block_table[0, 1]: found 9"), std::string::npos);
}

// mha_batch_prefill_func through the C API: a CSR page table over page size 4 (sequence 0 has
// 3 pages, its last holding 2 keys; sequence 1 one whole page), new tokens after cached ones,
// causal with a window and sinks, against the dense reference on the keys gathered in order;
// then the same call through a block_table with seqlen_k; then a bad page entry, named.
TEST(CApi, BatchPrefillOnCpuMatchesTheDenseReference) {
  constexpr int64_t kHq = 4, kHk = 2, kD = 8, kPage = 4;
  HostTensor q(DType::f32, {5, kHq, kD}), kc(DType::f32, {6, kPage, kHk, kD}), vc(DType::f32, {6, kPage, kHk, kD}),
      out(DType::f32, {5, kHq, kD}), lse(DType::f32, {kHq, 5}), sinks(DType::f32, {kHq});
  SeededRng rng;
  q.fill_random(rng), kc.fill_random(rng), vc.fill_random(rng), sinks.fill_random(rng);
  out.fill(NAN), lse.fill(NAN);
  HostTensor cu = i32_tensor({0, 3, 5}), indptr = i32_tensor({0, 3, 4}), pages = i32_tensor({5, 0, 3, 2}),
             last = i32_tensor({2, 4}), bt = i32_tensor({5, 0, 3, 2, 1, 1}, {2, 3}), seqlen = i32_tensor({10, 4});
  Dl dq(q), dk(kc), dv(vc), dout(out), dlse(lse), ds(sinks), dcu(cu), dind(indptr), dpages(pages), dlast(last), dbt(bt),
      dlen(seqlen);
  aiter_compat_batch_prefill_args a{};
  a.q = &dq.t, a.k = &dk.t, a.v = &dv.t, a.cu_seqlens_q = &dcu.t, a.kv_indptr = &dind.t, a.kv_page_indices = &dpages.t;
  a.kv_last_page_lens = &dlast.t, a.sinks = &ds.t, a.out = &dout.t, a.lse = &dlse.t;
  a.max_seqlen_q = 3, a.max_seqlen_k = 10, a.causal = 1, a.window_left = 4, a.window_right = -1;
  const int64_t k_lens[2] = {10, 4}, q0s[2] = {0, 3}, q_lens[2] = {3, 2};
  auto check = [&](const char* how) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(kD));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < kHq; ++h) {
        const int64_t kh = h / (kHq / kHk);
        Rows keys = paged_rows(kc, bt, b, k_lens[b], kh), vals = paged_rows(vc, bt, b, k_lens[b], kh);
        Dense want = dense_attention(rows(q, q0s[b], q_lens[b], h), keys, vals, kD, scale, true, {4, -1, 0}, sinks.get(h));
        for (int64_t i = 0; i < q_lens[b]; ++i) {
          for (int64_t e = 0; e < kD; ++e)
            EXPECT_NEAR(out.get(((q0s[b] + i) * kHq + h) * kD + e), want.out[i * kD + e], 2e-6) << how << " seq " << b;
          EXPECT_NEAR(lse.get(h * 5 + q0s[b] + i), want.lse[i], 2e-6) << how;
        }
      }
  };
  ASSERT_EQ(aiter_compat_batch_prefill(&a, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
  check("csr");
  out.fill(NAN), lse.fill(NAN);
  a.block_table = &dbt.t, a.seqlen_k = &dlen.t, a.kv_last_page_lens = nullptr;
  ASSERT_EQ(aiter_compat_batch_prefill(&a, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
  check("block_table");
  a.block_table = nullptr, a.seqlen_k = nullptr;
  EXPECT_EQ(aiter_compat_batch_prefill(&a, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("kv_last_page_lens"), std::string::npos) << aiter_compat_last_error();
  a.kv_last_page_lens = &dlast.t;
  pages.set(2, 6);
  EXPECT_EQ(aiter_compat_batch_prefill(&a, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("kv_page_indices[2]: found 6"), std::string::npos)
      << aiter_compat_last_error();
  char text[4096];
  ASSERT_EQ(aiter_compat_explain_batch_prefill(&a, text, sizeof text), AITER_COMPAT_OK);
  EXPECT_NE(std::string(text).find("mha_batch_prefill_func"), std::string::npos) << text;
}

namespace {

// An NHD cache [blocks, block, Hk, D] as AITer's 5-D key cache [blocks, Hk, D / x, block, x], its
// 5-D value cache [blocks, Hk, block / x, D, x], or pa_decode_gluon's [blocks, Hk, D, block].
enum class Layout5 { key, value, dim_major };
HostTensor relayout(const HostTensor& nhd, Layout5 l, int64_t x) {
  const int64_t n = nhd.view.shape[0], bs = nhd.view.shape[1], hk = nhd.view.shape[2], d = nhd.view.shape[3];
  HostTensor t(DType::f32, l == Layout5::key     ? std::vector<int64_t>{n, hk, d / x, bs, x}
                           : l == Layout5::value ? std::vector<int64_t>{n, hk, bs / x, d, x}
                                                 : std::vector<int64_t>{n, hk, d, bs});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t s = 0; s < bs; ++s)
      for (int64_t h = 0; h < hk; ++h)
        for (int64_t e = 0; e < d; ++e) {
          const int64_t at = l == Layout5::key   ? (((b * hk + h) * (d / x) + e / x) * bs + s) * x + e % x
                             : l == Layout5::value ? (((b * hk + h) * (bs / x) + s / x) * d + e) * x + s % x
                                                   : ((b * hk + h) * d + e) * bs + s;
          t.set(at, nhd.get(((b * bs + s) * hk + h) * d + e));
        }
  return t;
}

}  // namespace

// pa_decode_gluon and pa_decode_bf16_asm through the C API on CPU tensors: AITer's 5-D caches,
// MTP 2 (causal among a sequence's queries), sinks, against the dense reference; the asm call's
// schedule splits sequence 0 in two pieces, whose split rows merged back give its rows; without
// its LSE scratch the asm call names it.
TEST(CApi, VectorizedDecodesOnCpuMatchTheDenseReference) {
  constexpr int64_t kHq = 4, kHk = 2, kD = 8, kBlock = 8, kX = 4, kQlen = 2;
  SeededRng rng;
  HostTensor kc(DType::f32, {6, kBlock, kHk, kD}), vc(DType::f32, {6, kBlock, kHk, kD}), sinks(DType::f32, {kHq});
  kc.fill_random(rng), vc.fill_random(rng), sinks.fill_random(rng);
  const HostTensor k5 = relayout(kc, Layout5::key, kX), v5 = relayout(vc, Layout5::value, kX),
                   v4 = relayout(vc, Layout5::dim_major, kX);
  const int64_t ctx[2] = {20, 7};
  HostTensor table = i32_tensor({4, 0, 2, 5, 1, 3}, {2, 3}), used = i32_tensor({20, 7});
  HostTensor q(DType::f32, {2 * kQlen, kHq, kD});
  q.fill_random(rng);
  const double scale = 0.3;
  auto check = [&](const HostTensor& out, const char* how) {
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < kHq; ++h) {
        const int64_t kh = h / (kHq / kHk);
        Dense want = dense_attention(rows(q, b * kQlen, kQlen, h), paged_rows(kc, table, b, ctx[b], kh),
                                     paged_rows(vc, table, b, ctx[b], kh), kD, scale, true, {-1, -1, 0}, sinks.get(h));
        for (int64_t i = 0; i < kQlen; ++i)
          for (int64_t e = 0; e < kD; ++e)
            EXPECT_NEAR(out.get(((b * kQlen + i) * kHq + h) * kD + e), want.out[i * kD + e], 2e-6) << how << " seq " << b;
      }
  };
  for (const HostTensor* vcache : {&v4, &v5}) {
    HostTensor out(DType::f32, {2 * kQlen, kHq, kD});
    out.fill(NAN);
    Dl dout(out), dq(q), dk(k5), dv(*vcache), dctx(used), dtable(table), ds(sinks);
    aiter_compat_gluon_decode_args g{};
    g.output = &dout.t, g.query = &dq.t, g.key_cache = &dk.t, g.value_cache = &dv.t, g.context_lengths = &dctx.t;
    g.block_tables = &dtable.t, g.sinks = &ds.t, g.softmax_scale = scale, g.query_length = kQlen;
    g.max_context_partition_num = 1;
    ASSERT_EQ(aiter_compat_gluon_decode(&g, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
    check(out, vcache == &v4 ? "gluon, [blocks, Hk, D, block] values" : "gluon, 5-D values");
    g.query_length = 3;  // 4 tokens are not whole sequences of 3
    EXPECT_EQ(aiter_compat_gluon_decode(&g, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
    EXPECT_NE(std::string(aiter_compat_last_error()).find("query_length"), std::string::npos) << aiter_compat_last_error();
  }
  // pa_decode_bf16_asm: Q [batch, mtp + 1, Hk, gqa, D] (the same values), CSR pages.
  HostTensor q5(DType::f32, {2, kQlen, kHk, kHq / kHk, kD}), out5(DType::f32, {2, kQlen, kHk, kHq / kHk, kD});
  for (int64_t i = 0; i < q.numel(); ++i) q5.set(i, q.get(i));
  out5.fill(NAN);
  HostTensor indptr = i32_tensor({0, 3, 4}), pages = i32_tensor({4, 0, 2, 5});
  // Sequence 0 in two pieces (pages 0-1, then 2) for each KV head, sequence 1 straight to out.
  HostTensor work = i32_tensor({0, 0, 0, 2, 0, 2, 0, 2 << 16, 0, 2, 0, 2, 2, 3, 0, 2 << 16, 0, 0, 0, 2, 0, 2, 0, 4 << 16 | 2,
                                0, 2, 0, 2, 2, 3, 0, 4 << 16 | 2, 1, -1, 2, 4, 3, 4, 0, 4 << 16},
                               {5, 8});
  HostTensor split_o(DType::f32, {4, 1, kHq, kD}), split_lse(DType::f32, {4, 1, kHq, 1}), lse(DType::f32, {kHq, 2 * kQlen});
  split_o.fill(NAN), split_lse.fill(NAN);
  Dl dq5(q5), dout5(out5), dk(k5), dv(v5), dctx(used), dind(indptr), dpages(pages), dwork(work), dso(split_o),
      dsl(split_lse), dlse(lse), ds(sinks);
  aiter_compat_asm_decode_args a{};
  a.Q = &dq5.t, a.K = &dk.t, a.V = &dv.t, a.kv_indices = &dpages.t, a.context_lens = &dctx.t, a.kv_indptr = &dind.t;
  a.work_info = &dwork.t, a.split_o = &dso.t, a.split_lse = &dsl.t, a.sink = &ds.t, a.out = &dout5.t;
  a.softmax_scale = scale, a.gqa = kHq / kHk, a.mtp = kQlen - 1;
  EXPECT_EQ(aiter_compat_asm_decode(&a, nullptr), AITER_COMPAT_INVALID_ARGUMENT);  // no LSE scratch
  EXPECT_NE(std::string(aiter_compat_last_error()).find("lse: found NULL"), std::string::npos) << aiter_compat_last_error();
  a.lse = &dlse.t;
  ASSERT_EQ(aiter_compat_asm_decode(&a, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
  check(out5, "asm decode");  // (Q's and out's 5-D shapes are [tokens, heads, D] in memory)
  for (int64_t i = 0; i < kQlen; ++i)  // sequence 0's rows merged back from its two pieces (rows i and 2 + i)
    for (int64_t h = 0; h < kHq; ++h) {
      const double l0 = split_lse.get(i * kHq + h), l1 = split_lse.get((2 + i) * kHq + h);
      const double m = std::max(l0, l1), g = m + std::log(std::exp(l0 - m) + std::exp(l1 - m));
      for (int64_t e = 0; e < kD; ++e) {
        const double merged = split_o.get((i * kHq + h) * kD + e) * std::exp(l0 - g) +
                              split_o.get(((2 + i) * kHq + h) * kD + e) * std::exp(l1 - g);
        EXPECT_NEAR(merged, out5.get((i * kHq + h) * kD + e), 1e-6) << "row " << i << " head " << h;
      }
    }
  char text[4096];
  ASSERT_EQ(aiter_compat_explain_asm_decode(&a, text, sizeof text), AITER_COMPAT_OK);
  EXPECT_NE(std::string(text).find("pa_decode_bf16_asm"), std::string::npos) << text;
}

// AITer's Triton names and the shuffled (5-D) unified_attention through the C API give what
// their CK-named, NHD counterparts give; the fp8 per-tensor names, with no fallback and no AITer
// here, are refused with every candidate's reasons.
TEST(CApi, TritonNamesShuffledCachesAndFp8NamesThroughTheCApi) {
  SeededRng rng;
  VarlenCase c(rng);
  ASSERT_EQ(aiter_compat_triton_varlen_attention(&c.args, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
  expect_matches_dense(c);
  c.args.softcap = 5.0;  // Triton's function has no soft cap
  EXPECT_EQ(aiter_compat_triton_varlen_attention(&c.args, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("softcap"), std::string::npos) << aiter_compat_last_error();
  char text[4096];
  c.args.softcap = 0.0;
  ASSERT_EQ(aiter_compat_explain_triton_varlen(&c.args, text, sizeof text), AITER_COMPAT_OK);
  EXPECT_NE(std::string(text).find("triton_flash_attn_varlen_func"), std::string::npos) << text;

  // unified_attention over the 5-D pair: the same rows as over the NHD cache.
  constexpr int64_t kHq = 4, kHk = 2, kD = 8, kBlock = 8;
  HostTensor kc(DType::f32, {5, kBlock, kHk, kD}), vc(DType::f32, {5, kBlock, kHk, kD}), q(DType::f32, {3, kHq, kD}),
      sinks(DType::f32, {kHq});
  kc.fill_random(rng), vc.fill_random(rng), q.fill_random(rng), sinks.fill_random(rng);
  const HostTensor k5 = relayout(kc, Layout5::key, 4), v5 = relayout(vc, Layout5::value, 4);
  HostTensor cu = i32_tensor({0, 2, 3}), used = i32_tensor({15, 6}), table = i32_tensor({3, 0, 4, 2}, {2, 2});
  HostTensor out_rows(DType::f32, {3, kHq, kD}), out_5d(DType::f32, {3, kHq, kD});
  out_rows.fill(NAN), out_5d.fill(NAN);
  Dl dq(q), dk(kc), dv(vc), dk5(k5), dv5(v5), dcu(cu), dused(used), dtable(table), ds(sinks), dor(out_rows), do5(out_5d);
  aiter_compat_paged_args p{};
  p.q = &dq.t, p.k_cache = &dk.t, p.v_cache = &dv.t, p.cu_seqlens_q = &dcu.t, p.seqused_k = &dused.t;
  p.block_table = &dtable.t, p.sinks = &ds.t, p.out = &dor.t, p.max_seqlen_q = 2, p.max_seqlen_k = 15, p.causal = 1;
  p.window_left = 5, p.window_right = 0;
  ASSERT_EQ(aiter_compat_paged_attention(&p, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
  p.k_cache = &dk5.t, p.v_cache = &dv5.t, p.out = &do5.t, p.shuffled_kv_cache = 1;
  ASSERT_EQ(aiter_compat_paged_attention(&p, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
  EXPECT_LT(max_difference(values(out_5d), values(out_rows)), 1e-6);
  p.shuffled_kv_cache = 0;  // 5-D caches without the flag: a caller's mistake, named
  EXPECT_EQ(aiter_compat_paged_attention(&p, nullptr), AITER_COMPAT_INVALID_ARGUMENT);

  HostTensor q8(DType::f8_e4m3fn, {6, 4, 8}), k8(DType::f8_e4m3fn, {6, 2, 8}), out(DType::bf16, {6, 4, 8}),
      one(DType::f32, {1});
  one.fill(1.0);
  HostTensor cu8 = i32_tensor({0, 2, 6});
  Dl dq8(q8), dk8(k8), dout(out), done(one), dcu8(cu8);
  aiter_compat_fp8_pertensor_args f{};
  f.q = &dq8.t, f.k = &dk8.t, f.v = &dk8.t, f.q_descale = &done.t, f.k_descale = &done.t, f.v_descale = &done.t;
  f.cu_seqlens_q = &dcu8.t, f.cu_seqlens_k = &dcu8.t, f.out = &dout.t, f.max_seqlen_q = 4, f.max_seqlen_k = 4, f.causal = 1;
  f.window_left = f.window_right = -1;
  EXPECT_EQ(aiter_compat_fp8_pertensor_attention(&f, nullptr), AITER_COMPAT_NO_ROUTE);
  const std::string why = aiter_compat_last_error();
  EXPECT_NE(why.find("flash_attn_varlen_fp8_pertensor_func"), std::string::npos) << why;
  EXPECT_NE(why.find("AITer is not installed"), std::string::npos) << why;
  ASSERT_EQ(aiter_compat_explain_fp8_pertensor(&f, text, sizeof text), AITER_COMPAT_OK);
  f.cu_seqlens_q = nullptr;  // the batch form: flash_attn_fp8_pertensor_func
  ASSERT_EQ(aiter_compat_explain_fp8_pertensor(&f, text, sizeof text), AITER_COMPAT_OK);
  EXPECT_NE(std::string(text).find("flash_attn_fp8_pertensor_func"), std::string::npos) << text;
}

TEST(CApi, FirstUseFromManyThreadsProbesOnceAndAgrees) {
  ASSERT_EQ(aiter_compat_set_policy(nullptr), AITER_COMPAT_OK);  // forget the router: the next call probes
  constexpr int kThreads = 16;
  SeededRng rng;
  std::vector<std::unique_ptr<VarlenCase>> cases;
  for (int t = 0; t < kThreads; ++t) cases.push_back(std::make_unique<VarlenCase>(rng));
  std::vector<aiter_compat_status> status(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] { status[t] = aiter_compat_varlen_attention(&cases[t]->args, nullptr); });
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    EXPECT_EQ(status[t], AITER_COMPAT_OK);
    expect_matches_dense(*cases[t]);  // each thread's result is its own inputs'
  }
}

namespace {

uint64_t cpu_varlen_calls() {
  char buffer[4096];
  EXPECT_EQ(aiter_compat_stats(buffer, sizeof buffer), AITER_COMPAT_OK) << aiter_compat_last_error();
  auto j = nlohmann::json::parse(buffer);
  auto op = j.find("flash_attn_varlen_func");
  if (op == j.end()) return 0;
  auto target = op->find("fallback varlen_fwd (cpu reference)");
  return target == op->end() ? 0 : target->get<uint64_t>();
}

}  // namespace

TEST(CApi, StatsCountEveryCallOfARoute) {
  const uint64_t before = cpu_varlen_calls();
  SeededRng rng;
  VarlenCase c(rng);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_OK);
  std::thread other([&] { ASSERT_EQ(aiter_compat_varlen_attention(&c.args, nullptr), AITER_COMPAT_OK); });
  other.join();
  EXPECT_EQ(cpu_varlen_calls(), before + 4);
  // explain decides without running: not a call.
  char text[8192];
  ASSERT_EQ(aiter_compat_explain_varlen(&c.args, text, sizeof text), AITER_COMPAT_OK);
  EXPECT_EQ(cpu_varlen_calls(), before + 4);

  char small[4];
  EXPECT_EQ(aiter_compat_stats(small, sizeof small), AITER_COMPAT_INVALID_ARGUMENT);
  const std::string msg = aiter_compat_last_error();
  EXPECT_EQ(msg.rfind("buffer: found 4 bytes, needed at least ", 0), 0u) << msg;
  EXPECT_EQ(aiter_compat_stats(nullptr, 100), AITER_COMPAT_INVALID_ARGUMENT);
}
