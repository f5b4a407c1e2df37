// Tiled attention on matrix instructions (FlashAttention-2 style), for prefill, extend and
// decode, varlen or paged, with sinks, causal masks and sliding windows: the mainloop, written
// once over an arch's tiles (tiles_nvidia.hpp: mma.sync and the sm_90a warpgroup MMA;
// tiles_amd.hpp: MFMA on gfx90a, gfx942 and gfx950, WMMA on RDNA3, RDNA4 and gfx1250).
//
// A block takes one KV head of one sequence and a tile of "rows": row r is query token r / G,
// head r % G of that KV head's group (G query heads), so the query heads of a group share every
// K and V tile (for decode, the G heads of the one token fill the rows). Key tiles stream into
// shared memory (the arch's loader); each warp multiplies its rows by the tile (S = Q K^T, in the
// arch's fragments), keeps a running max and sum per row (online softmax in base 2) and adds
// P V into fp32 accumulators. Warps over rows ("rows" shapes) or over the keys of each tile
// ("keys" shapes, combined at the end). The epilogue enters the sink once (or writes the
// split's partial output and (max, sum), which the last split block of a "keys" tile or the merge
// kernel combines).
//
// What the arch provides: its fragments as data (which element of a thread's scores and output
// is which row and key or column), the reductions over the lanes that share a row, the loads of
// Q, K and V, the two products, and the conversion of scores into the second one's operand.
//
// Masks are applied only on tiles that cross a row's range (causal diagonal, window edges, the
// end of the keys) or, for a paged cache, hold rows of a block-table entry outside the cache;
// keys outside every row's window are never loaded: the tiles start at the block's first key.
#pragma once

#include "arch_contract.hpp"
#include "fast_divide.hpp"
#include "kernel_common.hpp"
#include "key_range.hpp"
#include "online_softmax.hpp"
#include "row_finish.hpp"
#include "row_store.hpp"
#include "split_merge.hpp"
#include "tile_context.hpp"
#include "tiles_amd.hpp"
#include "tiles_nvidia.hpp"

#if AC_HAS_MATRIX_OPS
namespace {

// The tiles' element type: T, except the decode ("keys") tiles over an fp8 cache, which are f16
// whatever T is (fp8_device.hpp, ac_q_unscale, says why).
template <typename T, bool kF16> struct TileType { using type = T; };
template <typename T> struct TileType<T, true> { using type = F16; };

// The probabilities of the tile before, in flight into the output: the overlapping tiles' own type
// (tiles_nvidia.hpp), nothing for the others.
template <typename A, bool kOverlaps> struct PendingProbabilities { struct type {}; };
template <typename A> struct PendingProbabilities<A, true> { using type = typename A::Probabilities; };

// kKv8: the KV cache (and q, and out, as the call says) in fp8, the tiles in T (or f16, above);
// T is the family's type: q's when q is 16-bit, and out's when out is. kFold: the split merge
// folded into the last split block of each m-tile (fold_splits; the "keys" shapes that have room
// for it, S.folds_split_merge()), built as kernels of their own (below).
template <typename T, ac_tiled_shape S, bool kPaged, bool kKv8, bool kFold = false>
struct TiledAttention : TileContext {
  static_assert(!kFold || S.folds_split_merge(), "the fold's buffers fit these tiles' memory");
  using Tile = typename TileType<T, (kKv8 && S.warps_n > 1 && S.m_tiles == 1)>::type;
  using A = ArchTiles<Tile, S, kPaged, kKv8>;
  static_assert(TileFragments<A>, "the arch's fragments (arch_contract.hpp)");
  static_assert(TileLoader<A>, "the arch's loader (arch_contract.hpp)");
  static_assert(TileMma<A>, "the arch's matrix products (arch_contract.hpp)");
  static_assert(TileEpilogue<A>, "the arch's epilogue start (arch_contract.hpp)");
  static constexpr int D = S.head_dim;
  static constexpr int kThreads = S.compute_threads();  // the threads that compute (all but a producer's)
  static constexpr bool kProducer = S.producer_warps > 0;  // a producer warpgroup loads (run)
  static_assert(!kProducer || !kFold, "the fold's barriers are the whole block's");
  static constexpr int kBlockM = S.block_m();
  static constexpr bool kPlain = S.plain_row_divide();  // the row token by a plain division (kernel_params.h)
  static constexpr int kChunks = D / 8;  // 16-byte chunks of an output row
  static constexpr float kLog2e = 1.4426950408889634f;

  unsigned char* smem;  // the block's shared memory (each m-tile lays its tiles out afresh)
  // The softmax scale times AITer's q and k descales, and its v descale, read at the block's
  // start: their pointers and strides held to the epilogue cost scalar registers (the AMD paged
  // "keys" kernel spilled them, with a scratch slot).
  float qk_scale, v_scale;
  // With a producer: the tiles the block put through its ring and the m-tiles that had any, so
  // far (NvTiles' ring0 and q_loads: each role counts its own, the same).
  uint32_t ring_tiles = 0, ring_m_tiles = 0;

