// The NVIDIA tiles of the tiled attention kernels (sm_80 and later; the warpgroup shape on
// sm_90a): fragments of mma.sync m16n8k16 (fragment_layouts.hpp's Mma16x8), loaded from
// swizzled shared-memory tiles with ldmatrix, K and V streamed in with cp.async through a ring
// of `stages`, and on sm_90a the warpgroup MMAs of warpgroup_ops.hpp on the same tiles. What the
// mainloop (tiled_attention.hpp) asks of an arch, and nothing else.
#pragma once

#include "fragment_layouts.hpp"
#include "kernel_common.hpp"
#include "kv_rows.hpp"
#include "matrix_ops.hpp"
#include "stage_barriers.hpp"
#include "tile_context.hpp"
#include "warpgroup_ops.hpp"

#if defined(AC_NVIDIA) && AC_HAS_MATRIX_OPS
namespace {

// kKv8: the KV cache holds fp8 codes. Each thread copies its chunks' codes (16 per row slot,
// 16 bytes) into its row of the ring slot, a row's codes contiguous and in the cache's order
// (code_at), and once its own copies have landed converts them into the row's 16-bit chunks
// (ready()): only the lanes of its warp that share the row touch those bytes before the barrier,
// so the ring, its shared memory and the MMAs stay as they are.
template <typename T, ac_tiled_shape S, bool kPaged, bool kKv8>
struct NvTiles {
  using L = ac_layout::Mma16x8;
  static constexpr int D = S.head_dim;
  static constexpr int kLanes = 32;
  // The threads that copy: the producer warpgroup's where the shape has one, else every thread.
  static constexpr bool kProducer = S.producer_warps > 0;
  static constexpr int kThreads = kProducer ? S.producer_warps * 32 : S.threads();
  static constexpr int kComputeThreads = S.compute_threads();
  static constexpr int kBlockM = S.block_m();
  static constexpr int kWarpKeys = S.block_n / S.warps_n;  // keys of a tile each warp takes
  static constexpr int kKeyTiles = kWarpKeys / 8;          // 8-key score fragments per warp
  static constexpr int kChunks = D / 8;                    // 16-byte chunks per row
  // Each thread copies two 16-byte chunks of a row per slot: one address (and block-table
  // entry) per 32 bytes of K and of V.
  static constexpr int kSlots = kChunks / 2;                   // per row
  static constexpr int kLoads = S.block_n * kSlots / kThreads;  // rows per thread per tile
  static_assert(kWarpKeys % 16 == 0 && D % 16 == 0 && S.block_n * kSlots % kThreads == 0, "tile shape");
  static_assert(kLanes % kSlots == 0, "the lanes copying one row are one warp's (convert_own)");
  static_assert(kThreads % kSlots == 0, "a thread's rows start at one chunk (row, chunk)");
  // "keys" shapes keep their 16 query rows in registers (16 or 32 of them) for the whole loop,
  static constexpr bool kQInRegisters = S.warps_n > 1 && S.m_tiles == 1;
  // and issue their sinks' loads first (run), one row per thread.
  static constexpr bool kEarlySinks = kQInRegisters && kBlockM <= kThreads;
  static constexpr bool kWarpgroup = S.warpgroup != 0;
  static_assert(!kWarpgroup || (S.warps_m % 4 == 0 && S.m_tiles == 1 && S.warps_n == 1), "warpgroup shape");
  // (Its computing warps overlap the products with the softmax: the mainloop, tiled_attention.hpp.)
  static_assert(!kProducer || (kWarpgroup && S.producer_warps == 4 && S.stages >= 2), "a producer warpgroup feeds warpgroup tiles");
  static constexpr bool kDirectStore = false;  // the epilogue combines the warps in shared memory
  // The output is rescaled only where a row's reference max moved (online_softmax.hpp): the
  // multiplies it saves are a sixth of a prefill tile's instructions at head dim 128.
  static constexpr bool kSkipsRescale = true;
  static constexpr KvLayout kKvLayout = kPaged ? KvLayout::pages : KvLayout::contiguous;

