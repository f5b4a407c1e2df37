#include "aiter_compat/shim/validate.hpp"

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "aiter_compat/shim/errors.hpp"
#include "float_convert.hpp"

namespace aiter_compat {
namespace {

[[noreturn]] void bad(const std::string& arg, const std::string& found, const std::string& needed) {
  throw ArgumentError(arg, found, needed);
}

std::string str(int64_t v) { return std::to_string(v); }

void need_defined(const char* name, const TensorView& t) {
  if (!t.defined()) bad(name, "None", "a tensor");
}

void need_float(const char* name, const TensorView& t) {
  if (t.dtype != DType::f32 && t.dtype != DType::f16 && t.dtype != DType::bf16)
    bad(name, "dtype " + dtype_name(t), "float16, bfloat16 or float32");
}

void need_dtype(const char* name, const TensorView& t, DType want) {
  if (t.dtype != want) bad(name, "dtype " + dtype_name(t), to_string(want));
}

void need_ndim(const char* name, const TensorView& t, int ndim, const char* layout) {
  if (t.ndim != ndim) bad(name, str(t.ndim) + " dimensions " + t.shape_text(), str(ndim) + " dimensions " + layout);
}

void need_dim(const char* name, const TensorView& t, int dim, int64_t want, const std::string& what) {
  if (t.shape[dim] != want)
    bad(name, "shape " + t.shape_text(), "size " + str(want) + " in dimension " + str(dim) + " (" + what + ")");
}

void need_inner_contiguous(const char* name, const TensorView& t) {
  if (t.ndim > 0 && t.shape[t.ndim - 1] > 1 && t.strides[t.ndim - 1] != 1)
    bad(name, "stride " + str(t.strides[t.ndim - 1]) + " in the last dimension", "1 (contiguous head dimension)");
  for (int i = 0; i < t.ndim; ++i)
    if (t.strides[i] < 0) bad(name, "negative stride " + str(t.strides[i]), "non-negative strides");
}

void need_same_device(const char* name, const TensorView& t, const TensorView& ref) {
  if (t.defined() && (t.device != ref.device || t.device_id != ref.device_id))
    bad(name, "device " + to_string(t.device) + ":" + str(t.device_id),
        "q's device " + to_string(ref.device) + ":" + str(ref.device_id));
}

void need_no_overlap(const char* out_name, const TensorView& out, const std::vector<std::pair<const char*, const TensorView*>>& inputs) {
  if (!out.defined() || out.numel() == 0) return;
  auto [lo, hi] = out.byte_span();
  for (const auto& [name, in] : inputs) {
    if (!in->defined() || in->numel() == 0) continue;
    auto [ilo, ihi] = in->byte_span();
    if (lo < ihi && ilo < hi) bad(out_name, std::string("memory overlapping ") + name, "a tensor of its own");
  }
}

bool host_readable(const TensorView& t) { return t.device == DeviceKind::cpu; }

int32_t at_i32(const TensorView& t, int64_t i) { return static_cast<const int32_t*>(t.data)[i * t.strides[0]]; }

// cu_seqlens: int32 [B+1], starting at 0, non-decreasing, ending within the token count.
void check_cu_seqlens(const char* name, const TensorView& cu, int64_t batch_plus_one, int64_t total,
                      const char* total_what, int64_t max_seqlen, const char* max_name, bool read) {
  need_defined(name, cu);
  need_dtype(name, cu, DType::i32);
  need_ndim(name, cu, 1, "[batch + 1]");
  if (batch_plus_one >= 0) need_dim(name, cu, 0, batch_plus_one, "batch + 1");
  if (cu.shape[0] < 1) bad(name, "shape " + cu.shape_text(), "at least one entry ([0] for an empty batch)");
  if (!read || !host_readable(cu)) return;
  if (at_i32(cu, 0) != 0) bad(name, "first entry " + str(at_i32(cu, 0)), "0");
  int64_t longest = 0;
  for (int64_t i = 1; i < cu.shape[0]; ++i) {
    int64_t a = at_i32(cu, i - 1), b = at_i32(cu, i);
    if (b < a) bad(name, "entry " + str(i) + " = " + str(b) + " after " + str(a), "non-decreasing offsets");
    longest = std::max(longest, b - a);
  }
  int64_t last = at_i32(cu, cu.shape[0] - 1);
  if (last > total) bad(name, "last entry " + str(last), "at most " + str(total) + " (" + total_what + ")");
  if (max_seqlen >= 0 && longest > max_seqlen)
    bad(max_name, str(max_seqlen), "at least " + str(longest) + " (the longest sequence in " + name + ")");
}

// One logit per query head, in float32 or the model's 16-bit dtype (GPT-OSS keeps bf16 sinks).
void check_sinks(const TensorView& sinks, int64_t hq, const TensorView& q, bool read) {
  if (!sinks.defined()) return;
  if (!is_float16_or_32(sinks.dtype))
    bad("sinks", "dtype " + dtype_name(sinks), "float32, bfloat16 or float16 (one logit per query head)");
  need_ndim("sinks", sinks, 1, "[num_query_heads]");
  need_dim("sinks", sinks, 0, hq, "one sink per query head");
  if (sinks.strides[0] < 0) bad("sinks", "negative stride " + str(sinks.strides[0]), "non-negative strides");
  need_same_device("sinks", sinks, q);
  if (!read || !host_readable(sinks)) return;
  for (int64_t h = 0; h < hq; ++h) {
    const int64_t i = h * sinks.strides[0];
    const float s = sinks.dtype == DType::f32 ? static_cast<const float*>(sinks.data)[i]
                    : sinks.dtype == DType::bf16 ? cpu::bf16_to_float(static_cast<const uint16_t*>(sinks.data)[i])
                                                 : cpu::f16_to_float(static_cast<const uint16_t*>(sinks.data)[i]);
    if (std::isnan(s)) bad("sinks", "NaN at head " + str(h), "a finite logit, or -inf for no sink");
    if (std::isinf(s) && s > 0) bad("sinks", "+inf at head " + str(h), "a finite logit, or -inf for no sink");
  }
}

void check_scalars(double scale, const Window& w, double softcap) {
  if (!(std::isfinite(scale) && scale >= 0)) bad("softmax_scale", std::to_string(scale), "a finite value > 0 (or None)");
  if (w.left < -1) bad("window_size[0]", str(w.left), "-1 (unbounded) or a count >= 0");
  if (w.right < -1) bad("window_size[1]", str(w.right), "-1 (unbounded) or a count >= 0");
  if (w.sink_size < 0) bad("window_size[2]", str(w.sink_size), "a count >= 0");
  if (!(std::isfinite(softcap) && softcap >= 0)) bad("logits_soft_cap", std::to_string(softcap), "a finite value >= 0");
}

void check_lse(const TensorView& lse, const TensorView& q, std::initializer_list<int64_t> shape, const char* layout,
               const char* name = "lse") {
  if (!lse.defined()) return;
  need_dtype(name, lse, DType::f32);
  need_ndim(name, lse, static_cast<int>(shape.size()), layout);
  int d = 0;
  for (int64_t s : shape) need_dim(name, lse, d++, s, layout);
  need_same_device(name, lse, q);
}

}  // namespace

void validate_varlen(const VarlenArgs& a, bool read) {
  need_defined("q", a.q);
  need_defined("k", a.k);
  need_defined("v", a.v);
  need_float("q", a.q);
  need_dtype("k", a.k, a.q.dtype);
  need_dtype("v", a.v, a.q.dtype);
  const int nd = a.batch_layout ? 4 : 3;
  const char* layout = a.batch_layout ? "[batch, seqlen, heads, head_dim]" : "[tokens, heads, head_dim]";
  need_ndim("q", a.q, nd, layout);
  need_ndim("k", a.k, nd, layout);
  need_ndim("v", a.v, nd, layout);
  const int hd = nd - 2;  // heads dimension
  const int64_t hq = a.q.shape[hd], hk = a.k.shape[hd], d = a.q.shape[nd - 1], dv = a.v.shape[nd - 1];
  need_dim("k", a.k, nd - 1, d, "q's head_dim");
  for (int i = 0; i < nd - 1; ++i) need_dim("v", a.v, i, a.k.shape[i], "as k");
  if (a.batch_layout) need_dim("k", a.k, 0, a.q.shape[0], "q's batch");
  if (hk == 0 || hq % hk != 0)
    bad("k", str(hk) + " heads for q's " + str(hq), "a divisor of q's head count (grouped-query attention)");
  for (auto [name, t] : {std::pair{"q", &a.q}, {"k", &a.k}, {"v", &a.v}}) need_inner_contiguous(name, *t);
  need_same_device("k", a.k, a.q);
  need_same_device("v", a.v, a.q);
  check_scalars(a.softmax_scale, a.window, a.softcap);
  if (!(a.dropout_p >= 0 && a.dropout_p < 1)) bad("dropout_p", std::to_string(a.dropout_p), "0 <= p < 1");
  int64_t batch = a.batch_layout ? a.q.shape[0] : -1;
  if (!a.batch_layout) {
    check_cu_seqlens("cu_seqlens_q", a.cu_seqlens_q, -1, a.q.shape[0], "q's token count", a.max_seqlen_q,
                     "max_seqlen_q", read);
    check_cu_seqlens("cu_seqlens_k", a.cu_seqlens_k, a.cu_seqlens_q.shape[0], a.k.shape[0], "k's token count",
                     a.max_seqlen_k, "max_seqlen_k", read);
    need_same_device("cu_seqlens_q", a.cu_seqlens_q, a.q);
    need_same_device("cu_seqlens_k", a.cu_seqlens_k, a.q);
    batch = a.cu_seqlens_q.shape[0] - 1;
  }
  check_sinks(a.sinks, hq, a.q, read);
  if (a.out.defined()) {
    need_dtype("out", a.out, a.q.dtype);
    need_ndim("out", a.out, nd, layout);
    for (int i = 0; i < nd - 1; ++i) need_dim("out", a.out, i, a.q.shape[i], "as q");
    need_dim("out", a.out, nd - 1, dv, "v's head_dim");
    need_inner_contiguous("out", a.out);
    need_same_device("out", a.out, a.q);
    need_no_overlap("out", a.out, {{"q", &a.q}, {"k", &a.k}, {"v", &a.v}, {"sinks", &a.sinks},
                                   {"cu_seqlens_q", &a.cu_seqlens_q}, {"cu_seqlens_k", &a.cu_seqlens_k}});
  }
  if (a.batch_layout) check_lse(a.lse, a.q, {batch, hq, a.q.shape[1]}, "[batch, heads, seqlen_q]");
  else check_lse(a.lse, a.q, {hq, a.q.shape[0]}, "[heads, tokens]");
  need_no_overlap("lse", a.lse, {{"q", &a.q}, {"k", &a.k}, {"v", &a.v}, {"out", &a.out}, {"sinks", &a.sinks}});
}

// A descale: float32 on q's device, of shape [batch, kv_heads] or one that broadcasts to it
// ([], [1], [1, 1], [batch, 1], [1, kv_heads]); q_descale a single element.
void check_descale(const char* name, const TensorView& t, int64_t batch, int64_t hk, const TensorView& q) {
  if (!t.defined()) return;
  need_dtype(name, t, DType::f32);
  need_same_device(name, t, q);
  if (t.ndim > 2) bad(name, str(t.ndim) + " dimensions", batch == 1 && hk == 1 ? "one element" : "[batch, kv_heads] or less");
  const int64_t rows = t.ndim == 2 ? t.shape[0] : 1, cols = t.ndim == 2 ? t.shape[1] : t.ndim == 1 ? t.shape[0] : 1;
  if ((rows != 1 && rows != batch) || (cols != 1 && cols != hk))
    bad(name, "shape " + str(rows) + " x " + str(cols),
        batch == 1 && hk == 1 ? "one element" : "[" + str(batch) + ", " + str(hk) + "] (batch, kv_heads) or broadcastable to it");
}

// The paged ops' dtypes: q, k_cache, v_cache and out in one float dtype; or an fp8 e4m3 cache
// (fn or fnuz) under float16/bfloat16 queries or queries of the same fp8, out in the 16-bit
// type (q's, where q is 16-bit) or the cache's fp8.
void check_paged_dtypes(const PagedArgs& a) {
  if (!is_float16_or_32(a.q.dtype) && !is_e4m3(a.q.dtype))
    bad("q", "dtype " + dtype_name(a.q), "float16, bfloat16, float32, or float8_e4m3fn / float8_e4m3fnuz over a cache of the same");
  const bool fp8_cache = is_e4m3(a.k_cache.dtype);
  if (a.k_cache.dtype != a.q.dtype && !(fp8_cache && is_16bit_float(a.q.dtype)))
    bad(a.k_name, "dtype " + dtype_name(a.k_cache),
        "q's dtype " + to_string(a.q.dtype) + (is_16bit_float(a.q.dtype) ? ", or float8_e4m3fn / float8_e4m3fnuz" : ""));
  need_dtype(a.v_name, a.v_cache, a.k_cache.dtype);
  if (!a.out.defined()) return;
  if (!fp8_cache) return need_dtype(a.out_name, a.out, a.q.dtype);
  const bool ok = a.out.dtype == a.k_cache.dtype || (is_16bit_float(a.q.dtype) ? a.out.dtype == a.q.dtype : is_16bit_float(a.out.dtype));
  if (!ok)
    bad(a.out_name, "dtype " + dtype_name(a.out),
        (is_16bit_float(a.q.dtype) ? "q's dtype " + to_string(a.q.dtype) : std::string("float16 or bfloat16")) + " or the cache's " +
            to_string(a.k_cache.dtype));
}

// output_scale: one float32 element on q's device.
void check_output_scale(const TensorView& t, const TensorView& q) {
  if (!t.defined()) return;
  need_dtype("output_scale", t, DType::f32);
  need_same_device("output_scale", t, q);
  if (t.numel() != 1) bad("output_scale", "shape " + t.shape_text(), "one element");
}

namespace {

// The page table: [batch, max_blocks] with seqused_k, or (kv_indptr given) CSR over the 1-D
// kv_page_indices. Contents are read only for host tensors.
void check_page_table(const PagedArgs& a, int64_t batch, int64_t nblocks, int64_t bs, bool read) {
  const char* table = a.table_name;
  need_defined(table, a.block_table);
  need_dtype(table, a.block_table, DType::i32);
  need_same_device(table, a.block_table, a.q);
  const bool csr = a.kv_indptr.defined();
  if (csr) {
    need_ndim(table, a.block_table, 1, "[total pages] (the pages of every sequence, kv_indptr's order)");
    need_dtype("kv_indptr", a.kv_indptr, DType::i32);
    need_ndim("kv_indptr", a.kv_indptr, 1, "[batch + 1]");
    need_dim("kv_indptr", a.kv_indptr, 0, batch + 1, "batch + 1, from cu_seqlens_q");
    need_same_device("kv_indptr", a.kv_indptr, a.q);
    if (a.seqused_k.defined()) {  // the keys of each sequence, within its pages (pa_decode_bf16_asm)
      need_dtype(a.seqused_name, a.seqused_k, DType::i32);
      need_ndim(a.seqused_name, a.seqused_k, 1, "[batch]");
      need_dim(a.seqused_name, a.seqused_k, 0, batch, "batch");
      need_same_device(a.seqused_name, a.seqused_k, a.q);
    } else if (a.kv_last_page_lens.defined()) {
      need_dtype("kv_last_page_lens", a.kv_last_page_lens, DType::i32);
      need_ndim("kv_last_page_lens", a.kv_last_page_lens, 1, "[batch]");
      need_dim("kv_last_page_lens", a.kv_last_page_lens, 0, batch, "batch, from cu_seqlens_q");
      need_same_device("kv_last_page_lens", a.kv_last_page_lens, a.q);
    } else if (bs > 1) {
      bad("kv_last_page_lens", "None", "int32 [batch] (keys in each sequence's last page) for page size " + str(bs) +
                                           " > 1");
    }
  } else {
    need_defined(a.seqused_name, a.seqused_k);
    need_dtype(a.seqused_name, a.seqused_k, DType::i32);
    need_ndim(a.seqused_name, a.seqused_k, 1, "[batch]");
    need_dim(a.seqused_name, a.seqused_k, 0, batch, "batch, from cu_seqlens_q");
    need_same_device(a.seqused_name, a.seqused_k, a.q);
    need_ndim(table, a.block_table, 2, "[batch, max_blocks_per_sequence]");
    need_dim(table, a.block_table, 0, batch, "batch, from cu_seqlens_q");
  }
  if (!read || !host_readable(a.block_table) || !host_readable(a.cu_seqlens_q) ||
      !host_readable(csr ? a.kv_indptr : a.seqused_k) || (a.seqused_k.defined() && !host_readable(a.seqused_k)) ||
      (a.kv_last_page_lens.defined() && !host_readable(a.kv_last_page_lens)))
    return;
  const int64_t entries = csr ? a.block_table.shape[0] : 0;
  if (csr && at_i32(a.kv_indptr, 0) != 0) bad("kv_indptr", "first entry " + str(at_i32(a.kv_indptr, 0)), "0");
  for (int64_t b = 0; b < batch; ++b) {
    int64_t ctx = 0, first = 0;
    std::string where;
    if (csr) {
      first = at_i32(a.kv_indptr, b);
      const int64_t end = at_i32(a.kv_indptr, b + 1);
      if (end < first || end > entries)
        bad("kv_indptr[" + str(b + 1) + "]", str(end),
            "in [" + str(first) + ", " + str(entries) + "] (non-decreasing, within kv_page_indices' " + str(entries) + " entries)");
      const int64_t pages = end - first;
      ctx = pages * bs;
      if (a.seqused_k.defined()) {
        const int64_t used = at_i32(a.seqused_k, b);
        if (used < 0 || used > ctx)
          bad(std::string(a.seqused_name) + "[" + str(b) + "]", str(used),
              "in [0, " + str(ctx) + "] (" + str(pages) + " pages of kv_indptr x page size " + str(bs) + ")");
        ctx = used;
      } else if (a.kv_last_page_lens.defined() && pages > 0) {
        const int64_t last = at_i32(a.kv_last_page_lens, b);
        if (last < 1 || last > bs)
          bad("kv_last_page_lens[" + str(b) + "]", str(last), "in [1, " + str(bs) + "] (keys in the last page)");
        ctx -= bs - last;
      }
      where = "kv_indptr";
    } else {
      ctx = at_i32(a.seqused_k, b);
      where = std::string(a.seqused_name) + "[" + str(b) + "]";
      const int64_t max_blocks = a.block_table.shape[1];
      if (ctx > max_blocks * bs)
        bad(where, str(ctx), "at most " + str(max_blocks * bs) + " (" + table + " columns x block size)");
    }
    const int64_t qlen = at_i32(a.cu_seqlens_q, b + 1) - at_i32(a.cu_seqlens_q, b);
    if (ctx < qlen && !a.short_contexts)
      bad(where, csr ? "sequence " + str(b) + " with " + str(ctx) + " keys" : str(ctx),
          "at least the sequence's " + str(qlen) + " new query tokens");
    if (a.max_seqlen_k >= 0 && ctx > a.max_seqlen_k) bad("max_seqlen_k", str(a.max_seqlen_k), "at least " + str(ctx));
    for (int64_t i = 0; i < (ctx + bs - 1) / bs; ++i) {
      const auto* t = static_cast<const int32_t*>(a.block_table.data);
      const int64_t blk = csr ? t[(first + i) * a.block_table.strides[0]]
                              : t[b * a.block_table.strides[0] + i * a.block_table.strides[1]];
      if (blk < 0 || blk >= nblocks)
        bad(std::string(table) + "[" + (csr ? str(first + i) : str(b) + ", " + str(i)) + "]", str(blk),
            "a block index in [0, " + str(nblocks) + ")");
    }
  }
}

// A cache of layout l: its number of dimensions, and no empty split (x) dimension.
void need_cache_shape(const char* name, const TensorView& t, CacheLayout l) {
  const int ndim = l == CacheLayout::vectorized_k || l == CacheLayout::vectorized_v ? 5 : 4;
  need_ndim(name, t, ndim, layout_text(l));
  if (ndim == 5 && t.shape[4] < 1) bad(name, "shape " + t.shape_text(), std::string(layout_text(l)) + " with x >= 1");
}

}  // namespace

void validate_paged(const PagedArgs& a, bool read) {
  const char *kn = a.k_name, *vn = a.v_name;
  need_defined("q", a.q);
  need_defined(kn, a.k_cache);
  need_defined(vn, a.v_cache);
  check_paged_dtypes(a);
  need_ndim("q", a.q, 3, "[tokens, heads, head_dim]");
  need_cache_shape(kn, a.k_cache, a.k_layout);
  need_cache_shape(vn, a.v_cache, a.v_layout);
  const CacheAddress ka = cache_address(a.k_cache, a.k_layout), va = cache_address(a.v_cache, a.v_layout);
  const int64_t hq = a.q.shape[1], hk = ka.heads, nblocks = ka.blocks, bs = ka.block_size;
  if (ka.head_dim != a.q.shape[2])
    bad(kn, "shape " + a.k_cache.shape_text() + ": head_dim " + str(ka.head_dim), "q's head_dim " + str(a.q.shape[2]));
  for (auto [what, got, want] : {std::tuple{"num_blocks", va.blocks, ka.blocks}, {"kv_heads", va.heads, ka.heads},
                                 {"block_size", va.block_size, ka.block_size}})
    if (got != want)
      bad(vn, "shape " + a.v_cache.shape_text() + ": " + what + " " + str(got), std::string(kn) + "'s " + str(want));
  if (hk == 0 || hq % hk != 0)
    bad(kn, str(hk) + " kv heads for q's " + str(hq), "a divisor of q's head count (grouped-query attention)");
  if (bs < 1) bad(kn, "block size " + str(bs), "at least 1");
  need_inner_contiguous("q", a.q);
  for (auto [name, t, layout] : {std::tuple{kn, &a.k_cache, a.k_layout}, {vn, &a.v_cache, a.v_layout}}) {
    if (layout == CacheLayout::rows) need_inner_contiguous(name, *t);  // the tiled kernels' 16-byte rows
    for (int i = 0; i < t->ndim; ++i)
      if (t->strides[i] < 0) bad(name, "negative stride " + str(t->strides[i]), "non-negative strides");
  }
  need_same_device(kn, a.k_cache, a.q);
  need_same_device(vn, a.v_cache, a.q);
  check_scalars(a.softmax_scale, a.window, a.softcap);
  check_cu_seqlens("cu_seqlens_q", a.cu_seqlens_q, -1, a.q.shape[0], "q's token count", a.max_seqlen_q,
                   "max_seqlen_q", read);
  need_same_device("cu_seqlens_q", a.cu_seqlens_q, a.q);
  const int64_t batch = a.cu_seqlens_q.shape[0] - 1;
  check_sinks(a.sinks, hq, a.q, read);
  check_descale("q_descale", a.q_descale, 1, 1, a.q);
  check_descale("k_descale", a.k_descale, batch, hk, a.q);
  check_descale("v_descale", a.v_descale, batch, hk, a.q);
  check_output_scale(a.output_scale, a.q);
  check_page_table(a, batch, nblocks, bs, false);  // shapes first; contents after out and lse
  if (a.out.defined()) {
    need_ndim(a.out_name, a.out, 3, "[tokens, heads, head_dim]");
    need_dim(a.out_name, a.out, 0, a.q.shape[0], "q's tokens");
    need_dim(a.out_name, a.out, 1, hq, "q's heads");
    need_dim(a.out_name, a.out, 2, va.head_dim, std::string(vn) + "'s head_dim");
    need_inner_contiguous(a.out_name, a.out);
    need_same_device(a.out_name, a.out, a.q);
    need_no_overlap(a.out_name, a.out, {{"q", &a.q}, {kn, &a.k_cache}, {vn, &a.v_cache},
                                   {a.table_name, &a.block_table}, {a.seqused_name, &a.seqused_k},
                                   {"kv_indptr", &a.kv_indptr}, {"kv_last_page_lens", &a.kv_last_page_lens},
                                   {"sinks", &a.sinks}, {"output_scale", &a.output_scale}});
  }
  check_lse(a.lse, a.q, {hq, a.q.shape[0]}, "[heads, tokens]");
  if (read) check_page_table(a, batch, nblocks, bs, true);
}

void validate_merge(const MergeArgs& a, bool read) {
  need_defined("prefix_output", a.prefix_output);
  need_float("prefix_output", a.prefix_output);
  need_ndim("prefix_output", a.prefix_output, 3, "[tokens, heads, head_dim]");
  const TensorView& ref = a.prefix_output;
  const int64_t tokens = ref.shape[0], heads = ref.shape[1];
  for (auto [name, t] : {std::pair{"suffix_output", &a.suffix_output}, {"output", &a.output}}) {
    need_defined(name, *t);
    need_dtype(name, *t, ref.dtype);
    need_ndim(name, *t, 3, "[tokens, heads, head_dim]");
    for (int i = 0; i < 3; ++i) need_dim(name, *t, i, ref.shape[i], "as prefix_output");
    need_same_device(name, *t, ref);
  }
  for (auto [name, t] : {std::pair{"prefix_output", &a.prefix_output}, {"suffix_output", &a.suffix_output},
                         {"output", &a.output}})
    need_inner_contiguous(name, *t);
  for (auto [name, t] : {std::pair{"prefix_lse", &a.prefix_lse}, {"suffix_lse", &a.suffix_lse}}) {
    need_defined(name, *t);
    check_lse(*t, ref, {heads, tokens}, "[heads, tokens]", name);
  }
  check_lse(a.output_lse, ref, {heads, tokens}, "[heads, tokens]", "output_lse");
  check_sinks(a.sinks, heads, ref, read);
  need_no_overlap("output", a.output, {{"prefix_lse", &a.prefix_lse}, {"suffix_lse", &a.suffix_lse}, {"sinks", &a.sinks}});
  need_no_overlap("output_lse", a.output_lse, {{"output", &a.output}, {"prefix_output", &a.prefix_output},
                                                {"suffix_output", &a.suffix_output}, {"sinks", &a.sinks}});
}

void validate_split_rows(const PagedArgs& a, bool read) {
  if (!a.work_info.defined()) return;
  need_dtype("work_info", a.work_info, DType::i32);
  need_ndim("work_info", a.work_info, 2, "[work items, 8]");
  need_dim("work_info", a.work_info, 1, 8, "batch, partial row, tokens [first, end), pages [first, end), key offset, heads");
  need_same_device("work_info", a.work_info, a.q);
  if (a.work_indptr.defined()) {
    need_dtype("work_indptr", a.work_indptr, DType::i32);
    need_ndim("work_indptr", a.work_indptr, 1, "[workgroups + 1]");
    if (a.work_indptr.shape[0] < 1) bad("work_indptr", "shape " + a.work_indptr.shape_text(), "at least one entry");
    need_same_device("work_indptr", a.work_indptr, a.q);
  }
  const int64_t hq = a.q.shape[1], dv = a.out.shape[2];
  for (auto [name, t, width] : {std::tuple{"split_o", &a.split_o, dv}, {"split_lse", &a.split_lse, int64_t{1}}}) {
    if (!t->defined()) bad(name, "None", "a float32 tensor (work_info sends rows of split sequences there)");
    need_dtype(name, *t, DType::f32);
    need_ndim(name, *t, 4, width == 1 ? "[split rows, 1, heads, 1]" : "[split rows, 1, heads, head_dim]");
    need_dim(name, *t, 1, 1, "one row");
    need_dim(name, *t, 2, hq, "the query heads");
    need_dim(name, *t, 3, width, width == 1 ? "one LSE" : "the head dim");
    for (int i = 0; i < 4; ++i)
      if (t->strides[i] < 0) bad(name, "negative stride " + str(t->strides[i]), "non-negative strides");
    need_same_device(name, *t, a.q);
  }
  need_inner_contiguous("split_o", a.split_o);
  if (a.split_o.shape[0] != a.split_lse.shape[0])
    bad("split_lse", "shape " + a.split_lse.shape_text(), "split_o's " + str(a.split_o.shape[0]) + " rows");
  need_no_overlap("split_o", a.split_o, {{"split_lse", &a.split_lse}, {a.out_name, &a.out}, {"work_info", &a.work_info}});
  need_no_overlap("split_lse", a.split_lse, {{a.out_name, &a.out}, {"work_info", &a.work_info}});
  if (!read || !host_readable(a.work_info) || (a.work_indptr.defined() && !host_readable(a.work_indptr))) return;
  const int64_t slots = a.work_info.shape[0], rows = a.split_o.shape[0], tokens = a.q.shape[0];
  const int64_t batch = a.kv_indptr.shape[0] - 1;
  int64_t valid = slots;
  if (a.work_indptr.defined()) {
    valid = at_i32(a.work_indptr, a.work_indptr.shape[0] - 1);
    if (valid < 0 || valid > slots)
      bad("work_indptr[-1]", str(valid), "in [0, " + str(slots) + "] (work_info's rows)");
  }
  const int64_t* st = a.work_info.strides;
  for (int64_t i = 0; i < valid; ++i) {
    auto w = [&](int c) -> int64_t { return static_cast<const int32_t*>(a.work_info.data)[i * st[0] + c * st[1]]; };
    const std::string at = "work_info[" + str(i) + "]";
    if (w(1) < 0) continue;  // written to out directly
    if (w(0) < 0 || w(0) >= batch) bad(at + "[0]", str(w(0)), "a sequence in [0, " + str(batch) + ")");
    if (w(2) < 0 || w(3) < w(2) || w(3) > tokens)
      bad(at + "[2:4]", "tokens [" + str(w(2)) + ", " + str(w(3)) + ")", "within Q's " + str(tokens) + " tokens");
    if (w(1) + w(3) - w(2) > rows)
      bad(at + "[1]", "partial row " + str(w(1)) + " for " + str(w(3) - w(2)) + " tokens",
          "rows within split_o's " + str(rows));
    const int64_t h0 = w(7) & 0xffff, h1 = (w(7) >> 16) & 0xffff;
    if (h1 < h0 || h1 > hq)
      bad(at + "[7]", "heads [" + str(h0) + ", " + str(h1) + ")", "within the " + str(hq) + " query heads");
  }
}

}  // namespace aiter_compat
