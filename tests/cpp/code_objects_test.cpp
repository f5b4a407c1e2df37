// Every built code object holds every kernel, for its arch's machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "aiter_compat/probe/elf_reader.hpp"
#include "aiter_compat/gpu_runtime/code_objects.hpp"
#include "aiter_compat/gpu_runtime/kernel_table.hpp"

using namespace aiter_compat;

TEST(CodeObjects, EveryArchHoldsItsKernels) {
  if (code_objects().empty()) {
    std::printf("[  SKIPPED ] no GPU code objects in this build: no GPU compiler was found at configure time\n");
    GTEST_SKIP() << "no GPU code objects built";
  }
  for (const auto& object : code_objects()) {
    ElfExports elf = parse_elf_functions(object.data, object.size);
    ASSERT_TRUE(elf.ok) << object.arch << ": " << elf.error;
    EXPECT_EQ(elf.machine, std::string(object.arch).rfind("gfx", 0) == 0 ? "amdgpu" : "cuda") << object.arch;
    for (const auto& family : gpu::kernel_rows()) {
      // (functions_on: the head dims built on this arch; the RDNA tiles take fewer)
      const auto here = family.functions_on(object.arch);
      for (const auto& fn : family.functions) {
        const bool has = std::find(elf.symbols.begin(), elf.symbols.end(), fn) != elf.symbols.end();
        const bool wanted = family.built_for(object.arch) && std::find(here.begin(), here.end(), fn) != here.end();
        if (wanted) EXPECT_TRUE(has) << object.arch << " lacks " << fn;
        else EXPECT_FALSE(has) << object.arch << " holds " << fn << ", which the launcher would not use there";
      }
    }
  }
}

TEST(CodeObjects, BuiltForTheConfiguredArchs) {
  // What CMake built (AITER_COMPAT_BUILT_ARCHS) is what the registry carries, in order.
  std::stringstream want(BUILT_ARCHS);
  std::vector<std::string> archs;
  for (std::string a; std::getline(want, a, ',');)
    if (!a.empty()) archs.push_back(a);
  ASSERT_EQ(archs.size(), code_objects().size());
  for (size_t i = 0; i < archs.size(); ++i) EXPECT_EQ(archs[i], code_objects()[i].arch);
}