  // Fragments: element e of a thread's scores (m-tile, 8-key tile, accumulator element) and of
  // its output (m-tile, 8-column tile, element), and the rows they belong to: a thread holds
  // two rows per m-tile (lane / 4 and lane / 4 + 8).
  static constexpr int kRowSlots = 2 * S.m_tiles;
  static constexpr int kScoreElems = S.m_tiles * kKeyTiles * 4;
  static constexpr int kOutElems = S.m_tiles * kChunks * 4;
  struct Scores { float v[S.m_tiles][kKeyTiles][4]; };
  struct Out { float v[S.m_tiles][kChunks][4]; };
  AC_DEVICE float& at(Scores& s, int e) { return s.v[e / (kKeyTiles * 4)][(e / 4) % kKeyTiles][e % 4]; }
  AC_DEVICE float& at(Out& o, int e) { return o.v[e / (kChunks * 4)][(e / 4) % kChunks][e % 4]; }
  AC_DEVICE int score_slot(int e) { return 2 * (e / (kKeyTiles * 4)) + (e % 4) / 2; }
  AC_DEVICE int score_key(int warp_n, int lane, int e) { return warp_n * kWarpKeys + ((e / 4) % kKeyTiles) * 8 + L::c_col(lane, e % 4); }
  // The distinct keys of a thread's scores (its m-tiles share them): key k = (8-key tile, column).
  static constexpr int kKeys = kKeyTiles * 2;
  AC_DEVICE int key_index(int e) { return ((e / 4) % kKeyTiles) * 2 + e % 2; }
  AC_DEVICE int key_at(int warp_n, int lane, int k) { return warp_n * kWarpKeys + (k / 2) * 8 + L::c_col(lane, k % 2); }
  AC_DEVICE int out_slot(int e) { return 2 * (e / (kChunks * 4)) + (e % 4) / 2; }
  AC_DEVICE int out_col(int lane, int e) { return ((e / 4) % kChunks) * 8 + L::c_col(lane, e % 4); }
  AC_DEVICE int slot_row(int warp_m, int lane, int slot) { return (warp_m * S.m_tiles + slot / 2) * 16 + L::c_row(lane, 2 * (slot % 2)); }
  // The four lanes of a fragment row hold its keys.
  AC_DEVICE float row_max(float v) {
    v = fmaxf(v, ac_shfl_xor(v, 1));
    return fmaxf(v, ac_shfl_xor(v, 2));
  }
  AC_DEVICE float row_sum(float v) {
    v += ac_shfl_xor(v, 1);
    return v + ac_shfl_xor(v, 2);
  }
  AC_DEVICE bool slot_writer(int lane) { return lane % 4 == 0; }

  // Rows are stored 16-byte chunk c of row r at chunk c ^ (r % 8): the 8 rows one matrix load
  // reads then fall in 8 different bank groups. The warpgroup shape splits each row into
  // 64-element panels, a tile of `rows` rows per panel (warpgroup_ops.hpp: its canonical layout).
  AC_DEVICE int swizzle(int row, int chunk, int rows) {
    if constexpr (kWarpgroup) return (chunk >> 3) * rows * 64 + row * 64 + (((chunk & 7) ^ (row & 7)) << 3);
    return row * D + ((chunk ^ (row & 7)) << 3);
  }

  // kKv8: where the 16 codes of row `row`'s chunk pair `pair` land (16-bit elements into the
  // tile). A row's codes are contiguous, as in the cache: copies whose 16-byte pieces of one
  // 32-byte sector went 32 bytes apart in shared memory (each to the first half of its 16-bit
  // values) were one L2 request apiece (H100, ncu: four per 64-byte row, 4x the bf16 kernel's
  // requests for half its bytes, the L2's tag lookups 76% busy). At head dim 64 the rows' codes
  // alternate halves of the row's 128 bytes, so that the 8 rows a warp copies cover all 32 banks.
  AC_DEVICE int code_at(int row, int pair) {
    constexpr int kRowElems = kWarpgroup ? 64 : D;  // a row's elements in its (first) panel
    return row * kRowElems + (D == 64 ? (row & 1) * 32 : 0) + pair * 8;
  }

