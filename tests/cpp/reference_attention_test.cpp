// The CPU reference kernels against an independent formulation: a dense score matrix, masked,
// with the sink as one more column of a plain softmax whose value vector is zero.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "aiter_compat/shim/validate.hpp"
#include "dense_attention.hpp"
#include "host_tensor.hpp"
#include "reference_attention.hpp"
#include "test_seed.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {

constexpr double kNegInf = kNoSink;

double tolerance(DType t) { return t == DType::f32 ? 2e-6 : t == DType::f16 ? 2e-3 : 1.6e-2; }

struct VarlenCase {
  std::vector<int64_t> q_lens, k_lens;
  int64_t hq, hk, d, dv;
  bool causal;
  Window window;
  bool sinks;
  double sink_scale = 1.0;
  DType dtype = DType::f32;
  double softcap = 0;
  DType sink_dtype = DType::f32;
};

void check_varlen(const VarlenCase& c, std::mt19937& rng) {
  std::vector<int64_t> cu_q{0}, cu_k{0};
  for (size_t b = 0; b < c.q_lens.size(); ++b) {
    cu_q.push_back(cu_q.back() + c.q_lens[b]);
    cu_k.push_back(cu_k.back() + c.k_lens[b]);
  }
  HostTensor q(c.dtype, {cu_q.back(), c.hq, c.d}), k(c.dtype, {cu_k.back(), c.hk, c.d}),
      v(c.dtype, {cu_k.back(), c.hk, c.dv}), out(c.dtype, {cu_q.back(), c.hq, c.dv}),
      lse(DType::f32, {c.hq, cu_q.back()}), sinks(c.sink_dtype, {c.hq});
  q.fill_random(rng);
  k.fill_random(rng);
  v.fill_random(rng);
  sinks.fill_random(rng, c.sink_scale);
  out.fill(1e30);  // poison: every element must be written
  lse.fill(1e30);
  HostTensor cq = i32_tensor(cu_q), ck = i32_tensor(cu_k);
  VarlenArgs a;
  a.q = q.view, a.k = k.view, a.v = v.view, a.out = out.view, a.lse = lse.view;
  a.cu_seqlens_q = cq.view, a.cu_seqlens_k = ck.view;
  if (c.sinks) a.sinks = sinks.view;
  a.max_seqlen_q = *std::max_element(c.q_lens.begin(), c.q_lens.end());
  a.max_seqlen_k = *std::max_element(c.k_lens.begin(), c.k_lens.end());
  a.causal = c.causal;
  a.window = c.window;
  a.softcap = c.softcap;
  validate_varlen(a, true);
  cpu::varlen_attention(a);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
  for (size_t b = 0; b < c.q_lens.size(); ++b)
    for (int64_t h = 0; h < c.hq; ++h) {
      int64_t kh = h / (c.hq / c.hk);
      Dense ref = dense_attention(rows(q, cu_q[b], c.q_lens[b], h), rows(k, cu_k[b], c.k_lens[b], kh),
                                  rows(v, cu_k[b], c.k_lens[b], kh), c.dv, scale, c.causal, c.window,
                                  c.sinks ? sinks.get(h) : kNegInf, c.softcap);
      for (int64_t i = 0; i < c.q_lens[b]; ++i) {
        for (int64_t e = 0; e < c.dv; ++e) {
          double got = out.get(((cu_q[b] + i) * c.hq + h) * c.dv + e), want = ref.out[i * c.dv + e];
          ASSERT_NEAR(got, want, tolerance(c.dtype)) << "b " << b << " h " << h << " i " << i << " e " << e;
        }
        double got_lse = lse.get(h * cu_q.back() + cu_q[b] + i), want_lse = ref.lse[i];
        if (std::isinf(want_lse)) ASSERT_EQ(got_lse, want_lse);
        else ASSERT_NEAR(got_lse, want_lse, 1e-5 * std::max(1.0, std::abs(want_lse)));
      }
    }
}

}  // namespace

