// A host model of the AMD tiled kernels' fragment layer, since no AMD GPU runs them here.
//
// What is modelled, from AMD's documentation rather than from the kernels:
//   - the MFMA instructions the tiles use, v_mfma_f32_32x32x8 and v_mfma_f32_16x16x16 (bf16_1k
//     and f16 alike: the operand layouts do not depend on the 16-bit type), as the CDNA3 ISA
//     guide (section 7.1, "Dependent arithmetic: matrix fused-multiply-add") and AMD's matrix
//     instruction calculator describe them over a 64-lane wave: which lane and element holds
//     A[i][k] and B[k][j], and which lane and register receives D[i][j];
//   - RDNA3's and RDNA4's v_wmma_f32_16x16x16 over a 32-lane wave, as their ISA reference guides
//     describe them ("Wave Matrix Multiply Accumulate"): on RDNA3 both halves of the wave must
//     hold the same A and B (the model checks that they do) and D's rows alternate between the
//     halves; on RDNA4 the halves hold K 0-7 and 8-15, and D's rows 0-7 and 8-15;
//   - a cross-lane XOR shuffle (ds_swizzle / DPP as ac_shfl_xor uses them): all lanes at once.
// What comes from the kernels' own source (fragment_layouts.hpp, compiled here for the CPU,
// and kernel_params.h's tile shapes): every index the AMD tiles compute — where each lane's K,
// Q and V operands are in LDS and registers, which key and dim each accumulator element is,
// which registers of S^T become P^T's operand, the lanes that share a row. The model runs the
// tiles' algorithm over those indices (LDS with its padded pitch, online softmax in base 2,
// the sink in the epilogue, the "keys" shape's cross-wave combine) and compares with plain
// attention in double precision, on random data, with partial and masked tiles.
//
// What it cannot show: that the hardware does what the documentation says (the instruction's
// real semantics, its internal rounding), timing, LDS bank conflicts, the compiler's scheduling
// and waits (s_waitcnt), and barriers — the GPU self-test on the user's device covers results.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <utility>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fragment_layouts.hpp"
#include "kernel_params.h"
// The kernels' own building blocks, built for the CPU: the block's key range, the online
// softmax's running max (AMD's tiles rescale in every tile) and the row finish (the sink fold)
// run here as in the kernels.
#define AC_HOST_MODEL 1
#include "key_range.hpp"
#include "online_softmax.hpp"
#include "row_finish.hpp"

namespace {

// ---- The documentation's layouts, written as (matrix index) -> (lane, element/register). ----
// v_mfma_f32_32x32x8 (non-blocked: cbsz = abid = blgp = 0): A is 32 x 8, lanes 0-31 hold K
// 0-3 of rows 0-31, lanes 32-63 K 4-7; B likewise by column; D's 32 x 32 fp32 in 16 registers:
// column j in lanes j and j + 32, rows in groups of 4: register r of lane l is row
// 8 (r / 4) + 4 (l / 32) + r % 4.
// v_mfma_f32_16x16x16: A is 16 x 16, lane group g = l / 16 holds K 4g .. 4g + 3 of row l % 16;
// D's 16 x 16 in 4 registers: column l % 16, row 4 (l / 16) + r.
// RDNA3 v_wmma_f32_16x16x16 (wave32): A[i][k] in lanes i and i + 16 (the same data), element k;
// D[i][j] in lane j + 16 (i % 2), register i / 2.
// RDNA4 v_wmma_f32_16x16x16 (wave32): A[i][k] in lane i + 16 (k / 8), element k % 8; D[i][j] in
// lane j + 16 (i / 8), register i % 8.
// gfx1250 v_wmma_f32_16x16x32 (wave32): A[i][k] in lane i + 16 ((k / 8) % 2), element
// 8 (k / 16) + k % 8; D as RDNA4's.
template <class L> struct DocLayout;
template <int N> struct DocLayout<ac_layout::Mfma<N>> {
  static constexpr int kLanes = 64, kK = N == 32 ? 8 : 16, kRegs = N == 32 ? 16 : 4, kElems = 4, kN = N;
  static constexpr bool kReplicated = false;  // A and B held once per wave
  static int a_lane(int i, int k) { return i + N * (k / 4); }
  static int b_lane(int k, int j) { return j + N * (k / 4); }
  static int ab_elem(int k) { return k % 4; }
  static int d_lane(int i, int j) { return N == 32 ? j + 32 * ((i / 4) % 2) : j + 16 * (i / 4); }
  static int d_reg(int i, int) { return N == 32 ? 4 * (i / 8) + i % 4 : i % 4; }
};
// gfx950's v_mfma_f32_32x32x16 (CDNA4 ISA guide; the calculator's rule with 8 K values per
// lane): A[i][k] in lane i + 32 (k / 8), element k % 8; D as 32x32x8's.
template <> struct DocLayout<ac_layout::Mfma32K16> {
  static constexpr int kLanes = 64, kK = 16, kRegs = 16, kElems = 8, kN = 32;
  static constexpr bool kReplicated = false;
  static int a_lane(int i, int k) { return i + 32 * (k / 8); }
  static int b_lane(int k, int j) { return j + 32 * (k / 8); }
  static int ab_elem(int k) { return k % 8; }
  static int d_lane(int i, int j) { return j + 32 * ((i / 4) % 2); }
  static int d_reg(int i, int) { return 4 * (i / 8) + i % 4; }
};
template <> struct DocLayout<ac_layout::WmmaRdna3> {
  static constexpr int kLanes = 32, kK = 16, kRegs = 8, kElems = 16, kN = 16;
  static constexpr bool kReplicated = true;  // lanes l and l + 16 hold the same A row / B column
  static int a_lane(int i, int) { return i; }
  static int b_lane(int, int j) { return j; }
  static int ab_elem(int k) { return k; }
  static int d_lane(int i, int j) { return j + 16 * (i % 2); }
  static int d_reg(int i, int) { return i / 2; }
};
template <> struct DocLayout<ac_layout::WmmaRdna4> {
  static constexpr int kLanes = 32, kK = 16, kRegs = 8, kElems = 8, kN = 16;
  static constexpr bool kReplicated = false;
  static int a_lane(int i, int k) { return i + 16 * (k / 8); }
  static int b_lane(int k, int j) { return j + 16 * (k / 8); }
  static int ab_elem(int k) { return k % 8; }
  static int d_lane(int i, int j) { return j + 16 * (i / 8); }
  static int d_reg(int i, int) { return i % 8; }
};
template <> struct DocLayout<ac_layout::WmmaGfx1250> {
  static constexpr int kLanes = 32, kK = 32, kRegs = 8, kElems = 16, kN = 16;
  static constexpr bool kReplicated = false;
  static int a_lane(int i, int k) { return i + 16 * ((k / 8) % 2); }
  static int b_lane(int k, int j) { return j + 16 * ((k / 8) % 2); }
  static int ab_elem(int k) { return 8 * (k / 16) + k % 8; }
  static int d_lane(int i, int j) { return j + 16 * (i / 8); }
  static int d_reg(int i, int) { return i % 8; }
};

// Where the kernel reads element e of an operand whose element 0 is at `base` (tiles_amd.hpp,
// read_frag): runs of elem_run consecutive values, elem_run_k apart.
template <class L>
int frag_at(int base, int e) {
  return base + ac_layout::elem_run_k<L>(e / ac_layout::elem_run<L>) + e % ac_layout::elem_run<L>;
}

using Operand = std::vector<std::array<float, 16>>;  // [lane][element]
using Accum = std::vector<std::array<float, 16>>;    // [lane][register]
Operand operand(int lanes) { return Operand(lanes, std::array<float, 16>{}); }
Accum accum(int lanes) { return Accum(lanes, std::array<float, 16>{}); }

// D += A B over the wave, as documented (fp32 accumulation of exact products of 16-bit values).
// Where the documentation asks both halves of the wave to hold the same operand, they must.
template <class L>
void matrix_op(Accum& d, const Operand& a, const Operand& b) {
  using Doc = DocLayout<L>;
  constexpr int N = Doc::kN;
  if (Doc::kReplicated)
    for (int l = 0; l < 16; ++l)
      for (int e = 0; e < Doc::kElems; ++e)
        for (const auto* x : {&a, &b})
          if (!((*x)[l][e] == (*x)[l + 16][e]) && !(std::isnan((*x)[l][e]) && std::isnan((*x)[l + 16][e]))) {
            ADD_FAILURE() << (x == &a ? "A" : "B") << ": lanes " << l << " and " << l + 16 << " differ at element " << e;
            return;
          }
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) {
      float sum = d[Doc::d_lane(i, j)][Doc::d_reg(i, j)];
      for (int k = 0; k < Doc::kK; ++k)
        sum += a[Doc::a_lane(i, k)][Doc::ab_elem(k)] * b[Doc::b_lane(k, j)][Doc::ab_elem(k)];
      d[Doc::d_lane(i, j)][Doc::d_reg(i, j)] = sum;
    }
}