  uint16_t* q_s;
  uint16_t* k_s;
  uint16_t* v_s;
  uint8_t* valid_s;
  float* sink_s;  // [block_m]: the sink of each row's head (log2 units), -inf without sinks
  // With a producer: each stage's barriers (stage_barriers.hpp) and its producer warps' flags
  // (1: the tile met a block-table entry outside the cache), one byte per warp.
  uint64_t* landed_s;
  uint64_t* free_s;
  uint64_t* q_free_s;  // the computing warps are past the m-tile's last scores: Q's tile may be reloaded
  uint8_t* bad_s;
  // With a producer the ring runs on across the block's m-tiles (the producer fills it with the
  // next m-tile's keys while the computing warps finish the last one): ring0 is the count of
  // tiles the block put through it before this m-tile, q_loads the count of earlier m-tiles
  // that had tiles (each loaded Q once). 0 without a producer.
  uint32_t ring0 = 0, q_loads = 0;
  // The ring slot and the barriers' phase parity of the m-tile's tile it.
  AC_MEMBER uint32_t slot_of(int32_t it) const { return kProducer ? (ring0 + it) % S.stages : it % S.stages; }
  AC_MEMBER uint32_t parity_of(int32_t it) const { return ((ring0 + it) / S.stages) & 1u; }
  // Fragment-load addresses (shared-memory offsets) and the Q fragments kept in registers.
  uint32_t q_rows, k_rows, v_rows, swz_a, swz_b;
  uint32_t a_q[kQInRegisters ? D / 16 : 1][4];
  // Tiles that hold a block-table entry outside the cache (bit tile % 32): learnt at the
  // barrier after their copies were issued, and masked; the other interior tiles are not.
  bool bad_page = false;
  uint32_t bad_tiles = 0;
  int32_t next_pages[kLoads];  // block-table entries of the next tile to load
  // kKv8: where this thread's first row's codes (code_at) and first 16-bit chunk (swizzle) are in
  // a ring slot, in elements, set once (begin): its other rows are kRowStep further each (they
  // share row % 8), so a tile's conversion adds the slot's offset alone. Computed per tile, the
  // two places cost about 27 instructions per thread and tile.
  uint32_t cvt_codes = 0, cvt_values = 0;
  static constexpr int kRowsApart = kThreads / kSlots;  // row(tid, i + 1) - row(tid, i)
  static constexpr int kRowStep = (kWarpgroup ? 64 : D) * kRowsApart;
  static_assert(kRowsApart % 8 == 0, "a thread's rows share their swizzle (row % 8) and code_at's half (row % 2)");

  AC_DEVICE unsigned char* aligned(unsigned char* smem) {
    // Warpgroup operands: tiles 1024-byte aligned in the shared window (smem_bytes has the room).
    return smem + (S.warpgroup ? (1024u - ac_smem_addr(smem) % 1024u) % 1024u : 0u);
  }
  AC_MEMBER void setup(unsigned char* smem) {
    unsigned char* base = aligned(smem);
    q_s = reinterpret_cast<uint16_t*>(base);
    k_s = q_s + kBlockM * D;
    v_s = k_s + S.stages * S.block_n * D;
    valid_s = reinterpret_cast<uint8_t*>(v_s + S.stages * S.block_n * D);
    sink_s = reinterpret_cast<float*>(base + S.sink_offset());
    landed_s = reinterpret_cast<uint64_t*>(base + S.stage_sync_offset());
    free_s = landed_s + S.stages;
    q_free_s = free_s + S.stages;
    bad_s = reinterpret_cast<uint8_t*>(q_free_s + 1);
  }

  AC_MEMBER void load_q(const TileContext& c, int tid) {
    if (kKv8 && (c.p.q_type == AC_DTYPE_E4M3FN || c.p.q_type == AC_DTYPE_E4M3FNUZ)) {
      // fp8 queries: 8 codes per 16-byte chunk, loaded and converted here (once per m-tile).
      const uint8_t* q8 = static_cast<const uint8_t*>(c.p.q);
      const bool fnuz = ac_is_fnuz(c.p.q_type);
      for (int x = tid; x < kBlockM * kChunks; x += kThreads) {
        const int r = x / kChunks, ch = x % kChunks, flat = c.row0 + r;
        ac_u32x4 out{0, 0, 0, 0};
        if (flat < c.rows_total) {
          const RowOfGroup of = ac_row_of<S.plain_row_divide()>(c.p, flat);
          const int32_t t = of.token, g = of.head;
          const ac_u32x2 codes = *reinterpret_cast<const ac_u32x2*>(q8 + (c.seq.q_start + t) * c.p.q_tok +
                                                              (c.kh * c.group + g) * c.p.q_head + ch * 8);
          ac_e4m3x4_to_16bit<T>(codes.x, fnuz, out.x, out.y);
          ac_e4m3x4_to_16bit<T>(codes.y, fnuz, out.z, out.w);
        }
        *reinterpret_cast<ac_u32x4*>(q_s + swizzle(r, ch, kBlockM)) = out;
      }
      return;
    }
    const uint16_t* q = static_cast<const uint16_t*>(c.p.q);
    for (int x = tid; x < kBlockM * kChunks; x += kThreads) {
      const int r = x / kChunks, ch = x % kChunks, flat = c.row0 + r;
      const bool ok = flat < c.rows_total;
      const RowOfGroup of = ac_row_of<S.plain_row_divide()>(c.p, flat);
      const int32_t t = ok ? of.token : 0, g = ok ? of.head : 0;
      ac_copy16_async(q_s + swizzle(r, ch, kBlockM), q + (c.seq.q_start + t) * c.p.q_tok + (c.kh * c.group + g) * c.p.q_head + ch * 8,
                      ok);
    }
  }

