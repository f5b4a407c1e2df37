#pragma once
// A non-owning view of a tensor as DLPack describes it. Element types are named for every dtype
// the frameworks have (so an error can say "float8_e4m3fn", not "unsupported"); attention uses
// a few of them. Strides are in elements, as in DLPack.
#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>

namespace aiter_compat {

enum class DType : uint8_t {
  unsupported,  // none of those below (a DLPack code this table does not know)
  f32, f16, bf16, i32, i64,
  f64, i8, i16, u8, u16, u32, u64, boolean,
  f8_e4m3fn, f8_e4m3fnuz, f8_e5m2, f8_e5m2fnuz, f8_e8m0fnu,
  c64, c128,
};
enum class DeviceKind : uint8_t { cpu, cuda, rocm, other };

std::string to_string(DType t);  // the frameworks' name: "bfloat16", "float8_e4m3fn", ...
std::string to_string(DeviceKind d);
DType dtype_of(const DLDataType& t);
// A dtype by its framework name, with or without "torch." ("half", "float" and "double" too);
// unsupported when unknown.
DType dtype_from_name(const std::string& name);
DLDataType to_dlpack(DType t);
DeviceKind device_kind_of(const DLDevice& d);
size_t element_size(DType t);
bool is_float16_or_32(DType t);  // float32, float16 or bfloat16: what attention computes in
bool is_integer(DType t);        // the integer types and bool
bool is_e4m3(DType t);           // float8_e4m3fn or float8_e4m3fnuz: what fp8 KV caches hold
bool is_16bit_float(DType t);    // float16 or bfloat16

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::unsupported;
  DLDataType raw_dtype{};
  DeviceKind device = DeviceKind::cpu;
  int device_id = 0;
  int ndim = 0;
  int64_t shape[8] = {};
  int64_t strides[8] = {};

  bool defined() const { return data != nullptr || ndim > 0; }
  int64_t numel() const;
  // Lowest and one-past-highest byte addresses the view can touch (for overlap checks).
  std::pair<uintptr_t, uintptr_t> byte_span() const;
  std::string shape_text() const;  // "[12, 8, 64]"
};

// The view's dtype by name; one this table does not know by its DLPack code and width.
std::string dtype_name(const TensorView& t);

// Fails (returns false, with *why) for more than 8 dimensions or a null shape.
bool view_from_dltensor(const DLTensor& t, TensorView* out, std::string* why);

}  // namespace aiter_compat
