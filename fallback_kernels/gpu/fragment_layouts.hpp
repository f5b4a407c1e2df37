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
// The same instructions exist on gfx90a (CDNA2), gfx942 (CDNA3) and gfx950 (CDNA4). gfx950 (the
// CDNA4 ISA guide) also has double-K forms, 8 consecutive K values per lane in four registers:
//   v_mfma_f32_32x32x16_{bf16,f16} (M = N = 32, K = 16):
//     A[i][k]: lane i + 32 (k / 8), element k % 8; B likewise by column; D as 32x32x8's.
// (The calculator's rule for every form above: lane i + M (k / kL), element k % kL, kL the K
// values per lane.)
//
// AMD WMMA on 32-lane waves, v_wmma_f32_16x16x16_{bf16,f16} (M = N = K = 16, fp32 accumulator in
// 8 registers per lane), as the RDNA3 and RDNA4 ISA reference guides ("Wave Matrix Multiply
// Accumulate") give them; lane l, h = l / 16:
//   RDNA3 (gfx11): A[i][k]: lane i and lane i + 16 (both halves hold the same data), element k
//     (16 per lane, 8 registers); B[k][j] likewise by column; D[i][j]: lane j + 16 (i % 2),
//     register i / 2 (the halves hold alternate rows).
//   RDNA4 (gfx12): A[i][k]: lane i + 16 (k / 8), element k % 8 (8 per lane, 4 registers); B
//     likewise; D[i][j]: lane j + 16 (i / 8), register i % 8.
// gfx1250 (32-lane waves, v_wmma_f32_16x16x32_{bf16,f16}: M = N = 16, K = 32): RDNA4's operand
// twice over along K. A[i][k]: lane i + 16 ((k / 8) % 2), element 8 (k / 16) + k % 8 (16 per lane,
// 8 registers, two runs of 8 consecutive K values 16 apart); B likewise by column; D as RDNA4's.
// (As AMD's own gfx1250 attention kernels load the operands: the lane's row, an 8-element chunk at
// K offset 8 (lane / 16) and the next 16 further on; the ISA guide's tables were not at hand. The
// host model checks the tiles against float64 over exactly this map; a wrong map would be caught
// by the self-test on the GPU, which routes the calls away from the tiles.)
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
// Every layout below also says: kElems, the 16-bit A / B elements per lane (consecutive K values,
// one load from LDS); kRun, how many consecutive D rows a lane holds in consecutive registers
// (the widest store of a lane's output); and where the B operand of O^T += V^T P^T comes from
// (p_lane_xor, p_reg: see below).
template <> struct Mfma<32> {
  static constexpr int kLanes = 64, kN = 32, kK = 8, kRegs = 16, kElems = 4, kRun = 4;
  AC_LAYOUT static int ab_index(int lane) { return lane % 32; }          // A's row i, B's column j
  AC_LAYOUT static int ab_k(int lane, int e) { return 4 * (lane / 32) + e; }  // e: 0..3
  AC_LAYOUT static int d_col(int lane) { return lane % 32; }             // D's column j
  AC_LAYOUT static int d_row(int lane, int r) { return 8 * (r / 4) + 4 * (lane / 32) + r % 4; }  // D's row i
};
template <> struct Mfma<16> {
  static constexpr int kLanes = 64, kN = 16, kK = 16, kRegs = 4, kElems = 4, kRun = 4;
  AC_LAYOUT static int ab_index(int lane) { return lane % 16; }
  AC_LAYOUT static int ab_k(int lane, int e) { return 4 * (lane / 16) + e; }
  AC_LAYOUT static int d_col(int lane) { return lane % 16; }
  AC_LAYOUT static int d_row(int lane, int r) { return 4 * (lane / 16) + r; }
};
// gfx950's v_mfma_f32_32x32x16: half the instructions of 32x32x8 over the same D.
struct Mfma32K16 {
  static constexpr int kLanes = 64, kN = 32, kK = 16, kRegs = 16, kElems = 8, kRun = 4;
  AC_LAYOUT static int ab_index(int lane) { return lane % 32; }
  AC_LAYOUT static int ab_k(int lane, int e) { return 8 * (lane / 32) + e; }  // e: 0..7
  AC_LAYOUT static int d_col(int lane) { return lane % 32; }
  AC_LAYOUT static int d_row(int lane, int r) { return 8 * (r / 4) + 4 * (lane / 32) + r % 4; }
  // Which of a step's 16 keys K index k stands for (step_key below): the lane's D registers
  // 8 s .. 8 s + 7 hold rows 16 s + {0-3, 8-11} (lanes 0-31) or {4-7, 12-15} (lanes 32-63).
  AC_LAYOUT static int key_of_k(int k) { return 8 * ((k % 8) / 4) + 4 * (k / 8) + k % 4; }
};