  // Row r's sink (natural-log units, as given); -inf past the last row or without sinks.
  AC_MEMBER float row_sink(int r) const {
    const int32_t flat = row0 + r;
    return flat < rows_total ? ac_sink(p, kh * group + ac_row_head<kPlain>(p, flat)) : -AC_INFINITY;
  }

  // The computing threads' barrier: the whole block's unless a producer warpgroup has its own loop.
  AC_MEMBER static void sync_compute() {
#if defined(AC_NVIDIA) && AC_HAS_MATRIX_OPS
    if constexpr (kProducer) {
      ac_compute_sync<kThreads>();
      return;
    }
#endif
    ac_sync();
  }

  // The producer warpgroup's m-tile: its loads alone, of run's keys, into the ring where the
  // block's previous m-tile left it: it meets the computing warps at its barriers alone. The keys
  // are run's lines written again: run taking them from a shared helper cost gfx942's row
  // kernels SGPR spills.
  AC_MEMBER void load_m_tile(int32_t m_tile, int32_t split) {
    A tiles;
    tiles.setup(smem);
    row0 = m_tile * kBlockM;
    const int32_t last_row = (row0 + kBlockM < rows_total ? row0 + kBlockM : rows_total) - 1;
    const KeySpan keys = block_keys(KeyRange{p, seq.q_len, seq.k_len}, ac_row_token<kPlain>(p, row0),
                                    ac_row_token<kPlain>(p, last_row), split, p.num_splits, S.block_n);
    k_begin = keys.begin;
    k_end = keys.end;
    const int32_t n_tiles = k_begin < k_end ? (k_end - k_begin + S.block_n - 1) / S.block_n : 0;
    tiles.ring0 = ring_tiles, tiles.q_loads = ring_m_tiles;
    tiles.produce(*this, ac_thread_x() - kThreads, n_tiles);
    ring_tiles += n_tiles, ring_m_tiles += n_tiles > 0;
  }

