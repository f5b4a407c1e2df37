// Attention with learned sinks for the fallback routes: varlen and paged KV, causal or not,
// sliding windows, grouped-query heads, split-KV with the sink added once in the merge.
//
// One block per (query token, KV head, split): the block's query heads (all heads of the KV
// group) are processed together, so each key and value row is read once for all of them.
// Scores are kept in fp32 with a running max and sum (online softmax); the sink is one more
// logit with a zero value, entered once: at the end of an unsplit block, or in the merge.
// Correct first: this version reads keys row by row; the tuned kernels replace its inner loops.
#include "kernel_common.hpp"
#include "key_range.hpp"
#include "kv_rows.hpp"
#include "row_finish.hpp"
#include "row_store.hpp"
#include "split_merge.hpp"

namespace {

// Key j's rows for the generic kernel, whose caches may be any layout (kSplit: AITer's split
// ones, paged; else contiguous or NHD pages, as the call says).
template <bool kSplit>
AC_DEVICE KvRow kv_row(const ac_attention_params& p, const Sequence& s, int32_t page_shift, int32_t j) {
  if constexpr (kSplit) return KvRows<KvLayout::split_pages>{p, s.table_row, s.k_start, page_shift}.at(j);
  else if (p.paged) return KvRows<KvLayout::pages>{p, s.table_row, s.k_start, page_shift}.at(j);
  else return KvRows<KvLayout::contiguous>{p, s.table_row, s.k_start, page_shift}.at(j);
}

template <typename Io, bool kSplit>
AC_DEVICE void attention_block(const ac_attention_params& p) {
  Io io;
  const int tid = ac_thread_x();
  const int32_t token = ac_block_x(), kh = ac_block_y(), split = ac_block_z();
  const int32_t group = p.hq / p.hk, d = p.head_dim, dv = p.head_dim_v;
  if (token >= p.total_q) return;
  const Sequence s = sequence_of(p, token);
  if (token < s.q_start || token >= s.q_start + s.q_len) return;  // padding beyond cu_seqlens_q[batch]

  const int32_t i = token - s.q_start;
  const KeySpan keys = block_keys(KeyRange{p, s.q_len, s.k_len}, i, i, split, p.num_splits, 1);
  const int32_t k_begin = keys.begin, k_end = keys.end;
  const int32_t page_shift = page_shift_of(p);

  AC_SHARED float q_s[AC_MAX_GROUP_ELEMS];  // the group's scaled queries (group x d)
  AC_SHARED float p_s[AC_MAX_GROUP * AC_KEY_TILE];
  AC_SHARED float m_s[AC_MAX_GROUP], l_s[AC_MAX_GROUP], alpha_s[AC_MAX_GROUP];
  AC_SHARED int64_t krow_s[AC_KEY_TILE], vrow_s[AC_KEY_TILE];

  const float q_scale = p.scale * ac_qk_descale(p, s.b, kh), v_scale = ac_out_factor(p, s.b, kh);
  for (int x = tid; x < group * d; x += AC_THREADS) {
    int g = x / d, c = x % d;
    q_s[x] = io.q(p, token * p.q_tok + (kh * group + g) * p.q_head + c) * q_scale;
  }
  if (tid < group) {
    m_s[tid] = -AC_INFINITY;
    l_s[tid] = 0.f;
  }
  constexpr int kPairs = AC_MAX_GROUP_ELEMS / AC_THREADS;  // (head, channel) outputs per thread
  float acc[kPairs];
#pragma unroll
  for (int k = 0; k < kPairs; ++k) acc[k] = 0.f;
  ac_sync();

  for (int32_t t0 = k_begin; t0 < k_end; t0 += AC_KEY_TILE) {
    const int32_t n = k_end - t0 < AC_KEY_TILE ? k_end - t0 : AC_KEY_TILE;
    if (tid < n) {
      const KvRow r = kv_row<kSplit>(p, s, page_shift, t0 + tid);
      krow_s[tid] = r.ok ? r.k : -1;
      vrow_s[tid] = r.ok ? r.v : -1;
    }
    ac_sync();
    // Scores: thread pairs share a key, each taking every other head of the group.
    for (int x = tid; x < AC_KEY_TILE * 2; x += AC_THREADS) {
      const int j = x % AC_KEY_TILE, half = x / AC_KEY_TILE;
      for (int g = half; g < group; g += 2) {
        float sc = -AC_INFINITY;
        if (j < n && krow_s[j] >= 0) {
          const int64_t base = krow_s[j] + kh * p.k_head;
          float dot = 0.f;
          for (int c = 0; c < d; ++c) dot += q_s[g * d + c] * io.kv(p, p.k, base + channel_offset<kSplit>(p, 0, c));
          sc = p.softcap > 0.f ? ac_softcap(dot, p.softcap) : dot;
        }
        p_s[g * AC_KEY_TILE + j] = sc;
      }
    }
    ac_sync();
    // Running max and sum per head; scores become weights in place.
    if (tid < group) {
      float tile_max = -AC_INFINITY;
      for (int j = 0; j < n; ++j) tile_max = tile_max > p_s[tid * AC_KEY_TILE + j] ? tile_max : p_s[tid * AC_KEY_TILE + j];
      const float m_old = m_s[tid], m_new = m_old > tile_max ? m_old : tile_max;
      const float alpha = m_new == -AC_INFINITY ? 1.f : ac_exp(m_old - m_new);
      float sum = 0.f;
      for (int j = 0; j < AC_KEY_TILE; ++j) {
        const float w = (j < n && m_new != -AC_INFINITY) ? ac_exp(p_s[tid * AC_KEY_TILE + j] - m_new) : 0.f;
        p_s[tid * AC_KEY_TILE + j] = w;
        sum += w;
      }
      m_s[tid] = m_new;
      l_s[tid] = l_s[tid] * alpha + sum;
      alpha_s[tid] = alpha;
    }
    ac_sync();
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
      const int x = tid + k * AC_THREADS, g = x / dv, c = x % dv;
      if (g < group) {
        const int64_t v_channel = channel_offset<kSplit>(p, 1, c);
        float a = acc[k] * alpha_s[g];
        for (int j = 0; j < n; ++j)
          if (vrow_s[j] >= 0) a += p_s[g * AC_KEY_TILE + j] * io.kv(p, p.v, vrow_s[j] + kh * p.v_head + v_channel);
        acc[k] = a;
      }
    }
    ac_sync();
  }
  ac_allow_dependents();  // the key loop is done: a split call's merge may be launched now (portability.hpp)

#pragma unroll
  for (int k = 0; k < kPairs; ++k) {
    const int x = tid + k * AC_THREADS, g = x / dv, c = x % dv;
    if (g >= group) continue;
    const int32_t h = kh * group + g;
    if (p.num_splits > 1) {
      partial_out_row(p, split, token, h, dv)[c] = acc[k] * v_scale;
      continue;
    }
    const RowFinish fin = finish_row<false>(m_s[g], l_s[g], ac_sink(p, h), v_scale);
    io.out(p, out_index(p, token, h, c), acc[k] * fin.scale);
    if (c == 0 && p.lse) p.lse[lse_index(p, s, token, h)] = fin.lse;
  }
  if (p.num_splits > 1 && tid < group) store_partial_ml<false>(p, split, token, kh * group + tid, m_s[tid], l_s[tid]);
}

