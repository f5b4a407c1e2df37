// The C API's argument checks: tensors that are real (every buffer as large as its shape says)
// but whose lengths, offsets, windows, sinks and scalars come from the fuzzer. Every call must
// end in OK or INVALID_ARGUMENT, and ASan checks that no memory outside the tensors is touched.
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
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader r{data, size};
  const int batch = r.take<uint8_t>() % 4;
  const int64_t total_q = r.take<uint8_t>() % 17, total_k = r.take<uint8_t>() % 17;
  const int hk = 1 + r.take<uint8_t>() % 2, hq = hk * (1 + r.take<uint8_t>() % 3), d = 1 + r.take<uint8_t>() % 8;
  const DLDataType f32{kDLFloat, 32, 1}, i32{kDLInt, 32, 1};
  Tensor q({total_q, hq, d}, f32), k({total_k, hk, d}, f32), v({total_k, hk, d}, f32), out({total_q, hq, d}, f32);
  Tensor cu_q({batch + 1}, i32), cu_k({batch + 1}, i32), sinks({hq}, f32), lse({hq, total_q}, f32);
  for (int i = 0; i <= batch; ++i) {
    reinterpret_cast<int32_t*>(cu_q.bytes.data())[i] = r.take<int8_t>();
    reinterpret_cast<int32_t*>(cu_k.bytes.data())[i] = r.take<int8_t>();
  }
  for (int h = 0; h < hq; ++h) reinterpret_cast<float*>(sinks.bytes.data())[h] = r.take<float>();
  for (auto* t : {&q, &k, &v})
    for (size_t i = 0; i < t->bytes.size() / 4; ++i) reinterpret_cast<float*>(t->bytes.data())[i] = r.take<int8_t>() / 16.f;
  const uint8_t flags = r.take<uint8_t>();
  aiter_compat_varlen_args a{&q.t, &k.t, &v.t, &cu_q.t, &cu_k.t, (flags & 1) ? &sinks.t : nullptr, &out.t,
                             (flags & 2) ? &lse.t : nullptr, r.take<int8_t>(), r.take<int8_t>(),
                             static_cast<double>(r.take<float>()), flags & 4, r.take<int8_t>(), r.take<int8_t>()};
  aiter_compat_status s = aiter_compat_varlen_attention(&a, nullptr);
  if (s != AITER_COMPAT_OK && s != AITER_COMPAT_INVALID_ARGUMENT) __builtin_trap();
  if (s == AITER_COMPAT_INVALID_ARGUMENT && aiter_compat_last_error()[0] == '\0') __builtin_trap();
  return 0;
}