  AC_MEMBER void run(int32_t m_tile, int32_t split) {
    // The arch's tiles live in this function: their loader state (page lookups, flags) is one
    // m-tile's, in registers, not a block-long object's.
    A tiles;
    tiles.setup(smem);
    const int tid = ac_thread_x(), lane = tid % A::kLanes, warp = tid / A::kLanes;
    const int warp_m = warp % S.warps_m, warp_n = warp / S.warps_m;
    row0 = m_tile * kBlockM;
    const int32_t last_row = (row0 + kBlockM < rows_total ? row0 + kBlockM : rows_total) - 1;
    // Decode blocks issue their rows' sink loads first, waiting for nothing (rows past the last
    // are masked at the store, once the lengths are in), and use the value only after the
    // prologue: a use next to the load stalled warp 0 for a memory round trip before its page
    // lookups, and the block's first barrier with it. Rows blocks read the sinks after the
    // prologue: one more register live across it spills at head dim 128 (NVIDIA).
    float early_sink = -AC_INFINITY;
    if constexpr (A::kEarlySinks) {
      const int32_t flat = row0 + tid;  // head kh * group + flat % group is below hq for any row
      early_sink = ac_load_sink_now(p.sinks, p.sink_type, (kh * group + ac_row_head<kPlain>(p, flat)) * p.sink_stride,
                                    p.sinks && p.num_splits == 1 && tid < kBlockM);
    }
    const int32_t t_first = ac_row_token<kPlain>(p, row0), t_last = ac_row_token<kPlain>(p, last_row);

    // Keys the block's rows need, cut into splits of whole tiles; inside `unmasked` no row masks.
    const KeyRange range{p, seq.q_len, seq.k_len};
    const KeySpan keys = block_keys(range, t_first, t_last, split, p.num_splits, S.block_n);
    k_begin = keys.begin;
    k_end = keys.end;
    const int32_t n_tiles = k_begin < k_end ? (k_end - k_begin + S.block_n - 1) / S.block_n : 0;
    const KeySpan unmasked = unmasked_keys(range, t_first, t_last, k_end);
    // With a producer warpgroup (the threads past kThreads, load_m_tile): where the ring stands.
    if constexpr (kProducer) tiles.ring0 = ring_tiles, tiles.q_loads = ring_m_tiles;

    // This thread's rows and the keys each may see.
    int32_t row_lo[A::kRowSlots], row_hi[A::kRowSlots];
#pragma unroll
    for (int slot = 0; slot < A::kRowSlots; ++slot) {
      const int32_t flat = row0 + tiles.slot_row(warp_m, lane, slot);
      const bool ok = flat < rows_total;
      row_lo[slot] = ok ? range.lo(ac_row_token<kPlain>(p, flat)) : 0;
      row_hi[slot] = ok ? range.hi(ac_row_token<kPlain>(p, flat)) : 0;
    }

    if constexpr (!kProducer) tiles.prologue(*this, tid, n_tiles);
    // The epilogue (past at least one barrier) reads the sinks from shared memory instead of
    // waiting on memory at the end.
    // (The packed tiles' sinks go where the K and V tiles are: they wait in a register until the
    // epilogue.)
    if (!S.packed() && p.num_splits == 1) {
      if constexpr (A::kEarlySinks) {
        if (tid < kBlockM) tiles.sink_s[tid] = row0 + tid < rows_total ? early_sink * kLog2e : -AC_INFINITY;
      } else {
        for (int r = tid; r < kBlockM; r += kThreads) tiles.sink_s[r] = row_sink(r) * kLog2e;
      }
    }

    typename A::Out o;
    float m_run[A::kRowSlots], l_run[A::kRowSlots];
#pragma unroll
    for (int slot = 0; slot < A::kRowSlots; ++slot) m_run[slot] = -AC_INFINITY, l_run[slot] = 0.f;
#pragma unroll
    for (int e = 0; e < A::kOutElems; ++e) tiles.at(o, e) = 0.f;
    // With a soft cap the scores are capped and scaled (to base 2) in place, below.

    // The scores' scale: the softmax scale and descales, times what the tiles divided q by.
    float qk = qk_scale;
    float scale2 = p.softcap > 0.f ? 1.f : qk * kLog2e;
    tiles.begin(warp_m, warp_n, lane);

    // With a producer warpgroup the products overlap the softmax (FlashAttention 3's
    // intra-warpgroup overlap): tile it's scores and tile it - 1's P V are issued together, the
    // scores waited for and softmaxed while P V runs, and the output rescaled once P V is in (it
    // then holds tile it - 1's keys at the reference max they were weighted against, which the
    // rescale moves to tile it's). pr: the probabilities of the tile before, packed as P V's operand.
    [[maybe_unused]] typename PendingProbabilities<A, kProducer>::type pr;
    for (int32_t it = 0; it < n_tiles; ++it) {
      tiles.ready(*this, tid, it);
      if (it == 0) {
        const float unscale = tiles.q_landed(*this);
        if (unscale != 1.f) qk *= unscale, scale2 = p.softcap > 0.f ? 1.f : qk * kLog2e;
      }
      tiles.issue_next(*this, tid, it, n_tiles);
      const int32_t j0 = k_begin + it * S.block_n;

      typename A::Scores sc;
      if constexpr (kProducer) {
        // The overlap (above): tile it's scores issued, then tile it - 1's P V beside them.
        // The first tile's empty group keeps the waits' counts the same on every path: ptxas
        // then sees the output waited for before every read of it (a wait on one path alone made
        // it wait after every product, C7514).
        tiles.issue_scores(sc, it);
        if (it > 0) tiles.issue_accumulate(o, pr, it - 1);
        else tiles.no_accumulate();
        tiles.template wait_scores<1>(sc);
      } else {
        tiles.scores(sc, it, lane);
      }
      if (p.softcap > 0.f) {
        const float inv = qk / p.softcap, cap2 = p.softcap * kLog2e;
#pragma unroll
        for (int e = 0; e < A::kScoreElems; ++e) tiles.at(sc, e) = cap2 * ac_softcap(tiles.at(sc, e) * inv, 1.f);
      }

      if (tiles.pages_masked(it) || j0 < unmasked.begin || j0 + S.block_n > unmasked.end) {
        const auto valid = tiles.valid_keys(it);
        bool key_ok[A::kKeys];  // each of this thread's keys read once, whichever rows share it
#pragma unroll
        for (int k = 0; k < A::kKeys; ++k) {
          const int key = tiles.key_at(warp_n, lane, k);
          key_ok[k] = j0 + key < k_end && valid[key];
        }
#pragma unroll
        for (int e = 0; e < A::kScoreElems; ++e) {
          const int slot = tiles.score_slot(e);
          const int32_t j = j0 + tiles.score_key(warp_n, lane, e);
          if (!key_ok[tiles.key_index(e)] || j < row_lo[slot] || j >= row_hi[slot]) tiles.at(sc, e) = -AC_INFINITY;
        }
      }

      // Online softmax per row, over the lanes that hold its keys, against each row's reference
      // max (online_softmax.hpp): where the arch skips rescales (kSkipsRescale), the output is
      // rescaled only in tiles where some row of the warp moved its reference.
      float corr[A::kRowSlots];
      bool moved = false;
#pragma unroll
      for (int slot = 0; slot < A::kRowSlots; ++slot) {
        float mx = -AC_INFINITY;
#pragma unroll
        for (int e = 0; e < A::kScoreElems; e += 2)  // pairs share a row on every arch
          if (tiles.score_slot(e) == slot) mx = fmaxf(mx, fmaxf(tiles.at(sc, e), tiles.at(sc, e + 1)));
        const MaxStep step = reference_max_step<A::kSkipsRescale>(m_run[slot], tiles.row_max(mx) * scale2);
        m_run[slot] = step.m, corr[slot] = step.corr;
        moved = moved || step.moved;
        const float m_use = exp_base(m_run[slot]);
        float sum = 0.f;
#pragma unroll
        for (int e = 0; e < A::kScoreElems; ++e)
          if (tiles.score_slot(e) == slot) {
            tiles.at(sc, e) = ac_exp2(fmaf(tiles.at(sc, e), scale2, -m_use));
            sum += tiles.at(sc, e);
          }
        l_run[slot] = l_run[slot] * corr[slot] + sum;
      }
      if constexpr (kProducer) {  // tile it - 1's P V is in: its stage is free, and the output may be rescaled
        tiles.wait_accumulate(o);
        if (it > 0) tiles.done_with(*this, tid, it - 1, n_tiles);
      }
      if (!A::kSkipsRescale || ac_warp_any(moved)) {
#pragma unroll
        for (int e = 0; e < A::kOutElems; ++e) tiles.at(o, e) *= corr[tiles.out_slot(e)];
      }

      if constexpr (kProducer) {
        tiles.probabilities(pr, sc);
      } else {
        tiles.accumulate(o, sc, it, lane);
        tiles.done_with(*this, tid, it, n_tiles);
      }
    }
    if constexpr (kProducer) {
      if (n_tiles > 0) {
        tiles.done_with_q(tid);  // every scores product of the m-tile is in: the next Q may land
        tiles.issue_accumulate(o, pr, n_tiles - 1);
        tiles.wait_accumulate(o);
        tiles.done_with(*this, tid, n_tiles - 1, n_tiles);
      }
    }

    tiles.drain();
    // A split call's merge may be launched now (portability.hpp): its blocks then wait only
    // through this block's epilogue, not its whole loop beside the split blocks still running.
    ac_allow_dependents();
    if constexpr (A::kDirectStore) {
      tiles.store_direct(*this, o, m_run[0], l_run[0], split, warp_m, lane, v_scale);
    } else {
      epilogue(tiles, o, m_run, l_run, split, warp_m, warp_n, lane, tid, v_scale, early_sink);
    }
    if constexpr (kFold) {
      if (p.num_splits > 1 && p.split_counts) ac_release_device();  // this thread's partial rows, before the count
    }
    // The next m-tile (or the fold) reuses shared memory; with a producer the computing warps'
    // alone (the sinks and the epilogue's buffer are theirs).
    sync_compute();
    if constexpr (kProducer) ring_tiles += n_tiles, ring_m_tiles += n_tiles > 0;
    if constexpr (kFold) {
      if (p.num_splits > 1 && p.split_counts) {
        fold_splits(m_tile, tid);
        ac_sync();
      }
    }
  }