// Combines the splits of one (token, head) and adds the sink once. The first warp reads every
// split's (max, sum) at once and turns them into weights in shared memory, while the block reads
// the partial outputs with every load in flight at once: 16 bytes per thread and split, the
// splits dealt round-robin to groups of threads that each cover the head dimension, and the
// groups' sums added in shared memory. (One thread per channel looping over the splits cost a
// cache latency per eight splits: 6-12 us at 64 splits, as long as the split kernel itself.) The
// first kInFlight splits of each group are loaded before the weights are known, so the two reads
// are one memory round trip, not two in a row: the merge's time after the split kernel ends is
// what a split decode adds.
template <typename Io>
AC_DEVICE void merge_block(const ac_attention_params& p) {
  Io io;
  const int tid = ac_thread_x();
  const int32_t token = ac_block_x(), h = ac_block_y();
  if (token >= p.total_q) return;
  const Sequence s = sequence_of(p, token);
  if (token < s.q_start || token >= s.q_start + s.q_len) return;
  const float sink = ac_sink(p, h);  // the call's input: readable before the split kernel ends
  // The partial rows are the split kernel's: launched as its programmatic dependent (NVIDIA,
  // launch.cpp), this block may be running before that kernel has finished.
  ac_wait_for_primary();
  AC_SHARED float weight_s[AC_MAX_SPLITS];
  AC_SHARED float lse_s;
  AC_SHARED ac_f32x4 sum_s[AC_THREADS];  // each thread group's sum over its splits
  const int splits = p.num_splits < AC_MAX_SPLITS ? p.num_splits : AC_MAX_SPLITS;  // the launcher caps it
  const int64_t split_stride = split_stride_rows(p);
  const int dv = p.head_dim_v;
  const bool by_chunks = dv % 4 == 0 && dv / 4 <= AC_THREADS;
  // Thread (g, c): chunk c (4 channels) of splits g, g + groups, ...; 16-byte aligned, as the
  // scratch rows are whole multiples of 4 floats.
  const int chunks = by_chunks ? dv / 4 : 1, groups = AC_THREADS / chunks, g = tid / chunks, c = tid % chunks;
  const ac_f32x4* src = reinterpret_cast<const ac_f32x4*>(partial_out_row(p, 0, token, h, dv)) + c;
  const int64_t stride = split_stride * chunks;  // one split further, in chunks
  constexpr int kInFlight = 8;
  ac_f32x4 first_v[kInFlight];  // splits g, g + groups, ...: in flight beside the (max, sum) reads
#pragma unroll
  for (int i = 0; i < kInFlight; ++i) {
    const int sp = g + i * groups;
    first_v[i] = by_chunks && g < groups && sp < splits ? src[sp * stride] : ac_f32x4{0.f, 0.f, 0.f, 0.f};
  }
  if (tid < AC_WARP_SIZE) {  // the splits' weights, the sink entered once
    const float lse = split_weights(p, token, h, splits, sink, tid, weight_s);
    if (tid == 0) lse_s = lse;
  }
  ac_sync();
  if (by_chunks) {
    ac_f32x4 acc{0.f, 0.f, 0.f, 0.f};
    if (g < groups) {
      for (int first = g; first < splits; first += groups * kInFlight) {
        ac_f32x4 v[kInFlight];
#pragma unroll
        for (int i = 0; i < kInFlight; ++i) {
          const int sp = first + i * groups;
          v[i] = first == g ? first_v[i] : sp < splits ? src[sp * stride] : ac_f32x4{0.f, 0.f, 0.f, 0.f};
        }
#pragma unroll
        for (int i = 0; i < kInFlight; ++i) {
          const int sp = first + i * groups;
          const float w = sp < splits ? weight_s[sp] : 0.f;
          acc.x += v[i].x * w, acc.y += v[i].y * w, acc.z += v[i].z * w, acc.w += v[i].w * w;
        }
      }
    }
    sum_s[tid] = acc;
    ac_sync();
    const float* sums = reinterpret_cast<const float*>(sum_s);  // [group][channel]
    for (int ch = tid; ch < dv; ch += AC_THREADS) {
      float o = 0.f;
      for (int gi = 0; gi < groups; ++gi) o += sums[gi * dv + ch];
      io.out(p, token * p.out_tok + h * p.out_head + ch, o);
    }
  } else {  // head dims the GPU routes do not take today (they take 64 and 128)
    for (int ch = tid; ch < dv; ch += AC_THREADS) {
      const float* src = partial_out_row(p, 0, token, h, dv) + ch;
      float o = 0.f;
#pragma unroll 8
      for (int sp = 0; sp < splits; ++sp) o += src[sp * split_stride * dv] * weight_s[sp];
      io.out(p, token * p.out_tok + h * p.out_head + ch, o);
    }
  }
  if (tid == 0 && p.lse) p.lse[lse_index(p, s, token, h)] = lse_s;
}


