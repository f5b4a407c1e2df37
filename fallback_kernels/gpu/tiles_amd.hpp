// The AMD tiles of the tiled attention kernels (gfx90a, gfx942, gfx950: 64-lane waves, MFMA;
// RDNA3 gfx11 and RDNA4 gfx1200/gfx1201: 32-lane waves, WMMA 16 x 16 x 16; gfx1250: WMMA 16 x 16 x 32), over the layouts of
// fragment_layouts.hpp: one type for every AMD family, the layout its only difference. The products run transposed, queries along the lanes:
//   S^T = K Q^T   (A: K rows from LDS, B: Q^T in registers for the whole loop),
//   O^T += V^T P^T (A: V^T read from LDS, B: P^T straight from S^T's accumulator registers),
// so that each lane holds whole rows (one query) of the scores and of the output: its softmax
// statistics and output rescale are its own, shared only with the lanes of the other K groups.
// K and V tiles go global -> registers (a tile ahead) -> LDS, one LDS stage, rows padded by 16
// bytes. What the mainloop (tiled_attention.hpp) asks of an arch, and nothing else.
//
// Not run on an AMD GPU here. The layouts are checked by the host model
// (tests/cpp/mfma_model_test.cpp), the code objects by tests/cpp/amd_code_objects_test.cpp
// (MFMA instructions, registers, LDS, no scratch); the rest is the mainloop the H200 runs.
#pragma once

#include "fragment_layouts.hpp"
#include "kernel_common.hpp"
#include "kv_rows.hpp"
#include "mfma_ops.hpp"
#include "row_finish.hpp"
#include "row_store.hpp"
#include "tile_context.hpp"

#if defined(AC_AMD) && AC_HAS_MATRIX_OPS
namespace {

// kKv8: the KV cache holds fp8 codes: 8 bytes per chunk come into registers, and become the
// chunk's 16-bit values on their way to LDS (store()).
template <typename T, ac_tiled_shape S, bool kPaged, bool kKv8>
struct AmdTiles {
  // The running max itself, and a rescale in every tile (online_softmax.hpp): skipping it cost
  // registers, and with them a wave per SIMD, in kernels the launcher takes by default (gfx950's
  // paged bf16 decode at head dim 128, gfx90a's paged f16 prefill at 64), to save multiplies in
  // a decode that HBM bounds 20-30 times over (bench/amd_roofline.py).
  static constexpr bool kSkipsRescale = false;
  static constexpr int N = S.tile_rows;  // the instruction's M = N: MFMA 32 ("rows") or 16 ("keys"); WMMA 16
  using L = AmdLayout<N>;
  using Map = ac_layout::AmdTileMaps<L, S.block_n / S.warps_n, S.row_pitch(), S.v_pitch(), S.lds_swizzle()>;
  using Frag = AmdFrag<L::kElems>;
  using Acc = AmdAcc<L>;
  static constexpr int D = S.head_dim;
  static constexpr int kLanes = L::kLanes;
  static constexpr int kThreads = S.threads();
  static constexpr int kBlockM = S.block_m();
  static constexpr int kPitch = S.row_pitch();               // 16-bit elements per LDS row
  static constexpr int kWarpKeys = S.block_n / S.warps_n;    // keys of a tile each wave scores
  static constexpr int kKeyChunks = kWarpKeys / N;           // N-key score accumulators per wave
  static constexpr int kDimBlocks = D / N;                   // N-dim output accumulators
  static constexpr int kKSteps = D / L::kK;                  // S^T: instructions over the head dim
  static constexpr int kPSteps = kWarpKeys / L::kK;          // O^T: instructions over the wave's keys
  static constexpr int kStoreRun = L::kRun >= 4 ? 4 : 1;     // consecutive output dims stored at once
  static constexpr int kChunks = D / 8;                      // 16-byte chunks per row
  static constexpr int kLoads = S.block_n * kChunks / kThreads;  // chunks per thread per tile, of K and of V
  // Unpadded, swizzled LDS rows, each wave loading its own keys (kernel_params.h, packed).
  static constexpr bool kPacked = S.packed();
  static_assert(S.lanes == L::kLanes && L::kN == N && S.m_tiles == 1 && S.stages == 1 && kWarpKeys % N == 0 &&
                kWarpKeys % L::kK == 0, "AMD tile shape");
  static_assert(S.block_n * kChunks % kThreads == 0 && (S.warps_m == 1 || S.warps_n == 1), "AMD tile shape");
  static_assert(!kPacked || (S.warps_m == 1 && kLanes == 64 && kWarpKeys <= 32 && kChunks == S.lds_swizzle() &&
                             kWarpKeys * kChunks == kLoads * kLanes && kLanes % kChunks == 0),
                "packed tiles: 64-lane waves over keys, each loading its own (at most 32) keys");
  static constexpr bool kEarlySinks = S.warps_n > 1 && kBlockM <= kThreads;
  static_assert(!kPacked || kEarlySinks, "the packed tiles hold their rows' sinks in registers until the epilogue");
  static constexpr bool kWarpgroup = false;
  // Row tiles own their rows whole: the output goes from registers to memory. Key tiles combine
  // the waves' partial results in LDS, as on NVIDIA.
  static constexpr bool kDirectStore = S.warps_n == 1;

