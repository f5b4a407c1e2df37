#include "reference_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "float_convert.hpp"

namespace aiter_compat::cpu {
namespace {

double load(DType t, const void* base, int64_t index) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(base)[index];
    case DType::f16: return f16_to_float(static_cast<const uint16_t*>(base)[index]);
    case DType::bf16: return bf16_to_float(static_cast<const uint16_t*>(base)[index]);
    case DType::i32: return static_cast<const int32_t*>(base)[index];
    case DType::f8_e4m3fn:
    case DType::f8_e4m3fnuz:
      return ac_fp8::to_float(static_cast<const uint8_t*>(base)[index], t == DType::f8_e4m3fnuz);
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

void store(DType t, void* base, int64_t index, double value) {
  float f = static_cast<float>(value);
  switch (t) {
    case DType::f32: static_cast<float*>(base)[index] = f; break;
    case DType::f16: static_cast<uint16_t*>(base)[index] = float_to_f16(f); break;
    case DType::bf16: static_cast<uint16_t*>(base)[index] = float_to_bf16(f); break;
    case DType::f8_e4m3fn:
    case DType::f8_e4m3fnuz:  // to the nearest code, saturating (as AITer clamps before converting)
      static_cast<uint8_t*>(base)[index] = static_cast<uint8_t>(ac_fp8::from_float(f, t == DType::f8_e4m3fnuz));
      break;
    default: break;
  }
}

// Head h's sink in the sinks' own dtype (float32, float16 or bfloat16); -inf without sinks.
double sink_of(const TensorView& sinks, int64_t h) {
  return sinks.defined() ? load(sinks.dtype, sinks.data, h * sinks.strides[0]) : -std::numeric_limits<double>::infinity();
}

int64_t i32_at(const TensorView& t, int64_t i) { return static_cast<const int32_t*>(t.data)[i * t.strides[0]]; }

// One sequence seen by the attention core: where its query rows, key rows and output rows are.
struct Sequence {
  int64_t q_len, k_len;
  std::vector<int64_t> q_rows, k_rows, v_rows, out_rows;  // element offsets of token rows (head 0)
  std::vector<int64_t> lse_rows;                   // element offsets of lse for head 0 (per query token)
  std::vector<double> qk_descale, v_descale;        // per kv head (unified_attention's descales); empty: 1
};

struct Common {
  const TensorView *q, *k, *v, *sinks, *out, *lse;
  int64_t q_head_stride, k_head_stride, v_head_stride, out_head_stride, lse_head_stride;
  double scale, softcap;
  bool causal;
  Window window;
  double out_divisor = 1.0;  // AITer's output_scale
  int64_t kv_heads = 0;      // with channel offsets: the caches' head count
  // Channel offsets within a key row of k and v (empty: channel e at e, the row layouts).
  std::vector<int64_t> k_channels, v_channels;
};

// The definition itself: for query i at position p (bottom-right aligned), key j counts when
// the masks allow it; the sink is one more logit with a zero value vector, never masked.
void attend_sequence(const Common& c, const Sequence& s) {
  const int64_t hq = c.q->shape[c.q->ndim - 2], d = c.q->shape[c.q->ndim - 1];
  const int64_t hk = c.k_channels.empty() ? c.k->shape[c.k->ndim - 2] : c.kv_heads;
  const int64_t dv = c.v_channels.empty() ? c.v->shape[c.v->ndim - 1] : static_cast<int64_t>(c.v_channels.size());
  auto k_at = [&](int64_t e) { return c.k_channels.empty() ? e : c.k_channels[static_cast<size_t>(e)]; };
  auto v_at = [&](int64_t e) { return c.v_channels.empty() ? e : c.v_channels[static_cast<size_t>(e)]; };
  const int64_t group = hq / hk;
  std::vector<double> scores(static_cast<size_t>(s.k_len)), acc(static_cast<size_t>(dv));
  for (int64_t h = 0; h < hq; ++h) {
    const int64_t kh = h / group;
    const double sink = sink_of(*c.sinks, h);
    const double qk = s.qk_descale.empty() ? 1.0 : s.qk_descale[kh], vd = s.v_descale.empty() ? 1.0 : s.v_descale[kh];
    for (int64_t i = 0; i < s.q_len; ++i) {
      const int64_t p = i + (s.k_len - s.q_len);
      int64_t lo = 0, hi = s.k_len;  // keys [lo, hi)
      if (c.causal) hi = std::min(hi, p + 1);
      if (c.window.right >= 0) hi = std::min(hi, p + c.window.right + 1);
      if (c.window.left >= 0) lo = std::max(lo, p - c.window.left);
      double m = sink;
      for (int64_t j = lo; j < hi; ++j) {
        double dot = 0;
        const int64_t qo = s.q_rows[i] + h * c.q_head_stride, ko = s.k_rows[j] + kh * c.k_head_stride;
        for (int64_t e = 0; e < d; ++e) dot += load(c.q->dtype, c.q->data, qo + e) * load(c.k->dtype, c.k->data, ko + k_at(e));
        double sc = dot * c.scale * qk;
        if (c.softcap > 0) sc = c.softcap * std::tanh(sc / c.softcap);
        scores[j] = sc;
        m = std::max(m, sc);
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      // A NaN score (a NaN among the keys) is not the max (comparisons skip it) and makes the
      // denominator NaN: the row's output is NaN, as the GPU kernels and AITer's give it.
      double denom = std::isinf(sink) && sink < 0 ? 0.0 : std::exp(sink - m);
      for (int64_t j = lo; j < hi; ++j) {
        double w = std::exp(scores[j] - m);
        denom += w;
        const int64_t vo = s.v_rows[j] + kh * c.v_head_stride;
        for (int64_t e = 0; e < dv; ++e) acc[e] += w * load(c.v->dtype, c.v->data, vo + v_at(e));
      }
      const int64_t oo = s.out_rows[i] + h * c.out_head_stride;
      for (int64_t e = 0; e < dv; ++e)
        store(c.out->dtype, c.out->data, oo + e, !(denom <= 0) ? acc[e] * vd / denom / c.out_divisor : 0.0);
      if (c.lse->defined()) {
        double lse = !(denom <= 0) ? m + std::log(denom) : -std::numeric_limits<double>::infinity();
        static_cast<float*>(c.lse->data)[s.lse_rows[i] + h * c.lse_head_stride] = static_cast<float>(lse);
      }
    }
  }
}

double scale_of(double given, const TensorView& q) {
  return given > 0 ? given : 1.0 / std::sqrt(static_cast<double>(q.shape[q.ndim - 1]));
}

}  // namespace

void varlen_attention(const VarlenArgs& a) {
  const int hd = a.batch_layout ? 2 : 1;
  Common c{&a.q, &a.k, &a.v, &a.sinks, &a.out, &a.lse,
           a.q.strides[hd], a.k.strides[hd], a.v.strides[hd], a.out.strides[hd],
           a.lse.defined() ? a.lse.strides[a.batch_layout ? 1 : 0] : 0,
           scale_of(a.softmax_scale, a.q), a.softcap, a.causal, a.window};
  const int64_t batch = a.batch_layout ? a.q.shape[0] : a.cu_seqlens_q.shape[0] - 1;
  for (int64_t b = 0; b < batch; ++b) {
    Sequence s;
    int64_t q0, k0;
    if (a.batch_layout) {
      s.q_len = a.q.shape[1];
      s.k_len = a.k.shape[1];
      q0 = k0 = 0;
    } else {
      q0 = i32_at(a.cu_seqlens_q, b);
      k0 = i32_at(a.cu_seqlens_k, b);
      s.q_len = i32_at(a.cu_seqlens_q, b + 1) - q0;
      s.k_len = i32_at(a.cu_seqlens_k, b + 1) - k0;
    }
    auto row = [&](const TensorView& t, int64_t start, int64_t i) {
      return a.batch_layout ? b * t.strides[0] + i * t.strides[1] : (start + i) * t.strides[0];
    };
    for (int64_t i = 0; i < s.q_len; ++i) {
      s.q_rows.push_back(row(a.q, q0, i));
      s.out_rows.push_back(row(a.out, q0, i));
      s.lse_rows.push_back(!a.lse.defined() ? 0
                           : a.batch_layout ? b * a.lse.strides[0] + i * a.lse.strides[2]
                                            : (q0 + i) * a.lse.strides[1]);
    }
    for (int64_t j = 0; j < s.k_len; ++j) {
      s.k_rows.push_back(row(a.k, k0, j));
      s.v_rows.push_back(row(a.v, k0, j));
    }
    attend_sequence(c, s);
  }
}

void paged_attention(const PagedArgs& a) {
  const CacheAddress ka = cache_address(a.k_cache, a.k_layout), va = cache_address(a.v_cache, a.v_layout);
  Common c{&a.q, &a.k_cache, &a.v_cache, &a.sinks, &a.out, &a.lse,
           a.q.strides[1], ka.head, va.head, a.out.strides[1],
           a.lse.defined() ? a.lse.strides[0] : 0,
           scale_of(a.softmax_scale, a.q), a.softcap, a.causal, a.window};
  if (a.output_scale.defined()) c.out_divisor = *static_cast<const float*>(a.output_scale.data);
  c.kv_heads = ka.heads;
  for (int64_t e = 0; e < ka.head_dim; ++e) c.k_channels.push_back(ka.channel_offset(e));
  for (int64_t e = 0; e < va.head_dim; ++e) c.v_channels.push_back(va.channel_offset(e));
  const int64_t batch = a.cu_seqlens_q.shape[0] - 1, bs = ka.block_size;
  for (int64_t b = 0; b < batch; ++b) {
    Sequence s;
    const int64_t q0 = i32_at(a.cu_seqlens_q, b);
    s.q_len = i32_at(a.cu_seqlens_q, b + 1) - q0;
    // The page table: [batch, max_blocks] rows with seqused_k, or CSR (kv_indptr) over the
    // 1-D kv_page_indices, the last page holding kv_last_page_lens[b] keys (or seqused_k[b] keys
    // in all).
    const bool csr = a.kv_indptr.defined();
    const int64_t first_page = csr ? i32_at(a.kv_indptr, b) : 0;
    if (csr) {
      const int64_t pages = i32_at(a.kv_indptr, b + 1) - first_page;
      s.k_len = pages * bs;
      if (a.seqused_k.defined()) s.k_len = i32_at(a.seqused_k, b);  // pa_decode_bf16_asm's context_lens
      else if (pages > 0 && a.kv_last_page_lens.defined()) s.k_len -= bs - i32_at(a.kv_last_page_lens, b);
    } else {
      s.k_len = i32_at(a.seqused_k, b);
    }
    for (int64_t i = 0; i < s.q_len; ++i) {
      s.q_rows.push_back((q0 + i) * a.q.strides[0]);
      s.out_rows.push_back((q0 + i) * a.out.strides[0]);
      s.lse_rows.push_back(a.lse.defined() ? (q0 + i) * a.lse.strides[1] : 0);
    }
    if (a.q_descale.defined() || a.k_descale.defined() || a.v_descale.defined())
      for (int64_t kh = 0; kh < ka.heads; ++kh) {
        s.qk_descale.push_back(descale_at(a.q_descale, 0, 0) * descale_at(a.k_descale, b, kh));
        s.v_descale.push_back(descale_at(a.v_descale, b, kh));
      }
    const int64_t* st = a.block_table.strides;
    const auto* table = static_cast<const int32_t*>(a.block_table.data) + (csr ? first_page * st[0] : b * st[0]);
    const int64_t step = csr ? st[0] : st[1];
    for (int64_t j = 0; j < s.k_len; ++j) {
      int64_t block = table[(j / bs) * step];
      s.k_rows.push_back(block * ka.block + ka.slot_offset(j % bs));
      s.v_rows.push_back(block * va.block + va.slot_offset(j % bs));
    }
    attend_sequence(c, s);
  }
}

void split_rows(const PagedArgs& a) {
  const int64_t slots = a.work_info.shape[0], dv = a.out.shape[2];
  const int64_t valid = a.work_indptr.defined() ? i32_at(a.work_indptr, a.work_indptr.shape[0] - 1) : slots;
  const int64_t* st = a.work_info.strides;
  auto* so = static_cast<float*>(a.split_o.data);
  auto* sl = static_cast<float*>(a.split_lse.data);
  const auto* lse = static_cast<const float*>(a.lse.data);
  for (int64_t i = 0; i < valid; ++i) {
    auto w = [&](int c) -> int64_t { return static_cast<const int32_t*>(a.work_info.data)[i * st[0] + c * st[1]]; };
    if (w(1) < 0) continue;
    const bool first = w(4) == i32_at(a.kv_indptr, w(0));
    for (int64_t t = w(2); t < w(3); ++t)
      for (int64_t h = w(7) & 0xffff; h < ((w(7) >> 16) & 0xffff); ++h) {
        const int64_t row = w(1) + t - w(2);
        for (int64_t c = 0; c < dv; ++c)
          so[row * a.split_o.strides[0] + h * a.split_o.strides[2] + c * a.split_o.strides[3]] =
              first ? static_cast<float>(load(a.out.dtype, a.out.data, t * a.out.strides[0] + h * a.out.strides[1] + c))
                    : 0.f;
        sl[row * a.split_lse.strides[0] + h * a.split_lse.strides[2]] =
            first ? lse[h * a.lse.strides[0] + t * a.lse.strides[1]] : -std::numeric_limits<float>::infinity();
      }
  }
}

// lse = logaddexp(prefix_lse, suffix_lse, sink); out = sum of each part times exp(its lse - lse).
void merge_states(const MergeArgs& a) {
  const int64_t tokens = a.output.shape[0], heads = a.output.shape[1], d = a.output.shape[2];
  auto lse_at = [](const TensorView& t, int64_t h, int64_t i) {
    return static_cast<double>(static_cast<const float*>(t.data)[h * t.strides[0] + i * t.strides[1]]);
  };
  for (int64_t i = 0; i < tokens; ++i)
    for (int64_t h = 0; h < heads; ++h) {
      const double parts[3] = {lse_at(a.prefix_lse, h, i), lse_at(a.suffix_lse, h, i), sink_of(a.sinks, h)};
      const double m = std::max({parts[0], parts[1], parts[2]});
      double z = 0;
      for (double p : parts) z += std::isinf(p) && p < 0 ? 0.0 : std::exp(p - m);
      // A NaN LSE makes z NaN, and the merged row and LSE NaN, as on the GPU.
      const double lse = !(z <= 0) ? m + std::log(z) : -std::numeric_limits<double>::infinity();
      const double wp = !(z <= 0) && !std::isinf(parts[0]) ? std::exp(parts[0] - lse) : 0.0;
      const double ws = !(z <= 0) && !std::isinf(parts[1]) ? std::exp(parts[1] - lse) : 0.0;
      for (int64_t e = 0; e < d; ++e) {
        auto off = [&](const TensorView& t) { return i * t.strides[0] + h * t.strides[1] + e; };
        double v = wp * load(a.prefix_output.dtype, a.prefix_output.data, off(a.prefix_output)) +
                   ws * load(a.suffix_output.dtype, a.suffix_output.data, off(a.suffix_output));
        store(a.output.dtype, a.output.data, off(a.output), v);
      }
      if (a.output_lse.defined())
        static_cast<float*>(a.output_lse.data)[h * a.output_lse.strides[0] + i * a.output_lse.strides[1]] =
            static_cast<float>(lse);
    }
}

}  // namespace aiter_compat::cpu
