// The one argument of the attention kernels, shared by the device sources and the host launcher
// (same layout under clang, nvcc and g++: fixed-width fields, 8-byte pointers, no padding gaps
// that differ). Strides are in elements.
#pragma once

#include <stdint.h>

#define AC_MAX_GROUP 16     // query heads per KV head handled by one block
#define AC_MAX_HEAD_DIM 256
#define AC_MAX_GROUP_ELEMS 2048  // generic kernel: query heads per KV head x head dim (q/k or v, the larger)
#define AC_THREADS 128      // threads per block (two AMD waves, four NVIDIA warps)
#define AC_KEY_TILE 64      // keys scored per step
#define AC_MAX_SPLITS 64    // split-KV parts per query at most (the merge kernel's shared weights)
#define AC_DECODE_THREADS 256   // decode kernel: threads per block
#define AC_DECODE_MAX_GROUP 8   // decode kernel: query heads per KV head it takes
#define AC_DECODE_UNROLL 4      // decode kernel: keys per thread group per step

// Element types, as the host names them to the kernels (the sinks are read in the caller's
// dtype: GPT-OSS keeps them in bf16) and as the kernel table lists what each kernel takes.
#define AC_DTYPE_F32 0
#define AC_DTYPE_F16 1
#define AC_DTYPE_BF16 2
// fp8 e4m3 in storage (q, the KV cache, out; never computed in): OCP's (NVIDIA, gfx950) and the
// FNUZ variant of gfx942 (fp8_convert.hpp).
#define AC_DTYPE_E4M3FN 3
#define AC_DTYPE_E4M3FNUZ 4
// The kernel families' types beyond the three above (whose kernels take q, k, v and out in that
// one type): an fp8 KV cache read into f16 or bf16 tiles, computed on with q in that type or
// fp8 (its values converted exactly), out in f16, bf16 or q's fp8. The format of the fp8 is the
// call's (ac_attention_params::kv_type), not the kernel's.
#define AC_KTYPE_F16_KV8 5
#define AC_KTYPE_BF16_KV8 6
#define AC_KTYPES 7

// Tiled (matrix-instruction) kernels: three shapes per head dim. "rows" puts the warps on query
// rows (prefill, extend); "keys" gives all warps the same 16 rows and splits each key tile
// between them (decode: one token's query heads of one KV group fill the rows); "wgmma" is
// "rows" on Hopper's warpgroup MMA (sm_90a: two warpgroups of 64 rows, operands read from
// shared memory by the tensor cores). One struct for the device templates and the host
// launcher (grid, threads, dynamic shared memory).
#ifdef __cplusplus
// n / d for 0 <= n < 2^31 as (umulhi(n, mul) + n) >> shift, d >= 1 (round-up multiplier with
// shift ceil(log2 d); Granlund and Montgomery, "Division by invariant integers using
// multiplication", 1994): mul < 2^32, and umulhi(n, mul) + n stays below 2^32 for such n.
struct ac_divisor {
  uint32_t mul;
  int32_t shift;
};
constexpr ac_divisor ac_divisor_of(int32_t d) {
  const uint64_t div = d > 1 ? static_cast<uint64_t>(d) : 1u;
  int32_t l = 0;
  while ((uint64_t{1} << l) < div) ++l;
  return {static_cast<uint32_t>((uint64_t{1} << 32) * ((uint64_t{1} << l) - div) / div + 1), l};
}