  static constexpr int kRowSlots = 1;  // each lane holds one query row
  static constexpr int kScoreElems = kKeyChunks * L::kRegs;
  static constexpr int kOutElems = kDimBlocks * L::kRegs;
  struct Scores { Acc v[kKeyChunks]; };
  struct Out { Acc v[kDimBlocks]; };
  AC_DEVICE float& at(Scores& s, int e) { return s.v[e / L::kRegs].v[e % L::kRegs]; }
  AC_DEVICE float& at(Out& o, int e) { return o.v[e / L::kRegs].v[e % L::kRegs]; }
  AC_DEVICE int score_slot(int) { return 0; }
  AC_DEVICE int score_key(int warp_n, int lane, int e) { return Map::score_key(warp_n, lane, e); }
  // Every score element is a key of its own (one row per lane).
  static constexpr int kKeys = kScoreElems;
  AC_DEVICE int key_index(int e) { return e; }
  AC_DEVICE int key_at(int warp_n, int lane, int k) { return score_key(warp_n, lane, k); }
  AC_DEVICE int out_slot(int) { return 0; }
  AC_DEVICE int out_col(int lane, int e) { return Map::out_dim(lane, e); }
  AC_DEVICE int slot_row(int warp_m, int lane, int) { return Map::row(warp_m, lane); }
  // The lanes holding one query differ in the lane bits from N up (their K groups).
  AC_DEVICE float row_max(float v) {
#pragma unroll
    for (int mask = Map::first_row_mask(); mask < kLanes; mask *= 2) v = fmaxf(v, ac_shfl_xor(v, mask));
    return v;
  }
  AC_DEVICE float row_sum(float v) {
#pragma unroll
    for (int mask = Map::first_row_mask(); mask < kLanes; mask *= 2) v += ac_shfl_xor(v, mask);
    return v;
  }
  AC_DEVICE bool slot_writer(int lane) { return lane < N; }

  uint16_t* k_s;
  uint16_t* v_s;
  uint8_t* valid_s;      // one byte per key of the tile in LDS (none when packed: valid_bits)
  uint32_t valid_bits;   // packed: bit k, this wave's key k of the tile in LDS is valid (a ballot)
  float* sink_s;
  // One chunk (8 elements) of a K or V row as loaded: 16 bytes, or 8 bytes of fp8 codes.
  using Chunk = typename KvStorage<kKv8>::chunk8;
  using KvElem = typename KvStorage<kKv8>::type;

  Frag q[kKSteps];               // Q^T: this lane's query, kElems dims per instruction
  float q_unscale = 1.f;         // what Q was divided by (bf16 queries into f16 tiles), else 1
  Chunk kr[kLoads], vr[kLoads];  // the next tile's K and V chunks, on their way to LDS
  bool row_ok[kLoads];