// Decode over a paged cache (one query per sequence), the memory-bound case. Each key row is
// split across D/E lanes holding E elements (one 16- or 8-byte load); a lane group scores its key
// for all query heads of the KV group and reduces the dot products with lane exchanges, so every
// K and V byte is read once, a chunk at a time. Each lane group keeps its own running max,
// sum and output over the keys it took (AC_DECODE_UNROLL at a time, loads in flight together);
// the groups are combined in shared memory at the end, and splits by the merge kernel.
template <typename T> struct Pair;
template <> struct Pair<BF16> {
  AC_DEVICE void unpack(uint32_t u, float& lo, float& hi) {
    lo = ac_bits_to_float(u << 16);
    hi = ac_bits_to_float(u & 0xffff0000u);
  }
};
template <> struct Pair<F16> {
  AC_DEVICE void unpack(uint32_t u, float& lo, float& hi) {
    lo = ac_half_to_float(static_cast<uint16_t>(u & 0xffffu));
    hi = ac_half_to_float(static_cast<uint16_t>(u >> 16));
  }
};

// One lane's chunk of a row: kElems 16-bit elements, loaded at once (16 bytes on NVIDIA; 8 on
// AMD, where twice the lanes per row halve each lane's query and accumulator registers: the
// kernel fits 256 registers, two waves per SIMD, without spilling).
#if defined(AC_AMD)
#define AC_DECODE_ELEMS 4
#else
#define AC_DECODE_ELEMS 8
#endif
template <int kElems> struct alignas(2 * kElems) Chunk { uint32_t w[kElems / 2]; };