TEST(ReferenceAttention, VarlenMatchesDenseSoftmaxWithSinkColumn) {
  SeededRng rng;
  const std::vector<VarlenCase> cases = {
      {{5, 1, 7}, {5, 9, 7}, 8, 2, 16, 16, true, {}, true},           // GQA 4, causal, sinks
      {{3, 4}, {6, 4}, 4, 4, 8, 12, false, {}, true},                  // non-causal, Dv != D
      {{9}, {9}, 8, 1, 16, 16, true, {3, 0, 0}, true},                 // sliding window (3, 0)
      {{6}, {10}, 2, 1, 8, 8, false, {2, 1, 0}, false},                // two-sided window, no sinks
      {{4}, {4}, 2, 2, 8, 8, true, {100, 0, 0}, true},                 // window wider than the context
      {{1, 1, 1}, {1, 5, 3}, 4, 2, 8, 8, true, {}, true},              // decode-like: one query each
      {{0, 3, 0}, {0, 3, 2}, 2, 1, 8, 8, true, {}, true},              // empty sequences
      {{3}, {0}, 2, 1, 8, 8, false, {}, true},                         // no keys at all: sink only
      {{4}, {4}, 2, 1, 8, 8, true, {}, true, 1e4},                     // very large sinks
      {{4, 2}, {4, 6}, 4, 2, 64, 64, true, {127, 0, 0}, true, 1, DType::bf16},  // GPT-OSS-like, bf16
      {{5}, {5}, 2, 1, 128, 128, true, {}, true, 1, DType::f16},      // head dim 128, fp16
      {{3}, {7}, 2, 2, 8, 8, false, {}, true, 1, DType::f32, 5.0},     // softcap
      {{4, 2}, {4, 6}, 8, 2, 64, 64, true, {127, 0, 0}, true, 1, DType::bf16, 0, DType::bf16},  // bf16 sinks
      {{3}, {5}, 4, 1, 16, 16, true, {}, true, 2, DType::f32, 0, DType::f16},                   // fp16 sinks
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    check_varlen(cases[i], rng);
  }
}

// Worked out by hand: one query q = (1, 0) at scale 1 over k0 = (ln 4, 0), k1 = (0, 0) and a
// sink of 0 gives weights e^(ln 4) = 4, e^0 = 1 and the sink's e^0 = 1: out = (4 v0 + v1) / 6
// with v0 = (1, 0), v1 = (0, 1), so (2/3, 1/6), and LSE = ln 6 (ln 5 without the sink). The
// same in every dtype the sinks come in.
TEST(ReferenceAttention, SinkAndLseWorkedOutByHand) {
  for (DType sink_type : {DType::f32, DType::bf16, DType::f16})
    for (bool with_sink : {true, false}) {
      HostTensor q(DType::f32, {1, 1, 2}), k(DType::f32, {2, 1, 2}), v(DType::f32, {2, 1, 2}), out(DType::f32, {1, 1, 2}),
          lse(DType::f32, {1, 1}), sinks(sink_type, {1});
      q.set(0, 1), q.set(1, 0);
      k.set(0, std::log(4.0)), k.set(1, 0), k.set(2, 0), k.set(3, 0);
      v.set(0, 1), v.set(1, 0), v.set(2, 0), v.set(3, 1);
      sinks.set(0, 0.0);
      HostTensor cq = i32_tensor({0, 1}), ck = i32_tensor({0, 2});
      VarlenArgs a;
      a.q = q.view, a.k = k.view, a.v = v.view, a.out = out.view, a.lse = lse.view;
      a.cu_seqlens_q = cq.view, a.cu_seqlens_k = ck.view, a.max_seqlen_q = 1, a.max_seqlen_k = 2;
      a.softmax_scale = 1.0;
      if (with_sink) a.sinks = sinks.view;
      validate_varlen(a, true);
      cpu::varlen_attention(a);
      const double z = with_sink ? 6.0 : 5.0;
      SCOPED_TRACE(to_string(sink_type) + (with_sink ? " with the sink" : " without"));
      EXPECT_NEAR(out.get(0), 4.0 / z, 1e-6);
      EXPECT_NEAR(out.get(1), 1.0 / z, 1e-6);
      EXPECT_NEAR(lse.get(0), std::log(z), 1e-6);
    }
}

