// Tiled attention on matrix instructions (FlashAttention-2 style), for prefill, extend and
// decode, varlen or paged, with sinks, causal masks and sliding windows.
//
// A block takes one KV head of one sequence and a tile of "rows": row r is query token r / G,
// head r % G of that KV head's group (G query heads), so the query heads of a group share every
// K and V tile (for decode, the G heads of the one token fill the rows). Key tiles stream
// global -> shared through a ring of `stages` asynchronous copies; each warp multiplies its rows
// by the tile (S = Q K^T), keeps a running max and sum per row in registers (online softmax in
// base 2) and adds P V into fp32 accumulators. Warps over rows ("rows" shape) or over the keys
// of each tile ("keys" shape, combined at the end). The epilogue enters the sink once (or writes
// the split's partial output and (max, sum) for the merge kernel).
//
// On sm_90a the "wgmma" shape does the two products with warpgroup MMAs (warpgroup_ops.hpp)
// on the same shared-memory tiles, laid out in 64-element panels; the rest is shared.
//
// Masks are applied only on tiles that cross a row's range (causal diagonal, window edges, the
// end of the keys) or, for a paged cache, hold rows of a block-table entry outside the cache;
// keys outside every row's window are never loaded: the tiles start at the block's first key.
#pragma once

#include "kernel_common.hpp"
#include "matrix_ops.hpp"
#include "warpgroup_ops.hpp"

#if AC_HAS_MATRIX_OPS
namespace {

template <typename T, ac_tiled_shape S, bool kPaged>
struct TiledAttention {
  static constexpr int D = S.head_dim;
  static constexpr int kThreads = S.threads();
  static constexpr int kBlockM = S.block_m();
  static constexpr int kWarpKeys = S.block_n / S.warps_n;  // keys of a tile each warp takes
  static constexpr int kKeyTiles = kWarpKeys / 8;          // 8-key score fragments per warp
  static constexpr int kChunks = D / 8;                    // 16-byte chunks per row
  // Each thread copies two 16-byte chunks of a row per slot: one address (and block-table
  // entry) per 32 bytes of K and of V.
  static constexpr int kSlots = kChunks / 2;                   // per row
  static constexpr int kLoads = S.block_n * kSlots / kThreads;  // rows per thread per tile
  static_assert(kWarpKeys % 16 == 0 && D % 16 == 0 && S.block_n * kSlots % kThreads == 0, "tile shape");
  // "keys" shapes keep their 16 query rows in registers (16 or 32 of them) for the whole loop.
  static constexpr bool kQInRegisters = S.warps_n > 1 && S.m_tiles == 1;
  // and issue their sinks' loads first (run), one row per thread.
  static constexpr bool kEarlySinks = kQInRegisters && kBlockM <= kThreads;
  static constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;

  static constexpr bool kWarpgroup = S.warpgroup != 0;
  static_assert(!kWarpgroup || (S.warps_m % 4 == 0 && S.m_tiles == 1 && S.warps_n == 1), "warpgroup shape");

  // Rows are stored 16-byte chunk c of row r at chunk c ^ (r % 8): the 8 rows one matrix load
  // reads then fall in 8 different bank groups. The warpgroup shape splits each row into
  // 64-element panels, a tile of `rows` rows per panel (warpgroup_ops.hpp: its canonical layout).
  AC_DEVICE int swizzle(int row, int chunk, int rows) {
    if constexpr (kWarpgroup) return (chunk >> 3) * rows * 64 + row * 64 + (((chunk & 7) ^ (row & 7)) << 3);
    return row * D + ((chunk ^ (row & 7)) << 3);
  }

  const ac_attention_params& p;
  uint16_t* q_s;
  uint16_t* k_s;
  uint16_t* v_s;
  uint8_t* valid_s;
  float* sink_s;  // [block_m]: the sink of each row's head (log2 units), -inf without sinks
  Sequence seq;
  int32_t kh, group, rows_total, row0, k_begin, k_end;
  int32_t page_shift;  // log2 of the block size when it is a power of two, else -1

