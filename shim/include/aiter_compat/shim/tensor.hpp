#pragma once
// A non-owning view of a tensor as DLPack describes it, with the few element types attention
// uses. Strides are in elements, as in DLPack.
#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>

namespace aiter_compat {

enum class DType : uint8_t { unsupported, f32, f16, bf16, i32, i64 };
enum class DeviceKind : uint8_t { cpu, cuda, rocm, other };

std::string to_string(DType t);
std::string to_string(DeviceKind d);
DType dtype_of(const DLDataType& t);
DeviceKind device_kind_of(const DLDevice& d);
size_t element_size(DType t);

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

// Fails (returns false, with *why) for more than 8 dimensions or a null shape.
bool view_from_dltensor(const DLTensor& t, TensorView* out, std::string* why);

}  // namespace aiter_compat
