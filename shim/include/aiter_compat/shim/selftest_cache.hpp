#pragma once
// The self-test's verdicts kept between processes: one JSON file in the user's cache directory
// ($XDG_CACHE_HOME/aiter-compat/selftest-verdicts.json, else ~/.cache/aiter-compat/...), keyed
// by arch, driver or runtime version and library build (version and a hash of the arch's code
// object), so a new driver or a rebuilt kernel is checked again. Writes replace the file
// atomically (a temporary file renamed over it) under an advisory lock; a file that cannot be
// read or written costs a check, never a wrong verdict.
#include <map>
#include <string>

#include "aiter_compat/gpu_runtime/family_verdicts.hpp"

namespace aiter_compat::selftest {

std::string cache_path();  // "" when neither XDG_CACHE_HOME nor HOME is set
// "sm_90|cuda driver 13000|0.1.0+1234-0123456789abcdef"
std::string cache_key(gpu::Vendor v, int device);
// Family name in the file: "tiled_rows:bf16:64".
std::string cache_family(const gpu::FamilyKey& k);

// The verdicts under `key` (empty when none, or the file is unreadable; *problem says why).
std::map<std::string, gpu::FamilyResult> load_cache(const std::string& key, std::string* problem = nullptr);
// Adds one verdict under `key`; false (with *problem) when the file could not be written.
bool store_cache(const std::string& key, const std::string& family, const gpu::FamilyResult& r,
                 std::string* problem = nullptr);

}  // namespace aiter_compat::selftest