  // An A or B operand from LDS or memory at p (its element 0): one vector read per run of
  // consecutive K values (fragment_layouts.hpp, elem_run: gfx1250's two runs, one elsewhere).
  // One run: the operand in place (a reference, so that `ok ? read_frag(..) : Frag{}` is the
  // plain conditional load it was before gfx1250, and compiles to the same code).
  AC_DEVICE decltype(auto) read_frag(const uint16_t* p) {
    constexpr int kRunElems = ac_layout::elem_run<L>;
    if constexpr (kRunElems == L::kElems) {
      return *reinterpret_cast<const Frag*>(p);
    } else {
      Frag f;
#pragma unroll
      for (int r = 0; r < L::kElems / kRunElems; ++r)
        *reinterpret_cast<AmdFrag<kRunElems>*>(f.w + r * kRunElems / 2) =
            *reinterpret_cast<const AmdFrag<kRunElems>*>(p + ac_layout::elem_run_k<L>(r));
      return f;
    }
  }

  AC_MEMBER void setup(unsigned char* smem) {
    k_s = reinterpret_cast<uint16_t*>(smem);
    v_s = k_s + S.block_n * kPitch;
    valid_s = kPacked ? nullptr : reinterpret_cast<uint8_t*>(v_s + S.v_elems());
    valid_bits = 0;
    sink_s = reinterpret_cast<float*>(smem + S.sink_offset());
  }

  // Q^T as the B operand of S^T = K Q^T: lane `lane` holds its query's dims kK s + ab_k(lane, 0..3).
  AC_MEMBER void load_q(const TileContext& c, int tid) {
    const int lane = tid % kLanes, warp_m = (tid / kLanes) % S.warps_m;
    const int32_t flat = c.row0 + slot_row(warp_m, lane, 0);
    const bool ok = flat < c.rows_total;
    const RowOfGroup of = ac_row_of(c.p, flat);
    const int32_t t = ok ? of.token : 0, g = ok ? of.head : 0;
    const int64_t row = (c.seq.q_start + t) * c.p.q_tok + (c.kh * c.group + g) * c.p.q_head;
    if (kKv8 && (c.p.q_type == AC_DTYPE_E4M3FN || c.p.q_type == AC_DTYPE_E4M3FNUZ)) {  // 4 codes per step
      const uint8_t* base = static_cast<const uint8_t*>(c.p.q) + row;
      const bool fnuz = ac_is_fnuz(c.p.q_type);
#pragma unroll
      for (int s = 0; s < kKSteps; ++s)
#pragma unroll
        for (int i = 0; i < L::kElems / 4; ++i) {
          q[s].w[2 * i] = q[s].w[2 * i + 1] = 0;
          if (ok)
            ac_e4m3x4_to_16bit<T>(*reinterpret_cast<const uint32_t*>(base + Map::q_dim(s, lane, 4 * i)), fnuz, q[s].w[2 * i],
                                  q[s].w[2 * i + 1]);
        }
      return;
    }
    const uint16_t* base = static_cast<const uint16_t*>(c.p.q) + row;
#pragma unroll
    for (int s = 0; s < kKSteps; ++s)
      q[s] = ok ? read_frag(base + Map::q_dim(s, lane, 0)) : Frag{};
    if constexpr (kKv8 && ac_same<T, F16>::value && S.warps_n > 1) {
      // bf16 queries into the decode tiles' f16 (fp8_device.hpp, ac_q_unscale): each wave holds
      // the block's whole Q, so a wave-wide maximum is the block's.
      if (c.p.q_type == AC_DTYPE_BF16) {
        float mx = 0.f;
#pragma unroll
        for (int s = 0; s < kKSteps; ++s)
#pragma unroll
          for (int i = 0; i < L::kElems / 2; ++i) mx = fmaxf(mx, ac_bf16x2_max_abs(q[s].w[i]));
#pragma unroll
        for (int m = 1; m < kLanes; m *= 2) mx = fmaxf(mx, ac_shfl_xor(mx, m));
        q_unscale = ac_q_unscale(mx);
        const float inv = 1.f / q_unscale;
#pragma unroll
        for (int s = 0; s < kKSteps; ++s)
#pragma unroll
          for (int i = 0; i < L::kElems / 2; ++i) q[s].w[i] = ac_bf16x2_to_f16x2(q[s].w[i], inv);
      }
    }
  }

