#include "aiter_compat/shim/tensor.hpp"

#include <algorithm>

namespace aiter_compat {

std::string to_string(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::unsupported: break;
  }
  return "unsupported dtype";
}

std::string to_string(DeviceKind d) {
  switch (d) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::cuda: return "cuda";
    case DeviceKind::rocm: return "rocm";
    case DeviceKind::other: break;
  }
  return "other device";
}

DType dtype_of(const DLDataType& t) {
  if (t.lanes != 1) return DType::unsupported;
  if (t.code == kDLFloat && t.bits == 32) return DType::f32;
  if (t.code == kDLFloat && t.bits == 16) return DType::f16;
  if (t.code == kDLBfloat && t.bits == 16) return DType::bf16;
  if (t.code == kDLInt && t.bits == 32) return DType::i32;
  if (t.code == kDLInt && t.bits == 64) return DType::i64;
  return DType::unsupported;
}

DeviceKind device_kind_of(const DLDevice& d) {
  switch (d.device_type) {
    case kDLCPU: case kDLCUDAHost: case kDLROCMHost: return DeviceKind::cpu;
    case kDLCUDA: case kDLCUDAManaged: return DeviceKind::cuda;
    case kDLROCM: return DeviceKind::rocm;
    default: return DeviceKind::other;
  }
}

size_t element_size(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: return 4;
    case DType::f16: case DType::bf16: return 2;
    case DType::i64: return 8;
    case DType::unsupported: break;
  }
  return 0;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

std::pair<uintptr_t, uintptr_t> TensorView::byte_span() const {
  auto base = reinterpret_cast<uintptr_t>(data);
  if (numel() == 0) return {base, base};
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < ndim; ++i) {
    int64_t reach = (shape[i] - 1) * strides[i];
    (reach < 0 ? lo : hi) += reach;
  }
  size_t es = std::max<size_t>(element_size(dtype), (raw_dtype.bits * raw_dtype.lanes + 7) / 8);
  return {base + lo * static_cast<int64_t>(es), base + (hi + 1) * static_cast<int64_t>(es)};
}

std::string TensorView::shape_text() const {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool view_from_dltensor(const DLTensor& t, TensorView* out, std::string* why) {
  if (t.ndim < 0 || t.ndim > 8) {
    *why = std::to_string(t.ndim) + " dimensions (at most 8)";
    return false;
  }
  if (t.ndim > 0 && t.shape == nullptr) {
    *why = "no shape";
    return false;
  }
  TensorView v;
  v.data = static_cast<char*>(t.data) + t.byte_offset;
  v.raw_dtype = t.dtype;
  v.dtype = dtype_of(t.dtype);
  v.device = device_kind_of(t.device);
  v.device_id = t.device.device_id;
  v.ndim = t.ndim;
  int64_t expected = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {  // no strides in DLPack means compact row-major
    v.shape[i] = t.shape[i];
    if (v.shape[i] < 0) {
      *why = "negative size " + std::to_string(v.shape[i]) + " in dimension " + std::to_string(i);
      return false;
    }
    v.strides[i] = t.strides ? t.strides[i] : expected;
    expected *= t.shape[i];
  }
  *out = v;
  return true;
}

}  // namespace aiter_compat