  // The split merge folded into the split kernel (the launcher sets p.split_counts): each split
  // block of an m-tile counts itself in once its partial rows are stored, and the last to arrive
  // combines all of them (split_merge.hpp), reading them from L2 where they were just written:
  // no merge kernel, nothing launched between. The counters are the call's own scratch, zeroed by
  // the kernel launched just before this one (launch.cpp): right across streams and in every
  // replay of a captured graph, where counters shared between calls and reset by their last
  // block would not be. The arrival is the grid-wide barrier's (cooperative groups' grid sync):
  // the block's stores, a barrier, one thread's device-scope fence and atomic add.
  AC_MEMBER void fold_splits(int32_t m_tile, int tid) {
    float* weight_s = reinterpret_cast<float*>(smem);  // [kBlockM][AC_MAX_SPLITS]
    float* lse_s = weight_s + kBlockM * AC_MAX_SPLITS;  // [kBlockM]
    ac_f32x4* sum_s = reinterpret_cast<ac_f32x4*>(lse_s + kBlockM);  // [kThreads] (16-byte aligned: kBlockM is)
    int* last_s = reinterpret_cast<int*>(sum_s + kThreads);
    static_assert(kBlockM % 4 == 0 && S.fold_bytes() <= S.smem_bytes(), "the fold's buffers in the tiles' memory");
    if (tid == 0) {
      ac_wait_for_primary();  // the zeroing kernel's stores (launched as its programmatic dependent)
      ac_fence_device();      // the block's partial rows (before the barrier above) ordered before the count
      const int64_t at = static_cast<int64_t>(kh) * p.counts_per_head + static_cast<int64_t>(seq.q_start) * group / kBlockM +
                         seq.b + m_tile;
      *last_s = ac_arrive(p.split_counts + at) == static_cast<uint32_t>(p.num_splits - 1);
      ac_fence_device();
    }
    ac_sync();
    if (!*last_s) return;  // the same in every thread: the caller's barrier follows
    ac_acquire_device();
    const int splits = p.num_splits < AC_MAX_SPLITS ? p.num_splits : AC_MAX_SPLITS;  // the launcher caps it
    const int rows = rows_total - row0 < kBlockM ? rows_total - row0 : kBlockM;
    constexpr int kChunks4 = D / 4;  // 16-byte chunks of a partial row
    // Thread (g, x): item x (row x / kChunks4, chunk x % kChunks4) over splits g, g + groups, ...;
    // with more items than threads, items x, x + kThreads, ... over every split.
    const int items = rows * kChunks4, groups = items < kThreads ? kThreads / items : 1;
    const int g = tid / items, x0 = tid % items;
    const int64_t stride = split_stride_rows(p) * kChunks4;  // one split further, in chunks
    auto src_of = [&](int x) {
      const RowOfGroup row = ac_row_of<kPlain>(p, row0 + x / kChunks4);
      return reinterpret_cast<const ac_f32x4*>(partial_out_row(p, 0, seq.q_start + row.token, kh * group + row.head, D)) +
             x % kChunks4;
    };
    // Loads in flight per thread: 8 of 16 bytes on NVIDIA, 4 on AMD's 64-lane waves (twice the
    // threads per block; 8 held gfx942's and gfx950's "keys" kernels at head dim 64 at 156-159
    // VGPRs, where 4 take 125-129).
#if defined(AC_NVIDIA)
    constexpr int kInFlight = 8;
#else
    constexpr int kInFlight = 4;
#endif
    ac_f32x4 first_v[kInFlight];  // the first item's first splits: in flight beside the (max, sum) reads
    const bool has_item = g < groups && x0 < items;
    {
      const ac_f32x4* src = src_of(has_item ? x0 : 0);
#pragma unroll
      for (int i = 0; i < kInFlight; ++i) {
        const int sp = g + i * groups;
        first_v[i] = has_item && sp < splits ? ac_load_l2(src + sp * stride) : ac_f32x4{0.f, 0.f, 0.f, 0.f};
      }
    }
    // Each row's weights, the sink entered once: warps over rows.
    const int warp = tid / AC_WARP_SIZE, lane = tid % AC_WARP_SIZE;
    for (int r = warp; r < rows; r += kThreads / AC_WARP_SIZE) {
      const RowOfGroup row = ac_row_of<kPlain>(p, row0 + r);
      const int32_t h = kh * group + row.head;
      const float lse = split_weights(p, seq.q_start + row.token, h, splits, ac_sink(p, h), lane, weight_s + r * AC_MAX_SPLITS);
      if (lane == 0) lse_s[r] = lse;
    }
    ac_sync();
    for (int x = x0; has_item && x < items; x += groups > 1 ? items : kThreads) {
      const ac_f32x4* src = src_of(x);
      const float* w = weight_s + (x / kChunks4) * AC_MAX_SPLITS;
      ac_f32x4 acc{0.f, 0.f, 0.f, 0.f};
      auto add = [&](const ac_f32x4(&v)[kInFlight], int first) {
#pragma unroll
        for (int i = 0; i < kInFlight; ++i) {
          const int sp = first + i * groups;
          const float wt = sp < splits ? w[sp] : 0.f;
          acc.x += v[i].x * wt, acc.y += v[i].y * wt, acc.z += v[i].z * wt, acc.w += v[i].w * wt;
        }
      };
      int first = g;
      if (x == x0) {  // the batch already in flight (its registers free before the next is loaded)
        add(first_v, first);
        first += groups * kInFlight;
      }
      for (; first < splits; first += groups * kInFlight) {
        ac_f32x4 v[kInFlight];
#pragma unroll
        for (int i = 0; i < kInFlight; ++i) {
          const int sp = first + i * groups;
          v[i] = sp < splits ? ac_load_l2(src + sp * stride) : ac_f32x4{0.f, 0.f, 0.f, 0.f};
        }
        add(v, first);
      }
      if (groups > 1) {
        sum_s[tid] = acc;
      } else {
        store_folded(x, acc, lse_s);
      }
    }
    if (groups > 1) {
      ac_sync();
      for (int x = tid; x < items; x += kThreads) {
        ac_f32x4 acc = sum_s[x];
        for (int gi = 1; gi < groups; ++gi) {
          const ac_f32x4 part = sum_s[gi * items + x];
          acc.x += part.x, acc.y += part.y, acc.z += part.z, acc.w += part.w;
        }
        store_folded(x, acc, lse_s);
      }
    }
  }

