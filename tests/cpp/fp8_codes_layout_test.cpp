// A host model of the NVIDIA "keys" tiles over an fp8 cache whose codes stay 8-bit in shared
// memory (fragment_layouts.hpp, Mma16x8Codes8; tiles_nvidia.hpp, scores_codes and
// accumulate_codes), since the layout is where such a kernel goes wrong without a word.
//
// What is modelled, from NVIDIA's PTX ISA rather than from the kernels: mma.m16n8k16's operand
// fragments for 16-bit A and B ("Matrix Fragments for mma.m16n8k16": register r of lane l, with
// group g = l / 4 and c = l % 4, holds A rows g (r = 0, 2) or g + 8 (r = 1, 3) at K 2c, 2c + 1
// (r < 2) or 2c + 8, 2c + 9; B column g at K 2c, 2c + 1 (b0) or 2c + 8, 2c + 9 (b1); the
// accumulator as Mma16x8), prmt.b32's byte selection, and cvt.rn.f16x2.e4m3x2's order (the low
// code to the low half); shared memory's 32 banks of 4 bytes, a 64-bit access served per
// half-warp and a 128-bit one per quarter-warp.
// What comes from the kernels' source: every offset a lane reads or a copy writes, the dim
// orders of both products, the byte permutes' selectors.
// The model reads codes as their integer values (where a product lands is what is tested; the
// conversion itself is fp8_convert_test.cpp's) and compares both products with plain sums.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "fragment_layouts.hpp"
#include "kernel_params.h"

