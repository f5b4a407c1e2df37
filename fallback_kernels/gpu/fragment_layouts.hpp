// Which lane holds which element of a matrix-instruction operand, for each arch the tiled
// kernels run on: the one place the fragment layouts are written down. The kernels compute
// their shared-memory addresses, masks and stores from these functions, and so does the host
// model of the AMD layer (tests/cpp/mfma_model_test.cpp), compiled from this same file for the
// CPU: plain constexpr integer functions, no device code.
//
// NVIDIA mma.sync m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16"): accumulator element
// c (0..3) of a 16 x 8 tile is held by lane `lane` at row lane / 4 + 8 (c / 2), column
// 2 (lane % 4) + c % 2.
//
// AMD MFMA on 64-lane waves, the non-blocked forms (cbsz = abid = blgp = 0), as the CDNA3
// ISA guide ("Matrix fused-multiply-add instructions", section 7.1) and AMD's matrix
// instruction calculator give them; the 16-bit types hold 4 consecutive K values per lane in
// two registers, 32-bit accumulators one value per register:
//   v_mfma_f32_32x32x8{bf16_1k,f16} (M = N = 32, K = 8):
//     A[i][k] (32 x 8):  lane i + 32 (k / 4), element k % 4
//     B[k][j] (8 x 32):  lane j + 32 (k / 4), element k % 4
//     D[i][j] (32 x 32): lane j + 32 ((i / 4) % 2), register 4 (i / 8) + i % 4   (16 registers)
//   v_mfma_f32_16x16x16{bf16_1k,f16} (M = N = 16, K = 16):
//     A[i][k] (16 x 16): lane i + 16 (k / 4), element k % 4
//     B[k][j] (16 x 16): lane j + 16 (k / 4), element k % 4
//     D[i][j] (16 x 16): lane j + 16 (i / 4), register i % 4                     (4 registers)
// The same instructions exist on gfx90a (CDNA2), gfx942 (CDNA3) and gfx950 (CDNA4).
#pragma once

#if defined(__CUDACC__)
#define AC_LAYOUT __host__ __device__ constexpr inline
#elif defined(__HIP__)
#define AC_LAYOUT __attribute__((host)) __attribute__((device)) constexpr inline
#else
#define AC_LAYOUT constexpr inline
#endif

namespace ac_layout {

// mma.sync m16n8k16: the accumulator (and, for the next product, the A operand it becomes).
struct Mma16x8 {
  static constexpr int kLanes = 32;
  AC_LAYOUT static int c_row(int lane, int c) { return lane / 4 + 8 * (c / 2); }
  AC_LAYOUT static int c_col(int lane, int c) { return 2 * (lane % 4) + c % 2; }
};

// MFMA with M = N = kN: the lanes holding one A row (or B column) differ in the lane bits from
// kN up; each holds 4 consecutive K values of it.
template <int kN> struct Mfma;
template <> struct Mfma<32> {
  static constexpr int kLanes = 64, kN = 32, kK = 8, kRegs = 16;
  AC_LAYOUT static int ab_index(int lane) { return lane % 32; }          // A's row i, B's column j
  AC_LAYOUT static int ab_k(int lane, int e) { return 4 * (lane / 32) + e; }  // e: 0..3
  AC_LAYOUT static int d_col(int lane) { return lane % 32; }             // D's column j
  AC_LAYOUT static int d_row(int lane, int r) { return 8 * (r / 4) + 4 * (lane / 32) + r % 4; }  // D's row i
};
template <> struct Mfma<16> {
  static constexpr int kLanes = 64, kN = 16, kK = 16, kRegs = 4;
  AC_LAYOUT static int ab_index(int lane) { return lane % 16; }
  AC_LAYOUT static int ab_k(int lane, int e) { return 4 * (lane / 16) + e; }
  AC_LAYOUT static int d_col(int lane) { return lane % 16; }
  AC_LAYOUT static int d_row(int lane, int r) { return 4 * (lane / 16) + r; }
};

// The D registers of an S^T = K Q^T product that form the B operand (P^T, keys x queries) of
// step `s` of O^T += V^T P^T: register base + e holds key kK s + ab_k(lane, e). This is what
// lets the scores feed the next product without leaving the registers.
// 32 x 32: step s covers keys 8 s .. 8 s + 7, held in registers 4 s .. 4 s + 3; 16 x 16: one step
// of 16 keys, registers 0 .. 3.
template <int kN>
AC_LAYOUT int p_register(int s, int e) { return 4 * s + e; }

// The AMD tiles' index maps (tiles_amd.hpp), over a wave's MFMA layout L = Mfma<kN>: where
// each lane's operands come from in LDS and registers, and which key and dim each of its
// accumulator elements is. Each lane holds one query row of S^T and O^T (its D column).
// kWarpKeys: keys of a tile each wave scores; kPitch: 16-bit elements per LDS row of K and V.
template <int kN, int kWarpKeys, int kPitch>
struct AmdTileMaps {
  using L = Mfma<kN>;
  // The query row (of the block's tile) lane `lane` of wave row `warp_m` holds.
  AC_LAYOUT static int row(int warp_m, int lane) { return warp_m * kN + L::d_col(lane); }
  // Q^T as S^T's B operand: element e of step ks is dim ks kK + ab_k.
  AC_LAYOUT static int q_dim(int ks, int lane, int e) { return ks * L::kK + L::ab_k(lane, e); }
  // K as S^T's A operand: the LDS offset of elements 0..3 (consecutive) of key chunk ch, step ks.
  AC_LAYOUT static int k_offset(int warp_n, int ch, int ks, int lane) {
    return (warp_n * kWarpKeys + ch * kN + L::ab_index(lane)) * kPitch + ks * L::kK + L::ab_k(lane, 0);
  }
  // Score element e (register e % kRegs of chunk e / kRegs): its key in the tile.
  AC_LAYOUT static int score_key(int warp_n, int lane, int e) {
    return warp_n * kWarpKeys + (e / L::kRegs) * kN + L::d_row(lane, e % L::kRegs);
  }
  // V^T as O^T's A operand: the LDS offset of element e of dim block b, key chunk ch, step st
  // (4 keys of one dim: four rows apart).
  AC_LAYOUT static int v_offset(int warp_n, int b, int ch, int st, int lane, int e) {
    return (warp_n * kWarpKeys + ch * kN + st * L::kK + L::ab_k(lane, e)) * kPitch + b * kN + L::ab_index(lane);
  }
  // Output element e (register e % kRegs of dim block e / kRegs): its dim. Registers 4 g .. 4 g + 3
  // are dims out_dim(4 g) .. + 3, so they store as one 8-byte (16-bit) or 16-byte (fp32) write.
  AC_LAYOUT static int out_dim(int lane, int e) { return (e / L::kRegs) * kN + L::d_row(lane, e % L::kRegs); }
  // The lanes sharing a row differ in the lane bits from kN up: XOR masks kN, 2 kN, ... below 64.
  AC_LAYOUT static int first_row_mask() { return kN; }
};

}  // namespace ac_layout