  // Keys of query token t (position t + k_len - q_len): [lo, hi).
  AC_MEMBER int32_t key_lo(int32_t t) const {
    const int32_t pos = t + seq.k_len - seq.q_len;
    return p.window_left >= 0 && pos - p.window_left > 0 ? pos - p.window_left : 0;
  }
  AC_MEMBER int32_t key_hi(int32_t t) const {
    const int32_t pos = t + seq.k_len - seq.q_len;
    int32_t hi = seq.k_len;
    if (p.causal && pos + 1 < hi) hi = pos + 1;
    if (p.window_right >= 0 && pos + p.window_right + 1 < hi) hi = pos + p.window_right + 1;
    return hi;
  }

  AC_MEMBER void load_q(int tid) {
    const uint16_t* q = static_cast<const uint16_t*>(p.q);
    for (int x = tid; x < kBlockM * kChunks; x += kThreads) {
      const int r = x / kChunks, c = x % kChunks, flat = row0 + r;
      const bool ok = flat < rows_total;
      const int32_t t = ok ? flat / group : 0, g = ok ? flat % group : 0;
      ac_copy16_async(q_s + swizzle(r, c, kBlockM), q + (seq.q_start + t) * p.q_tok + (kh * group + g) * p.q_head + c * 8, ok);
    }
  }

  // Block-table entries of this thread's rows of keys [j0, j0 + block_n), read one tile ahead
  // of their use so that the copies never wait on the table (-1: past the keys).
  AC_MEMBER void lookup_pages(int tid, int32_t j0, int32_t (&pages)[kLoads]) {
    if (!kPaged) return;
    const int32_t* table = p.block_table + seq.b * p.bt_row;
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int32_t j = j0 + (tid + i * kThreads) / kSlots;
      pages[i] = j < k_end ? table[(page_shift >= 0 ? j >> page_shift : j / p.block_size) * p.bt_col] : -1;
    }
  }

  // Keys [j0, j0 + block_n) into ring slot `stage`; rows past k_end or on a block-table entry
  // outside the cache are zero and marked invalid. Returns whether this thread met such an entry.
  AC_MEMBER bool load_keys(int tid, int32_t j0, int stage, const int32_t (&pages)[kLoads]) {
    bool bad_page = false;
    const uint16_t* k = static_cast<const uint16_t*>(p.k) + kh * p.k_head;
    const uint16_t* v = static_cast<const uint16_t*>(p.v) + kh * p.v_head;
    uint16_t* ks = k_s + stage * S.block_n * D;
    uint16_t* vs = v_s + stage * S.block_n * D;
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int x = tid + i * kThreads, r = x / kSlots, c = (x % kSlots) * 2;
      const int32_t j = j0 + r;
      bool ok = j < k_end;
      int64_t koff = 0, voff = 0;
      if (kPaged) {
        const int32_t block = pages[i];
        bad_page = bad_page || (ok && (block < 0 || block >= p.num_blocks));
        ok = ok && block >= 0 && block < p.num_blocks;
        const int32_t slot = page_shift >= 0 ? j & (p.block_size - 1) : j % p.block_size;
        koff = ok ? static_cast<int64_t>(block) * p.k_tok + slot * p.k_slot : 0;
        voff = ok ? static_cast<int64_t>(block) * p.v_tok + slot * p.v_slot : 0;
      } else if (ok) {
        koff = static_cast<int64_t>(seq.k_start + j) * p.k_tok;
        voff = static_cast<int64_t>(seq.k_start + j) * p.v_tok;
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        ac_copy16_async(ks + swizzle(r, c + h, S.block_n), k + koff + (c + h) * 8, ok);
        ac_copy16_async(vs + swizzle(r, c + h, S.block_n), v + voff + (c + h) * 8, ok);
      }
      if (c == 0) valid_s[stage * S.block_n + r] = ok;
    }
    return bad_page;
  }

  // Softmaxed scores of 16 keys (fragments 2kk, 2kk + 1) as the A operand of O += P V: the
  // score fragments already have the A operand's layout.
  AC_DEVICE void pack_probabilities(const float (&s)[kKeyTiles][4], int kk, uint32_t (&a)[4]) {
    MatrixOps<T> mm;
    a[0] = mm.pack(s[2 * kk][0], s[2 * kk][1]);
    a[1] = mm.pack(s[2 * kk][2], s[2 * kk][3]);
    a[2] = mm.pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    a[3] = mm.pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
  }

