#include "aiter_compat/shim/tensor.hpp"

#include <algorithm>

namespace aiter_compat {

namespace {

// DLPack's type codes past 0.6 (dlpack.h 1.1), which Debian's header predates.
constexpr uint8_t kBool = 6, kF8e4m3fn = 10, kF8e4m3fnuz = 11, kF8e5m2 = 12, kF8e5m2fnuz = 13, kF8e8m0fnu = 14;

struct DTypeRow {
  DType dtype;
  const char* name;
  uint8_t code, bits;
};

// One row per dtype: its name, DLPack code and width. Everything about dtypes reads this.
constexpr DTypeRow kDTypes[] = {
    {DType::f32, "float32", kDLFloat, 32},         {DType::f16, "float16", kDLFloat, 16},
    {DType::bf16, "bfloat16", kDLBfloat, 16},      {DType::i32, "int32", kDLInt, 32},
    {DType::i64, "int64", kDLInt, 64},             {DType::f64, "float64", kDLFloat, 64},
    {DType::i8, "int8", kDLInt, 8},                {DType::i16, "int16", kDLInt, 16},
    {DType::u8, "uint8", kDLUInt, 8},              {DType::u16, "uint16", kDLUInt, 16},
    {DType::u32, "uint32", kDLUInt, 32},           {DType::u64, "uint64", kDLUInt, 64},
    {DType::boolean, "bool", kBool, 8},            {DType::f8_e4m3fn, "float8_e4m3fn", kF8e4m3fn, 8},
    {DType::f8_e4m3fnuz, "float8_e4m3fnuz", kF8e4m3fnuz, 8}, {DType::f8_e5m2, "float8_e5m2", kF8e5m2, 8},
    {DType::f8_e5m2fnuz, "float8_e5m2fnuz", kF8e5m2fnuz, 8}, {DType::f8_e8m0fnu, "float8_e8m0fnu", kF8e8m0fnu, 8},
    {DType::c64, "complex64", kDLComplex, 64},     {DType::c128, "complex128", kDLComplex, 128},
};

const DTypeRow* row_of(DType t) {
  for (const auto& r : kDTypes)
    if (r.dtype == t) return &r;
  return nullptr;
}

}  // namespace

std::string to_string(DType t) {
  const DTypeRow* r = row_of(t);
  return r ? r->name : "an unsupported dtype";
}

DType dtype_from_name(const std::string& text) {
  std::string s = text.rfind("torch.", 0) == 0 ? text.substr(6) : text;
  if (s == "half") return DType::f16;
  if (s == "float") return DType::f32;
  if (s == "double") return DType::f64;
  for (const auto& r : kDTypes)
    if (s == r.name) return r.dtype;
  return DType::unsupported;
}

DLDataType to_dlpack(DType t) {
  const DTypeRow* r = row_of(t);
  return r ? DLDataType{r->code, r->bits, 1} : DLDataType{kDLOpaqueHandle, 0, 1};
}

bool is_float16_or_32(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
bool is_e4m3(DType t) { return t == DType::f8_e4m3fn || t == DType::f8_e4m3fnuz; }
bool is_16bit_float(DType t) { return t == DType::f16 || t == DType::bf16; }

bool is_integer(DType t) {
  const DTypeRow* r = row_of(t);
  return r && (r->code == kDLInt || r->code == kDLUInt || r->code == kBool);
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
  for (const auto& r : kDTypes)
    if (t.code == r.code && t.bits == r.bits) return r.dtype;
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
  const DTypeRow* r = row_of(t);
  return r ? r->bits / 8 : 0;
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

std::string dtype_name(const TensorView& t) {
  if (t.dtype != DType::unsupported) return to_string(t.dtype);
  return "DLPack type code " + std::to_string(t.raw_dtype.code) + " of " + std::to_string(t.raw_dtype.bits) + " bits" +
         (t.raw_dtype.lanes != 1 ? " x " + std::to_string(t.raw_dtype.lanes) + " lanes" : "");
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
