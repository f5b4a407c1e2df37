// aiter_compat_batch_prefill's argument checks (mha_batch_prefill_func): tensors that are real
// (every buffer as large as its shape says) but whose page tables (the CSR kv_indptr,
// kv_page_indices and kv_last_page_lens, or a block_table with seqlen_k), query offsets, page
// size (the 3-D token pool included), windows, sinks, descales and scalars come from the fuzzer.
// Every call must end in OK or INVALID_ARGUMENT with a message, and ASan checks that no memory
// outside the tensors is touched.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "aiter_compat.h"

namespace {

struct Reader {
  const uint8_t* p;
  size_t n;
  template <typename T>
  T take() {
    T v{};
    size_t k = n < sizeof(T) ? n : sizeof(T);
    std::memcpy(&v, p, k);
    p += k;
    n -= k;
    return v;
  }
};

struct Tensor {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> shape;
  DLTensor t{};
  Tensor(std::vector<int64_t> s, DLDataType dtype) : shape(std::move(s)) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    bytes.assign(static_cast<size_t>(n) * dtype.bits / 8, 0);
    t.data = bytes.empty() ? nullptr : bytes.data();
    t.device = {kDLCPU, 0};
    t.ndim = static_cast<int>(shape.size());
    t.dtype = dtype;
    t.shape = shape.data();
  }
  int32_t* i32() { return reinterpret_cast<int32_t*>(bytes.data()); }
  float* f32() { return reinterpret_cast<float*>(bytes.data()); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r{data, size};
  const uint8_t shape_bits = r.take<uint8_t>();
  const int batch = shape_bits % 4;
  const bool token_pool = shape_bits & 4;  // k/v [slots, Hk, D]: pages of one token
  const int page = token_pool ? 1 : 1 + r.take<uint8_t>() % 5;
  const int64_t pages = r.take<uint8_t>() % 9, total_q = r.take<uint8_t>() % 13;
  const int hk = 1 + r.take<uint8_t>() % 2, hq = hk * (1 + r.take<uint8_t>() % 3), d = 1 + r.take<uint8_t>() % 8;
  const int64_t indices = r.take<uint8_t>() % 12, table_cols = r.take<uint8_t>() % 5;
  const DLDataType f32{kDLFloat, 32, 1}, i32{kDLInt, 32, 1};
  std::vector<int64_t> cache_shape = token_pool ? std::vector<int64_t>{pages, hk, d} : std::vector<int64_t>{pages, page, hk, d};
  Tensor q({total_q, hq, d}, f32), k(cache_shape, f32), v(cache_shape, f32), out({total_q, hq, d}, f32);
  Tensor cu_q({batch + 1}, i32), indptr({batch + 1}, i32), page_indices({indices}, i32), last({batch}, i32);
  Tensor table({batch, table_cols}, i32), seqlen({batch}, i32), sinks({hq}, f32), lse({hq, total_q}, f32);
  Tensor qd({1}, f32), kd({1}, f32), vd({1}, f32);
  for (int i = 0; i <= batch; ++i) cu_q.i32()[i] = r.take<int8_t>(), indptr.i32()[i] = r.take<int8_t>();
  for (int64_t i = 0; i < indices; ++i) page_indices.i32()[i] = r.take<int8_t>();
  for (int b = 0; b < batch; ++b) last.i32()[b] = r.take<int8_t>(), seqlen.i32()[b] = r.take<int8_t>();
  for (int64_t i = 0; i < batch * table_cols; ++i) table.i32()[i] = r.take<int8_t>();
  for (int h = 0; h < hq; ++h) sinks.f32()[h] = r.take<float>();
  for (Tensor* t : {&qd, &kd, &vd}) t->f32()[0] = r.take<float>();
  for (auto* t : {&q, &k, &v})
    for (size_t i = 0; i < t->bytes.size() / 4; ++i) t->f32()[i] = r.take<int8_t>() / 16.f;
  const uint8_t flags = r.take<uint8_t>();
  aiter_compat_batch_prefill_args a{};
  a.q = &q.t, a.k = &k.t, a.v = &v.t, a.cu_seqlens_q = &cu_q.t, a.kv_indptr = &indptr.t;
  a.kv_page_indices = &page_indices.t, a.out = &out.t;
  a.kv_last_page_lens = (flags & 1) ? &last.t : nullptr;
  if (flags & 2) a.block_table = &table.t, a.seqlen_k = &seqlen.t;
  a.sinks = (flags & 4) ? &sinks.t : nullptr;
  a.lse = (flags & 8) ? &lse.t : nullptr;
  if (flags & 16) a.q_descale = &qd.t, a.k_descale = &kd.t, a.v_descale = &vd.t;
  a.causal = (flags & 32) != 0;
  a.max_seqlen_q = r.take<int8_t>(), a.max_seqlen_k = r.take<int8_t>();
  a.softmax_scale = static_cast<double>(r.take<float>());
  a.window_left = r.take<int8_t>(), a.window_right = r.take<int8_t>();
  a.softcap = (flags & 64) ? static_cast<double>(r.take<float>()) : 0.0;
  aiter_compat_status s = aiter_compat_batch_prefill(&a, nullptr);
  if (s != AITER_COMPAT_OK && s != AITER_COMPAT_INVALID_ARGUMENT) __builtin_trap();
  if (s == AITER_COMPAT_INVALID_ARGUMENT && aiter_compat_last_error()[0] == '\0') __builtin_trap();
  // explain() over the same struct decides without reading the tables' contents: it must end in
  // OK or INVALID_ARGUMENT too, and keep within the buffer it is given.
  char text[96];
  s = aiter_compat_explain_batch_prefill(&a, text, flags & 128 ? sizeof text : 1);
  if (s != AITER_COMPAT_OK && s != AITER_COMPAT_INVALID_ARGUMENT) __builtin_trap();
  return 0;
}