// Every lane's value combined with lane ^ mask's, all lanes at once (a shuffle).
template <typename F>
void xor_reduce(std::vector<float>& v, int first_mask, F op) {
  const int lanes = static_cast<int>(v.size());
  for (int mask = first_mask; mask < lanes; mask *= 2) {
    std::vector<float> out(lanes);
    for (int l = 0; l < lanes; ++l) out[l] = op(v[l], v[l ^ mask]);
    v = out;
  }
}

float round_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7fff + ((u >> 16) & 1);
  u &= 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}
float round_f16(float x) { return static_cast<float>(static_cast<_Float16>(x)); }

// ---- The kernel's layout functions against the documentation. ----
template <class L>
void expect_layouts_match_documentation() {
  using Doc = DocLayout<L>;
  constexpr int N = L::kN;
  static_assert(L::kLanes == Doc::kLanes && L::kK == Doc::kK && L::kRegs == Doc::kRegs && L::kElems == Doc::kElems);
  for (int lane = 0; lane < L::kLanes; ++lane)
    for (int e = 0; e < L::kElems; ++e) {
      const int idx = L::ab_index(lane), k = L::ab_k(lane, e);
      // The lane holds A[idx][k] where the documentation puts it (or its copy, lane 16 apart).
      EXPECT_EQ(Doc::a_lane(idx, k), Doc::kReplicated ? lane % 16 : lane) << "A[" << idx << "][" << k << "]";
      EXPECT_EQ(Doc::b_lane(k, idx), Doc::kReplicated ? lane % 16 : lane) << "B[" << k << "][" << idx << "]";
      EXPECT_EQ(Doc::ab_elem(k), e);
      // The elements of one lane are runs of consecutive K values (one load from LDS each),
      // where read_frag reads them.
      EXPECT_EQ(k, frag_at<L>(L::ab_k(lane, 0), e));
    }
  // D: (lane, register) -> (row, column) is a bijection and the documentation's inverse.
  std::vector<int> seen(N * N, 0);
  for (int lane = 0; lane < L::kLanes; ++lane)
    for (int r = 0; r < L::kRegs; ++r) {
      const int i = L::d_row(lane, r), j = L::d_col(lane);
      ASSERT_TRUE(i >= 0 && i < N && j >= 0 && j < N);
      ++seen[i * N + j];
      EXPECT_EQ(Doc::d_lane(i, j), lane);
      EXPECT_EQ(Doc::d_reg(i, j), r);
      // Registers in runs of kRun are consecutive rows (the output's widest store).
      if (r % L::kRun) {
        EXPECT_EQ(i, L::d_row(lane, r - r % L::kRun) + r % L::kRun);
      }
    }
  for (int x : seen) EXPECT_EQ(x, 1);
  // S^T's registers feed P^T's B operand: element e of lane `lane` is register p_reg(s, e) of
  // lane `lane ^ p_lane_xor(lane, e)`, which must hold key (row of S^T) kK s + step_key(ab_k(lane,
  // e)) of the lane's query (column): the B element (k = ab_k, j = ab_index) that lane must hold,
  // K index k standing for the step's key step_key(k), a permutation of the step's keys.
  std::vector<int> keys(L::kK, 0);
  for (int k = 0; k < L::kK; ++k) {
    const int key = ac_layout::step_key<L>(k);
    ASSERT_TRUE(key >= 0 && key < L::kK) << k;
    ++keys[key];
  }
  for (int x : keys) EXPECT_EQ(x, 1);
  // The score elements are numbered over a wave's chunks (chunk c's register r: kRegs c + r,
  // key N c + d_row); two chunks' worth of steps (gfx1250's one step spans two).
  const int steps = 2 * std::max(N, L::kK) / L::kK;
  for (int s = 0; s < steps; ++s)
    for (int lane = 0; lane < L::kLanes; ++lane)
      for (int e = 0; e < L::kElems; ++e) {
        const int x = ac_layout::p_reg<L>(s, e), src = lane ^ ac_layout::p_lane_xor<L>(lane, e);
        const int chunk = x / L::kRegs, r = x % L::kRegs;
        ASSERT_TRUE(x >= 0 && chunk < steps * L::kK / N && src >= 0 && src < L::kLanes);
        EXPECT_EQ(N * chunk + L::d_row(src, r), L::kK * s + ac_layout::step_key<L>(L::ab_k(lane, e)))
            << "step " << s << " lane " << lane << " e " << e;
        EXPECT_EQ(L::d_col(src), L::ab_index(lane));
      }
}