#if AC_HAS_WARPGROUP_MMA
  // Scores of warpgroup `wg`'s 64 rows against the key tile in ring slot `stage`, waited for.
  AC_MEMBER void warpgroup_scores(float (&sc)[kKeyTiles][4], int wg, int stage) {
    constexpr uint32_t kQPanel = kBlockM * 128, kKPanel = S.block_n * 128;
    const uint32_t q_base = ac_smem_addr(q_s) + wg * 64 * 128;
    const uint32_t k_base = ac_smem_addr(k_s) + stage * S.block_n * D * 2;
    ac_pin(sc);
    ac_wg_fence();
#pragma unroll
    for (int kd = 0; kd < D / 16; ++kd) {
      const uint32_t step = (kd % 4) * 32;  // 16 elements into the panel
      WarpgroupOps<T>::template mma_ss<S.block_n>(sc, ac_smem_desc(q_base + (kd / 4) * kQPanel + step, 16, 1024),
                                                  ac_smem_desc(k_base + (kd / 4) * kKPanel + step, 16, 1024), kd > 0);
    }
    ac_wg_commit();
    ac_wg_wait<0>();
    ac_pin(sc);
  }
  // o += P V for the key tile in ring slot `stage` (P: the softmaxed scores), waited for.
  AC_MEMBER void warpgroup_accumulate(float (&o)[kChunks][4], const float (&pr)[kKeyTiles][4], int stage) {
    const uint32_t v_base = ac_smem_addr(v_s) + stage * S.block_n * D * 2;
    uint32_t pa[S.block_n / 16][4];
#pragma unroll
    for (int kk = 0; kk < S.block_n / 16; ++kk) pack_probabilities(pr, kk, pa[kk]);
    ac_pin(o);
    ac_wg_fence();
#pragma unroll
    for (int kk = 0; kk < S.block_n / 16; ++kk)
      WarpgroupOps<T>::template mma_rs<D>(o, pa[kk], ac_smem_desc(v_base + kk * 16 * 128, S.block_n * 128, 1024));
    ac_wg_commit();
    ac_wg_wait<0>();
    ac_pin(o);
  }