struct ac_tiled_shape {
  int warps_m, m_tiles, warps_n, block_n, stages, head_dim;
  int blocks_per_sm;  // resident blocks the registers must leave room for (launch bounds)
  int warpgroup = 0;  // 1: warpgroup MMA (warps_m a multiple of 4, m_tiles 1, warps_n 1)
  int lanes = 32;     // 64: CDNA waves (MFMA); 32: NVIDIA warps, RDNA waves (WMMA)
  int tile_rows = 16; // query rows of one m-tile: 16 (mma.sync, MFMA 16x16x16, WMMA) or 32 (MFMA 32x32x8)
  int amd = 0;        // 1: the MFMA tiles (K and V rows padded in LDS, Q in registers); 2: the WMMA tiles (V^T in LDS);
                      // 3: the MFMA tiles packed (below)
  // Warps that only load (the warpgroup shape on sm_90a: a producer warpgroup copies Q, K and V
  // into the ring and signals each stage through shared-memory barriers, while the computing
  // warps issue the next tile's scores before the current softmax); 0: every warp loads its share.
  int producer_warps = 0;
  constexpr int threads() const { return (warps_m * warps_n + producer_warps) * lanes; }
  constexpr int compute_threads() const { return warps_m * warps_n * lanes; }
  // AMD: the waves per SIMD the registers must leave room for (four SIMDs per CU or WGP).
  constexpr int waves_per_simd() const { return blocks_per_sm * threads() / (4 * lanes); }
  constexpr int block_m() const { return warps_m * m_tiles * tile_rows; }
  // The MFMA "keys" tiles at head dim 128 and up keep K and V in LDS without padding: their two
  // 64-key tiles then take exactly 32 KiB, so that two blocks (two waves per SIMD) share gfx90a's
  // and gfx942's 64 KiB. Their rows' 16-byte chunks are XOR-swizzled by key instead (the lanes
  // reading one dim of 16 keys still meet 16 different chunks: fragment_layouts.hpp, lds_dim);
  // each wave loads the 16 keys it scores, so that a key's validity is a bit of a wave ballot
  // rather than an LDS byte; and the epilogue combines the waves' outputs in two halves of the
  // dims, its buffer and the rows' sinks in the memory the tiles used.
  constexpr bool packed() const { return amd == 3; }
  constexpr int lds_swizzle() const { return packed() ? head_dim / 8 : 0; }  // chunks a row's XOR spans; 0: none
  constexpr int epilogue_passes() const { return packed() ? 2 : 1; }
  // Floats per row of the epilogue buffer (one pass's dims, padded by 4).
  constexpr int out_stride() const { return head_dim / epilogue_passes() + 4; }
  // 16-bit elements per K or V row in shared memory: NVIDIA's rows are swizzled in place; AMD's
  // are padded by 16 bytes, so that the lanes reading one element of 32 rows use 32 banks (the
  // packed tiles: swizzled, above).
  constexpr int row_pitch() const { return amd && !packed() ? head_dim + 8 : head_dim; }
  // The WMMA tiles keep V transposed in LDS (a row of block_n keys per dim, padded by 16 bytes), so
  // that the keys of one dim an A operand holds are one vector read, not kElems 16-bit reads: with
  // 32-lane waves those reads, hoisted, were what spilled. 0: V rows as K's.
  constexpr int v_pitch() const { return amd == 2 ? block_n + 8 : 0; }
  constexpr int v_elems() const { return amd == 2 ? head_dim * v_pitch() : block_n * row_pitch(); }
  // Q tile (NVIDIA: read from shared memory as fragments; AMD: loaded into registers once), K
  // and V stages (16-bit), one validity byte per key per stage; reused at the end for the fp32
  // partial outputs and (max, sum) of every warp (AMD row tiles store from registers: none).
  // Past both: each row's sink (fp32), read from memory at the block's start so that the
  // epilogue does not wait on it.
  // The packed tiles' sinks follow the epilogue buffer inside the tiles' memory: they are written
  // there once the loop is over (tiled_attention.hpp).
  constexpr int loop_bytes() const {
    return (amd ? 0 : block_m() * head_dim * 2) + stages * (block_n * row_pitch() + v_elems()) * 2 +
           (packed() ? 0 : stages * block_n);
  }
  constexpr int epilogue_bytes() const { return amd && warps_n == 1 ? 0 : warps_n * block_m() * (out_stride() + 2) * 4; }
  // With a producer the epilogue has its own buffer past the tiles': the producer is already
  // filling them with the block's next m-tile (tiles_nvidia.hpp, produce).
  constexpr int epilogue_offset() const { return producer_warps ? (loop_bytes() + 15) / 16 * 16 : 0; }
  constexpr int sink_offset() const {
    const int loop = packed() ? 0 : loop_bytes(), epilogue = epilogue_bytes();
    if (producer_warps) return (epilogue_offset() + epilogue + 15) / 16 * 16;
    return ((loop > epilogue ? loop : epilogue) + 15) / 16 * 16;
  }
  // The row's token by a plain division instead of the launcher's multiply-shift (fast_divide.hpp):
  // the head-dim-64 warpgroup kernels sit at their 128-register cap, where the multiply's register
  // pair made them spill 16 bytes and stall on it (H200: d64 causal prefill 1,748 us against
  // 1,683 us with the division); every other kernel keeps the multiply-shift (its setup is what a
  // short window's block spends its time on).
  constexpr bool plain_row_divide() const { return warpgroup && head_dim == 64; }
  // With a producer: past the sinks, each stage's "landed" and "free" barriers (8 bytes each), the
  // barrier that frees Q's tile (8), and one byte per producer warp and stage saying whether the
  // stage's tile met a block-table entry outside the cache.
  constexpr int stage_sync_offset() const { return sink_offset() + block_m() * 4; }
  constexpr int stage_sync_bytes() const { return producer_warps ? stages * (16 + 4) + 8 : 0; }
  // How many tiles the producer's announcements may trail its newest copies over an fp8 cache,
  // whose codes each producer thread converts once they landed (tiles_nvidia.hpp, produce; over a
  // 16-bit cache the copies announce themselves as they land: no lag): the computing warps free a
  // stage only once the next tile has landed (its scores are issued beside the stage's P V), so
  // tile a - stages + 1 must be announced before the producer waits for tile a - stages's stage
  // to be free (producer_ring_test.cpp plays the protocol out).
  constexpr int announce_lag() const { return stages - 2; }
  constexpr int smem_bytes() const {
    // Warpgroup operands need 1024-byte-aligned tiles: room to align the start.
    const int bytes = stage_sync_offset() + stage_sync_bytes() + (warpgroup ? 1024 : 0);
    return packed() && loop_bytes() > bytes ? loop_bytes() : bytes;
  }
  // The split merge folded into the last split block of each m-tile (tiled_attention.hpp,
  // fold_splits): each row's split weights and log-sum-exp, each thread's partial sum (16
  // bytes), and the block's "last to arrive" flag, in the tiles' shared memory once the
  // epilogue is done. The "keys" shapes (decode, the calls that split) fold; the row shapes,
  // whose 64-128 rows of weights would not fit every arch's tiles, leave it to the merge kernel,
  // and so do the WMMA tiles (RDNA3, RDNA4, gfx1250), whose 32-lane waves have no registers to
  // spare for it at head dim 128 (RDNA4's "keys" kernels spilled 16-20 VGPRs with it).
  constexpr int fold_bytes() const { return block_m() * (AC_MAX_SPLITS + 1) * 4 + threads() * 16 + 16; }
  constexpr bool folds_split_merge() const { return warps_n > 1 && amd != 2 && fold_bytes() <= smem_bytes(); }
};
// Head dim 256 (the row shape only): one 16-row m-tile per warp and 32-key tiles, so that the
// output fragments (128 floats a thread) fit the registers and two blocks the shared memory.
constexpr ac_tiled_shape ac_tiled_rows_shape(int head_dim) {
  return head_dim == 64    ? ac_tiled_shape{4, 2, 1, 64, 3, 64, 2}
         : head_dim == 128 ? ac_tiled_shape{4, 2, 1, 64, 2, 128, 2}
                           : ac_tiled_shape{4, 1, 1, 32, 2, 256, 2};
}
constexpr ac_tiled_shape ac_tiled_wgmma_shape(int head_dim) {
  return head_dim == 64 ? ac_tiled_shape{8, 1, 1, 64, 3, 64, 2, 1} : ac_tiled_shape{8, 1, 1, 64, 2, 128, 2, 1};
}
// Its producer twin (AITER_COMPAT_WGMMA_PRODUCER: =auto the long head dim 64 calls, launch.cpp's
// takes_producer_twin, =1 every call; docs/kernel-notes.md, versions 20 and 21): one block per
// SM, computing warpgroups of 64 rows each and a producer warpgroup, a ring that runs on across
// the block's m-tiles, the epilogue's buffer apart from it. Head dim 64: three computing warpgroups (192 rows; with two, each SM scheduler
// had two warps to issue from and issued 0.41 instructions a cycle: ncu, H100), four stages of
// 128 keys, 160 registers a computing thread; 128: two (128 rows), three stages of 64 keys, 232
// registers (stage_barriers.hpp). The computing warps hold the next tile's scores beside the
// current tile's probabilities and the output.
constexpr ac_tiled_shape ac_tiled_wgmma_producer_shape(int head_dim) {
  return head_dim == 64 ? ac_tiled_shape{12, 1, 1, 128, 4, 64, 1, 1, 32, 16, 0, 4}
                        : ac_tiled_shape{8, 1, 1, 64, 3, 128, 1, 1, 32, 16, 0, 4};
}
constexpr ac_tiled_shape ac_tiled_keys_shape(int head_dim) {
  return head_dim == 64 ? ac_tiled_shape{1, 1, 4, 64, 3, 64, 4} : ac_tiled_shape{1, 1, 4, 64, 3, 128, 2};
}
// AMD (MFMA, 64-lane waves): four waves per block, one LDS stage filled from registers loaded a
// tile ahead, two blocks per CU (two waves per SIMD: at most 256 VGPRs + AGPRs each). "rows":
// each wave 32 query rows on v_mfma_f32_32x32x8; "keys": 16 rows shared by the four waves, each
// scoring 16 keys of a 64-key tile on v_mfma_f32_16x16x16.
// At head dim 256 "rows" keeps one block per CU (one wave per SIMD, 512 VGPRs + AGPRs): its
// output (128) and query (64) registers and the tile loaded ahead do not fit 256, and its 33 KiB
// K/V stage leaves no room for a second block in gfx90a's and gfx942's 64 KiB of LDS.
constexpr ac_tiled_shape ac_tiled_rows_shape_amd(int head_dim) {
  return ac_tiled_shape{4, 1, 1, head_dim == 64 ? 64 : 32, 1, head_dim, head_dim == 256 ? 1 : 2, 0, 64, 32, 1};
}
// At head dim 128 the "keys" tiles are packed (amd 3: unpadded swizzled rows, 32 KiB) where a CU
// has 64 KiB of LDS (gfx90a, gfx942): two blocks, two waves per SIMD, where the padded tiles'
// 34.9 KB held one. gfx950's 160 KiB hold four padded blocks, and the registers three: the swizzled
// addresses' 26-30 more VGPRs would cost it its third wave, so it keeps the padded tiles.
constexpr ac_tiled_shape ac_tiled_keys_shape_amd(int head_dim, int lds_kib = 64) {
  return ac_tiled_shape{1, 1, 4, 64, 1, head_dim, 2, 0, 64, 16, head_dim >= 128 && lds_kib <= 64 ? 3 : 1};
}
constexpr ac_tiled_shape ac_tiled_keys_shape_gfx950(int head_dim) { return ac_tiled_keys_shape_amd(head_dim, 160); }
// RDNA3 and RDNA4 (WMMA 16 x 16 x 16 on 32-lane waves): the same blocks of four waves, each wave
// 16 query rows ("rows") or 16 keys of a 64-key tile ("keys"), V transposed in LDS (v_pitch). A
// lane holds 8 of each instruction's 16 accumulator rows (MFMA 16 x 16: 4 of 16, 32 x 32: 16 of
// 32) and twice an MFMA lane's K/V staging: the row tiles take 32 keys at a time. Built at head
// dims 64 (RDNA3, RDNA4) and 128 (RDNA4): kernel_table.cpp, tiled_dims_on.
constexpr ac_tiled_shape ac_tiled_rows_shape_rdna(int head_dim) {
  return ac_tiled_shape{4, 1, 1, 32, 1, head_dim, 2, 0, 32, 16, 2};
}
constexpr ac_tiled_shape ac_tiled_keys_shape_rdna(int head_dim) {
  return ac_tiled_shape{1, 1, 4, 64, 1, head_dim, 2, 0, 32, 16, 2};
}
// gfx1250 (WMMA 16 x 16 x 32 on 32-lane waves; up to 1024 VGPRs a lane and 320 KiB of LDS a
// workgroup): the RDNA blocks with each wave scoring a multiple of the instruction's 32 keys, 64
// keys a tile in "rows" (two 32-key steps: half the barriers of RDNA's 32), 128 in "keys" (32 a
// wave). Two waves a SIMD leave 512 VGPRs a lane: enough for head dims 64 and 128; at 256 the
// row tiles keep one (1024 VGPRs: its 128 output, 64 query and 128 loaded-ahead registers spill
// at 512).
constexpr ac_tiled_shape ac_tiled_rows_shape_gfx1250(int head_dim) {
  return ac_tiled_shape{4, 1, 1, 64, 1, head_dim, head_dim == 256 ? 1 : 2, 0, 32, 16, 2};
}
constexpr ac_tiled_shape ac_tiled_keys_shape_gfx1250(int head_dim) {
  return ac_tiled_shape{1, 1, 4, 128, 1, head_dim, 2, 0, 32, 16, 2};
}
#endif