// RDNA3 and RDNA4 WMMA, 16 x 16 x 16, and gfx1250's 16 x 16 x 32 (see the top of this file).
struct WmmaRdna3 {
  static constexpr int kLanes = 32, kN = 16, kK = 16, kRegs = 8, kElems = 16, kRun = 1;
  AC_LAYOUT static int ab_index(int lane) { return lane % 16; }
  AC_LAYOUT static int ab_k(int, int e) { return e; }  // both halves of the wave hold all 16
  AC_LAYOUT static int d_col(int lane) { return lane % 16; }
  AC_LAYOUT static int d_row(int lane, int r) { return 2 * r + lane / 16; }
};
struct WmmaRdna4 {
  static constexpr int kLanes = 32, kN = 16, kK = 16, kRegs = 8, kElems = 8, kRun = 8;
  AC_LAYOUT static int ab_index(int lane) { return lane % 16; }
  AC_LAYOUT static int ab_k(int lane, int e) { return 8 * (lane / 16) + e; }
  AC_LAYOUT static int d_col(int lane) { return lane % 16; }
  AC_LAYOUT static int d_row(int lane, int r) { return 8 * (lane / 16) + r; }
};
struct WmmaGfx1250 {
  static constexpr int kLanes = 32, kN = 16, kK = 32, kRegs = 8, kElems = 16, kRun = 8, kElemRun = 8;
  AC_LAYOUT static int ab_index(int lane) { return lane % 16; }
  AC_LAYOUT static int ab_k(int lane, int e) { return 16 * (e / 8) + 8 * (lane / 16) + e % 8; }
  AC_LAYOUT static int d_col(int lane) { return lane % 16; }
  AC_LAYOUT static int d_row(int lane, int r) { return 8 * (lane / 16) + r; }
};

// How many of a lane's A / B elements are consecutive K values (one vector read from LDS or
// memory): kElemRun where the layout names it (gfx1250: two runs of 8), else all kElems. Run r
// starts kElemRun r elements on, at K offset elem_run_k<L>(r) from the first.
template <class L>
constexpr int elem_run = [] {
  if constexpr (requires { L::kElemRun; }) return L::kElemRun;
  else return L::kElems;
}();
template <class L>
AC_LAYOUT int elem_run_k(int r) { return L::ab_k(0, r * elem_run<L>) - L::ab_k(0, 0); }

// The D registers of an S^T = K Q^T product that form the B operand (P^T, keys x queries) of
// step `s` of O^T += V^T P^T (a wave's keys kK s .. kK s + kK - 1, its score elements numbered
// over its key chunks: chunk c's register r is element kRegs c + r): element e of lane `lane`'s
// operand is score element p_reg(s, e) of lane `lane ^ p_lane_xor(lane, e)`. This is what lets the
// scores feed the next product without leaving the registers: on MFMA, RDNA4 and gfx1250 each
// lane's own elements (MFMA 32 x 32: 4 per step, four steps a chunk; gfx950's 32x32x16 8 per
// step over the keys step_key names; 16 x 16 and RDNA4: one step a chunk; gfx1250: one step two
// chunks); on RDNA3, whose B operand holds all 16 keys in each half of the wave while D holds
// alternate rows in each half, half the elements come from the lane 16 apart.
template <class L>
constexpr bool p_from_partner = L::kElems == 16 && L::kK == 16;  // RDNA3
template <class L>
AC_LAYOUT int p_reg(int s, int e) {
  if constexpr (p_from_partner<L>) return L::kRegs * s + e / 2;
  else return L::kElems * s + e;
}
// The key (of step s's kK keys) that K index k of O^T += V^T P^T stands for: k itself, except
// where the D registers a lane holds are not the K values its B operand holds (gfx950's
// 32x32x16: L::key_of_k). V^T's A operand reads the same keys, so the product is unchanged.
template <class L>
AC_LAYOUT int step_key(int k) {
  if constexpr (requires { L::key_of_k(k); }) return L::key_of_k(k);
  else return k;
}
template <class L>
AC_LAYOUT int p_lane_xor(int lane, int e) {
  if constexpr (p_from_partner<L>) return e % 2 == lane / 16 ? 0 : 16;
  else return 0;
}

