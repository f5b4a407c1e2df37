#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "aiter_compat/probe/elf_reader.hpp"
#include "test_seed.hpp"

using namespace aiter_compat;
using aiter_compat::testing_support::SeededRng;

namespace {
bool has(const ElfExports& e, const std::string& s) {
  return std::find(e.symbols.begin(), e.symbols.end(), s) != e.symbols.end();
}
std::vector<unsigned char> bytes_of(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

TEST(ElfReader, ListsExportedCSymbolsOnly) {
  ElfExports e = read_elf_exports(FIXTURE_CTYPES_SO);
  ASSERT_TRUE(e.ok) << e.error;
  EXPECT_TRUE(e.machine_matches_host);
  EXPECT_TRUE(has(e, "aiter_ctypes_abi_version"));
  EXPECT_TRUE(has(e, "pa_fwd"));
  EXPECT_FALSE(has(e, "_Z13hidden_helperv"));  // hidden visibility
  EXPECT_FALSE(has(e, "memcpy"));              // undefined imports are not exports
}

TEST(ElfReader, ReportsWhatIsWrongWithBadFiles) {
  std::string dir = testing::TempDir();
  std::ofstream(dir + "/text.so") << "not a shared object";
  EXPECT_EQ(read_elf_exports(dir + "/text.so").error, "not an ELF file");
  EXPECT_NE(read_elf_exports(dir + "/missing.so").error.find("cannot open"), std::string::npos);
  EXPECT_EQ(read_elf_exports(dir).error, "not a regular file");
  std::ofstream(dir + "/empty.so").close();
  EXPECT_EQ(read_elf_exports(dir + "/empty.so").error, "empty file");
}

TEST(ElfReader, SurvivesEveryTruncationAndCorruption) {
  std::vector<unsigned char> good = bytes_of(FIXTURE_CTYPES_SO);
  ASSERT_GT(good.size(), 64u);
  // Every prefix length over the headers, then random byte flips: never a crash, and a result
  // is either a clean error or a list of symbols.
  for (size_t n = 0; n < std::min<size_t>(good.size(), 4096); n += 7) {
    ElfExports e = parse_elf_exports(good.data(), n);
    EXPECT_TRUE(e.ok || !e.error.empty());
  }
  ElfExports full = parse_elf_exports(good.data(), good.size());
  EXPECT_TRUE(full.ok);
  SeededRng rng;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<unsigned char> bad = good;
    for (int k = 0; k < 8; ++k) bad[(*rng)() % bad.size()] = static_cast<unsigned char>((*rng)());
    ElfExports e = parse_elf_exports(bad.data(), bad.size());
    EXPECT_TRUE(e.ok || !e.error.empty());
  }
}
