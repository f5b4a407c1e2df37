#pragma once
// The subcommands besides probe, each run by a file of its own. cli.cpp declares their options
// and parses: CLI11 is header-only, and each file that includes it takes about ten seconds more to
// compile.
#include <string>
#include <vector>

namespace aiter_compat::cli {

// `aiter-compat selftest [--json]`: every fallback kernel family built for the present GPU
// against the CPU reference, measured afresh (docs/selftest.md). Exit 0 when every family
// passes (or there is no GPU), 5 when one fails.
constexpr int kExitSelftestFailed = 5;
struct SelftestArgs {
  bool json = false;
  int device = -1;
  std::vector<std::string> dtypes;
  std::vector<int> head_dims;
};
int run_selftest_command(const SelftestArgs& args);

// `aiter-compat bench [--json FILE] [--quick]`: GPT-OSS-shaped cases through each fallback
// family, AITer and torch SDPA, run by `python -m aiter_compat.bench` (python/aiter_compat/bench.py).
struct BenchArgs {
  std::vector<std::string> passthrough;
};
int run_bench_command(const BenchArgs& args);

}  // namespace aiter_compat::cli