TEST(MfmaModel, LayoutsMatchTheIsaGuide32x32x8) { expect_layouts_match_documentation<ac_layout::Mfma<32>>(); }
TEST(MfmaModel, LayoutsMatchTheIsaGuide16x16x16) { expect_layouts_match_documentation<ac_layout::Mfma<16>>(); }
TEST(MfmaModel, LayoutsMatchTheIsaGuideGfx950_32x32x16) { expect_layouts_match_documentation<ac_layout::Mfma32K16>(); }
TEST(MfmaModel, LayoutsMatchTheIsaGuideRdna3Wmma) { expect_layouts_match_documentation<ac_layout::WmmaRdna3>(); }
TEST(MfmaModel, LayoutsMatchTheIsaGuideRdna4Wmma) { expect_layouts_match_documentation<ac_layout::WmmaRdna4>(); }
TEST(MfmaModel, LayoutsMatchTheDocumentedGfx1250Wmma) { expect_layouts_match_documentation<ac_layout::WmmaGfx1250>(); }

// The modelled instruction against a plain matrix product (small integers: exact in every type).
template <class L>
void expect_instruction_is_a_matmul() {
  constexpr int N = L::kN;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> val(-4, 4);
  std::vector<float> A(N * L::kK), B(L::kK * N);
  for (auto& x : A) x = static_cast<float>(val(rng));
  for (auto& x : B) x = static_cast<float>(val(rng));
  Operand a = operand(L::kLanes), b = operand(L::kLanes);
  for (int lane = 0; lane < L::kLanes; ++lane)
    for (int e = 0; e < L::kElems; ++e) {
      a[lane][e] = A[L::ab_index(lane) * L::kK + L::ab_k(lane, e)];
      b[lane][e] = B[L::ab_k(lane, e) * N + L::ab_index(lane)];
    }
  Accum d = accum(L::kLanes);
  matrix_op<L>(d, a, b);
  for (int lane = 0; lane < L::kLanes; ++lane)
    for (int r = 0; r < L::kRegs; ++r) {
      const int i = L::d_row(lane, r), j = L::d_col(lane);
      float want = 0;
      for (int k = 0; k < L::kK; ++k) want += A[i * L::kK + k] * B[k * N + j];
      EXPECT_EQ(d[lane][r], want) << "D[" << i << "][" << j << "]";
    }
}
TEST(MfmaModel, InstructionIsAMatmul32) { expect_instruction_is_a_matmul<ac_layout::Mfma<32>>(); }
TEST(MfmaModel, InstructionIsAMatmul16) { expect_instruction_is_a_matmul<ac_layout::Mfma<16>>(); }
TEST(MfmaModel, InstructionIsAMatmulGfx950_32x32x16) { expect_instruction_is_a_matmul<ac_layout::Mfma32K16>(); }
TEST(MfmaModel, InstructionIsAMatmulRdna3Wmma) { expect_instruction_is_a_matmul<ac_layout::WmmaRdna3>(); }
TEST(MfmaModel, InstructionIsAMatmulRdna4Wmma) { expect_instruction_is_a_matmul<ac_layout::WmmaRdna4>(); }
TEST(MfmaModel, InstructionIsAMatmulGfx1250Wmma) { expect_instruction_is_a_matmul<ac_layout::WmmaGfx1250>(); }

// A wave whose halves disagree on RDNA3's A operand is caught (the model would otherwise read
// one half only, and a kernel loading different data into each half would pass unseen).
TEST(MfmaModel, Rdna3HalvesThatDisagreeAreCaught) {
  Operand a = operand(32), b = operand(32);
  a[20][3] = 1.f;  // lane 4's copy differs
  Accum d = accum(32);
  EXPECT_NONFATAL_FAILURE(matrix_op<ac_layout::WmmaRdna3>(d, a, b), "lanes 4 and 20 differ at element 3");
}

// ---- One block of the AMD tiles, run over the model. ----
struct Problem {
  int q_len, k_len, group, d;
  bool causal;
  int window_left;     // -1: none
  bool with_sinks;
  int invalid_from;    // keys from here to invalid_to are outside the cache (paged); -1: none
  int invalid_to;
  bool f16;
  int splits = 1;      // split-KV parts (the partial outputs merged with the sink, as the merge kernel)
};

struct Data {
  std::vector<float> q, k, v, sinks;  // q [q_len][group][d], k/v [k_len][d], rounded to the type
};

Data make_data(const Problem& pb, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  auto r = [&](float x) { return pb.f16 ? round_f16(x) : round_bf16(x); };
  Data x;
  x.q.resize(static_cast<size_t>(pb.q_len) * pb.group * pb.d);
  x.k.resize(static_cast<size_t>(pb.k_len) * pb.d);
  x.v.resize(x.k.size());
  for (auto& e : x.q) e = r(n(rng));
  for (auto& e : x.k) e = r(n(rng));
  for (auto& e : x.v) e = r(n(rng));
  x.sinks.resize(pb.group);
  for (auto& e : x.sinks) e = pb.with_sinks ? n(rng) * 2.f : -INFINITY;
  return x;
}

// Keys query token t sees: [lo, hi), for the reference (the tiles use key_range.hpp's).
int key_lo(const Problem& pb, int t) {
  const int pos = t + pb.k_len - pb.q_len;
  return pb.window_left >= 0 && pos - pb.window_left > 0 ? pos - pb.window_left : 0;
}
int key_hi(const Problem& pb, int t) {
  const int pos = t + pb.k_len - pb.q_len;
  return pb.causal && pos + 1 < pb.k_len ? pos + 1 : pb.k_len;
}
bool key_in_cache(const Problem& pb, int j) { return !(j >= pb.invalid_from && j < pb.invalid_to); }