template <typename T, int kElems>
AC_DEVICE void unpack(const Chunk<kElems>& v, float* out) {
  Pair<T> pr;
#pragma unroll
  for (int i = 0; i < kElems / 2; ++i) pr.unpack(v.w[i], out[2 * i], out[2 * i + 1]);
}
// The same lane's chunk of an fp8 row: kElems codes (8 or 4 bytes), decoded exactly.
template <int kElems> struct alignas(kElems) Codes { uint32_t w[kElems / 4]; };
template <int kElems>
AC_DEVICE void unpack_codes(const Codes<kElems>& v, bool fnuz, float* out) {
#pragma unroll
  for (int i = 0; i < kElems / 4; ++i) ac_e4m3x4_to_f32(v.w[i], fnuz, out + 4 * i);
}
template <typename T, int E, bool kKv8> struct DecodeRow;
template <typename T, int E> struct DecodeRow<T, E, false> {  // K and V in T
  using C = Chunk<E>;
  AC_DEVICE void unpack_row(const C& c, bool, float* out) { unpack<T, E>(c, out); }
};
template <typename T, int E> struct DecodeRow<T, E, true> {  // K and V in fp8
  using C = Codes<E>;
  AC_DEVICE void unpack_row(const C& c, bool fnuz, float* out) { unpack_codes<E>(c, fnuz, out); }
};

