// compat_matrix.yaml loader: any text is a matrix or a MatrixError, nothing else.
#include <cstdint>
#include <string>

#include "aiter_compat/probe/matrix.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    aiter_compat::CompatMatrix::from_yaml(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  } catch (const aiter_compat::MatrixError&) {
  }
  return 0;
}