// Plain attention with the sink, in double: out [q_len][group][d].
std::vector<double> reference(const Problem& pb, const Data& x, float scale) {
  std::vector<double> out(x.q.size(), 0.0);
  for (int t = 0; t < pb.q_len; ++t)
    for (int g = 0; g < pb.group; ++g) {
      const float* q = &x.q[(static_cast<size_t>(t) * pb.group + g) * pb.d];
      std::vector<double> s;
      std::vector<int> keys;
      for (int j = key_lo(pb, t); j < key_hi(pb, t); ++j) {
        if (!key_in_cache(pb, j)) continue;
        double dot = 0;
        for (int c = 0; c < pb.d; ++c) dot += static_cast<double>(q[c]) * x.k[static_cast<size_t>(j) * pb.d + c];
        s.push_back(dot * scale), keys.push_back(j);
      }
      double m = pb.with_sinks ? x.sinks[g] : -INFINITY;
      for (double e : s) m = std::max(m, e);
      if (m == -INFINITY) continue;
      double l = pb.with_sinks ? std::exp(x.sinks[g] - m) : 0.0;
      std::vector<double> acc(pb.d, 0.0);
      for (size_t i = 0; i < s.size(); ++i) {
        const double p = std::exp(s[i] - m);
        l += p;
        for (int c = 0; c < pb.d; ++c) acc[c] += p * x.v[static_cast<size_t>(keys[i]) * pb.d + c];
      }
      for (int c = 0; c < pb.d; ++c) out[(static_cast<size_t>(t) * pb.group + g) * pb.d + c] = acc[c] / l;
    }
  return out;
}

