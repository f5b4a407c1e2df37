// What the attention kernels share: element access by dtype, where each sequence's queries and
// keys are (clamped to the tensors, so bad lengths read nothing outside them), and addressing.
#pragma once

#include "fp8_device.hpp"
#include "kernel_params.h"
#include "kv_rows.hpp"
#include "portability.hpp"

namespace {

// The logits soft cap (Gemma 2, Grok; AITer's logits_soft_cap / softcap): cap tanh(s / cap) of
// the scaled score s, before masks and the sink. tanh from exp2 (the AMD build links no device
// math library): cap - 2 cap / (e^(2 s / cap) + 1) goes to +-cap at +-inf.
AC_DEVICE float ac_softcap(float s, float cap) { return cap - 2.f * cap / (ac_exp2(s * (2.8853900817779268f / cap)) + 1.f); }

// The descales of sequence b, KV head kh: q_descale k_descale (scores) and v_descale (outputs).
AC_DEVICE float ac_qk_descale(const ac_attention_params& p, int32_t b, int32_t kh) {
  return (p.q_descale ? p.q_descale[0] : 1.f) * (p.k_descale ? p.k_descale[b * p.kd_seq + kh * p.kd_head] : 1.f);
}
AC_DEVICE float ac_v_descale(const ac_attention_params& p, int32_t b, int32_t kh) {
  return p.v_descale ? p.v_descale[b * p.vd_seq + kh * p.vd_head] : 1.f;
}
// What the outputs are multiplied by: v_descale over AITer's output_scale.
AC_DEVICE float ac_out_factor(const ac_attention_params& p, int32_t b, int32_t kh) {
  return p.out_scale ? ac_v_descale(p, b, kh) / p.out_scale[0] : ac_v_descale(p, b, kh);
}

template <typename T> struct Elem;
template <> struct Elem<float> {
  AC_DEVICE float load(const void* p, int64_t i) { return static_cast<const float*>(p)[i]; }
  AC_DEVICE void store(void* p, int64_t i, float v) { static_cast<float*>(p)[i] = v; }
};
template <> struct Elem<F16> {
  AC_DEVICE float load(const void* p, int64_t i) { return ac_f16_to_float(static_cast<const uint16_t*>(p)[i]); }
  AC_DEVICE void store(void* p, int64_t i, float v) { static_cast<uint16_t*>(p)[i] = ac_float_to_f16(v); }
};
template <> struct Elem<BF16> {
  AC_DEVICE float load(const void* p, int64_t i) { return ac_bf16_to_float(static_cast<const uint16_t*>(p)[i]); }
  AC_DEVICE void store(void* p, int64_t i, float v) { static_cast<uint16_t*>(p)[i] = ac_float_to_bf16(v); }
};

// An element of any storage type (AC_DTYPE_*) as a float, and a float stored as one (fp8 to the
// nearest code, saturating).
AC_DEVICE float ac_load_as(int32_t type, const void* p, int64_t i) {
  switch (type) {
    case AC_DTYPE_F32: return static_cast<const float*>(p)[i];
    case AC_DTYPE_F16: return ac_f16_to_float(static_cast<const uint16_t*>(p)[i]);
    case AC_DTYPE_BF16: return ac_bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    default: return ac_e4m3_to_float(static_cast<const uint8_t*>(p)[i], ac_is_fnuz(type));
  }
}
AC_DEVICE void ac_store_as(int32_t type, void* p, int64_t i, float v) {
  switch (type) {
    case AC_DTYPE_F32: static_cast<float*>(p)[i] = v; break;
    case AC_DTYPE_F16: static_cast<uint16_t*>(p)[i] = ac_float_to_f16(v); break;
    case AC_DTYPE_BF16: static_cast<uint16_t*>(p)[i] = ac_float_to_bf16(v); break;
    default: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(ac_fp8::from_float(v, ac_is_fnuz(type)));
  }
}

// The element of a K or V row in memory (16-bit, or an fp8 code), and 8 of them as one load.
template <bool kKv8> struct KvStorage {
  using type = uint16_t;
  using chunk8 = ac_u32x4;
};
template <> struct KvStorage<true> {
  using type = uint8_t;
  using chunk8 = ac_u32x2;
};

// How a direct-load kernel reads q, k and v and writes out: all in its one type T, or (the fp8-KV
// kernels) in the storage types the call names.
template <typename T> struct OneType {
  AC_DEVICE float q(const ac_attention_params& p, int64_t i) { return Elem<T>{}.load(p.q, i); }
  AC_DEVICE float kv(const ac_attention_params&, const void* base, int64_t i) { return Elem<T>{}.load(base, i); }
  AC_DEVICE void out(const ac_attention_params& p, int64_t i, float v) { Elem<T>{}.store(p.out, i, v); }
};
struct CallTypes {
  AC_DEVICE float q(const ac_attention_params& p, int64_t i) { return ac_load_as(p.q_type, p.q, i); }
  AC_DEVICE float kv(const ac_attention_params& p, const void* base, int64_t i) { return ac_load_as(p.kv_type, base, i); }
  AC_DEVICE void out(const ac_attention_params& p, int64_t i, float v) { ac_store_as(p.out_type, p.out, i, v); }
};

// Head h's sink (natural-log units) in the sinks' own dtype; -inf without sinks.
AC_DEVICE float ac_sink(const void* sinks, int32_t type, int64_t stride, int32_t h) {
  if (!sinks) return -AC_INFINITY;
  if (type == AC_DTYPE_F32) return static_cast<const float*>(sinks)[h * stride];
  const uint16_t bits = static_cast<const uint16_t*>(sinks)[h * stride];
  return type == AC_DTYPE_F16 ? ac_half_to_float(bits) : ac_bf16_to_float(bits);
}
AC_DEVICE float ac_sink(const ac_attention_params& p, int32_t h) { return ac_sink(p.sinks, p.sink_type, p.sink_stride, h); }

// Where sequence b's queries and keys are; ranges are clamped to the tensors so bad lengths
// read nothing outside them (the host checks contents only for CPU tensors).
struct Sequence {
  int32_t b, q_start, q_len, k_start, k_len;
  int64_t table_row;  // paged keys: where sequence b's block-table entries start (one apart per bt_col)
};

// (paged_keys, the one reading of a paged sequence's page table: kv_rows.hpp.)

// Sequence b (0 <= b < batch).
AC_DEVICE Sequence sequence_at(const ac_attention_params& p, int32_t b) {
  Sequence s{b, 0, 0, 0, 0, 0};
  if (p.cu_seqlens_q) {
    s.q_start = clamp_i32(p.cu_seqlens_q[b], 0, p.total_q);
    s.q_len = clamp_i32(p.cu_seqlens_q[b + 1], s.q_start, p.total_q) - s.q_start;
  } else {  // batch layout (flash_attn_func) or one query per sequence (decode)
    s.q_start = b * p.uniform_q;
    s.q_len = clamp_i32(static_cast<int64_t>(p.total_q) - s.q_start, 0, p.uniform_q);  // never past q
  }
  if (p.paged) {
    const PagedKeys keys = paged_keys(p, b);
    s.table_row = keys.table_row;
    s.k_len = keys.k_len;
  } else if (p.cu_seqlens_k) {
    s.k_start = clamp_i32(p.cu_seqlens_k[b], 0, p.total_k);
    s.k_len = clamp_i32(p.cu_seqlens_k[b + 1], s.k_start, p.total_k) - s.k_start;
  } else {
    s.k_start = b * p.uniform_k;
    s.k_len = p.uniform_k;
  }
  return s;
}

// The sequence holding query token `token`.
AC_DEVICE Sequence sequence_of(const ac_attention_params& p, int32_t token) {
  int32_t b = 0;
  if (p.cu_seqlens_q) {
    int32_t lo = 0, hi = p.batch;  // the last b with cu_seqlens_q[b] <= token
    while (hi - lo > 1) {
      int32_t mid = (lo + hi) / 2;
      if (p.cu_seqlens_q[mid] <= token) lo = mid; else hi = mid;
    }
    b = lo;
  } else {
    b = token / p.uniform_q;
  }
  return sequence_at(p, b);
}

// Where the log-sum-exp of (token, head h) goes: [Hq, total_q] or, with lse_batch, [batch, Hq, seqlen_q].
AC_DEVICE int64_t lse_index(const ac_attention_params& p, const Sequence& s, int32_t token, int32_t h) {
  return s.b * p.lse_batch + h * p.lse_head + (p.lse_batch ? token - s.q_start : token) * p.lse_tok;
}

// Channel c's offset in a key row: c in row layouts, else the cache's split (kSplit: decided
// once per kernel, so that row layouts pay nothing per element).
template <bool kSplit>
AC_DEVICE int64_t channel_offset(const ac_attention_params& p, int which, int32_t c) {
  if constexpr (!kSplit) return c;
  return which ? ac_split(c, p.v_dim_x, p.v_dim, p.v_dim_in) : ac_split(c, p.k_dim_x, p.k_dim, p.k_dim_in);
}

}  // namespace