#endif

  // Row r's sink (natural-log units, as given); -inf past the last row or without sinks.
  AC_MEMBER float row_sink(int r) const {
    const int32_t flat = row0 + r;
    return flat < rows_total ? ac_sink(p, kh * group + flat % group) : -AC_INFINITY;
  }

  AC_MEMBER void run(int32_t m_tile, int32_t split) {
    MatrixOps<T> mm;
    const int tid = ac_thread_x(), lane = tid % 32, warp = tid / 32;
    const int warp_m = warp % S.warps_m, warp_n = warp / S.warps_m;
    const int g4 = lane / 4, t4 = lane % 4;
    row0 = m_tile * kBlockM;
    const int32_t last_row = (row0 + kBlockM < rows_total ? row0 + kBlockM : rows_total) - 1;
    // Decode blocks issue their rows' sink loads first, waiting for nothing (rows past the last
    // are masked at the store, once the lengths are in), and use the value only after the
    // prologue: a use next to the load stalled warp 0 for a memory round trip before its page
    // lookups, and the block's first barrier with it. Rows blocks read the sinks after the
    // prologue: one more register live across it spills at head dim 128.
    float early_sink = -AC_INFINITY;
    if constexpr (kEarlySinks) {
      const int32_t flat = row0 + tid;  // head kh * group + flat % group is below hq for any row
      early_sink = ac_load_sink_now(p.sinks, p.sink_type, (kh * group + flat % group) * p.sink_stride,
                                    p.sinks && p.num_splits == 1 && tid < kBlockM);
    }
    const int32_t t_first = row0 / group, t_last = last_row / group;

    // Keys the block's rows need, cut into splits of whole tiles.
    const int32_t lo = key_lo(t_first), hi_all = key_hi(t_last) > lo ? key_hi(t_last) : lo;
    const int32_t tiles = (hi_all - lo + S.block_n - 1) / S.block_n;
    const int32_t per_split = (tiles + p.num_splits - 1) / p.num_splits;
    k_begin = lo + split * per_split * S.block_n;
    k_end = hi_all < k_begin + per_split * S.block_n ? hi_all : k_begin + per_split * S.block_n;
    const int32_t n_tiles = k_begin < k_end ? (k_end - k_begin + S.block_n - 1) / S.block_n : 0;
    // Tiles inside [unmasked_lo, unmasked_hi) need no mask for any row.
    const int32_t unmasked_lo = key_lo(t_last), unmasked_hi = key_hi(t_first) < k_end ? key_hi(t_first) : k_end;

    // This thread's rows: fragment rows g4 and g4 + 8 of each of its m-tiles.
    int32_t row_lo[S.m_tiles][2], row_hi[S.m_tiles][2];
#pragma unroll
    for (int mt = 0; mt < S.m_tiles; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int32_t flat = row0 + (warp_m * S.m_tiles + mt) * 16 + g4 + 8 * h;
        const bool ok = flat < rows_total;
        row_lo[mt][h] = ok ? key_lo(flat / group) : 0;
        row_hi[mt][h] = ok ? key_hi(flat / group) : 0;
      }

    load_q(tid);
    // Tiles that hold a block-table entry outside the cache (bit tile % 32): learnt at the
    // barrier after their copies were issued, and masked; the other interior tiles are not.
    bool bad_page = false;
    uint32_t bad_tiles = 0;
    int32_t next_pages[kLoads];  // of the next tile to load
    {
      int32_t pages[S.stages - 1][kLoads];
#pragma unroll
      for (int st = 0; st < S.stages - 1; ++st) lookup_pages(tid, k_begin + st * S.block_n, pages[st]);
      lookup_pages(tid, k_begin + (S.stages - 1) * S.block_n, next_pages);
#pragma unroll
      for (int st = 0; st < S.stages - 1; ++st) {
        if (st < n_tiles) bad_page = load_keys(tid, k_begin + st * S.block_n, st, pages[st]) || bad_page;
        ac_copy_commit();  // empty groups keep the count uniform
      }
    }
    // The epilogue (past at least one barrier) reads the sinks from shared memory instead of
    // waiting on memory at the end.
    if (p.num_splits == 1) {
      if constexpr (kEarlySinks) {
        if (tid < kBlockM) sink_s[tid] = row0 + tid < rows_total ? early_sink * kLog2e : -AC_INFINITY;
      } else {
        for (int r = tid; r < kBlockM; r += kThreads) sink_s[r] = row_sink(r) * kLog2e;
      }
    }
    uint32_t a_q[kQInRegisters ? D / 16 : 1][4];  // Q fragments, when kept in registers

    float o[S.m_tiles][kChunks][4], m_run[S.m_tiles][2], l_run[S.m_tiles][2];
#pragma unroll
    for (int mt = 0; mt < S.m_tiles; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) m_run[mt][h] = -AC_INFINITY, l_run[mt][h] = 0.f;
#pragma unroll
      for (int dt = 0; dt < kChunks; ++dt)
#pragma unroll
        for (int c = 0; c < 4; ++c) o[mt][dt][c] = 0.f;
    }
    const float scale2 = p.scale * kLog2e;
    // Fragment-load addresses. Every fragment row is a multiple of 8 plus lane % 8, so the
    // swizzle of chunk 2k (+ a lane bit) is (2k) ^ a per-thread constant: one base per operand.
    constexpr uint32_t kRowBytes = D * 2;
    const uint32_t swz_a = ((lane >> 4) ^ (lane & 7)), swz_b = (((lane >> 3) & 1) ^ (lane & 7));
    const uint32_t q_rows = ac_smem_addr(q_s) + ((warp_m * S.m_tiles) * 16 + lane % 16) * kRowBytes;
    const uint32_t k_rows = ac_smem_addr(k_s) + (warp_n * kWarpKeys + (lane / 16) * 8 + lane % 8) * kRowBytes;
    const uint32_t v_rows = ac_smem_addr(v_s) + (warp_n * kWarpKeys + lane % 8 + ((lane / 8) % 2) * 8) * kRowBytes;

    for (int32_t it = 0; it < n_tiles; ++it) {
      ac_copy_wait<S.stages - 2>();
#if AC_HAS_WARPGROUP_MMA
      if constexpr (kWarpgroup) ac_fence_async_smem();  // the tensor cores read what cp.async wrote
#endif
      // Tile `it` landed for every thread; slot (it - 1) % stages is free again.
      if (kPaged) {
        const bool bad = ac_sync_or(bad_page);
        bad_page = false;
        if (it == 0) bad_tiles = bad ? (1u << (S.stages - 1)) - 1 : 0u;  // the tiles of the prologue
        else bad_tiles = (bad_tiles & ~(1u << ((it + S.stages - 2) & 31))) | (bad ? 1u << ((it + S.stages - 2) & 31) : 0u);
      } else {
        ac_sync();
      }
      if constexpr (kQInRegisters) {
        if (it == 0)
#pragma unroll
          for (int kd = 0; kd < D / 16; ++kd) ac_load_matrix_x4(a_q[kd], q_rows + (((kd * 2) ^ swz_a) << 4));
      }
      const int32_t ahead = it + S.stages - 1;
      if (ahead < n_tiles) bad_page = load_keys(tid, k_begin + ahead * S.block_n, ahead % S.stages, next_pages);
      ac_copy_commit();
      if (ahead + 1 < n_tiles) lookup_pages(tid, k_begin + (ahead + 1) * S.block_n, next_pages);
      const int stage = it % S.stages;
      const uint32_t ks = k_rows + stage * S.block_n * kRowBytes;
      const uint32_t vs = v_rows + stage * S.block_n * kRowBytes;
      const int32_t j0 = k_begin + it * S.block_n;

      // S = Q K^T for this warp's rows and keys.
      float sc[S.m_tiles][kKeyTiles][4];
      if constexpr (kWarpgroup) {
        warpgroup_scores(sc[0], warp / 4, stage);
      } else {
#pragma unroll
      for (int mt = 0; mt < S.m_tiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
          for (int c = 0; c < 4; ++c) sc[mt][nt][c] = 0.f;
#pragma unroll
      for (int kd = 0; kd < D / 16; ++kd) {
        uint32_t a[S.m_tiles][4];
#pragma unroll
        for (int mt = 0; mt < S.m_tiles; ++mt) {
          if constexpr (kQInRegisters) {
#pragma unroll
            for (int i = 0; i < 4; ++i) a[mt][i] = a_q[kd][i];
          } else {
            ac_load_matrix_x4(a[mt], q_rows + mt * 16 * kRowBytes + (((kd * 2) ^ swz_a) << 4));
          }
        }
#pragma unroll
        for (int nt = 0; nt < kKeyTiles; nt += 2) {
          uint32_t b[4];
          ac_load_matrix_x4(b, ks + nt * 8 * kRowBytes + (((kd * 2) ^ swz_b) << 4));
#pragma unroll
          for (int mt = 0; mt < S.m_tiles; ++mt) {
            mm.mma(sc[mt][nt], a[mt], b[0], b[1]);
            mm.mma(sc[mt][nt + 1], a[mt], b[2], b[3]);
          }
        }
      }
      }

      if ((kPaged && (bad_tiles >> (it & 31) & 1u)) || j0 < unmasked_lo || j0 + S.block_n > unmasked_hi) {
        const uint8_t* valid = valid_s + stage * S.block_n;
#pragma unroll
        for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            const int key = warp_n * kWarpKeys + nt * 8 + 2 * t4 + (c & 1);
            const int32_t j = j0 + key;
            const bool key_ok = j < k_end && valid[key];
#pragma unroll
            for (int mt = 0; mt < S.m_tiles; ++mt)
              if (!key_ok || j < row_lo[mt][c / 2] || j >= row_hi[mt][c / 2]) sc[mt][nt][c] = -AC_INFINITY;
          }
      }

      // Online softmax per row (the four lanes of a fragment row hold its keys).
#pragma unroll
      for (int mt = 0; mt < S.m_tiles; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float mx = -AC_INFINITY;
#pragma unroll
          for (int nt = 0; nt < kKeyTiles; ++nt) mx = fmaxf(mx, fmaxf(sc[mt][nt][2 * h], sc[mt][nt][2 * h + 1]));
          mx = fmaxf(mx, ac_shfl_xor(mx, 1));
          mx = fmaxf(mx, ac_shfl_xor(mx, 2));
          const float m_new = fmaxf(m_run[mt][h], mx * scale2);
          const float m_use = m_new == -AC_INFINITY ? 0.f : m_new;  // a row with nothing valid yet
          const float corr = ac_exp2(m_run[mt][h] - m_use);
          m_run[mt][h] = m_new;
          float sum = 0.f;
#pragma unroll
          for (int nt = 0; nt < kKeyTiles; ++nt)
#pragma unroll
            for (int c = 2 * h; c < 2 * h + 2; ++c) {
              sc[mt][nt][c] = ac_exp2(fmaf(sc[mt][nt][c], scale2, -m_use));
              sum += sc[mt][nt][c];
            }
          l_run[mt][h] = l_run[mt][h] * corr + sum;
#pragma unroll
          for (int dt = 0; dt < kChunks; ++dt) o[mt][dt][2 * h] *= corr, o[mt][dt][2 * h + 1] *= corr;
        }

      // O += P V: the score fragments are already the A operand's layout.
      if constexpr (kWarpgroup) {
        warpgroup_accumulate(o[0], sc[0], stage);
      } else {
#pragma unroll
      for (int kk = 0; kk < kWarpKeys / 16; ++kk) {
        uint32_t pa[S.m_tiles][4];
#pragma unroll
        for (int mt = 0; mt < S.m_tiles; ++mt) pack_probabilities(sc[mt], kk, pa[mt]);
#pragma unroll
        for (int dt = 0; dt < kChunks; dt += 2) {
          uint32_t b[4];
          ac_load_matrix_x4_trans(b, vs + kk * 16 * kRowBytes + ((dt ^ swz_a) << 4));
#pragma unroll
          for (int mt = 0; mt < S.m_tiles; ++mt) {
            mm.mma(o[mt][dt], pa[mt], b[0], b[1]);
            mm.mma(o[mt][dt + 1], pa[mt], b[2], b[3]);
          }
        }
      }
      }
    }

    // Epilogue: every warp's rows into shared memory (the key ring is free now), then each
    // (row, 16-byte chunk) combined over the warps that split its keys and written once.
    ac_copy_wait<0>();
    ac_sync();
    float* o_s = reinterpret_cast<float*>(q_s);
    float* m_s = o_s + S.warps_n * kBlockM * S.out_stride();
    float* l_s = m_s + S.warps_n * kBlockM;