// The AMD tiles of shape S on layout L (tiles_amd.hpp's algorithm over the kernel's index maps).
template <ac_tiled_shape S, class L>
std::vector<float> run_tiles(const Problem& pb, const Data& x, float scale) {
  constexpr int N = S.tile_rows, D = S.head_dim, kWarpKeys = S.block_n / S.warps_n, kPitch = S.row_pitch();
  constexpr int W = L::kLanes;
  using Map = ac_layout::AmdTileMaps<L, kWarpKeys, kPitch, S.v_pitch(), S.lds_swizzle()>;
  constexpr int kKeyChunks = kWarpKeys / N, kDimBlocks = D / N, kKSteps = D / L::kK, kPSteps = kWarpKeys / L::kK;
  constexpr int kBlockM = S.block_m(), kWaves = S.warps_m * S.warps_n;
  constexpr float kLog2e = 1.4426950408889634f;
  static_assert(S.lanes == W && L::kN == N && S.m_tiles == 1 && S.amd);
  auto r16 = [&](float v) { return pb.f16 ? round_f16(v) : round_bf16(v); };
  const int rows_total = pb.q_len * pb.group;
  std::vector<float> out(x.q.size(), NAN);
  const float scale2 = scale * kLog2e;

  // Split-KV: each row's partial (unnormalised output, max in base 2, sum) per split.
  struct Partial {
    std::vector<float> o;
    float m = -INFINITY, l = 0.f;
  };
  std::vector<std::vector<Partial>> partials(rows_total, std::vector<Partial>(pb.splits));
  ac_attention_params p{};
  p.causal = pb.causal, p.window_left = pb.window_left, p.window_right = -1;
  const KeyRange range{p, pb.q_len, pb.k_len};
  for (int row0 = 0; row0 < rows_total; row0 += kBlockM)
  for (int split = 0; split < pb.splits; ++split) {
    const int last_row = std::min(row0 + kBlockM, rows_total) - 1;
    // The kernel's keys for the block, cut into splits of whole tiles.
    const KeySpan keys = block_keys(range, row0 / pb.group, last_row / pb.group, split, pb.splits, S.block_n);
    const int k_begin = keys.begin, k_end = keys.end;
    const int n_tiles = k_begin < k_end ? (k_end - k_begin + S.block_n - 1) / S.block_n : 0;
    struct Wave {
      Operand q[kKSteps];
      std::vector<float> m_run, l_run;
      Accum o[kDimBlocks];
    };
    std::vector<Wave> waves(kWaves);
    for (int w = 0; w < kWaves; ++w) {
      const int warp_m = w % S.warps_m;
      Wave& wv = waves[w];
      wv.m_run.assign(W, -INFINITY), wv.l_run.assign(W, 0.f);
      for (auto& b : wv.o) b = accum(W);
      for (int ks = 0; ks < kKSteps; ++ks) {
        wv.q[ks] = operand(W);
        for (int lane = 0; lane < W; ++lane) {
          const int flat = row0 + Map::row(warp_m, lane);
          for (int e = 0; e < L::kElems; ++e)
            wv.q[ks][lane][e] = flat < rows_total ? x.q[static_cast<size_t>(flat) * D + frag_at<L>(Map::q_dim(ks, lane, 0), e)] : 0.f;
        }
      }
    }
    // LDS: one stage of K rows at the padded pitch, V as the shape keeps it (rows, or V^T on
    // WMMA), validity bytes; poisoned padding, so that an index into it shows.
    // Packed shapes (kernel_params.h): unpadded rows swizzled by key, each wave loading its own
    // keys' 16-byte chunks (Map::wave_load_key / wave_load_chunk) and holding their validity as
    // ballot bits, set as the kernel sets them; every element must be written exactly once.
    std::vector<float> k_s(S.block_n * kPitch), v_s(S.v_elems());
    std::vector<uint8_t> valid(S.block_n);
    std::vector<uint32_t> valid_bits(kWaves, 0);
    auto row_ok = [&](int j) { return j < k_end && key_in_cache(pb, j); };
    for (int it = 0; it < n_tiles; ++it) {
      const int j0 = k_begin + it * S.block_n;
      std::fill(k_s.begin(), k_s.end(), NAN), std::fill(v_s.begin(), v_s.end(), NAN);
      if constexpr (S.packed()) {
        constexpr int kChunks = D / 8, kLoads = kWarpKeys * kChunks / W;
        std::vector<int> writes(S.block_n * D, 0);
        for (int w = 0; w < kWaves; ++w) {
          valid_bits[w] = 0;
          for (int i = 0; i < kLoads; ++i)
            for (int lane = 0; lane < W; ++lane) {
              const int r = Map::wave_load_key(w, lane, i), ch = Map::wave_load_chunk(lane, i), j = j0 + r;
              const bool own = r >= w * kWarpKeys && r < (w + 1) * kWarpKeys;
              EXPECT_TRUE(own) << "wave " << w << " loads key " << r;
              if (!own) continue;
              const bool ok = row_ok(j);
              for (int d = 0; d < 8; ++d) {  // one 16-byte store at the chunk's first dim, as the kernel's
                const int c = ch * 8 + d;
                ++writes[r * D + c];
                EXPECT_EQ(Map::k_at(r, c), Map::k_at(r, ch * 8) + d);
                k_s[Map::k_at(r, ch * 8) + d] = ok ? x.k[static_cast<size_t>(j) * D + c] : 0.f;
                v_s[Map::v_at(r, ch * 8) + d] = ok ? x.v[static_cast<size_t>(j) * D + c] : 0.f;
              }
              if (lane % kChunks == 0)  // the kernel's bit: the key in the wave that lane q kChunks of load i brings
                valid_bits[w] |= static_cast<uint32_t>(ok) << Map::wave_load_key(0, lane, i);
            }
        }
        for (int n : writes) EXPECT_EQ(n, 1) << "an LDS element written " << n << " times";
        for (int r = 0; r < S.block_n; ++r) valid[r] = valid_bits[r / kWarpKeys] >> (r % kWarpKeys) & 1u;
      } else {
        for (int r = 0; r < S.block_n; ++r) {
          const int j = j0 + r;
          const bool ok = row_ok(j);
          valid[r] = ok;
          for (int c = 0; c < D; ++c) {
            k_s[Map::k_at(r, c)] = ok ? x.k[static_cast<size_t>(j) * D + c] : 0.f;
            v_s[Map::v_at(r, c)] = ok ? x.v[static_cast<size_t>(j) * D + c] : 0.f;
          }
        }
      }
      for (int w = 0; w < kWaves; ++w) {
        const int warp_m = w % S.warps_m, warp_n = w / S.warps_m;
        Wave& wv = waves[w];
        Accum sc[kKeyChunks];
        for (int ch = 0; ch < kKeyChunks; ++ch) {
          sc[ch] = accum(W);
          for (int ks = 0; ks < kKSteps; ++ks) {
            Operand a = operand(W);
            for (int lane = 0; lane < W; ++lane)
              for (int e = 0; e < L::kElems; ++e) a[lane][e] = k_s[frag_at<L>(Map::k_offset(warp_n, ch, ks, lane), e)];
            matrix_op<L>(sc[ch], a, wv.q[ks]);
          }
        }
        auto score = [&](int lane, int e) -> float& { return sc[e / L::kRegs][lane][e % L::kRegs]; };
        constexpr int kElems = kKeyChunks * L::kRegs;
        // Masks, and the online softmax over the lanes that share a row.
        std::vector<float> mx(W, -INFINITY);
        for (int lane = 0; lane < W; ++lane) {
          const int flat = row0 + Map::row(warp_m, lane);
          const int t = flat / pb.group;
          const int rlo = flat < rows_total ? range.lo(t) : 0, rhi = flat < rows_total ? range.hi(t) : 0;
          for (int e = 0; e < kElems; ++e) {
            const int key = Map::score_key(warp_n, lane, e), j = j0 + key;
            bool key_valid = valid[key];
            if constexpr (S.packed()) {  // the wave's own bits, as the kernel reads them (tiles_amd.hpp, KeyBits)
              const int in_wave = key - warp_n * kWarpKeys;
              EXPECT_TRUE(in_wave >= 0 && in_wave < kWarpKeys) << "wave " << warp_n << " scores key " << key;
              key_valid = in_wave >= 0 && in_wave < kWarpKeys && (valid_bits[warp_n] >> in_wave & 1u);
            }
            if (!(j < k_end && key_valid) || j < rlo || j >= rhi) score(lane, e) = -INFINITY;
            mx[lane] = std::max(mx[lane], score(lane, e));
          }
        }
        xor_reduce(mx, Map::first_row_mask(), [](float a, float b) { return std::max(a, b); });
        for (int lane = 0; lane < W; ++lane) {
          const MaxStep step = reference_max_step<false>(wv.m_run[lane], mx[lane] * scale2);  // AmdTiles::kSkipsRescale
          const float m_use = exp_base(step.m), corr = step.corr;
          wv.m_run[lane] = step.m;
          float sum = 0;
          for (int e = 0; e < kElems; ++e) sum += score(lane, e) = std::exp2(std::fma(score(lane, e), scale2, -m_use));
          wv.l_run[lane] = wv.l_run[lane] * corr + sum;
          for (int b = 0; b < kDimBlocks; ++b)
            for (int reg = 0; reg < L::kRegs; ++reg) wv.o[b][lane][reg] *= corr;
        }
        // O^T += V^T P^T, P^T from the score elements (p_reg, of the lane p_lane_xor apart),
        // rounded to the type; V^T read as the kernel does (runs from element 0 when transposed).
        for (int b = 0; b < kDimBlocks; ++b)
          for (int st = 0; st < kPSteps; ++st) {
            Operand a = operand(W), p = operand(W);
            for (int lane = 0; lane < W; ++lane)
              for (int e = 0; e < L::kElems; ++e) {
                a[lane][e] = v_s[Map::kVTransposed ? frag_at<L>(Map::v_offset(warp_n, b, st, lane, 0), e)
                                                   : Map::v_offset(warp_n, b, st, lane, e)];
                p[lane][e] = r16(score(lane ^ ac_layout::p_lane_xor<L>(lane, e), ac_layout::p_reg<L>(st, e)));
              }
            matrix_op<L>(wv.o[b], a, p);
          }
      }
    }
    // Epilogue: the waves over keys (S.warps_n) combined per row; the sink entered once.
    for (int warp_m = 0; warp_m < S.warps_m; ++warp_m) {
      std::vector<std::vector<float>> l_sum(S.warps_n);
      for (int wn = 0; wn < S.warps_n; ++wn) {
        l_sum[wn] = waves[wn * S.warps_m + warp_m].l_run;
        xor_reduce(l_sum[wn], Map::first_row_mask(), [](float a, float b) { return a + b; });
      }
      for (int lane = 0; lane < W; ++lane) {
        const int row = Map::row(warp_m, lane), flat = row0 + row;
        if (flat >= rows_total) continue;
        float mx = -INFINITY;
        for (int wn = 0; wn < S.warps_n; ++wn) mx = std::max(mx, waves[wn * S.warps_m + warp_m].m_run[lane]);
        float lf = 0.f;  // the row's sum over the waves, rescaled to mx
        std::vector<float> acc(D, 0.f);
        std::vector<bool> held(D, false);  // the dims this lane holds of its row
        for (int e = 0; e < kDimBlocks * L::kRegs; ++e) held[Map::out_dim(lane, e)] = true;
        for (int wn = 0; wn < S.warps_n; ++wn) {
          const Wave& wv = waves[wn * S.warps_m + warp_m];
          if (wv.m_run[lane] == -INFINITY) continue;
          const float f = std::exp2(wv.m_run[lane] - mx);
          lf += l_sum[wn][lane] * f;
          for (int e = 0; e < kDimBlocks * L::kRegs; ++e) {
            const int dim = Map::out_dim(lane, e);
            // Registers in runs of kRun are consecutive dims (one vector store in the kernel).
            if (e % L::kRun) {
              EXPECT_EQ(dim, Map::out_dim(lane, e - e % L::kRun) + e % L::kRun);
            }
            acc[dim] += wv.o[e / L::kRegs][lane][e % L::kRegs] * f;
          }
        }
        if (pb.splits > 1) {  // partial output: this lane's dims, unnormalised, with (max, sum); the sink at the merge
          Partial& part = partials[flat][split];
          if (part.o.empty()) part.o.assign(D, NAN);
          for (int c = 0; c < D; ++c)
            if (held[c]) part.o[c] = mx == -INFINITY ? 0.f : acc[c];
          part.m = mx, part.l = lf;
          continue;
        }
        const RowFinish fin = finish_row<true>(mx, lf, x.sinks[flat % pb.group] * kLog2e, 1.f);
        for (int c = 0; c < D; ++c) {
          if (!held[c]) continue;
          float& o = out[static_cast<size_t>(flat) * D + c];
          EXPECT_TRUE(std::isnan(o)) << "row " << flat << " dim " << c << " stored by two lanes";
          o = r16(acc[c] * fin.scale);
        }
      }
    }
  }
  if (pb.splits > 1)  // the merge: the splits' partials rescaled to one max, then the sink entered once
    for (int flat = 0; flat < rows_total; ++flat) {
      float mx = -INFINITY;
      for (const auto& part : partials[flat]) mx = std::max(mx, part.m);
      float lf = 0.f;
      std::vector<float> acc(D, 0.f);
      for (const auto& part : partials[flat]) {
        if (part.m == -INFINITY) continue;
        const float f = std::exp2(part.m - mx);
        lf += part.l * f;
        for (int c = 0; c < D; ++c) acc[c] += part.o[c] * f;
      }
      const RowFinish fin = finish_row<true>(mx, lf, x.sinks[flat % pb.group] * kLog2e, 1.f);
      for (int c = 0; c < D; ++c) out[static_cast<size_t>(flat) * D + c] = r16(acc[c] * fin.scale);
    }
  return out;
}