// The AMD tiles' index maps (tiles_amd.hpp), over a wave's matrix layout L (Mfma<N>, WmmaRdna3,
// WmmaRdna4, WmmaGfx1250): where each lane's operands come from in LDS and registers, and which key and dim
// each of its accumulator elements is. Each lane holds one query row of S^T and O^T (its D
// column). kWarpKeys: keys of a tile each wave scores; kPitch: 16-bit elements per LDS row of K
// (and of V when kVPitch is 0); kVPitch > 0: V is held transposed, kVPitch keys per dim row;
// kSwizzle > 0: K and V rows unpadded, their 16-byte chunks XOR-swizzled by key (kSwizzle: the
// chunks of a row), and each wave loading the keys it scores (kernel_params.h, packed).
template <class Layout, int kWarpKeys, int kPitch, int kVPitch = 0, int kSwizzle = 0>
struct AmdTileMaps {
  using L = Layout;
  static constexpr int kN = L::kN;
  // The query row (of the block's tile) lane `lane` of wave row `warp_m` holds.
  AC_LAYOUT static int row(int warp_m, int lane) { return warp_m * kN + L::d_col(lane); }
  // Q^T as S^T's B operand: element e of step ks is dim ks kK + ab_k.
  AC_LAYOUT static int q_dim(int ks, int lane, int e) { return ks * L::kK + L::ab_k(lane, e); }
  // K as S^T's A operand: the LDS offset of element 0 of key chunk ch, step ks (its elements
  // consecutive in runs of elem_run, elem_run_k apart).
  AC_LAYOUT static int k_offset(int warp_n, int ch, int ks, int lane) {
    return k_at(warp_n * kWarpKeys + ch * kN + L::ab_index(lane), ks * L::kK + L::ab_k(lane, 0));
  }
  // Where dim `dim` of a K or V row sits within the row: in place, or (swizzled) its 16-byte chunk
  // XORed with the key, so that the kN lanes reading one dim of kN keys meet kN different chunks
  // (32 or 64 banks) instead of one bank. An operand's run (4 or 8 dims from a multiple of 4 or 8)
  // stays inside one chunk, one vector read.
  AC_LAYOUT static int lds_dim(int key, int dim) {
    return kSwizzle ? ((dim / 8) ^ (key % kSwizzle)) * 8 + dim % 8 : dim;
  }
  AC_LAYOUT static int k_at(int key, int dim) { return key * kPitch + lds_dim(key, dim); }
  // Swizzled tiles: the wave loads its own keys, chunk x = lane + kLanes i of them (i: the lane's
  // loads of the tile): key wave kWarpKeys + x / kSwizzle, chunk x % kSwizzle.
  AC_LAYOUT static int wave_load_key(int wave, int lane, int i) { return wave * kWarpKeys + (lane + L::kLanes * i) / kSwizzle; }
  AC_LAYOUT static int wave_load_chunk(int lane, int i) { return (lane + L::kLanes * i) % kSwizzle; }
  // Score element e (register e % kRegs of chunk e / kRegs): its key in the tile.
  AC_LAYOUT static int score_key(int warp_n, int lane, int e) {
    return warp_n * kWarpKeys + (e / L::kRegs) * kN + L::d_row(lane, e % L::kRegs);
  }
  // V^T as O^T's A operand: the LDS offset of element e of dim block b, step st (the wave's keys
  // kK st ..; kElems keys of one dim: rows apart, or consecutive runs when V is transposed).
  AC_LAYOUT static int v_offset(int warp_n, int b, int st, int lane, int e) {
    return v_at(warp_n * kWarpKeys + st * L::kK + step_key<L>(L::ab_k(lane, e)), b * kN + L::ab_index(lane));
  }
  // Where key `key`'s dim `dim` of V is in LDS. Transposed, an operand's kElems keys (consecutive
  // in ab_k) are consecutive elements.
  AC_LAYOUT static int v_at(int key, int dim) { return kVPitch ? dim * kVPitch + key : k_at(key, dim); }
  static constexpr bool kVTransposed = kVPitch > 0;
  // Output element e (register e % kRegs of dim block e / kRegs): its dim. Registers kRun g ..
  // kRun g + kRun - 1 are consecutive dims (MFMA, RDNA4: stored 4 at a time, one 8-byte (16-bit)
  // or 16-byte (fp32) write; RDNA3's rows alternate between the halves: one at a time).
  AC_LAYOUT static int out_dim(int lane, int e) { return (e / L::kRegs) * kN + L::d_row(lane, e % L::kRegs); }
  // The lanes sharing a row differ in the lane bits from kN up: XOR masks kN, 2 kN, ... below
  // L::kLanes.
  AC_LAYOUT static int first_row_mask() { return kN; }
};

}  // namespace ac_layout