namespace {

constexpr int kLanes = 32, kBlockN = 64, kWarpsN = 4, kWarpKeys = kBlockN / kWarpsN;

// One ring slot of codes as the copies leave it: row r's 16-byte chunk q at chunk_at(r, q).
template <int D> std::vector<uint8_t> slot_of(const std::vector<std::array<uint8_t, D>>& rows) {
  using C8 = ac_layout::Mma16x8Codes8<D>;
  std::vector<uint8_t> slot(kBlockN * D, 0);
  std::set<int> written;
  for (int r = 0; r < kBlockN; ++r)
    for (int q = 0; q < D / 16; ++q) {
      const int at = C8::chunk_at(r, q);
      EXPECT_TRUE(written.insert(at).second) << "two chunks copied to byte " << at;
      for (int b = 0; b < 16; ++b) slot[at + b] = rows[r][16 * q + b];
    }
  return slot;
}

uint32_t word_at(const std::vector<uint8_t>& slot, int at) {
  return slot[at] | slot[at + 1] << 8 | slot[at + 2] << 16 | static_cast<uint32_t>(slot[at + 3]) << 24;
}

// prmt.b32 d, a, b, sel (default mode): byte i of d is byte (sel >> 4i) & 7 of {b : a}.
uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  const uint64_t both = a | static_cast<uint64_t>(b) << 32;
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) d |= static_cast<uint32_t>((both >> (8 * ((sel >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return d;
}

// One mma.m16n8k16 on fragments, the 16-bit values as integers: lane l's a[4] (pairs of values
// in 16-bit halves), b0, b1, and c[4] accumulated.
void mma(std::array<std::array<int64_t, 4>, kLanes>& c, const std::array<std::array<uint32_t, 4>, kLanes>& a,
         const std::array<std::array<uint32_t, 2>, kLanes>& b) {
  int64_t A[16][16], B[16][8];
  for (int l = 0; l < kLanes; ++l) {
    const int g = l / 4, t = l % 4;
    for (int r = 0; r < 4; ++r)
      for (int e = 0; e < 2; ++e) A[g + 8 * (r % 2)][2 * t + 8 * (r / 2) + e] = (a[l][r] >> (16 * e)) & 0xffff;
    for (int r = 0; r < 2; ++r)
      for (int e = 0; e < 2; ++e) B[2 * t + 8 * r + e][g] = (b[l][r] >> (16 * e)) & 0xffff;
  }
  for (int l = 0; l < kLanes; ++l)
    for (int i = 0; i < 4; ++i) {
      const int row = ac_layout::Mma16x8::c_row(l, i), col = ac_layout::Mma16x8::c_col(l, i);
      for (int k = 0; k < 16; ++k) c[l][i] += A[row][k] * B[k][col];
    }
}

// A lane's converted pair from two codes (the low 16 bits): the low code to the low half.
uint32_t pair_of(uint32_t two) { return (two & 0xff) | ((two >> 8) & 0xff) << 16; }

template <int D> void check_products() {
  using C8 = ac_layout::Mma16x8Codes8<D>;
  std::mt19937 rng(D);
  std::uniform_int_distribution<int> code(0, 255), small(0, 63);
  std::vector<std::array<uint8_t, D>> k_rows(kBlockN), v_rows(kBlockN);
  for (auto& r : k_rows)
    for (auto& x : r) x = static_cast<uint8_t>(code(rng));
  for (auto& r : v_rows)
    for (auto& x : r) x = static_cast<uint8_t>(code(rng));
  std::array<std::array<int, D>, 16> q{};
  for (auto& r : q)
    for (auto& x : r) x = small(rng);
  const std::vector<uint8_t> ks = slot_of<D>(k_rows), vs = slot_of<D>(v_rows);

  // qk_dim and pv_dim are orders of all D dims.
  std::set<int> qk, pv;
  for (int k = 0; k < D; ++k) qk.insert(C8::qk_dim(k));
  for (int dt = 0; dt < D / 8; ++dt)
    for (int n = 0; n < 8; ++n) pv.insert(C8::pv_dim(dt, n));
  EXPECT_EQ(qk.size(), static_cast<size_t>(D));
  EXPECT_EQ(*qk.rbegin(), D - 1);
  EXPECT_EQ(pv.size(), static_cast<size_t>(D));
  EXPECT_EQ(*pv.rbegin(), D - 1);

  // Q's A operands as q_landed builds them: row g (+ 8), elements 32 m + 8 c .. + 7.
  std::array<std::array<std::array<uint32_t, 4>, kLanes>, D / 16> a_q{};
  for (int l = 0; l < kLanes; ++l)
    for (int m = 0; m < D / 32; ++m)
      for (int half = 0; half < 2; ++half) {
        const int row = l / 4 + 8 * half, e0 = 32 * m + 8 * (l % 4);
        auto w = [&](int i) { return static_cast<uint32_t>(q[row][e0 + 2 * i]) | static_cast<uint32_t>(q[row][e0 + 2 * i + 1]) << 16; };
        a_q[2 * m][l][half] = w(0), a_q[2 * m][l][2 + half] = w(1);
        a_q[2 * m + 1][l][half] = w(2), a_q[2 * m + 1][l][2 + half] = w(3);
      }

  for (int warp_n = 0; warp_n < kWarpsN; ++warp_n) {
    const int key0 = warp_n * kWarpKeys;
    // S = Q K^T (scores_codes), every 8-key tile of the warp.
    for (int nt = 0; nt < kWarpKeys / 8; ++nt) {
      std::array<std::array<int64_t, 4>, kLanes> s{};
      for (int m = 0; m < D / 32; ++m) {
        std::array<std::array<uint32_t, 2>, kLanes> b0{}, b1{};
        for (int l = 0; l < kLanes; ++l) {
          const int at = C8::k_bytes(key0 + nt * 8 + l / 4, m, l);
          const uint32_t x = word_at(ks, at), y = word_at(ks, at + 4);
          b0[l] = {pair_of(x), pair_of(x >> 16)};
          b1[l] = {pair_of(y), pair_of(y >> 16)};
        }
        mma(s, a_q[2 * m], b0);
        mma(s, a_q[2 * m + 1], b1);
      }
      for (int l = 0; l < kLanes; ++l)
        for (int i = 0; i < 4; ++i) {
          const int row = ac_layout::Mma16x8::c_row(l, i), key = key0 + nt * 8 + ac_layout::Mma16x8::c_col(l, i);
          int64_t want = 0;
          for (int d = 0; d < D; ++d) want += static_cast<int64_t>(q[row][d]) * k_rows[key][d];
          ASSERT_EQ(s[l][i], want) << "S row " << row << " key " << key;
        }
    }
    // O += P V (accumulate_codes) for the warp's 16 keys, P random.
    std::array<std::array<int, 16>, 16> p{};
    for (auto& r : p)
      for (auto& x : r) x = small(rng);
    std::array<std::array<uint32_t, 4>, kLanes> pa{};
    for (int l = 0; l < kLanes; ++l)
      for (int r = 0; r < 4; ++r) {
        const int row = l / 4 + 8 * (r % 2), k = 2 * (l % 4) + 8 * (r / 2);
        pa[l][r] = static_cast<uint32_t>(p[row][k]) | static_cast<uint32_t>(p[row][k + 1]) << 16;
      }
    for (int h = 0; h < D / 32; ++h) {
      std::array<std::array<std::array<uint32_t, 2>, kLanes>, 4> b{};  // [tile 4h + j][lane]
      for (int l = 0; l < kLanes; ++l)
        for (int half = 0; half < 2; ++half) {
          const int base = key0 + half * 8;
          const uint32_t w0 = word_at(vs, C8::v_bytes(base + C8::v_key(l, 0), h, l));
          const uint32_t w1 = word_at(vs, C8::v_bytes(base + C8::v_key(l, 1), h, l));
          for (int j = 0; j < 2; ++j) {
            const uint32_t pairs = prmt(w0, w1, static_cast<uint32_t>(C8::v_select(l, 2 * j)));
            b[2 * j][l][half] = pair_of(pairs);
            b[2 * j + 1][l][half] = pair_of(pairs >> 16);
          }
        }
      for (int j = 0; j < 4; ++j) {
        std::array<std::array<int64_t, 4>, kLanes> o{};
        mma(o, pa, b[j]);
        const int dt = 4 * h + j;
        for (int l = 0; l < kLanes; ++l)
          for (int i = 0; i < 4; ++i) {
            const int row = ac_layout::Mma16x8::c_row(l, i), dim = C8::pv_dim(dt, ac_layout::Mma16x8::c_col(l, i));
            int64_t want = 0;
            for (int k = 0; k < 16; ++k) want += static_cast<int64_t>(p[row][k]) * v_rows[key0 + k][dim];
            ASSERT_EQ(o[l][i], want) << "O row " << row << " dim " << dim;
          }
      }
    }
  }
}

TEST(Fp8CodesLayout, QKAndPVAtHeadDim64) { check_products<64>(); }
TEST(Fp8CodesLayout, QKAndPVAtHeadDim128) { check_products<128>(); }

// The most distinct 4-byte words any bank serves in one access of `lanes` lanes (1: no conflict).
int wavefronts(const std::vector<std::pair<int, int>>& accesses) {  // (byte offset, bytes) per lane
  std::array<std::set<int>, 32> words;
  for (auto [at, bytes] : accesses)
    for (int w = at / 4; w < (at + bytes) / 4; ++w) words[w % 32].insert(w);
  size_t most = 0;
  for (const auto& s : words) most = std::max(most, s.size());
  return static_cast<int>(most);
}

template <int D> void check_banks() {
  using C8 = ac_layout::Mma16x8Codes8<D>;
  for (int warp_n = 0; warp_n < kWarpsN; ++warp_n) {
    const int key0 = warp_n * kWarpKeys;
    for (int nt = 0; nt < kWarpKeys / 8; ++nt)
      for (int m = 0; m < D / 32; ++m)
        for (int half = 0; half < 2; ++half) {  // 8-byte reads: one half-warp at a time
          std::vector<std::pair<int, int>> acc;
          for (int l = 16 * half; l < 16 * half + 16; ++l) acc.push_back({C8::k_bytes(key0 + nt * 8 + l / 4, m, l), 8});
          EXPECT_EQ(wavefronts(acc), 1) << "K read, tile " << nt << " step " << m << " half-warp " << half;
        }
    for (int half = 0; half < 2; ++half)
      for (int h = 0; h < D / 32; ++h)
        for (int j = 0; j < 2; ++j) {  // 4-byte reads: the whole warp
          std::vector<std::pair<int, int>> acc;
          for (int l = 0; l < kLanes; ++l) acc.push_back({C8::v_bytes(key0 + half * 8 + C8::v_key(l, j), h, l), 4});
          EXPECT_EQ(wavefronts(acc), 1) << "V read, keys +" << 8 * half << " tiles " << 4 * h << " read " << j;
        }
  }
  // The copies: 16 bytes a lane, a quarter-warp at a time, thread x taking row x / (D / 16) and
  // chunk x % (D / 16) (tiles_nvidia.hpp, load_keys).
  for (int x0 = 0; x0 < kBlockN * D / 16; x0 += 8) {
    std::vector<std::pair<int, int>> acc;
    for (int x = x0; x < x0 + 8; ++x) acc.push_back({C8::chunk_at(x / (D / 16), x % (D / 16)), 16});
    EXPECT_EQ(wavefronts(acc), 1) << "copies from thread " << x0;
  }
}

TEST(Fp8CodesLayout, NoBankConflictsAtHeadDim64) { check_banks<64>(); }
TEST(Fp8CodesLayout, NoBankConflictsAtHeadDim128) { check_banks<128>(); }

// The fp8 "keys" shapes keep 8-bit rings of 6 stages in the shared memory the 16-bit ones took
// with 3, at the same blocks per SM; every other shape is its 16-bit self.
TEST(Fp8CodesLayout, KeysShapeOverFp8TakesTheCodesRing) {
  for (int d : {64, 128}) {
    const ac_tiled_shape s = ac_tiled_keys_shape(d), k8 = ac_kv8_shape(s);
    EXPECT_EQ(k8.codes8, 1);
    EXPECT_EQ(k8.stages, 2 * s.stages);
    EXPECT_EQ(k8.blocks_per_sm, s.blocks_per_sm);
    EXPECT_LE(k8.smem_bytes(), s.smem_bytes() + k8.stages * k8.block_n);  // the validity bytes of the extra stages
    EXPECT_LE(k8.blocks_per_sm * (k8.smem_bytes() + 1024), 228 * 1024) << "head dim " << d;
    for (const ac_tiled_shape& other : {ac_tiled_rows_shape(d), ac_tiled_wgmma_shape(d), ac_tiled_keys_shape_amd(d),
                                         ac_tiled_keys_shape_rdna(d), ac_tiled_keys_shape_gfx1250(d)})
      EXPECT_EQ(ac_kv8_shape(other).codes8, 0);
  }
}

}  // namespace
