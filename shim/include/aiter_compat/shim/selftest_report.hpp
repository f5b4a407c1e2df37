#pragma once
// The self-test for the fronts: every device the GPU probe finds, one row per family, as the
// CLI's table and as the JSON that the CLI, the C API and the Python module all return.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "aiter_compat/shim/selftest.hpp"

namespace aiter_compat::selftest {

struct Run {
  bool gpu_present = false;
  std::string no_gpu;  // why there is none
  std::string vendor;  // "nvidia", "amd"
  std::vector<FamilyCheck> rows;
};

// Checks every family on `device` (every device found when unset). `fresh` measures again in
// this process whatever is known or cached (the CLI); otherwise known verdicts stand (warmup()).
// `dtypes` by name ("bf16", "float16", ...); `head_dims` 64 and 128 unless given.
Run run_on_present_gpus(bool fresh, std::optional<int> device = std::nullopt, const std::vector<std::string>& dtypes = {},
                        const std::vector<int>& head_dims = {});

// AC_DTYPE_* of a dtype name (f32/float32/float, f16/fp16/float16/half, bf16/bfloat16); -1 if none.
int dtype_code(const std::string& name);

// "pass", "fail", or "skip" (not checked: the row's kernel is not in this device's code object).
std::string verdict_word(const FamilyCheck& c);
nlohmann::json to_json(const FamilyCheck& c);
nlohmann::json to_json(const std::vector<FamilyCheck>& rows);
std::string to_table(const std::vector<FamilyCheck>& rows);
bool any_failed(const std::vector<FamilyCheck>& rows);

}  // namespace aiter_compat::selftest