  // Item x of the fold (row x / (D / 4), 16-byte chunk x % (D / 4)): out in the call's type, and
  // the row's log-sum-exp with its first chunk.
  AC_MEMBER void store_folded(int x, const ac_f32x4& acc, const float* lse_s) {
    const int r = x / (D / 4), c = x % (D / 4);
    const RowOfGroup row = ac_row_of<kPlain>(p, row0 + r);
    const int32_t token = seq.q_start + row.token, h = kh * group + row.head;
    const float v[4] = {acc.x, acc.y, acc.z, acc.w};
    store_out<Tile, kKv8, 4>(p, out_index(p, token, h, c * 4), v, 1.f);
    if (c == 0 && p.lse) p.lse[lse_index(p, seq, token, h)] = lse_s[r];
  }

  // Every warp's rows into shared memory (the key tiles are free now), then each (row, 16-byte
  // chunk) combined over the warps that split its keys and written once; the packed tiles in two
  // passes over halves of the dims (kernel_params.h), their rows' sinks stored first.
  AC_MEMBER void epilogue(A& tiles, typename A::Out& o, float (&m_run)[A::kRowSlots], float (&l_run)[A::kRowSlots], int32_t split,
                          int warp_m, int warp_n, int lane, int tid, float v_scale, float early_sink) {
    constexpr int kPasses = S.epilogue_passes(), kPassCols = D / kPasses, kPassChunks = kChunks / kPasses;
    float* o_s = tiles.epilogue_buffer();
    float* m_s = o_s + S.warps_n * kBlockM * S.out_stride();
    float* l_s = m_s + S.warps_n * kBlockM;
    if constexpr (S.packed()) {
      if (p.num_splits == 1 && tid < kBlockM) tiles.sink_s[tid] = row0 + tid < rows_total ? early_sink * kLog2e : -AC_INFINITY;
    }
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      if (pass > 0) sync_compute();  // the previous pass's reads are done
#pragma unroll
      for (int slot = 0; slot < A::kRowSlots; ++slot) {
        const int r = warp_n * kBlockM + tiles.slot_row(warp_m, lane, slot);
#pragma unroll
        for (int e = 0; e < A::kOutElems; ++e) {
          const int col = tiles.out_col(lane, e);
          if (tiles.out_slot(e) == slot && (kPasses == 1 || col / kPassCols == pass))
            o_s[r * S.out_stride() + col - pass * kPassCols] = tiles.at(o, e);
        }
        if (pass == 0) {
          const float l = tiles.row_sum(l_run[slot]);
          if (tiles.slot_writer(lane)) m_s[r] = m_run[slot], l_s[r] = l;
        }
      }
      sync_compute();
      for (int x = tid; x < kBlockM * kPassChunks; x += kThreads) {
        const int r = x / kPassChunks, c = pass * kPassChunks + x % kPassChunks, flat = row0 + r;
        if (flat >= rows_total) continue;
        const RowOfGroup row = ac_row_of<kPlain>(p, flat);
        const int32_t token = seq.q_start + row.token, h = kh * group + row.head;
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
          const float* src = o_s + (w * kBlockM + r) * S.out_stride() + c * 8 - pass * kPassCols;
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[i] += src[i] * f;
        }
        if (p.num_splits > 1) {
          float* dst = partial_out_row(p, split, token, h, D) + c * 8;
#pragma unroll
          for (int i = 0; i < 8; ++i) dst[i] = acc[i] * v_scale;
          if (c == 0) store_partial_ml<true>(p, split, token, h, mx, l);
          continue;
        }
        const RowFinish fin = finish_row<true>(mx, l, tiles.sink_s[r], v_scale);
        // The fp8-cache kernels store in the call's out type (their tiles may be f16 under a bf16 out).
        store_out<Tile, kKv8, 8>(p, out_index(p, token, h, c * 8), acc, fin.scale);
        if (c == 0 && p.lse) p.lse[lse_index(p, seq, token, h)] = fin.lse;
      }
    }
  }
};

