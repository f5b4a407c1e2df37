// ELF reader: any bytes give symbols or an error, and every read stays inside the buffer.
#include <cstdint>
#include <vector>

#include "aiter_compat/probe/elf_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> copy(data, data + size);  // exact size, so ASan sees any overrun
  auto a = aiter_compat::parse_elf_exports(copy.data(), copy.size());
  auto b = aiter_compat::parse_elf_functions(copy.data(), copy.size());
  if (!a.ok && a.error.empty()) __builtin_trap();
  if (!b.ok && b.error.empty()) __builtin_trap();
  return 0;
}