uint32_t test_seed() {
  const char* s = std::getenv("AITER_COMPAT_TEST_SEED");
  return s && *s ? static_cast<uint32_t>(std::strtoul(s, nullptr, 10)) : 20261203u;
}

template <ac_tiled_shape S, class L = ac_layout::Mfma<S.tile_rows>>
void expect_tiles_match_reference(Problem pb) {
  pb.d = S.head_dim;
  const uint32_t seed = test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (AITER_COMPAT_TEST_SEED replays it)");
  const Data x = make_data(pb, seed);
  const float scale = 1.f / std::sqrt(static_cast<float>(pb.d));
  const auto want = reference(pb, x, scale);
  const auto got = run_tiles<S, L>(pb, x, scale);
  // The GPU suite's bounds for 16-bit outputs (P rounded to the type before P V).
  const double atol = pb.f16 ? 4e-3 : 2e-2, rtol = pb.f16 ? 4e-3 : 2e-2;
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i])) && ++bad <= 5)
      ADD_FAILURE() << "element " << i << " (token " << i / pb.d / pb.group << ", head " << i / pb.d % pb.group
                    << ", dim " << i % pb.d << "): tiles " << got[i] << ", reference " << want[i];
  EXPECT_EQ(bad, 0);
}

// Prefill with partial tiles at both ends, a causal diagonal, GQA rows and sinks.
TEST(MfmaModel, RowTilesD64CausalPartialSinks) {
  expect_tiles_match_reference<ac_tiled_rows_shape_amd(64)>({37, 101, 4, 0, true, -1, true, -1, -1, false});
}
TEST(MfmaModel, RowTilesD128WindowF16) {
  expect_tiles_match_reference<ac_tiled_rows_shape_amd(128)>({45, 150, 2, 0, true, 40, true, -1, -1, true});
}
// Keys outside the cache (a block-table entry past num_blocks) masked by their validity bytes.
TEST(MfmaModel, RowTilesD128PagedHoleNoSinks) {
  expect_tiles_match_reference<ac_tiled_rows_shape_amd(128)>({20, 90, 3, 0, false, -1, false, 33, 49, false});
}
// Decode: one token, the heads of a group as rows, the four waves over the keys of each tile.
TEST(MfmaModel, KeyTilesD64DecodeGroup8Sinks) {
  expect_tiles_match_reference<ac_tiled_keys_shape_amd(64)>({1, 300, 8, 0, true, -1, true, -1, -1, false});
}
// Head dim 128's "keys" tiles: packed on gfx90a and gfx942 (unpadded rows swizzled by key, each
// wave loading its own keys, their validity as ballot bits), padded on gfx950.
TEST(MfmaModel, KeyTilesD128WindowHoleF16) {
  expect_tiles_match_reference<ac_tiled_keys_shape_amd(128)>({2, 211, 5, 0, true, 127, true, 64, 80, true});
}
// Split-KV: the keys cut into whole tiles per split (one split empty: 5 tiles over 6 splits),
// each split's partial output and (max, sum), merged with the sink once.
TEST(MfmaModel, KeyTilesD128DecodeSplitsMerged) {
  expect_tiles_match_reference<ac_tiled_keys_shape_amd(128)>({1, 300, 8, 0, true, -1, true, -1, -1, false, 6});
}
TEST(MfmaModel, Gfx950KeyTilesD128WindowHoleSplitsMerged) {
  static_assert(!ac_tiled_keys_shape_gfx950(128).packed() && ac_tiled_keys_shape_amd(128).packed());
  expect_tiles_match_reference<ac_tiled_keys_shape_gfx950(128)>({2, 211, 5, 0, true, 127, true, 64, 80, false, 3});
}
TEST(MfmaModel, RowTilesD64SplitsMergedWindowF16) {
  expect_tiles_match_reference<ac_tiled_rows_shape_amd(64)>({40, 700, 2, 0, true, 300, true, 100, 130, true, 3});
}

// Every key of a row masked: the output is zero (no NaN), only the sink in the sum.
TEST(MfmaModel, KeyTilesEverythingMaskedButTheSink) {
  expect_tiles_match_reference<ac_tiled_keys_shape_amd(64)>({1, 40, 4, 0, true, -1, true, 0, 40, false});
}