// Grid: x = m-tiles (grid-stride, heaviest causal tiles first), y = KV head, z = sequence x split.
template <typename T, ac_tiled_shape S, bool kPaged, bool kKv8, bool kFold>
AC_DEVICE void tiled_attention(const ac_attention_params& p) {
  AC_DYNAMIC_SHARED(smem);
  using Block = TiledAttention<T, S, kPaged, kKv8, kFold>;
  const int32_t b = ac_split_sequence(p, ac_block_z()), split = ac_block_z() - b * p.num_splits;
  if (b >= p.batch) return;
  const int32_t group = p.group;
  const int32_t kh = ac_block_y();
  // output_scale is the fp8-cache kernels' alone (the launcher gives calls with one over a
  // 16-bit cache to the generic kernel): the 16-bit tiles keep their registers as they were.
  const float qk_scale = p.scale * ac_qk_descale(p, b, kh), v_scale = kKv8 ? ac_out_factor(p, b, kh) : ac_v_descale(p, b, kh);
  const Sequence seq = sequence_at(p, b);
  Block a{{p, seq, kh, group, seq.q_len * group, 0, 0, 0, page_shift_of(p)}, smem, qk_scale, v_scale};
  const int32_t m_tiles = (a.rows_total + Block::kBlockM - 1) / Block::kBlockM;
#if defined(AC_NVIDIA) && AC_HAS_WARPGROUP_MMA
  if constexpr (Block::kProducer) {
    // Each role's loop over the m-tiles is its own code, given its own registers: the producer's
    // loads need few, the computing warps take the rest (stage_barriers.hpp).
    {  // the ring's barriers, once for all the block's m-tiles
      typename Block::A tiles;
      tiles.setup(smem);
      tiles.start_stages(ac_thread_x());
    }
    if (ac_thread_x() >= Block::kThreads) {
      ac_registers_at_most<ac_producer_registers(Block::kThreads / 128)>();
      for (int32_t i = ac_block_x(); i < m_tiles; i += ac_grid_x()) a.load_m_tile(m_tiles - 1 - i, split);
    } else {
      ac_registers_at_least<ac_compute_registers(Block::kThreads / 128)>();
      for (int32_t i = ac_block_x(); i < m_tiles; i += ac_grid_x()) a.run(m_tiles - 1 - i, split);
    }
  } else
#endif
  {
    for (int32_t i = ac_block_x(); i < m_tiles; i += ac_grid_x()) a.run(m_tiles - 1 - i, split);
  }
}

}  // namespace

