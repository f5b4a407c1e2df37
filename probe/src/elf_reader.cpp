#include "aiter_compat/probe/elf_reader.hpp"

#include <elf.h>

#include <cstring>
#include <cerrno>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace aiter_compat {
namespace {

std::string machine_name(uint16_t m) {
  switch (m) {
    case EM_X86_64: return "x86-64";
    case EM_AARCH64: return "aarch64";
    case EM_386: return "i386";
    case EM_PPC64: return "ppc64";
    case 224: return "amdgpu";  // EM_AMDGPU, absent from older elf.h
    case 190: return "cuda";    // EM_CUDA
    default: return "machine " + std::to_string(m);
  }
}

uint16_t host_machine() {
#if defined(__x86_64__)
  return EM_X86_64;
#elif defined(__aarch64__)
  return EM_AARCH64;
#else
  return EM_NONE;
#endif
}

// Every read goes through here: an offset and size must lie inside the file.
template <typename T>
bool read_at(const unsigned char* data, size_t size, uint64_t offset, T* out) {
  if (offset > size || sizeof(T) > size - offset) return false;
  std::memcpy(out, data + offset, sizeof(T));
  return true;
}

}  // namespace

namespace {

struct SymbolFilter {
  bool shared_object_only;  // exports: only ET_DYN and .dynsym, default/protected visibility
  bool functions_only;
};

ElfExports parse_symbols(const unsigned char* data, size_t size, SymbolFilter filter) {
  ElfExports r;
  if (size < EI_NIDENT || std::memcmp(data, ELFMAG, SELFMAG) != 0) {
    r.error = "not an ELF file";
    return r;
  }
  if (data[EI_CLASS] != ELFCLASS64) {
    r.error = "not a 64-bit ELF file (class " + std::to_string(data[EI_CLASS]) + ")";
    return r;
  }
  if (data[EI_DATA] != ELFDATA2LSB) {
    r.error = "not a little-endian ELF file";
    return r;
  }
  Elf64_Ehdr eh;
  if (!read_at(data, size, 0, &eh)) {
    r.error = "truncated ELF header";
    return r;
  }
  r.machine = machine_name(eh.e_machine);
  r.machine_matches_host = eh.e_machine == host_machine();
  if (filter.shared_object_only && eh.e_type != ET_DYN) {
    r.error = "not a shared object (ELF type " + std::to_string(eh.e_type) + ")";
    return r;
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0) {
    r.error = "no usable section table";
    return r;
  }
  auto section = [&](uint32_t index, Elf64_Shdr* out) {
    return index < eh.e_shnum && read_at(data, size, eh.e_shoff + uint64_t(index) * sizeof(Elf64_Shdr), out);
  };
  bool found_dynsym = false;
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!section(i, &sh)) {
      r.error = "truncated section table";
      return r;
    }
    if (sh.sh_type != SHT_DYNSYM && (filter.shared_object_only || sh.sh_type != SHT_SYMTAB)) continue;
    found_dynsym = true;
    Elf64_Shdr strtab;
    if (sh.sh_entsize != sizeof(Elf64_Sym) || !section(sh.sh_link, &strtab) || strtab.sh_offset > size ||
        strtab.sh_size > size - strtab.sh_offset) {
      r.error = "malformed dynamic symbol table";
      return r;
    }
    uint64_t count = sh.sh_size / sizeof(Elf64_Sym);
    for (uint64_t k = 1; k < count; ++k) {  // entry 0 is the null symbol
      Elf64_Sym sym;
      if (!read_at(data, size, sh.sh_offset + k * sizeof(Elf64_Sym), &sym)) {
        r.error = "truncated dynamic symbol table";
        return r;
      }
      unsigned bind = ELF64_ST_BIND(sym.st_info), vis = ELF64_ST_VISIBILITY(sym.st_other);
      if (sym.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) || sym.st_name >= strtab.sh_size)
        continue;
      if (filter.shared_object_only && vis != STV_DEFAULT && vis != STV_PROTECTED) continue;
      if (filter.functions_only && ELF64_ST_TYPE(sym.st_info) != STT_FUNC) continue;
      const char* name = reinterpret_cast<const char*>(data + strtab.sh_offset + sym.st_name);
      size_t max_len = strtab.sh_size - sym.st_name;
      size_t len = strnlen(name, max_len);
      if (len == max_len) continue;  // unterminated name
      r.symbols.emplace_back(name, len);
    }
  }
  if (!found_dynsym) {
    r.error = filter.shared_object_only ? "no dynamic symbol table" : "no symbol table";
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace

ElfExports parse_elf_exports(const unsigned char* data, size_t size) { return parse_symbols(data, size, {true, false}); }

ElfExports parse_elf_functions(const unsigned char* data, size_t size) { return parse_symbols(data, size, {false, true}); }

ElfExports read_elf_exports(const std::string& path) {
  // Mapped, not read: AITer's modules can be hundreds of megabytes and only the headers and
  // symbol tables are touched.
  ElfExports r;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    r.error = "cannot open: " + std::string(std::strerror(errno));
    return r;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    r.error = "not a regular file";
    ::close(fd);
    return r;
  }
  if (st.st_size == 0) {
    ::close(fd);
    r.error = "empty file";
    return r;
  }
  void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    r.error = "cannot map: " + std::string(std::strerror(errno));
    return r;
  }
  r = parse_elf_exports(static_cast<const unsigned char*>(map), static_cast<size_t>(st.st_size));
  ::munmap(map, static_cast<size_t>(st.st_size));
  return r;
}

}  // namespace aiter_compat
