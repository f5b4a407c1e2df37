#pragma once
// Whether each family of fallback kernels has shown, on the device it runs on, that it agrees
// with the CPU reference. A family is one row of the kernel table at one element type and head
// dim, on one device. The self-test (shim/selftest.hpp) writes the verdicts; the launcher passes
// over a family that failed, and routing refuses the GPU route when its widest family failed.
// Verdicts are read on every launch, so the common case is one relaxed atomic load.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "aiter_compat/gpu_runtime/driver_api.hpp"
#include "aiter_compat/gpu_runtime/kernel_table.hpp"

namespace aiter_compat::gpu {

enum class Verdict : uint8_t { unknown = 0, passed = 1, failed = 2 };
std::string to_string(Verdict v);  // "unknown", "pass", "fail"

struct FamilyKey {
  Vendor vendor = Vendor::nvidia;
  int device = 0;
  KernelId row = KernelId::generic;
  int dtype = AC_DTYPE_BF16;  // AC_DTYPE_*
  int head_dim = 0;           // of q and k (of the values for the merges)
  bool operator<(const FamilyKey& o) const;
  bool operator==(const FamilyKey& o) const;
};
// "tiled_rows bf16 d64": how logs and errors name a family.
std::string family_label(const FamilyKey& k);

struct FamilyResult {
  Verdict verdict = Verdict::unknown;
  double max_error = 0;  // the worst of every case, in the GPU suite's units (absolute below 1)
  double bound = 0;      // what the dtype allows
  double millis = 0;     // what the check cost on the host's clock (0 when read from the cache)
  std::string detail;    // the case and value that failed, or the runtime's error
  std::string source;    // "measured" in this process, or "cache"
};

Verdict verdict_of(const FamilyKey& k);  // lock-free for the table's usual range
FamilyResult result_of(const FamilyKey& k);
void record_verdict(const FamilyKey& k, const FamilyResult& r);
std::vector<std::pair<FamilyKey, FamilyResult>> all_verdicts();  // in key order
// Forgets every verdict (tests, and the self-test's `always` runs of warmup()).
void clear_verdicts();
// Counts failures recorded so far: a router built before a failure decides again.
uint64_t verdict_generation();

// AITER_COMPAT_SELFTEST_FAULT=ROW[:DTYPE[:DIM]] (test-only): the launcher perturbs that family's
// result (the attention rows scale their logits by 1.5; the merges drop the sink), so the GPU
// suite can show that the self-test catches a wrong kernel and the call goes elsewhere. Read
// once; `error` says why a value set was not understood.
struct FaultSpec {
  bool set = false;
  KernelId row = KernelId::generic;
  int dtype = -1;    // -1: every dtype
  int head_dim = 0;  // 0: every head dim
  std::string text, error;
  bool applies(KernelId r, int t, int d) const {
    return set && r == row && (dtype < 0 || dtype == t) && (head_dim == 0 || head_dim == d);
  }
};
const FaultSpec& selftest_fault();
FaultSpec parse_fault(const std::string& text);
// Replaces the fault read from the environment (tests that try several in one process).
void set_selftest_fault(const FaultSpec& f);

}  // namespace aiter_compat::gpu