  // Keys [j0, j0 + block_n) of K and V into registers, 16 bytes per chunk; rows past k_end or on
  // a block-table entry outside the cache are zero and marked invalid.
  // Addresses in bytes with 32-bit strides (kv_rows.hpp, page32 and bytes32: one v_mad_u64_u32
  // per row where the element offsets took 64-bit products).
  AC_MEMBER void fetch(const TileContext& c, int tid, int32_t j0) {
    constexpr int kElem = sizeof(KvElem);
    const char* k = reinterpret_cast<const char*>(c.p.k) + c.kh * c.p.k_head * kElem;
    const char* v = reinterpret_cast<const char*>(c.p.v) + c.kh * c.p.v_head * kElem;
    const auto rows = c.rows<kPaged ? KvLayout::pages : KvLayout::contiguous>();
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int r = load_key(tid, i), ch = load_chunk(tid, i);
      const int32_t j = j0 + r;
      bool ok = j < c.k_end;
      const int32_t block = ok ? rows.page32(j) : -1;
      ok = ok && rows.valid(block);
      const KvBytes at = rows.template bytes32<kElem>(kPaged || ok ? j : 0, ok ? block : 0);  // skipped rows read nothing
      const uint32_t chunk_bytes = ch * 8 * kElem;
      kr[i] = ok ? *reinterpret_cast<const Chunk*>(k + at.k + chunk_bytes) : Chunk{};
      vr[i] = ok ? *reinterpret_cast<const Chunk*>(v + at.v + chunk_bytes) : Chunk{};
      row_ok[i] = ok;
    }
  }
  // Which key of the tile, and which 16-byte chunk of it, load i of thread tid brings: the
  // block's chunks in order, or (packed) its wave's keys' chunks in order.
  AC_DEVICE int load_key(int tid, int i) {
    if constexpr (kPacked) return Map::wave_load_key(tid / kLanes, tid % kLanes, i);
    else return (tid + i * kThreads) / kChunks;
  }
  AC_DEVICE int load_chunk(int tid, int i) {
    if constexpr (kPacked) return Map::wave_load_chunk(tid % kLanes, i);
    else return (tid + i * kThreads) % kChunks;
  }
  AC_DEVICE ac_u32x4 widen(const Chunk& chunk, bool fnuz) {
    if constexpr (kKv8) {
      ac_u32x4 w;
      ac_e4m3x4_to_16bit<T>(chunk.x, fnuz, w.x, w.y);
      ac_e4m3x4_to_16bit<T>(chunk.y, fnuz, w.z, w.w);
      return w;
    } else {
      return chunk;
    }
  }
  // The cache's format chosen once per tile, not beside each chunk's conversion (on gfx942 and
  // gfx950 one format is converted in hardware, the other by the portable decode: fp8_device.hpp).
  AC_MEMBER void store(const TileContext& c, int tid) {
    if (kKv8 && ac_is_fnuz(c.p.kv_type)) store_as<true>(tid);
    else store_as<false>(tid);
  }
  template <bool kFnuz> AC_MEMBER void store_as(int tid) {
    constexpr bool fnuz = kKv8 && kFnuz;
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int r = load_key(tid, i), ch = load_chunk(tid, i);
      *reinterpret_cast<ac_u32x4*>(k_s + Map::k_at(r, ch * 8)) = widen(kr[i], fnuz);
      const ac_u32x4 v = widen(vr[i], fnuz);
      if constexpr (Map::kVTransposed) {  // the chunk's 8 dims, one row of V^T each
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int e = 0; e < 8; ++e) v_s[Map::v_at(r, ch * 8 + e)] = static_cast<uint16_t>(w[e / 2] >> (16 * (e % 2)));
      } else {
        *reinterpret_cast<ac_u32x4*>(v_s + Map::v_at(r, ch * 8)) = v;
      }
      if constexpr (!kPacked) {
        if (ch == 0) valid_s[r] = row_ok[i];
      }
    }
    if constexpr (kPacked) {
      // Lane q kChunks (q < kLanes / kChunks) of load i brought chunk 0 of the wave's key wave_load_key(0, q kChunks, i).
      constexpr int kKeysPerLoad = kLanes / kChunks;
      uint32_t bits = 0;
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        const uint64_t b = __builtin_amdgcn_ballot_w64(row_ok[i]);
#pragma unroll
        for (int q = 0; q < kKeysPerLoad; ++q) bits |= static_cast<uint32_t>(b >> (q * kChunks) & 1u) << Map::wave_load_key(0, q * kChunks, i);
      }
      valid_bits = bits;
    }
  }

  // Q, tile 0 into LDS, tile 1 on its way into registers.
  AC_MEMBER void prologue(const TileContext& c, int tid, int32_t n_tiles) {
    load_q(c, tid);
    if (n_tiles > 0) {
      fetch(c, tid, c.k_begin);
      store(c, tid);
    }
    if (n_tiles > 1) fetch(c, tid, c.k_begin + S.block_n);
  }
  // Tile `it` is in LDS for every wave. Paged tiles are always masked (their validity bytes
  // say which rows were outside the cache): no block-wide vote is needed for that.
  AC_MEMBER void ready(const TileContext&, int, int32_t) { ac_sync(); }
  AC_MEMBER bool pages_masked(int32_t) const { return kPaged; }
  AC_MEMBER void begin(int, int, int) {}
  AC_MEMBER float q_landed(const TileContext&) const { return q_unscale; }
  AC_MEMBER void issue_next(const TileContext&, int, int32_t, int32_t) {}
  // Every wave is done with tile `it`: tile it + 1 from registers into LDS, tile it + 2 fetched.
  AC_MEMBER void done_with(const TileContext& c, int tid, int32_t it, int32_t n_tiles) {
    if (it + 1 >= n_tiles) return;
    ac_sync();
    store(c, tid);
    if (it + 2 < n_tiles) fetch(c, tid, c.k_begin + (it + 2) * S.block_n);
  }
  // Packed: the tile's validity as this wave's ballot bits, indexed by the key in the tile (the
  // mainloop asks only for the keys the wave scores).
  struct KeyBits {
    uint32_t bits;
    int first;  // the wave's first key in the tile
    AC_MEMBER bool operator[](int key) const { return bits >> (key - first) & 1u; }
  };
  AC_MEMBER auto valid_keys(int32_t) const {
    if constexpr (kPacked) return KeyBits{valid_bits, ac_thread_x() / kLanes * kWarpKeys};
    else return static_cast<const uint8_t*>(valid_s);
  }
  AC_MEMBER float* epilogue_buffer() const { return reinterpret_cast<float*>(k_s); }

  // S^T = K Q^T for this wave's keys of the tile in LDS.
  AC_MEMBER void scores(Scores& s, int32_t, int lane) {
    AmdMatrixOps<T, L> mm;
    const int warp_n = ac_thread_x() / kLanes / S.warps_m;
#pragma unroll
    for (int ch = 0; ch < kKeyChunks; ++ch) {
#pragma unroll
      for (int r = 0; r < L::kRegs; ++r) s.v[ch].v[r] = 0.f;
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks)
        mm.mma(s.v[ch], read_frag(k_s + Map::k_offset(warp_n, ch, ks, lane)), q[ks]);
    }
  }

  // O^T += V^T P^T: P^T's B operand is the wave's score elements p_reg(st, e) (fragment_layouts.hpp;
  // gfx1250's 32-key steps take two chunks), half of them from the lane 16 apart on RDNA3; V^T's
  // A operand is kElems keys of one dim, read from LDS.
  AC_MEMBER void accumulate(Out& o, Scores& s, int32_t, int lane) {
    AmdMatrixOps<T, L> mm;
    const int warp_n = ac_thread_x() / kLanes / S.warps_m;
    Frag pb[kPSteps];
#pragma unroll
    for (int st = 0; st < kPSteps; ++st) {
      float partner[L::kRegs];  // RDNA3 (a step is one chunk there): the lane 16 apart's registers of it
      if constexpr (ac_layout::p_from_partner<L>)
#pragma unroll
        for (int r = 0; r < L::kRegs; ++r) partner[r] = ac_shfl_xor(at(s, L::kRegs * st + r), 16);
#pragma unroll
      for (int i = 0; i < L::kElems / 2; ++i) {
        auto elem = [&](int e) {
          const int x = ac_layout::p_reg<L>(st, e);
          if constexpr (ac_layout::p_from_partner<L>) return ac_layout::p_lane_xor<L>(lane, e) ? partner[x - L::kRegs * st] : at(s, x);
          else return at(s, x);
        };
        pb[st].w[i] = mm.pack2(elem(2 * i), elem(2 * i + 1));
      }
    }
#pragma unroll
    for (int b = 0; b < kDimBlocks; ++b)
#pragma unroll
      for (int st = 0; st < kPSteps; ++st) {
        if constexpr (Map::kVTransposed) {
          mm.mma(o.v[b], read_frag(v_s + Map::v_offset(warp_n, b, st, lane, 0)), pb[st]);
        } else {
          auto at_v = [&](int e) { return static_cast<uint32_t>(v_s[Map::v_offset(warp_n, b, st, lane, e)]); };
          Frag a;
#pragma unroll
          for (int i = 0; i < L::kElems / 2; ++i) a.w[i] = at_v(2 * i) | at_v(2 * i + 1) << 16;
          mm.mma(o.v[b], a, pb[st]);
        }
      }
  }

  AC_MEMBER void drain() { ac_sync(); }

  // Row tiles: this lane's row, finished (row_finish.hpp: the sink, the normalisation) and stored
  // from registers, kStoreRun consecutive dims per store; or, split, its fp32 partial output and
  // (max, sum).
  AC_MEMBER void store_direct(const TileContext& c, Out& o, float m, float l_part, int32_t split, int warp_m, int lane,
                              float v_scale) {
    const float l = row_sum(l_part);
    const int row = slot_row(warp_m, lane, 0);
    const int32_t flat = c.row0 + row;
    if (flat >= c.rows_total) return;
    const RowOfGroup of = ac_row_of(c.p, flat);
    const int32_t token = c.seq.q_start + of.token, h = c.kh * c.group + of.head;
    if (c.p.num_splits > 1) {
      float* dst = partial_out_row(c.p, split, token, h, D);
#pragma unroll
      for (int b = 0; b < kDimBlocks; ++b)
#pragma unroll
        for (int g = 0; g < L::kRegs / kStoreRun; ++g) {
          const float* x = o.v[b].v + kStoreRun * g;
          float* at = dst + Map::out_dim(lane, b * L::kRegs + kStoreRun * g);
          if constexpr (kStoreRun == 4) *reinterpret_cast<ac_f32x4*>(at) = ac_f32x4{x[0] * v_scale, x[1] * v_scale, x[2] * v_scale, x[3] * v_scale};
          else *at = x[0] * v_scale;
        }
      if (slot_writer(lane)) store_partial_ml<true>(c.p, split, token, h, m, l);
      return;
    }
    const RowFinish fin = finish_row<true>(m, l, sink_s[row], v_scale);
    if (slot_writer(lane) && c.p.lse) c.p.lse[lse_index(c.p, c.seq, token, h)] = fin.lse;
#pragma unroll
    for (int b = 0; b < kDimBlocks; ++b)
#pragma unroll
      for (int g = 0; g < L::kRegs / kStoreRun; ++g)
        store_out<T, kKv8, kStoreRun>(c.p, out_index(c.p, token, h, Map::out_dim(lane, b * L::kRegs + kStoreRun * g)),
                                      o.v[b].v + kStoreRun * g, fin.scale);
  }
};

template <typename T, ac_tiled_shape S, bool kPaged, bool kKv8>
using ArchTiles = AmdTiles<T, S, kPaged, kKv8>;

}  // namespace
#endif