TEST(ReferenceAttention, MinusInfinitySinkEqualsNoSink) {
  SeededRng rng;
  HostTensor q(DType::f32, {3, 2, 8}), k(DType::f32, {3, 1, 8}), v(DType::f32, {3, 1, 8}), o1(DType::f32, {3, 2, 8}),
      o2(DType::f32, {3, 2, 8}), sinks(DType::f32, {2});
  q.fill_random(rng), k.fill_random(rng), v.fill_random(rng);
  sinks.fill(-INFINITY);
  HostTensor cu = i32_tensor({0, 3});
  VarlenArgs a;
  a.q = q.view, a.k = k.view, a.v = v.view, a.cu_seqlens_q = cu.view, a.cu_seqlens_k = cu.view;
  a.max_seqlen_q = a.max_seqlen_k = 3, a.causal = true, a.out = o1.view;
  cpu::varlen_attention(a);
  a.out = o2.view, a.sinks = sinks.view;
  cpu::varlen_attention(a);
  EXPECT_EQ(o1.bytes, o2.bytes);
}

TEST(ReferenceAttention, PagedMatchesContiguous) {
  // The same sequences through a shuffled block table must give what the varlen kernel gives on
  // the keys laid out contiguously.
  SeededRng rng;
  for (int64_t block_size : {1, 4, 16}) {
    const std::vector<int64_t> ctx = {13, 1, 20}, qlen = {13, 1, 3};  // prefill, decode, extend
    const int64_t hq = 8, hk = 2, d = 16, nb_per_seq = (20 + block_size - 1) / block_size, nblocks = 3 * nb_per_seq + 2;
    HostTensor kc(DType::f32, {nblocks, block_size, hk, d}), vc(DType::f32, {nblocks, block_size, hk, d});
    kc.fill_random(rng), vc.fill_random(rng);
    std::vector<int64_t> perm(static_cast<size_t>(nblocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), *rng);
    std::vector<int64_t> table;
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t i = 0; i < nb_per_seq; ++i) table.push_back(perm[static_cast<size_t>(b * nb_per_seq + i)]);
    HostTensor bt = i32_tensor(table, {3, nb_per_seq}), used = i32_tensor(ctx);
    std::vector<int64_t> cu_q{0}, cu_k{0};
    for (int b = 0; b < 3; ++b) cu_q.push_back(cu_q.back() + qlen[b]), cu_k.push_back(cu_k.back() + ctx[b]);
    HostTensor q(DType::f32, {cu_q.back(), hq, d}), sinks(DType::f32, {hq}), out(DType::f32, {cu_q.back(), hq, d}),
        k(DType::f32, {cu_k.back(), hk, d}), v(DType::f32, {cu_k.back(), hk, d}), want(DType::f32, {cu_q.back(), hq, d});
    q.fill_random(rng), sinks.fill_random(rng);
    out.fill(1e30);
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t j = 0; j < ctx[b]; ++j) {
        int64_t blk = table[static_cast<size_t>(b * nb_per_seq + j / block_size)];
        for (int64_t h = 0; h < hk; ++h)
          for (int64_t e = 0; e < d; ++e) {
            int64_t src = ((blk * block_size + j % block_size) * hk + h) * d + e, dst = ((cu_k[b] + j) * hk + h) * d + e;
            k.set(dst, kc.get(src));
            v.set(dst, vc.get(src));
          }
      }
    HostTensor cq = i32_tensor(cu_q), ck = i32_tensor(cu_k);
    PagedArgs p;
    p.q = q.view, p.k_cache = kc.view, p.v_cache = vc.view, p.cu_seqlens_q = cq.view, p.seqused_k = used.view;
    p.block_table = bt.view, p.sinks = sinks.view, p.out = out.view, p.max_seqlen_q = 13, p.max_seqlen_k = 20;
    p.window = {5, -1, 0};
    validate_paged(p, true);
    cpu::paged_attention(p);
    VarlenArgs a;
    a.q = q.view, a.k = k.view, a.v = v.view, a.cu_seqlens_q = cq.view, a.cu_seqlens_k = ck.view;
    a.sinks = sinks.view, a.out = want.view, a.max_seqlen_q = 13, a.max_seqlen_k = 20, a.causal = true;
    a.window = {5, -1, 0};
    cpu::varlen_attention(a);
    for (int64_t i = 0; i < out.numel(); ++i) ASSERT_NEAR(out.get(i), want.get(i), 1e-6) << "block size " << block_size;
  }
}