typedef struct {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  float* lse;                 // [Hq, total_q] or null
  const int32_t* cu_seqlens_q;  // [batch + 1]; null: token t is sequence t (decode)
  const int32_t* cu_seqlens_k;  // varlen keys: [batch + 1]
  const int32_t* seqused_k;     // paged keys: [batch]
  const int32_t* block_table;   // paged: [batch, max_blocks]
  const void* sinks;            // [Hq] or null, of sink_type, sink_stride elements apart
  float* partial_out;           // split-KV: [splits, total_q, Hq, Dv]
  float* partial_ml;            // split-KV: [splits, total_q, Hq, 2] (running max, sum)
  int64_t q_tok, q_head;        // strides
  int64_t k_tok, k_slot, k_head;  // varlen: k_tok per token; paged: k_tok per block, k_slot per slot
  int64_t v_tok, v_slot, v_head;
  int64_t out_tok, out_head;
  int64_t lse_batch, lse_head, lse_tok;  // lse_batch > 0: [batch, Hq, seqlen_q] layout
  int64_t bt_row, bt_col;
  int64_t sink_stride;
  int32_t batch, total_q, total_k, num_blocks, max_blocks;
  int32_t hq, hk, head_dim, head_dim_v, block_size;
  int32_t num_splits, paged, causal, window_left, window_right;
  int32_t uniform_q, uniform_k;  // without cu_seqlens: every sequence has this many queries / keys
  int32_t sink_type;             // AC_DTYPE_*
  float scale;
  float softcap;                 // > 0: scores become softcap tanh(score / softcap); 0: off
  // AITer's descales (unified_attention's q_descale, k_descale, v_descale; fp32, or null for 1):
  // scores are scaled by q_descale[0] k_descale[b, kh], outputs by v_descale[b, kh] (strides in
  // elements, 0 where broadcast: vLLM passes one scalar expanded to [batch, Hk]).
  const float* q_descale;
  const float* k_descale;
  const float* v_descale;
  int64_t kd_seq, kd_head, vd_seq, vd_head;
  // AITer's output_scale (fp32, one element; null for 1): outputs are divided by it (then, for an
  // fp8 out, saturated to its largest value).
  const float* out_scale;
  // Storage types (AC_DTYPE_*) of q, of k and v, and of out: the kernel's own type, except in the
  // fp8-KV kernels (AC_KTYPE_*_KV8), which read and write what these say.
  int32_t q_type, kv_type, out_type, unused_;
  // A page table as CSR (mha_batch_prefill_func's kv_indptr; null: block_table is [batch, max_blocks]
  // with seqused_k): sequence b's pages are block_table[kv_indptr[b] .. kv_indptr[b + 1]) of the
  // num_page_indices entries, its keys (pages - 1) x block_size + kv_last_page_lens[b] (all of
  // every page without kv_last_page_lens).
  const int32_t* kv_indptr;
  const int32_t* kv_last_page_lens;
  int32_t num_page_indices, unused2_;
  // Paged caches whose rows are not [blocks, block_size, kv_heads, head_dim] (kv_layout 1; the
  // generic kernel alone reads them): AITer's 5-D "vectorized" caches (k [blocks, kv_heads,
  // head_dim / x, block_size, x], v [blocks, kv_heads, block_size / x, head_dim, x]) and
  // pa_decode_gluon's [blocks, kv_heads, head_dim, block_size] value cache. Past block * k_tok
  // and head * k_head, slot s is at ac_split(s, k_slot_x, k_slot, k_slot_in) and channel c at
  // ac_split(c, k_dim_x, k_dim, k_dim_in), ac_split(i, x, outer, inner) = (i / x) outer +
  // (i % x) inner (x > every index: one stride, inner); v's likewise.
  int64_t k_slot_in, k_dim, k_dim_in, v_slot_in, v_dim, v_dim_in;
  int32_t k_slot_x, k_dim_x, v_slot_x, v_dim_x;
  int32_t kv_layout, unused3_;
  // Set by the launcher alone (ac_set_divisors, below): query heads per KV head, and the two
  // runtime divisors of the tiled kernels' start-up path (query heads per KV head, splits) as
  // multiply-shift pairs (fast_divide.hpp). A 32-bit division by a runtime value is ~20
  // dependent instructions there, and decode blocks with short key ranges are bound by that path.
  int32_t group, group_shift, splits_shift;
  uint32_t group_mul, splits_mul;
  // The split merge folded into the split kernel (tiled "keys" kernels; null: the merge kernel
  // merges): one arrival counter per (KV head, sequence, m-tile), zeroed by ac_zero_counts just
  // before. KV head kh's are [kh x counts_per_head, ...); sequence b's m-tile t is counter
  // floor(q_start x group / block_m) + b + t of them, distinct for every (b, t) and below
  // counts_per_head = ceil(total_q x group / block_m) + batch, whatever max_seqlen_q said.
  int32_t counts_per_head;
  uint32_t* split_counts;
} ac_attention_params;

