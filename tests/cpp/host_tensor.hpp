#pragma once
// Host tensors for tests: contiguous storage plus a TensorView over it, filled from doubles.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "aiter_compat/shim/tensor.hpp"
#include "float_convert.hpp"

namespace aiter_compat::testing_support {

struct HostTensor {
  std::vector<unsigned char> bytes;
  TensorView view;

  HostTensor() = default;
  HostTensor(DType dtype, std::vector<int64_t> shape) {
    view.dtype = dtype;
    view.raw_dtype = to_dlpack(dtype);
    view.ndim = static_cast<int>(shape.size());
    int64_t n = 1;
    for (int i = view.ndim - 1; i >= 0; --i) {
      view.shape[i] = shape[i];
      view.strides[i] = n;
      n *= shape[i];
    }
    bytes.assign(static_cast<size_t>(std::max<int64_t>(n, 1)) * element_size(dtype), 0);
    view.data = bytes.data();
  }
  HostTensor(const HostTensor& o) : bytes(o.bytes), view(o.view) { view.data = bytes.data(); }
  HostTensor& operator=(const HostTensor& o) {
    bytes = o.bytes;
    view = o.view;
    view.data = bytes.data();
    return *this;
  }

  int64_t numel() const { return view.numel(); }
  void set(int64_t i, double v) {
    float f = static_cast<float>(v);
    switch (view.dtype) {
      case DType::f32: reinterpret_cast<float*>(bytes.data())[i] = f; break;
      case DType::f16: reinterpret_cast<uint16_t*>(bytes.data())[i] = cpu::float_to_f16(f); break;
      case DType::bf16: reinterpret_cast<uint16_t*>(bytes.data())[i] = cpu::float_to_bf16(f); break;
      case DType::i32: reinterpret_cast<int32_t*>(bytes.data())[i] = static_cast<int32_t>(v); break;
      case DType::i64: reinterpret_cast<int64_t*>(bytes.data())[i] = static_cast<int64_t>(v); break;
      default: break;
    }
  }
  double get(int64_t i) const {
    switch (view.dtype) {
      case DType::f32: return reinterpret_cast<const float*>(bytes.data())[i];
      case DType::f16: return cpu::f16_to_float(reinterpret_cast<const uint16_t*>(bytes.data())[i]);
      case DType::bf16: return cpu::bf16_to_float(reinterpret_cast<const uint16_t*>(bytes.data())[i]);
      case DType::i32: return reinterpret_cast<const int32_t*>(bytes.data())[i];
      case DType::i64: return static_cast<double>(reinterpret_cast<const int64_t*>(bytes.data())[i]);
      default: return NAN;
    }
  }
  void fill_random(std::mt19937& rng, double scale = 1.0) {
    std::normal_distribution<double> dist(0.0, scale);
    for (int64_t i = 0; i < numel(); ++i) set(i, dist(rng));
  }
  void fill(double v) {
    for (int64_t i = 0; i < numel(); ++i) set(i, v);
  }
};

inline HostTensor i32_tensor(const std::vector<int64_t>& values, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  HostTensor t(DType::i32, shape);
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), static_cast<double>(values[i]));
  return t;
}

// A DLTensor over a HostTensor's storage, for the C API (shape and strides owned here).
struct Dl {
  DLTensor t{};
  std::vector<int64_t> shape, strides;
  explicit Dl(const HostTensor& h) {
    shape.assign(h.view.shape, h.view.shape + h.view.ndim);
    strides.assign(h.view.strides, h.view.strides + h.view.ndim);
    t.data = h.view.data;
    t.device = {kDLCPU, 0};
    t.ndim = h.view.ndim;
    t.dtype = h.view.raw_dtype;
    t.shape = shape.data();
    t.strides = strides.data();
  }
};

}  // namespace aiter_compat::testing_support