  // This thread's rows of a tile (row(i), i < kLoads) and the first of the two 16-byte chunks it
  // copies of each (chunk()): every row of a thread starts at the same chunk (kThreads is a
  // multiple of kSlots), so a row's addresses differ from its neighbour's by its page alone.
  AC_DEVICE int row(int tid, int i) { return tid / kSlots + i * kRowsApart; }
  AC_DEVICE int chunk(int tid) { return (tid % kSlots) * 2; }

  // Block-table entries of this thread's rows of keys [j0, j0 + block_n), read one tile ahead
  // of their use so that the copies never wait on the table (-1: past the keys).
  AC_MEMBER void lookup_pages(const TileContext& c, int tid, int32_t j0, int32_t (&pages)[kLoads]) {
    if (!kPaged) return;
    const auto rows = c.rows<kKvLayout>();
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int32_t j = j0 + row(tid, i);
      pages[i] = j < c.k_end ? rows.page32(j) : -1;
    }
  }

  // Keys [j0, j0 + block_n) into ring slot `stage`; rows past k_end or on a block-table entry
  // outside the cache are zero and marked invalid. Returns whether this thread met such an entry.
  // Addresses in bytes from the thread's first chunk of the head's rows (kv_rows.hpp, bytes32).
  AC_MEMBER bool load_keys(const TileContext& c, int tid, int32_t j0, int stage, const int32_t (&pages)[kLoads]) {
    bool bad = false;
    using KvElem = typename KvStorage<kKv8>::type;
    constexpr int kElem = sizeof(KvElem);
    const int ch = chunk(tid);
    // The head's rows (uniform) and this thread's first chunk of them.
    const char* k = reinterpret_cast<const char*>(c.p.k) + c.kh * c.p.k_head * kElem;
    const char* v = reinterpret_cast<const char*>(c.p.v) + c.kh * c.p.v_head * kElem;
    const uint32_t chunk_bytes = ch * 8 * kElem;
    uint16_t* ks = k_s + stage * S.block_n * D;
    uint16_t* vs = v_s + stage * S.block_n * D;
    const auto rows = c.rows<kKvLayout>();
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int r = row(tid, i);
      const int32_t j = j0 + r;
      const bool valid = rows.valid(pages[i]);
      bad = bad || (j < c.k_end && !valid);
      const bool ok = j < c.k_end && valid;
      // A row that is skipped reads nothing; its address is still one of the cache's (page 0's,
      // or the sequence's first key): chosen by one 32-bit select rather than 64-bit ones.
      const KvBytes at = rows.template bytes32<kElem>(kPaged || ok ? j : 0, ok ? pages[i] : 0);
      const char* kp = k + chunk_bytes + at.k;
      const char* vp = v + chunk_bytes + at.v;
      if constexpr (kKv8) {  // the 16 codes of the two 16-byte chunks they become
        ac_copy16_async(ks + code_at(r, ch / 2), kp, ok);
        ac_copy16_async(vs + code_at(r, ch / 2), vp, ok);
      } else {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          ac_copy16_async(ks + swizzle(r, ch + h, S.block_n), kp + h * 16, ok);
          ac_copy16_async(vs + swizzle(r, ch + h, S.block_n), vp + h * 16, ok);
        }
      }
      if (ch == 0) valid_s[stage * S.block_n + r] = ok;
    }
    return bad;
  }

  // Q, then the first stages - 1 tiles, each its own copy group (empty ones keep the count uniform).
  AC_MEMBER void prologue(const TileContext& c, int tid, int32_t n_tiles) {
    bad_page = false;  // per m-tile: nothing carries over from the block's previous one
    bad_tiles = 0;
    load_q(c, tid);
    int32_t pages[S.stages - 1][kLoads];
#pragma unroll
    for (int st = 0; st < S.stages - 1; ++st) lookup_pages(c, tid, c.k_begin + st * S.block_n, pages[st]);
    lookup_pages(c, tid, c.k_begin + (S.stages - 1) * S.block_n, next_pages);
#pragma unroll
    for (int st = 0; st < S.stages - 1; ++st) {
      if (st < n_tiles) bad_page = load_keys(c, tid, c.k_begin + st * S.block_n, st, pages[st]) || bad_page;
      ac_copy_commit();
    }
  }

  // This thread's chunks of tile `it` (their copies landed), fp8 codes to 16-bit values. The
  // values of a row overwrite codes of the row that other lanes copied: every lane of the warp
  // reads its codes before any writes (the lanes of a row are one warp's). The format is chosen
  // once per tile: tested per pair of codes (sm_89's conversion for e4m3fn, the portable decode
  // for fnuz), it put a branch beside every conversion and the portable code between them (H100,
  // ncu: a third more branches than the 16-bit kernel, and 17% of the warps' stalls waiting for
  // instructions to be fetched).
  AC_MEMBER void convert_own(const TileContext& c, int32_t it) {
    if (ac_is_fnuz(c.p.kv_type)) convert_codes<true>(it);
    else convert_codes<false>(it);
  }
  template <bool kFnuz> AC_MEMBER void convert_codes(int32_t it) {
    constexpr bool fnuz = kFnuz;
    const uint32_t slot = slot_of(it) * S.block_n * D;
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const uint32_t codes_at = slot + cvt_codes + i * kRowStep, values_at = slot + cvt_values + i * kRowStep;
      ac_u32x4 codes[2];
#pragma unroll
      for (int kv = 0; kv < 2; ++kv) codes[kv] = *reinterpret_cast<const ac_u32x4*>((kv ? v_s : k_s) + codes_at);
      ac_syncwarp();
#pragma unroll
      for (int kv = 0; kv < 2; ++kv) {
        uint16_t* tile = kv ? v_s : k_s;
        ac_u32x4 a, b;
        ac_e4m3x4_to_16bit<T>(codes[kv].x, fnuz, a.x, a.y);
        ac_e4m3x4_to_16bit<T>(codes[kv].y, fnuz, a.z, a.w);
        ac_e4m3x4_to_16bit<T>(codes[kv].z, fnuz, b.x, b.y);
        ac_e4m3x4_to_16bit<T>(codes[kv].w, fnuz, b.z, b.w);
        // The row's chunks ch and ch + 1 (ch even): their swizzled places differ in bit 3 alone.
        *reinterpret_cast<ac_u32x4*>(tile + values_at) = a;
        *reinterpret_cast<ac_u32x4*>(tile + (values_at ^ 8u)) = b;
      }
    }
  }

  // Tile `it` landed for every thread (and ring slot (it - 1) % stages is free again).
  AC_MEMBER void ready(const TileContext& c, int tid, int32_t it) {
    if constexpr (kProducer) {  // the producer's arrivals (stage_barriers.hpp)
      ac_stage_wait(landed_s + slot_of(it), parity_of(it));
      // The tensor cores read what the producer's copies (and conversions) wrote. Fenced here,
      // by threads with no stores of their own in flight: in the producer the fence waited for
      // its newest copies too (MEMBAR.ALL.CTA before it), a memory round trip in every tile.
      ac_fence_async_smem();
      return;
    }
    ac_copy_wait<S.stages - 2>();
    if constexpr (kKv8) convert_own(c, it);
#if AC_HAS_WARPGROUP_MMA
    if constexpr (kWarpgroup) ac_fence_async_smem();  // the tensor cores read what cp.async wrote
#endif
    if (kPaged) {
      const bool bad = ac_sync_or(bad_page);
      bad_page = false;
      if (it == 0) bad_tiles = bad ? (1u << (S.stages - 1)) - 1 : 0u;  // the tiles of the prologue
      else bad_tiles = (bad_tiles & ~(1u << ((it + S.stages - 2) & 31))) | (bad ? 1u << ((it + S.stages - 2) & 31) : 0u);
    } else {
      ac_sync();
    }
  }
  // Whether tile `it` holds a block-table entry outside the cache, so that it must be masked.
  AC_MEMBER bool pages_masked(int32_t it) const {
    if constexpr (kProducer) return kPaged && *reinterpret_cast<const uint32_t*>(bad_s + slot_of(it) * 4) != 0u;
    return kPaged && (bad_tiles >> (it & 31) & 1u);
  }

  // Fragment-load addresses. Every fragment row is a multiple of 8 plus lane % 8, so the
  // swizzle of chunk 2k (+ a lane bit) is (2k) ^ a per-thread constant: one base per operand.
  AC_MEMBER void begin(int warp_m, int warp_n, int lane) {
    if constexpr (kKv8 && !kProducer) {
      const int tid = ac_thread_x();
      cvt_codes = code_at(row(tid, 0), chunk(tid) / 2);
      cvt_values = swizzle(row(tid, 0), chunk(tid), S.block_n);
    }
    constexpr uint32_t kRowBytes = D * 2;
    swz_a = ((lane >> 4) ^ (lane & 7)), swz_b = (((lane >> 3) & 1) ^ (lane & 7));
    q_rows = ac_smem_addr(q_s) + ((warp_m * S.m_tiles) * 16 + lane % 16) * kRowBytes;
    k_rows = ac_smem_addr(k_s) + (warp_n * kWarpKeys + (lane / 16) * 8 + lane % 8) * kRowBytes;
    v_rows = ac_smem_addr(v_s) + (warp_n * kWarpKeys + lane % 8 + ((lane / 8) % 2) * 8) * kRowBytes;
  }

  // After the first tile's barrier (Q has landed with it): the "keys" shapes' Q fragments; over
  // an fp8 cache (f16 tiles) bf16 queries become f16 here, divided by the power of two returned
  // (1 unless the block's largest query would not fit f16: fp8_device.hpp, ac_q_unscale).
  AC_MEMBER float q_landed(const TileContext& c) {
    if constexpr (kQInRegisters) {
#pragma unroll
      for (int kd = 0; kd < D / 16; ++kd) ac_load_matrix_x4(a_q[kd], q_rows + (((kd * 2) ^ swz_a) << 4));
      if constexpr (kKv8 && ac_same<T, F16>::value) {
        if (c.p.q_type == AC_DTYPE_BF16) {
          float mx = 0.f;  // every warp holds the block's whole Q: a warp-wide maximum is the block's
#pragma unroll
          for (int kd = 0; kd < D / 16; ++kd)
#pragma unroll
            for (int i = 0; i < 4; ++i) mx = fmaxf(mx, ac_bf16x2_max_abs(a_q[kd][i]));
#pragma unroll
          for (int m = 1; m < 32; m *= 2) mx = fmaxf(mx, ac_shfl_xor(mx, m));
          const float unscale = ac_q_unscale(mx), inv = 1.f / unscale;
#pragma unroll
          for (int kd = 0; kd < D / 16; ++kd)
#pragma unroll
            for (int i = 0; i < 4; ++i) a_q[kd][i] = ac_bf16x2_to_f16x2(a_q[kd][i], inv);
          return unscale;
        }
      }
    }
    return 1.f;
  }

  // The copies of tile it + stages - 1, and the page lookups of the one after.
  AC_MEMBER void issue_next(const TileContext& c, int tid, int32_t it, int32_t n_tiles) {
    if constexpr (kProducer) return;  // the producer's
    const int32_t ahead = it + S.stages - 1;
    if (ahead < n_tiles) bad_page = load_keys(c, tid, c.k_begin + ahead * S.block_n, ahead % S.stages, next_pages);
    ac_copy_commit();
    if (ahead + 1 < n_tiles) lookup_pages(c, tid, c.k_begin + (ahead + 1) * S.block_n, next_pages);
  }
  // The ring frees slots at the next wait; with a producer, every computing thread frees the stage
  // once its warp's products have read it (their wait is past) and it is done with the flags. Each
  // thread arrives itself: an arrive releases the arriving thread's own reads, so one lane's arrive
  // after __syncwarp left the other lanes' flag reads unordered before the producer's rewrite for
  // racecheck (it reported them), whatever the warp barrier orders.
  AC_MEMBER void done_with(const TileContext&, int, int32_t it, int32_t) {
    if constexpr (kProducer) ac_stage_arrive(free_s + slot_of(it));
  }
  // With a producer: this thread's products have read Q for the last time in this m-tile.
  AC_MEMBER void done_with_q(int) {
    if constexpr (kProducer) ac_stage_arrive(q_free_s);
  }

  // The producer's ring barriers, set once for the block's m-tiles before any thread uses them.
  AC_MEMBER void start_stages(int tid) {
    if (tid == 0) {
      for (int st = 0; st < S.stages; ++st) {
        ac_stage_init(landed_s + st, kKv8 ? kThreads : 2 * kThreads);  // produce: each thread's arrivals
        ac_stage_init(free_s + st, kComputeThreads);  // free: every computing thread's arrival
      }
      ac_stage_init(q_free_s, kComputeThreads);
    }
    ac_sync();
  }

  // The producer warpgroup's loop (thread ptid of kThreads): Q, then each tile into its ring stage
  // once the computing warps freed it. Over a 16-bit cache a tile is announced by its copies
  // landing (ac_stage_arrive_on_copies) and by each thread's arrival after its flag stores: the
  // producer never waits for its copies, and the whole ring is in flight. Over an fp8 cache each
  // thread converts its own codes once they landed, so it announces a tile at most stages - 2
  // tiles behind its newest copies (announce_lag): the computing warps free a tile only once the
  // next one is in (its scores are issued beside the tile's P V), so tile a - stages + 1 must be
  // announced before the wait for tile a - stages's stage. Q is reloaded once the computing warps'
  // last scores of the block's previous m-tile read it. Nothing at all without tiles (the
  // computing warps wait for none).
  static constexpr int kLag = kKv8 ? S.announce_lag() : 0;
  AC_MEMBER void produce(const TileContext& c, int ptid, int32_t n_tiles) {
    if (n_tiles == 0) return;
    if constexpr (kKv8) {  // this thread's places in a stage (begin's, for the copying thread)
      cvt_codes = code_at(row(ptid, 0), chunk(ptid) / 2);
      cvt_values = swizzle(row(ptid, 0), chunk(ptid), S.block_n);
    }
    if (q_loads > 0) ac_stage_wait(q_free_s, (q_loads - 1) & 1u);
    load_q(c, ptid);  // (landed with tile 0: its copies are among the ones tile 0's arrival waits for)
    ac_copy_commit();
    lookup_pages(c, ptid, c.k_begin, next_pages);
    for (int32_t a = 0; a < n_tiles; ++a) {
      const int st = slot_of(a);
      if (ring0 + a >= S.stages) ac_stage_wait(free_s + st, parity_of(a) ^ 1u);
      const bool bad = load_keys(c, ptid, c.k_begin + a * S.block_n, st, next_pages);
      if constexpr (kKv8) ac_copy_commit();
      else ac_stage_arrive_on_copies(landed_s + st);
      if (a + 1 < n_tiles) lookup_pages(c, ptid, c.k_begin + (a + 1) * S.block_n, next_pages);
      if (kPaged) {
        const bool any = ac_warp_any(bad);
        if (ptid % 32 == 0) bad_s[st * 4 + ptid / 32] = any;
      }
      if constexpr (kKv8) {
        if (a >= kLag) announce<kLag>(c, a - kLag);
      } else {
        ac_stage_arrive(landed_s + st);  // the tile's flags (valid keys, bad pages) released
      }
    }
    if constexpr (kKv8)
      for (int32_t t = n_tiles > kLag ? n_tiles - kLag : 0; t < n_tiles; ++t) announce<0>(c, t);
  }
  // Over an fp8 cache: tile t landed for this thread (at most `pending` newer copy groups in
  // flight), converted, and announced (the computing warps fence for the tensor cores: ready).
  template <int pending> AC_MEMBER void announce(const TileContext& c, int32_t t) {
    ac_copy_wait<pending>();
    convert_own(c, t);
    ac_stage_arrive(landed_s + slot_of(t));
  }
  AC_MEMBER const uint8_t* valid_keys(int32_t it) const { return valid_s + slot_of(it) * S.block_n; }
  // The epilogue's buffer: the key tiles' memory, or with a producer (already loading the next
  // m-tile into them) its own.
  AC_MEMBER float* epilogue_buffer() const {
    return kProducer ? reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(q_s) + S.epilogue_offset())
                     : reinterpret_cast<float*>(q_s);
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
  // Scores of warpgroup `wg`'s 64 rows against the key tile in ring slot `stage`, issued as one
  // group (not waited for).
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
  }
  // o += P V for the key tile in ring slot `stage` (P packed: probabilities()), issued as one group.
  AC_MEMBER void warpgroup_accumulate(float (&o)[kChunks][4], const uint32_t (&pa)[S.block_n / 16][4], int stage) {
    const uint32_t v_base = ac_smem_addr(v_s) + stage * S.block_n * D * 2;
    ac_pin(o);
    ac_wg_fence();
#pragma unroll
    for (int kk = 0; kk < S.block_n / 16; ++kk)
      WarpgroupOps<T>::template mma_rs<D>(o, pa[kk], ac_smem_desc(v_base + kk * 16 * 128, S.block_n * 128, 1024));
    ac_wg_commit();
  }

  // The overlapped mainloop's steps (tiled_attention.hpp, with a producer): a tile's softmaxed
  // scores packed as the products' A operand, the scores of tile `it` and the products of the
  // probabilities of an earlier tile issued without waiting, and the waits for them (the older
  // group first: the scores when both are in flight).
  struct Probabilities { uint32_t a[S.block_n / 16][4]; };
  AC_MEMBER void probabilities(Probabilities& pr, Scores& s) {
#pragma unroll
    for (int kk = 0; kk < S.block_n / 16; ++kk) pack_probabilities(s.v[0], kk, pr.a[kk]);
  }
  AC_MEMBER void issue_scores(Scores& s, int32_t it) { warpgroup_scores(s.v[0], ac_thread_x() / 128, slot_of(it)); }
  AC_MEMBER void issue_accumulate(Out& o, const Probabilities& pr, int32_t it) { warpgroup_accumulate(o.v[0], pr.a, slot_of(it)); }
  AC_MEMBER void no_accumulate() { ac_wg_commit(); }  // an empty group in its place
  template <int pending> AC_MEMBER void wait_scores(Scores& s) {
    ac_wg_wait<pending>();
    ac_pin(s.v[0]);
  }
  AC_MEMBER void wait_accumulate(Out& o) {
    ac_wg_wait<0>();
    ac_pin(o.v[0]);
  }
