#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "aiter_compat/probe/native_probe.hpp"

using namespace aiter_compat;
namespace fs = std::filesystem;

namespace {

// An aiter package folder whose jit/ holds the given modules.
struct JitFolder {
  fs::path root;
  explicit JitFolder(const std::string& name) {
    root = fs::path(testing::TempDir()) / name / "aiter";
    fs::remove_all(root.parent_path());
    fs::create_directories(root / "jit");
  }
  void add(const std::string& module, const char* from) { fs::copy_file(from, root / "jit" / (module + ".so")); }
};

const NativeModule* find(const NativeReport& r, const std::string& name) {
  for (const auto& m : r.modules)
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace

TEST(NativeProbe, DescribesEachModuleAndSurvivesBrokenOnes) {
  unsetenv("AITER_JIT_DIR");
  JitFolder jit("native_probe_case");
  jit.add("module_attention_asm", FIXTURE_CTYPES_SO);
  jit.add("module_plain", FIXTURE_PLAIN_SO);
  jit.add("module_crashing", FIXTURE_CRASHING_SO);
  jit.add("module_needs_missing", FIXTURE_NEEDS_MISSING_SO);
  std::ofstream(jit.root / "jit" / "module_text.so") << "half-written";
  std::ofstream(jit.root / "jit" / "not_a_module.so") << "ignored: not module_*";

  NativeReport r = probe_native({jit.root.string(), true, 10000});
  ASSERT_EQ(r.modules.size(), 5u);

  const NativeModule* asm_mod = find(r, "module_attention_asm");
  ASSERT_TRUE(asm_mod);
  EXPECT_TRUE(asm_mod->elf_ok);
  EXPECT_EQ(asm_mod->loads, std::optional<bool>(true)) << asm_mod->dlerror;
  EXPECT_NE(std::find(asm_mod->exports.begin(), asm_mod->exports.end(), "pa_fwd"), asm_mod->exports.end());
  EXPECT_NE(std::find(asm_mod->exports.begin(), asm_mod->exports.end(), "aiter_ctypes_abi_version"),
            asm_mod->exports.end());

  const NativeModule* plain = find(r, "module_plain");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->exports.empty());  // loads, but lacks the symbols a caller would need

  const NativeModule* crashing = find(r, "module_crashing");
  ASSERT_TRUE(crashing);
  EXPECT_EQ(crashing->loads, std::optional<bool>(false));
  EXPECT_NE(crashing->dlerror.find("crashed while loading"), std::string::npos) << crashing->dlerror;

  const NativeModule* missing = find(r, "module_needs_missing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->loads, std::optional<bool>(false));
  EXPECT_NE(missing->dlerror.find("libfixture_module_plain.so"), std::string::npos) << missing->dlerror;

  const NativeModule* text = find(r, "module_text");
  ASSERT_TRUE(text);
  EXPECT_FALSE(text->elf_ok);
  EXPECT_EQ(text->elf_error, "not an ELF file");
  EXPECT_FALSE(text->loads.has_value());  // not tried: it is no shared object
}

TEST(NativeProbe, HonoursAiterJitDir) {
  JitFolder jit("native_probe_env");
  fs::path env_dir = jit.root.parent_path() / "envjit";
  fs::create_directories(env_dir);
  fs::copy_file(FIXTURE_CTYPES_SO, env_dir / "module_from_env.so");
  setenv("AITER_JIT_DIR", env_dir.c_str(), 1);
  NativeReport r = probe_native({jit.root.string(), false, 1000});
  unsetenv("AITER_JIT_DIR");
  ASSERT_EQ(r.modules.size(), 1u);
  EXPECT_EQ(r.modules[0].name, "module_from_env");
  EXPECT_FALSE(r.modules[0].loads.has_value());  // --no-dlopen
  EXPECT_EQ(r.searched.front(), env_dir.string());
}
