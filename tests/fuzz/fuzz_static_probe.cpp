// The static probe's source reader: any text as aiter/ops/mha.py is read (or reported as an
// error) by the embedded interpreter's ast, and the report is parsed without a crash.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "embedded_python_reader.hpp"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fs::path root = [] {
    fs::path r = fs::temp_directory_path() / ("aiter_compat_fuzz_" + std::to_string(getpid()));
    fs::create_directories(r / "aiter" / "ops");
    std::ofstream(r / "aiter" / "__init__.py") << "from .ops.mha import *\n";
    std::ofstream(r / "aiter" / "ops" / "__init__.py") << "";
    return r;
  }();
  std::ofstream(root / "aiter" / "ops" / "mha.py", std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  aiter_compat::EmbeddedPythonReader reader;
  aiter_compat::ChannelReading r = reader.read(aiter_compat::Channel::static_ast, root.string());
  if (!r.ran) __builtin_trap();  // the script reports failures; it never fails to report
  return 0;
}