#pragma unroll
    for (int mt = 0; mt < S.m_tiles; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float l = l_run[mt][h];
        l += ac_shfl_xor(l, 1);
        l += ac_shfl_xor(l, 2);
        const int r = warp_n * kBlockM + (warp_m * S.m_tiles + mt) * 16 + g4 + 8 * h;
#pragma unroll
        for (int dt = 0; dt < kChunks; ++dt) {
          o_s[r * S.out_stride() + dt * 8 + 2 * t4] = o[mt][dt][2 * h];
          o_s[r * S.out_stride() + dt * 8 + 2 * t4 + 1] = o[mt][dt][2 * h + 1];
        }
        if (t4 == 0) m_s[r] = m_run[mt][h], l_s[r] = l;
      }
    ac_sync();
    for (int x = tid; x < kBlockM * kChunks; x += kThreads) {
      const int r = x / kChunks, c = x % kChunks, flat = row0 + r;
      if (flat >= rows_total) continue;
      const int32_t token = seq.q_start + flat / group, h = kh * group + flat % group;
      float mx = -AC_INFINITY;
#pragma unroll
      for (int w = 0; w < S.warps_n; ++w) mx = fmaxf(mx, m_s[w * kBlockM + r]);
      float l = 0.f, acc[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] = 0.f;
#pragma unroll
      for (int w = 0; w < S.warps_n; ++w) {
        const float mw = m_s[w * kBlockM + r];
        if (mw == -AC_INFINITY) continue;
        const float f = ac_exp2(mw - mx);
        l += l_s[w * kBlockM + r] * f;
        const float* src = o_s + (w * kBlockM + r) * S.out_stride() + c * 8;
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[i] += src[i] * f;
      }
      if (p.num_splits > 1) {
        float* dst = p.partial_out + ((static_cast<int64_t>(split) * p.total_q + token) * p.hq + h) * D + c * 8;
#pragma unroll
        for (int i = 0; i < 8; ++i) dst[i] = acc[i];
        if (c == 0) {
          float* ml = p.partial_ml + ((static_cast<int64_t>(split) * p.total_q + token) * p.hq + h) * 2;
          ml[0] = mx == -AC_INFINITY ? -AC_INFINITY : mx * kLn2;
          ml[1] = l;
        }
        continue;
      }
      const float sink = sink_s[r];
      const float mf = fmaxf(mx, sink);
      const float keep = mf == -AC_INFINITY ? 0.f : ac_exp2(mx - mf);
      const float lf = l * keep + (sink == -AC_INFINITY ? 0.f : ac_exp2(sink - mf));
      const float inv = lf > 0.f ? keep / lf : 0.f;
      ac_u32x4 packed;
      packed.x = mm.pack(acc[0] * inv, acc[1] * inv);
      packed.y = mm.pack(acc[2] * inv, acc[3] * inv);
      packed.z = mm.pack(acc[4] * inv, acc[5] * inv);
      packed.w = mm.pack(acc[6] * inv, acc[7] * inv);
      *reinterpret_cast<ac_u32x4*>(static_cast<uint16_t*>(p.out) + token * p.out_tok + h * p.out_head + c * 8) = packed;
      if (c == 0 && p.lse) p.lse[lse_index(p, seq, token, h)] = lf > 0.f ? (mf + ac_log2(lf)) * kLn2 : -AC_INFINITY;
    }
    ac_sync();  // the next m-tile reuses shared memory
  }
};