template <typename T, int D, bool kKv8>
AC_DEVICE void decode_block(const ac_attention_params& p) {
  constexpr int E = AC_DECODE_ELEMS;                   // elements per lane and load
  using Row = DecodeRow<T, E, kKv8>;
  using C = typename Row::C;                           // one lane's chunk of a K or V row
  using KvElem = typename KvStorage<kKv8>::type;
  const bool fnuz = kKv8 && ac_is_fnuz(p.kv_type);
  constexpr int kLanes = D / E;                        // lanes per key row
  constexpr int kGroups = AC_DECODE_THREADS / kLanes;  // key rows in flight per step (per unroll)
  constexpr int G = AC_DECODE_MAX_GROUP;
  Elem<T> e;
  const int tid = ac_thread_x(), lane = tid % kLanes, grp = tid / kLanes;
  const int32_t b = ac_block_x(), kh = ac_block_y(), split = ac_block_z();
  const int32_t group = p.group;
  const PagedKeys paged = paged_keys(p, b);
  const KeySpan keys = block_keys(KeyRange{p, 1, paged.k_len}, 0, 0, split, p.num_splits, 1);
  const int32_t k_begin = keys.begin, k_end = keys.end;
  const KvRows<KvLayout::pages> rows{p, paged.table_row, 0, page_shift_of(p)};
  const float q_scale = p.scale * ac_qk_descale(p, b, kh);

  float q[G][E];
  // fp8 queries (fp8-KV kernels only) element by element: once per block.
  const bool q_fp8 = kKv8 && (p.q_type == AC_DTYPE_E4M3FN || p.q_type == AC_DTYPE_E4M3FNUZ);
#pragma unroll
  for (int g = 0; g < G; ++g) {
    if (g < group && q_fp8) {
#pragma unroll
      for (int c = 0; c < E; ++c)
        q[g][c] = ac_load_as(p.q_type, p.q, b * p.q_tok + (kh * group + g) * p.q_head + lane * E + c) * q_scale;
    } else if (g < group) {
      Chunk<E> raw = *reinterpret_cast<const Chunk<E>*>(static_cast<const uint16_t*>(p.q) + b * p.q_tok +
                                                        (kh * group + g) * p.q_head + lane * E);
      unpack<T, E>(raw, q[g]);
#pragma unroll
      for (int c = 0; c < E; ++c) q[g][c] *= q_scale;
    } else {
#pragma unroll
      for (int c = 0; c < E; ++c) q[g][c] = 0.f;
    }
  }
  float m[G], l[G], acc[G][E];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -AC_INFINITY;
    l[g] = 0.f;
#pragma unroll
    for (int c = 0; c < E; ++c) acc[g][c] = 0.f;
  }

  const KvElem* kbase = static_cast<const KvElem*>(p.k) + kh * p.k_head + lane * E;
  const KvElem* vbase = static_cast<const KvElem*>(p.v) + kh * p.v_head + lane * E;
  // Every lane runs the same iterations (the lane exchanges need the whole warp); keys past the
  // end are masked, not skipped.
  for (int32_t base = k_begin; base < k_end; base += kGroups * AC_DECODE_UNROLL) {
    C kr[AC_DECODE_UNROLL], vr[AC_DECODE_UNROLL];
    bool ok[AC_DECODE_UNROLL];
#pragma unroll
    for (int u = 0; u < AC_DECODE_UNROLL; ++u) {
      const int32_t j = base + grp + u * kGroups;
      // (The offsets zeroed under the one condition: a KvRow selected as a whole cost the AMD
      // build a wave per SIMD.)
      ok[u] = j < k_end;
      const int32_t block = ok[u] ? rows.page(j) : 0;
      ok[u] = ok[u] && rows.valid(block);
      const int64_t krow = ok[u] ? rows.k_row(j, block) : 0, vrow = ok[u] ? rows.v_row(j, block) : 0;
      kr[u] = ok[u] ? *reinterpret_cast<const C*>(kbase + krow) : C{};
      vr[u] = ok[u] ? *reinterpret_cast<const C*>(vbase + vrow) : C{};
    }
    float s[AC_DECODE_UNROLL][G];
#pragma unroll
    for (int u = 0; u < AC_DECODE_UNROLL; ++u) {
      float kv[E];
      Row{}.unpack_row(kr[u], fnuz, kv);
#pragma unroll
      for (int g = 0; g < G; ++g) {
        float dot = 0.f;
#pragma unroll
        for (int c = 0; c < E; ++c) dot += q[g][c] * kv[c];
#pragma unroll
        for (int mask = kLanes / 2; mask > 0; mask /= 2) dot += ac_shfl_xor(dot, mask);
        if (p.softcap > 0.f) dot = ac_softcap(dot, p.softcap);
        s[u][g] = ok[u] ? dot : -AC_INFINITY;
      }
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      float mx = m[g];
#pragma unroll
      for (int u = 0; u < AC_DECODE_UNROLL; ++u) mx = mx > s[u][g] ? mx : s[u][g];
      if (mx == -AC_INFINITY) continue;  // nothing valid yet
      const float corr = ac_exp(m[g] - mx);
      m[g] = mx;
      l[g] *= corr;
#pragma unroll
      for (int c = 0; c < E; ++c) acc[g][c] *= corr;
#pragma unroll
      for (int u = 0; u < AC_DECODE_UNROLL; ++u) s[u][g] = ac_exp(s[u][g] - mx);
    }
#pragma unroll
    for (int u = 0; u < AC_DECODE_UNROLL; ++u) {
      float vv[E];
      Row{}.unpack_row(vr[u], fnuz, vv);
#pragma unroll
      for (int g = 0; g < G; ++g) {
        if (m[g] == -AC_INFINITY) continue;
        l[g] += s[u][g];
#pragma unroll
        for (int c = 0; c < E; ++c) acc[g][c] += s[u][g] * vv[c];
      }
    }
  }

  ac_allow_dependents();  // the key loop is done: a split call's merge may be launched now (portability.hpp)
  // Combine the lane groups: first inside each warp with lane exchanges (groups of one warp
  // differ in the lane bits from kLanes up), then across warps in shared memory. No atomics: the
  // shared-memory atomics this replaced serialised on G * D addresses and cost more than the keys.
  constexpr int kWarps = AC_DECODE_THREADS / AC_WARP_SIZE;
  AC_SHARED float m_warp[kWarps * G], l_warp[kWarps * G], acc_warp[kWarps * G * D], m_blk[G], l_blk[G];
  const int warp = tid / AC_WARP_SIZE, in_warp = tid % AC_WARP_SIZE;
  float mw[G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    mw[g] = m[g];
#pragma unroll
    for (int mask = kLanes; mask < AC_WARP_SIZE; mask *= 2) {
      const float other = ac_shfl_xor(mw[g], mask);
      mw[g] = mw[g] > other ? mw[g] : other;
    }
  }
  if (in_warp == 0) {
#pragma unroll
    for (int g = 0; g < G; ++g) m_warp[warp * G + g] = mw[g];
  }
  ac_sync();
  if (tid < G) {
    float mx = -AC_INFINITY;
    for (int w = 0; w < kWarps; ++w) mx = mx > m_warp[w * G + tid] ? mx : m_warp[w * G + tid];
    m_blk[tid] = mx;
  }
  ac_sync();
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const float w = m[g] == -AC_INFINITY ? 0.f : ac_exp(m[g] - m_blk[g]);
    float lw = l[g] * w;