// gfx950's row tiles on v_mfma_f32_32x32x16 (the step's keys permuted: step_key): the same cases.
using ac_layout::Mfma32K16;
TEST(MfmaModel, Gfx950RowTilesD64CausalPartialSinks) {
  expect_tiles_match_reference<ac_tiled_rows_shape_amd(64), Mfma32K16>({37, 101, 4, 0, true, -1, true, -1, -1, false});
}
TEST(MfmaModel, Gfx950RowTilesD128WindowF16) {
  expect_tiles_match_reference<ac_tiled_rows_shape_amd(128), Mfma32K16>({45, 150, 2, 0, true, 40, true, -1, -1, true});
}
TEST(MfmaModel, Gfx950RowTilesD128PagedHoleSplitsMerged) {
  expect_tiles_match_reference<ac_tiled_rows_shape_amd(128), Mfma32K16>({20, 390, 3, 0, false, -1, true, 33, 49, false, 3});
}
TEST(MfmaModel, Gfx950RowTilesD256Causal) {
  expect_tiles_match_reference<ac_tiled_rows_shape_amd(256), Mfma32K16>({30, 70, 2, 0, true, -1, true, -1, -1, false});
}
// Without the key permutation (V^T read in K order) the product pairs V rows with the wrong
// scores: the model sees it.
struct Mfma32K16Unpermuted {
  using M = ac_layout::Mfma32K16;
  static constexpr int kLanes = M::kLanes, kN = M::kN, kK = M::kK, kRegs = M::kRegs, kElems = M::kElems, kRun = M::kRun;
  static int ab_index(int lane) { return M::ab_index(lane); }
  static int ab_k(int lane, int e) { return M::ab_k(lane, e); }
  static int d_col(int lane) { return M::d_col(lane); }
  static int d_row(int lane, int r) { return M::d_row(lane, r); }
};
template <> struct DocLayout<Mfma32K16Unpermuted> : DocLayout<Mfma32K16> {};
TEST(MfmaModel, Gfx950WithoutTheKeyPermutationIsCaught) {
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter catcher(::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD,
                                                        &failures);
    expect_tiles_match_reference<ac_tiled_rows_shape_amd(64), Mfma32K16Unpermuted>({37, 101, 4, 0, true, -1, true, -1, -1, false});
  }
  ASSERT_GT(failures.size(), 0) << "tiles that pair V rows with the wrong scores matched the reference";
  EXPECT_NE(std::string(failures.GetTestPartResult(0).message()).find("reference"), std::string::npos);
}
// RDNA3 and RDNA4 (WMMA on 32-lane waves): the same cases on their shapes and layouts.
using ac_layout::WmmaRdna3;
using ac_layout::WmmaRdna4;
TEST(MfmaModel, Rdna3RowTilesD64CausalPartialSinks) {
  expect_tiles_match_reference<ac_tiled_rows_shape_rdna(64), WmmaRdna3>({37, 101, 4, 0, true, -1, true, -1, -1, false});
}
TEST(MfmaModel, Rdna4RowTilesD64CausalPartialSinks) {
  expect_tiles_match_reference<ac_tiled_rows_shape_rdna(64), WmmaRdna4>({37, 101, 4, 0, true, -1, true, -1, -1, false});
}
TEST(MfmaModel, Rdna3RowTilesD64WindowF16) {
  expect_tiles_match_reference<ac_tiled_rows_shape_rdna(64), WmmaRdna3>({45, 150, 2, 0, true, 40, true, -1, -1, true});
}
TEST(MfmaModel, Rdna4RowTilesD128PagedHoleNoSinks) {
  expect_tiles_match_reference<ac_tiled_rows_shape_rdna(128), WmmaRdna4>({20, 90, 3, 0, false, -1, false, 33, 49, false});
}
TEST(MfmaModel, Rdna3KeyTilesD64DecodeGroup8Sinks) {
  expect_tiles_match_reference<ac_tiled_keys_shape_rdna(64), WmmaRdna3>({1, 300, 8, 0, true, -1, true, -1, -1, false});
}
TEST(MfmaModel, Rdna4KeyTilesD128WindowHoleF16) {
  expect_tiles_match_reference<ac_tiled_keys_shape_rdna(128), WmmaRdna4>({2, 211, 5, 0, true, 127, true, 64, 80, true});
}
TEST(MfmaModel, Rdna3KeyTilesD64DecodeSplitsMerged) {
  expect_tiles_match_reference<ac_tiled_keys_shape_rdna(64), WmmaRdna3>({1, 300, 8, 0, true, -1, true, -1, -1, false, 6});
}
TEST(MfmaModel, Rdna4RowTilesD64SplitsMergedWindowF16) {
  expect_tiles_match_reference<ac_tiled_rows_shape_rdna(64), WmmaRdna4>({40, 700, 2, 0, true, 300, true, 100, 130, true, 3});
}
TEST(MfmaModel, Rdna4RowTilesD128Causal) {
  expect_tiles_match_reference<ac_tiled_rows_shape_rdna(128), WmmaRdna4>({30, 70, 2, 0, true, -1, true, -1, -1, false});
}
TEST(MfmaModel, Rdna4KeyTilesEverythingMaskedButTheSink) {
  expect_tiles_match_reference<ac_tiled_keys_shape_rdna(64), WmmaRdna4>({1, 40, 4, 0, true, -1, true, 0, 40, false});
}

