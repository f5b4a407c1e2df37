#pragma once
// Reads a shared object's ELF header and exported dynamic symbols without loading it, so a
// module built for another machine, or one whose constructors would crash, can still be described.
#include <cstddef>
#include <string>
#include <vector>

namespace aiter_compat {

struct ElfExports {
  bool ok = false;
  std::string error;    // "not an ELF file", "truncated section table", ...
  std::string machine;  // "x86-64", "aarch64", "amdgpu", ...
  bool machine_matches_host = false;
  std::vector<std::string> symbols;  // defined, global or weak, default or protected visibility
};

ElfExports read_elf_exports(const std::string& path);
// Every defined function symbol of any ELF file (a GPU code object: an AMD .hsaco is a shared
// object, an NVIDIA cubin an executable with a static symbol table), for checking that a code
// object holds the kernels it should.
ElfExports parse_elf_functions(const unsigned char* data, size_t size);
// The same over bytes in memory (what the file reader and the fuzzer feed).
ElfExports parse_elf_exports(const unsigned char* data, size_t size);

}  // namespace aiter_compat