#endif

  // S = Q K^T for this warp's rows and keys of tile `it`.
  AC_MEMBER void scores(Scores& s, int32_t it, int /*lane*/) {
    MatrixOps<T> mm;
    const int stage = it % S.stages;
    constexpr uint32_t kRowBytes = D * 2;
    auto& sc = s.v;
    if constexpr (kWarpgroup) {
#if AC_HAS_WARPGROUP_MMA
      warpgroup_scores(sc[0], ac_thread_x() / 128, stage);
      wait_scores<0>(s);
#endif
    } else {
      const uint32_t ks = k_rows + stage * S.block_n * kRowBytes;
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
  }

  // O += P V for tile `it`: the score fragments are already the A operand's layout.
  AC_MEMBER void accumulate(Out& out, Scores& s, int32_t it, int /*lane*/) {
    MatrixOps<T> mm;
    const int stage = it % S.stages;
    auto& o = out.v;
    auto& sc = s.v;
    if constexpr (kWarpgroup) {
#if AC_HAS_WARPGROUP_MMA
      Probabilities pr;
      probabilities(pr, s);
      warpgroup_accumulate(o[0], pr.a, stage);
      wait_accumulate(out);
#endif
    } else {
      constexpr uint32_t kRowBytes = D * 2;
      const uint32_t vs = v_rows + stage * S.block_n * kRowBytes;
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

  // Every copy landed and every warp is past the loop: the key ring may be reused (by the
  // epilogue's buffer). With a producer the ring is the producer's and the epilogue has its own
  // buffer (epilogue_buffer), which the epilogue's barriers and the one closing each m-tile guard:
  // nothing to wait for here.
  AC_MEMBER void drain() {
    if constexpr (!kProducer) {
      ac_copy_wait<0>();
      ac_sync();
    }
  }

};

template <typename T, ac_tiled_shape S, bool kPaged, bool kKv8>
using ArchTiles = NvTiles<T, S, kPaged, kKv8>;

}  // namespace
#endif