#pragma unroll
    for (int mask = kLanes; mask < AC_WARP_SIZE; mask *= 2) lw += ac_shfl_xor(lw, mask);
#pragma unroll
    for (int c = 0; c < E; ++c) {
      float a = acc[g][c] * w;
#pragma unroll
      for (int mask = kLanes; mask < AC_WARP_SIZE; mask *= 2) a += ac_shfl_xor(a, mask);
      if (in_warp < kLanes) acc_warp[(warp * G + g) * D + lane * E + c] = a;
    }
    if (in_warp == 0) l_warp[warp * G + g] = lw;
  }
  ac_sync();
  if (tid < G) {
    float sum = 0.f;
    for (int w = 0; w < kWarps; ++w) sum += l_warp[w * G + tid];
    l_blk[tid] = sum;
  }
  for (int x = tid; x < G * D; x += AC_DECODE_THREADS) {
    float sum = 0.f;
    for (int w = 0; w < kWarps; ++w) sum += acc_warp[w * G * D + x];
    acc_warp[x] = sum;  // warp 0's slot now holds the block's sum (each x is read and written by one thread)
  }
  ac_sync();
  const float* acc_blk = acc_warp;
  // output_scale is the fp8-cache kernels' alone (launch_fits sends the others to the generic kernel).
  const float v_factor = kKv8 ? ac_out_factor(p, b, kh) : ac_v_descale(p, b, kh);
  for (int x = tid; x < group * D; x += AC_DECODE_THREADS) {
    const int g = x / D, c = x % D;
    const int32_t h = kh * group + g;
    if (p.num_splits > 1) {
      partial_out_row(p, split, b, h, D)[c] = acc_blk[x] * v_factor;
      if (c == 0) store_partial_ml<false>(p, split, b, h, m_blk[g], l_blk[g]);
      continue;
    }
    const RowFinish fin = finish_row<false>(m_blk[g], l_blk[g], ac_sink(p, h), v_factor);
    const float o = acc_blk[x] * fin.scale;
    if constexpr (kKv8) ac_store_as(p.out_type, p.out, out_index(p, b, h, c), o);
    else e.store(p.out, out_index(p, b, h, c), o);
    if (c == 0 && p.lse) p.lse[h * p.lse_head + b * p.lse_tok] = fin.lse;
  }
}