#ifdef __cplusplus
// The divisors the kernels read from their parameters, from hq, hk and num_splits.
inline void ac_set_divisors(ac_attention_params& p) {
  p.group = p.hk > 0 ? p.hq / p.hk : 0;
  const ac_divisor g = ac_divisor_of(p.group), s = ac_divisor_of(p.num_splits);
  p.group_mul = g.mul, p.group_shift = g.shift;
  p.splits_mul = s.mul, p.splits_shift = s.shift;
}
#endif

#define AC_LAYOUT_ROWS 0
#define AC_LAYOUT_SPLIT 1
#define AC_SPLIT_NONE (1 << 30)  // an ac_split width past every index: the index times inner

// merge_attn_states: out = prefix * e^(lse_p - lse) + suffix * e^(lse_s - lse), with
// lse = logaddexp(lse_p, lse_s, sink).
typedef struct {
  void* out;
  const void* prefix;
  const void* suffix;
  const float* prefix_lse;
  const float* suffix_lse;
  float* out_lse;        // or null
  const void* sinks;     // or null, of sink_type, sink_stride elements apart
  int64_t out_tok, out_head, prefix_tok, prefix_head, suffix_tok, suffix_head;
  int64_t plse_head, plse_tok, slse_head, slse_tok, olse_head, olse_tok, sink_stride;
  int32_t tokens, heads, dim, sink_type;
} ac_merge_params;

// pa_decode_bf16_asm's split rows: AITer's persistent schedule (work_info rows [batch, partial
// row, first token, end token, first page, end page, key offset, heads (last << 16 | first)])
// sends a piece of a sequence to split_o [rows, 1, Hq, Dv] / split_lse [rows, 1, Hq, 1] at its
// partial row instead of out, and pa_reduce_v1 then merges a sequence's pieces into out. The
// fallback computes whole rows; this writes each sequence's first piece as (out, lse) and the
// others as (0, -inf), so that the reduce gives out back exactly.
typedef struct {
  const void* out;
  const float* lse;            // [Hq, total_q]
  float* split_o;
  float* split_lse;
  const int32_t* work_indptr;  // [groups + 1]: the valid rows of work_info are [0, work_indptr[groups]); or null
  const int32_t* work_info;    // [slots, 8]
  const int32_t* kv_indptr;    // [batch + 1]
  int64_t out_tok, out_head, lse_head, lse_tok;
  int64_t so_row, so_head, sl_row, sl_head;
  int64_t wi_row, wi_col;
  int32_t slots, groups, batch, total_q, hq, dv, rows, out_type;
} ac_split_rows_params;