// gfx1250 (WMMA 16 x 16 x 32 on 32-lane waves, two runs of 8 per operand, one 32-key step over two
// score chunks): its shapes at every head dim they are built at.
using ac_layout::WmmaGfx1250;
TEST(MfmaModel, Gfx1250RowTilesD64CausalPartialSinks) {
  expect_tiles_match_reference<ac_tiled_rows_shape_gfx1250(64), WmmaGfx1250>({37, 101, 4, 0, true, -1, true, -1, -1, false});
}
TEST(MfmaModel, Gfx1250RowTilesD128PagedHoleSplitsMergedF16) {
  expect_tiles_match_reference<ac_tiled_rows_shape_gfx1250(128), WmmaGfx1250>({20, 390, 3, 0, false, -1, true, 33, 49, true, 3});
}
TEST(MfmaModel, Gfx1250RowTilesD256WindowF16) {
  expect_tiles_match_reference<ac_tiled_rows_shape_gfx1250(256), WmmaGfx1250>({45, 150, 2, 0, true, 40, true, -1, -1, true});
}
TEST(MfmaModel, Gfx1250KeyTilesD64DecodeGroup8SplitsMerged) {
  expect_tiles_match_reference<ac_tiled_keys_shape_gfx1250(64), WmmaGfx1250>({1, 300, 8, 0, true, -1, true, -1, -1, false, 2});
}
TEST(MfmaModel, Gfx1250KeyTilesD128WindowHoleF16) {
  expect_tiles_match_reference<ac_tiled_keys_shape_gfx1250(128), WmmaGfx1250>({2, 211, 5, 0, true, 127, true, 64, 80, true});
}
TEST(MfmaModel, Gfx1250KeyTilesEverythingMaskedButTheSink) {
  expect_tiles_match_reference<ac_tiled_keys_shape_gfx1250(64), WmmaGfx1250>({1, 40, 4, 0, true, -1, true, 0, 40, false});
}
// Reading a gfx1250 operand as RDNA4's one run of consecutive K values, 16 long (the obvious
// extension of its 16 x 16 x 16 layout), feeds the instruction the wrong dims and keys: caught by
// the layout check and by the tiles against the reference.
struct Gfx1250OneRun {
  using M = ac_layout::WmmaGfx1250;
  static constexpr int kLanes = M::kLanes, kN = M::kN, kK = M::kK, kRegs = M::kRegs, kElems = M::kElems, kRun = M::kRun;
  static int ab_index(int lane) { return M::ab_index(lane); }
  static int ab_k(int lane, int e) { return 16 * (lane / 16) + e; }
  static int d_col(int lane) { return M::d_col(lane); }
  static int d_row(int lane, int r) { return M::d_row(lane, r); }
};
template <> struct DocLayout<Gfx1250OneRun> : DocLayout<WmmaGfx1250> {};
TEST(MfmaModel, Gfx1250ReadAsOneRunIsCaught) {
  ::testing::TestPartResultArray layout, tiles;
  {
    ::testing::ScopedFakeTestPartResultReporter catcher(::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD,
                                                        &layout);
    expect_layouts_match_documentation<Gfx1250OneRun>();
  }
  ASSERT_GT(layout.size(), 0) << "gfx1250 operands read as one run matched the documented layout";
  EXPECT_NE(std::string(layout.GetTestPartResult(0).message()).find("A["), std::string::npos);
  {
    ::testing::ScopedFakeTestPartResultReporter catcher(::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD,
                                                        &tiles);
    expect_tiles_match_reference<ac_tiled_rows_shape_gfx1250(64), Gfx1250OneRun>({37, 101, 4, 0, true, -1, true, -1, -1, false});
  }
  ASSERT_GT(tiles.size(), 0) << "tiles reading gfx1250 operands as one run matched the reference";
  EXPECT_NE(std::string(tiles.GetTestPartResult(0).message()).find("reference"), std::string::npos);
}

}  // namespace

// Every tiled shape's shared memory, as kernel_params.h lays it out: the rows' sinks are written
// while the K and V tiles are live (after the prologue) unless the shape is packed, when they are
// written in the epilogue; either way they must not overlap what is live then, and everything must
// lie inside the bytes the launcher requests. The packed tiles must fit 32 KiB (two blocks in a
// 64 KiB CU: their reason to be).
TEST(MfmaModel, SharedMemoryRegionsOfEveryShapeFit) {
  const std::pair<const char*, ac_tiled_shape> shapes[] = {
      {"nvidia rows d64", ac_tiled_rows_shape(64)}, {"nvidia rows d128", ac_tiled_rows_shape(128)},
      {"nvidia rows d256", ac_tiled_rows_shape(256)}, {"nvidia keys d64", ac_tiled_keys_shape(64)},
      {"nvidia keys d128", ac_tiled_keys_shape(128)}, {"nvidia wgmma d64", ac_tiled_wgmma_shape(64)},
      {"nvidia wgmma d128", ac_tiled_wgmma_shape(128)}, {"nvidia wgmma producer d64", ac_tiled_wgmma_producer_shape(64)},
      {"nvidia wgmma producer d128", ac_tiled_wgmma_producer_shape(128)}, {"amd rows d64", ac_tiled_rows_shape_amd(64)},
      {"amd rows d128", ac_tiled_rows_shape_amd(128)}, {"amd rows d256", ac_tiled_rows_shape_amd(256)},
      {"amd keys d64", ac_tiled_keys_shape_amd(64)}, {"amd keys d128 (packed)", ac_tiled_keys_shape_amd(128)},
      {"gfx950 keys d128", ac_tiled_keys_shape_gfx950(128)}, {"rdna rows d64", ac_tiled_rows_shape_rdna(64)},
      {"rdna keys d128", ac_tiled_keys_shape_rdna(128)}, {"gfx1250 rows d256", ac_tiled_rows_shape_gfx1250(256)},
      {"gfx1250 keys d128", ac_tiled_keys_shape_gfx1250(128)},
  };
  for (const auto& [name, s] : shapes) {
    SCOPED_TRACE(name);
    const int sinks_end = s.sink_offset() + 4 * s.block_m();
    EXPECT_LE(sinks_end, s.smem_bytes());
    EXPECT_LE(s.loop_bytes(), s.smem_bytes());
    EXPECT_LE(s.epilogue_bytes(), s.sink_offset()) << "the sinks overlap the epilogue buffer";
    if (!s.packed()) {
      EXPECT_LE(s.loop_bytes(), s.sink_offset()) << "the sinks overlap the live K and V tiles";
    }
    EXPECT_EQ(s.head_dim % (8 * s.epilogue_passes()), 0) << "an epilogue pass splits a 16-byte chunk";
    if (s.producer_warps > 0) {  // the stages' barriers: past the sinks, 8-byte aligned, inside the request
      EXPECT_GE(s.stage_sync_offset(), sinks_end);
      EXPECT_EQ(s.stage_sync_offset() % 8, 0);
      EXPECT_LE(s.stage_sync_offset() + s.stage_sync_bytes() + (s.warpgroup ? 1024 : 0), s.smem_bytes());
      EXPECT_LE(s.smem_bytes(), 227 * 1024) << "one block of an sm_90 SM at most";
      EXPECT_EQ(s.threads(), s.compute_threads() + 32 * s.producer_warps);
      // The epilogue's buffer apart from the ring, which already holds the next m-tile's keys.
      EXPECT_GE(s.epilogue_offset(), s.loop_bytes()) << "the epilogue overwrites the ring";
      EXPECT_LE(s.epilogue_offset() + s.epilogue_bytes(), s.sink_offset());
    }
  }
  EXPECT_EQ(ac_tiled_wgmma_producer_shape(128).producer_warps, 4);
  EXPECT_EQ(ac_tiled_wgmma_shape(128).producer_warps, 0);
  EXPECT_TRUE(ac_tiled_keys_shape_amd(128).packed());
  EXPECT_LE(ac_tiled_keys_shape_amd(128).smem_bytes(), 32 * 1024);
  EXPECT_GT(ac_tiled_keys_shape_gfx950(128).smem_bytes(), 32 * 1024);  // padded: one block per 64 KiB
}