// merge_attn_states: one block per (token, head), threads over the head dimension.
template <typename T>
AC_DEVICE void merge_states_block(const ac_merge_params& p) {
  Elem<T> e;
  const int32_t token = ac_block_x(), h = ac_block_y();
  if (token >= p.tokens || h >= p.heads) return;
  const float lp = p.prefix_lse[h * p.plse_head + token * p.plse_tok];
  const float ls = p.suffix_lse[h * p.slse_head + token * p.slse_tok];
  // Each part is a normalised output with its LSE: (max, sum) = (lse, 1); the sink enters once.
  const float m = lp > ls ? lp : ls;
  float z = 0.f;
  if (lp != -AC_INFINITY) z += ac_exp(lp - m);
  if (ls != -AC_INFINITY) z += ac_exp(ls - m);
  const RowFinish fin = finish_row<false>(m, z, ac_sink(p.sinks, p.sink_type, p.sink_stride, h), 1.f);
  const float wp = lp != -AC_INFINITY ? ac_exp(lp - m) * fin.scale : 0.f;
  const float ws = ls != -AC_INFINITY ? ac_exp(ls - m) * fin.scale : 0.f;
  for (int c = ac_thread_x(); c < p.dim; c += AC_THREADS) {
    const float v = wp * e.load(p.prefix, token * p.prefix_tok + h * p.prefix_head + c) +
                    ws * e.load(p.suffix, token * p.suffix_tok + h * p.suffix_head + c);
    e.store(p.out, token * p.out_tok + h * p.out_head + c, v);
  }
  if (ac_thread_x() == 0 && p.out_lse) p.out_lse[h * p.olse_head + token * p.olse_tok] = fin.lse;
}

// pa_decode_bf16_asm's split rows (kernel_params.h): one block per work_info row, threads over
// its tokens x heads x channels. Every index read from the schedule is clamped to the buffers.
AC_DEVICE void split_rows_block(const ac_split_rows_params& p) {
  const int32_t item = ac_block_x();
  const int32_t valid = p.work_indptr ? clamp_i32(p.work_indptr[p.groups], 0, p.slots) : p.slots;
  if (item >= valid) return;
  const int32_t* w = p.work_info + item * p.wi_row;
  const int32_t b = w[0], row0 = w[p.wi_col];
  if (row0 < 0 || b < 0 || b >= p.batch) return;  // -1: the piece went to out directly
  const int32_t q0 = clamp_i32(w[2 * p.wi_col], 0, p.total_q), q1 = clamp_i32(w[3 * p.wi_col], q0, p.total_q);
  const int32_t heads = w[7 * p.wi_col];
  const int32_t h0 = clamp_i32(heads & 0xffff, 0, p.hq), h1 = clamp_i32((heads >> 16) & 0xffff, h0, p.hq);
  const int32_t tokens = clamp_i32(q1 - q0, 0, static_cast<int64_t>(p.rows) - row0);
  const bool first = w[4 * p.wi_col] == p.kv_indptr[b];  // the piece holding the sequence's first page
  const int64_t width = static_cast<int64_t>(h1 - h0) * p.dv;
  for (int64_t i = ac_thread_x(); i < tokens * width; i += AC_THREADS) {
    const int32_t t = static_cast<int32_t>(i / width), h = h0 + static_cast<int32_t>(i % width / p.dv),
                  c = static_cast<int32_t>(i % p.dv);
    const int64_t row = static_cast<int64_t>(row0) + t;
    p.split_o[row * p.so_row + h * p.so_head + c] =
        first ? ac_load_as(p.out_type, p.out, (q0 + t) * p.out_tok + h * p.out_head + c) : 0.f;
    if (c == 0)
      p.split_lse[row * p.sl_row + h * p.sl_head] = first ? p.lse[h * p.lse_head + (q0 + t) * p.lse_tok] : -AC_INFINITY;
  }
}

}  // namespace

