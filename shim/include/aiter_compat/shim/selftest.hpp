#pragma once
// Every fallback GPU kernel family proves itself on the device it runs on before its first
// result is used: it runs a small fixed case (selftest_cases.hpp) and is compared with the CPU
// reference within the GPU suite's bounds. A family that fails is passed over for the rest of
// the process (the launcher takes the next row; routing refuses the GPU route when the widest
// row failed, so the call goes to AITer if AITer can serve it, else is refused with the reason).
// Verdicts are cached per (arch, driver or runtime version, library build) in the user's cache
// directory (selftest_cache.hpp), so later processes skip the checks.
//
// AITER_COMPAT_SELFTEST: first-use (default: check each family before its first use, using the
// cache), always (check again in every process, ignoring the cache), off (trust every family).
// A check never runs during graph capture: a capture that needs one is refused with an error
// naming aiter_compat.warmup() (aiter_compat_warmup() in C), which runs the checks ahead.
#include <string>
#include <vector>

#include "aiter_compat/gpu_runtime/family_verdicts.hpp"
#include "aiter_compat/gpu_runtime/launch.hpp"
#include "aiter_compat/shim/errors.hpp"

namespace aiter_compat::selftest {

enum class Mode { first_use, always, off };
std::string to_string(Mode m);
// AITER_COMPAT_SELFTEST, read on first use (one warning for a value it does not know: first-use).
Mode mode();
void set_mode(Mode m);  // for tests and hosts that decide themselves

// A call's widest family (the generic kernel or merge_attn_states) failed its self-test: the
// call must be routed again (the router now refuses the GPU route, with this reason).
struct FamilyFailed : RouteError {
  gpu::FamilyKey family;
  gpu::FamilyResult result;
  FamilyFailed(const gpu::FamilyKey& k, const gpu::FamilyResult& r, const std::string& why);
};

// The verdict of one family, checked now when unknown (GpuError during graph capture).
gpu::FamilyResult ensure(const gpu::FamilyKey& k, void* stream);
// Why a failed family is not used ("failed its self-test on sm_90: ..."), for routes and logs.
std::string reason(const gpu::FamilyKey& k, const gpu::FamilyResult& r);

// What the GPU runner calls before a launch: the widest family's verdict (FamilyFailed when it
// failed), and the check the launcher calls for the row it picks and the split merge while they
// have none. A lookup once they are known; nothing with mode off.
void check_before_launch(gpu::AttentionLaunch& launch);
void check_before_merge(gpu::Vendor v, int device, int dtype, int dim, void* stream);

// One row per family built for the device's arch: every GPU row of the kernel table, each of its
// dtypes, at each head dim asked for (the tiled and decode rows only at those they are built for).
struct FamilyCheck {
  gpu::FamilyKey key;
  std::string arch;
  gpu::FamilyResult result;  // verdict unknown: not checked (detail says why)
};
std::vector<FamilyCheck> families(gpu::Vendor v, int device, const std::vector<int>& dtypes = {},
                                  const std::vector<int>& head_dims = {64, 128});
// Checks every family of `families` (ahead of graph capture, or for `aiter-compat selftest`);
// `fresh` forgets the verdicts of this process and skips the cache first.
std::vector<FamilyCheck> warmup(gpu::Vendor v, int device, const std::vector<int>& dtypes = {},
                                const std::vector<int>& head_dims = {64, 128}, bool fresh = false);
// Every verdict known in this process (checked here or read from the cache).
std::vector<FamilyCheck> known_verdicts();
// Forgets every verdict and what was read from the cache file (tests; the file stays).
void forget_all();

}  // namespace aiter_compat::selftest