// Grid: x = m-tiles (grid-stride, heaviest causal tiles first), y = KV head, z = sequence x split.
template <typename T, ac_tiled_shape S, bool kPaged>
AC_DEVICE void tiled_attention(const ac_attention_params& p) {
  AC_DYNAMIC_SHARED(smem);
  using A = TiledAttention<T, S, kPaged>;
  const int32_t b = ac_block_z() / p.num_splits, split = ac_block_z() % p.num_splits;
  if (b >= p.batch) return;
  A a{p};
  // Warpgroup operands: tiles 1024-byte aligned in the shared window (smem_bytes has the room).
  const uint32_t pad = S.warpgroup ? (1024u - ac_smem_addr(smem) % 1024u) % 1024u : 0u;
  a.q_s = reinterpret_cast<uint16_t*>(smem + pad);
  a.k_s = a.q_s + A::kBlockM * A::D;
  a.v_s = a.k_s + S.stages * S.block_n * A::D;
  a.valid_s = reinterpret_cast<uint8_t*>(a.v_s + S.stages * S.block_n * A::D);
  a.sink_s = reinterpret_cast<float*>(smem + pad + S.sink_offset());
  a.seq = sequence_at(p, b);
  a.kh = ac_block_y();
  a.group = p.hq / p.hk;
  a.page_shift = p.block_size > 0 && (p.block_size & (p.block_size - 1)) == 0 ? ac_ffs(p.block_size) - 1 : -1;
  a.rows_total = a.seq.q_len * a.group;
  const int32_t m_tiles = (a.rows_total + A::kBlockM - 1) / A::kBlockM;
  for (int32_t i = ac_block_x(); i < m_tiles; i += ac_grid_x()) a.run(m_tiles - 1 - i, split);
}

}  // namespace