AC_KERNEL void ac_split_rows(ac_split_rows_params p) { split_rows_block(p); }
AC_KERNEL void ac_decode_bf16_d64(ac_attention_params p) { decode_block<BF16, 64, false>(p); }
AC_KERNEL void ac_decode_bf16_d128(ac_attention_params p) { decode_block<BF16, 128, false>(p); }
AC_KERNEL void ac_decode_f16_d64(ac_attention_params p) { decode_block<F16, 64, false>(p); }
AC_KERNEL void ac_decode_f16_d128(ac_attention_params p) { decode_block<F16, 128, false>(p); }
AC_KERNEL void ac_decode_bf16_kv8_d64(ac_attention_params p) { decode_block<BF16, 64, true>(p); }
AC_KERNEL void ac_decode_bf16_kv8_d128(ac_attention_params p) { decode_block<BF16, 128, true>(p); }
AC_KERNEL void ac_decode_f16_kv8_d64(ac_attention_params p) { decode_block<F16, 64, true>(p); }
AC_KERNEL void ac_decode_f16_kv8_d128(ac_attention_params p) { decode_block<F16, 128, true>(p); }
AC_KERNEL void ac_merge_states_f32(ac_merge_params p) { merge_states_block<float>(p); }
AC_KERNEL void ac_merge_states_f16(ac_merge_params p) { merge_states_block<F16>(p); }
AC_KERNEL void ac_merge_states_bf16(ac_merge_params p) { merge_states_block<BF16>(p); }
AC_KERNEL void ac_attention_f32(ac_attention_params p) { attention_block<OneType<float>, false>(p); }
AC_KERNEL void ac_attention_split_f32(ac_attention_params p) { attention_block<OneType<float>, true>(p); }
AC_KERNEL void ac_attention_f16(ac_attention_params p) { attention_block<OneType<F16>, false>(p); }
AC_KERNEL void ac_attention_split_f16(ac_attention_params p) { attention_block<OneType<F16>, true>(p); }
AC_KERNEL void ac_attention_bf16(ac_attention_params p) { attention_block<OneType<BF16>, false>(p); }
AC_KERNEL void ac_attention_split_bf16(ac_attention_params p) { attention_block<OneType<BF16>, true>(p); }
AC_KERNEL void ac_merge_f32(ac_attention_params p) { merge_block<OneType<float>>(p); }
AC_KERNEL void ac_merge_f16(ac_attention_params p) { merge_block<OneType<F16>>(p); }
AC_KERNEL void ac_merge_bf16(ac_attention_params p) { merge_block<OneType<BF16>>(p); }
// The fp8-KV families' direct-load kernels compute in f32 whatever the tile type: both names run
// the same code over the call's storage types.
AC_KERNEL void ac_attention_f16_kv8(ac_attention_params p) { attention_block<CallTypes, false>(p); }
AC_KERNEL void ac_attention_split_f16_kv8(ac_attention_params p) { attention_block<CallTypes, true>(p); }
AC_KERNEL void ac_attention_bf16_kv8(ac_attention_params p) { attention_block<CallTypes, false>(p); }
AC_KERNEL void ac_attention_split_bf16_kv8(ac_attention_params p) { attention_block<CallTypes, true>(p); }
AC_KERNEL void ac_merge_f16_kv8(ac_attention_params p) { merge_block<CallTypes>(p); }
AC_KERNEL void ac_merge_bf16_kv8(ac_attention_params p) { merge_block<CallTypes>(p); }
// The folded split merge's arrival counters (tiled_attention.hpp, fold_splits), zeroed just before
// the split kernel. It lets that kernel start at once (launched as its programmatic dependent on
// sm_90, which waits for these stores only at its first arrival, after its key loop).
AC_KERNEL void ac_zero_counts(uint32_t* counts, int32_t n) {
  ac_allow_dependents();
  for (int32_t i = ac_block_x() * AC_THREADS + ac_thread_x(); i < n; i += ac_grid_x() * AC_THREADS) counts[i] = 0;
}

// The matrix-instruction kernels (NVIDIA only until the MFMA layer exists).
#include "tiled_attention.hpp"