// Contiguous (varlen, batch) and paged KV are separate kernels: the block-table lookups ahead of
// each tile cost registers that the contiguous case should not pay. The fp8 caches are paged
// (unified_attention's and the paged decode's).
#if defined(AC_NVIDIA)
#define AC_TILED_KERNEL_OF(name, T, shape, paged, kv8, fold) \
  extern "C" __global__ __launch_bounds__(shape.threads(), shape.blocks_per_sm) void name(ac_attention_params p) { tiled_attention<T, shape, paged, kv8, fold>(p); }
#else
// Two blocks of four waves per CU (CDNA) or WGP (RDNA): two waves per SIMD (four SIMDs each), at
// most 256 VGPRs and AGPRs each on CDNA.
#define AC_TILED_KERNEL_OF(name, T, shape, paged, kv8, fold)                                                     \
  extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(shape.threads(), shape.threads()))) \
  __attribute__((amdgpu_waves_per_eu(shape.waves_per_simd()))) void name(ac_attention_params p) {                  \
    tiled_attention<T, shape, paged, kv8, fold>(p);                                                              \
  }
#endif
#define AC_TILED_KERNEL(name, T, shape, paged, kv8) AC_TILED_KERNEL_OF(name, T, shape, paged, kv8, false)
#define AC_TILED_KERNELS_OF(kind, shape_of, fold)                                                      \
  AC_TILED_KERNEL_OF(ac_tiled_##kind##_bf16_d64, BF16, shape_of(64), false, false, fold)               \
  AC_TILED_KERNEL_OF(ac_tiled_##kind##_bf16_d128, BF16, shape_of(128), false, false, fold)             \
  AC_TILED_KERNEL_OF(ac_tiled_##kind##_f16_d64, F16, shape_of(64), false, false, fold)                 \
  AC_TILED_KERNEL_OF(ac_tiled_##kind##_f16_d128, F16, shape_of(128), false, false, fold)               \
  AC_TILED_KERNEL_OF(ac_tiled_##kind##_paged_bf16_d64, BF16, shape_of(64), true, false, fold)          \
  AC_TILED_KERNEL_OF(ac_tiled_##kind##_paged_bf16_d128, BF16, shape_of(128), true, false, fold)        \
  AC_TILED_KERNEL_OF(ac_tiled_##kind##_paged_f16_d64, F16, shape_of(64), true, false, fold)            \
  AC_TILED_KERNEL_OF(ac_tiled_##kind##_paged_f16_d128, F16, shape_of(128), true, false, fold)          \
  AC_TILED_KERNEL_OF(ac_tiled_##kind##_paged_bf16_kv8_d64, BF16, shape_of(64), true, true, fold)       \
  AC_TILED_KERNEL_OF(ac_tiled_##kind##_paged_bf16_kv8_d128, BF16, shape_of(128), true, true, fold)     \
  AC_TILED_KERNEL_OF(ac_tiled_##kind##_paged_f16_kv8_d64, F16, shape_of(64), true, true, fold)         \
  AC_TILED_KERNEL_OF(ac_tiled_##kind##_paged_f16_kv8_d128, F16, shape_of(128), true, true, fold)
#define AC_TILED_KERNELS(kind, shape_of) AC_TILED_KERNELS_OF(kind, shape_of, false)
// One head dim's six kernels. Head dim 256: the row shapes alone (kernel_table.cpp says why).
#define AC_TILED_KERNELS_AT(kind, shape_of, d)                                                   \
  AC_TILED_KERNEL(ac_tiled_##kind##_bf16_d##d, BF16, shape_of(d), false, false)                  \
  AC_TILED_KERNEL(ac_tiled_##kind##_f16_d##d, F16, shape_of(d), false, false)                    \
  AC_TILED_KERNEL(ac_tiled_##kind##_paged_bf16_d##d, BF16, shape_of(d), true, false)             \
  AC_TILED_KERNEL(ac_tiled_##kind##_paged_f16_d##d, F16, shape_of(d), true, false)               \
  AC_TILED_KERNEL(ac_tiled_##kind##_paged_bf16_kv8_d##d, BF16, shape_of(d), true, true)          \
  AC_TILED_KERNEL(ac_tiled_##kind##_paged_f16_kv8_d##d, F16, shape_of(d), true, true)
#define AC_TILED_KERNELS_D256(kind, shape_of) AC_TILED_KERNELS_AT(kind, shape_of, 256)
#if defined(AC_NVIDIA)
AC_TILED_KERNELS(rows, ac_tiled_rows_shape)
AC_TILED_KERNELS_D256(rows, ac_tiled_rows_shape)
AC_TILED_KERNELS(keys, ac_tiled_keys_shape)
// The "keys" kernels again with the split merge folded in ("keys_fold": the launcher's fold mode,
// AITER_COMPAT_SPLIT_MERGE=fold; NVIDIA and CDNA). Kept out of the kernels every decode runs: its
// code there cost the NVIDIA window decode's kernel 2 registers, its first copy 16 instructions
// later and its first product 73 (sm_90 SASS), and gfx950's paged head dim 64 kernel a wave per
// SIMD, for a merge that runs only where it is asked for (docs/kernel-notes.md, version 16).
AC_TILED_KERNELS_OF(keys_fold, ac_tiled_keys_shape, true)
#if AC_HAS_WARPGROUP_MMA
AC_TILED_KERNELS(wgmma, ac_tiled_wgmma_shape)
// Their producer twins (kernel_params.h, ac_tiled_wgmma_producer_shape), taken where asked for
// (launch.cpp: producer_twins, takes_producer_twin).
AC_TILED_KERNELS(wgmma_producer, ac_tiled_wgmma_producer_shape)
#endif
#elif defined(__gfx1250__)
AC_TILED_KERNELS(rows, ac_tiled_rows_shape_gfx1250)
AC_TILED_KERNELS_D256(rows, ac_tiled_rows_shape_gfx1250)
AC_TILED_KERNELS(keys, ac_tiled_keys_shape_gfx1250)
#elif defined(AC_HAS_WMMA)
// The head dims whose WMMA tiles fit the registers without scratch (kernel_table.cpp,
// tiled_dims_on): RDNA3 64, RDNA4 64 and 128.
AC_TILED_KERNELS_AT(rows, ac_tiled_rows_shape_rdna, 64)
AC_TILED_KERNELS_AT(keys, ac_tiled_keys_shape_rdna, 64)
#if !defined(__GFX11__)
AC_TILED_KERNELS_AT(rows, ac_tiled_rows_shape_rdna, 128)
AC_TILED_KERNELS_AT(keys, ac_tiled_keys_shape_rdna, 128)
#endif
#else
AC_TILED_KERNELS(rows, ac_tiled_rows_shape_amd)
AC_TILED_KERNELS_D256(rows, ac_tiled_rows_shape_amd)
#if defined(__gfx950__)
AC_TILED_KERNELS(keys, ac_tiled_keys_shape_gfx950)
AC_TILED_KERNELS_OF(keys_fold, ac_tiled_keys_shape_gfx950, true)
#else
AC_TILED_KERNELS(keys, ac_tiled_keys_shape_amd)
AC_TILED_KERNELS_OF(keys_fold, ac_tiled_keys_shape_amd, true)
#endif
#endif
#undef AC_TILED_KERNELS
#undef AC_TILED_KERNELS_OF
#undef AC_TILED_KERNELS_D256
#undef AC_TILED_KERNELS_AT
#undef AC_TILED_KERNEL
#undef AC_TILED_KERNEL_OF

#endif  // AC_HAS_MATRIX_OPS