// Contiguous (varlen, batch) and paged KV are separate kernels: the block-table lookups ahead of
// each tile cost registers that the contiguous case should not pay.
#define AC_TILED_KERNEL(name, T, shape, paged) \
  extern "C" __global__ __launch_bounds__(shape.threads(), shape.blocks_per_sm) void name(ac_attention_params p) { tiled_attention<T, shape, paged>(p); }
#define AC_TILED_KERNELS(kind, shape_of)                                                     \
  AC_TILED_KERNEL(ac_tiled_##kind##_bf16_d64, BF16, shape_of(64), false)                     \
  AC_TILED_KERNEL(ac_tiled_##kind##_bf16_d128, BF16, shape_of(128), false)                   \
  AC_TILED_KERNEL(ac_tiled_##kind##_f16_d64, F16, shape_of(64), false)                       \
  AC_TILED_KERNEL(ac_tiled_##kind##_f16_d128, F16, shape_of(128), false)                     \
  AC_TILED_KERNEL(ac_tiled_##kind##_paged_bf16_d64, BF16, shape_of(64), true)                \
  AC_TILED_KERNEL(ac_tiled_##kind##_paged_bf16_d128, BF16, shape_of(128), true)              \
  AC_TILED_KERNEL(ac_tiled_##kind##_paged_f16_d64, F16, shape_of(64), true)                  \
  AC_TILED_KERNEL(ac_tiled_##kind##_paged_f16_d128, F16, shape_of(128), true)
AC_TILED_KERNELS(rows, ac_tiled_rows_shape)
AC_TILED_KERNELS(keys, ac_tiled_keys_shape)
#if AC_HAS_WARPGROUP_MMA
AC_TILED_KERNELS(wgmma, ac_tiled_wgmma_shape)
#endif
#undef AC_TILED_KERNELS
#undef AC_TILED_KERNEL

#endif  // AC_HAS_MATRIX_OPS
