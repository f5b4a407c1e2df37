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

}  // namespace ac_layout
