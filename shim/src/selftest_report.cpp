#include "aiter_compat/shim/selftest_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "aiter_compat/probe/gpu_probe.hpp"

namespace aiter_compat::selftest {

int dtype_code(const std::string& n) {
  if (n == "f32" || n == "fp32" || n == "float32" || n == "float") return AC_DTYPE_F32;
  if (n == "f16" || n == "fp16" || n == "float16" || n == "half") return AC_DTYPE_F16;
  if (n == "bf16" || n == "bfloat16") return AC_DTYPE_BF16;
  if (n == "f16_kv8") return AC_KTYPE_F16_KV8;    // f16 tiles over an fp8 KV cache
  if (n == "bf16_kv8") return AC_KTYPE_BF16_KV8;
  return -1;
}

Run run_on_present_gpus(bool fresh, std::optional<int> device, const std::vector<std::string>& dtype_names,
                        const std::vector<int>& head_dims) {
  Run run;
  std::vector<int> dtypes;
  for (const auto& n : dtype_names) {
    const int t = dtype_code(n);
    if (t < 0) throw ArgumentError("dtypes", "'" + n + "'", "float32, float16, bfloat16, f16_kv8 or bf16_kv8");
    dtypes.push_back(t);
  }
  for (int d : head_dims)
    if (d <= 0 || d > 1024) throw ArgumentError("head_dims", std::to_string(d), "a head dim from 1 to 1024");
  const std::vector<int> dims = head_dims.empty() ? std::vector<int>{64, 128} : head_dims;
  const DeviceReport gpu = probe_device();
  if (!gpu.present) {
    run.no_gpu = gpu.reason.empty() ? "no GPU found" : gpu.reason;
    return run;
  }
  run.gpu_present = true;
  run.vendor = gpu.vendor;
  const gpu::Vendor v = gpu.vendor == "amd" ? gpu::Vendor::amd : gpu::Vendor::nvidia;
  if (device && (*device < 0 || *device >= gpu.count))
    throw ArgumentError("device", std::to_string(*device), "a device index below " + std::to_string(gpu.count));
  for (int d = device.value_or(0); d < (device ? *device + 1 : gpu.count); ++d) {
    std::vector<FamilyCheck> rows;
    try {
      const std::string arch = gpu::device_arch(v, d);
      if (gpu::code_object_id(arch).empty()) {  // no kernels for this arch: none can fail on it
        FamilyCheck none;
        none.key.vendor = v, none.key.device = d;
        none.result.detail = "nothing to check: this build has no fallback kernels for " + arch;
        run.rows.push_back(none);
        continue;
      }
      rows = warmup(v, d, dtypes, dims, fresh);
    } catch (const gpu::GpuError& e) {  // the runtime failed on this device: nothing checked on it
      FamilyCheck none;
      none.key.vendor = v, none.key.device = d;
      none.result.detail = e.what();
      rows.push_back(none);
    }
    run.rows.insert(run.rows.end(), rows.begin(), rows.end());
  }
  return run;
}

std::string verdict_word(const FamilyCheck& c) {
  return c.result.verdict == gpu::Verdict::unknown ? "skip" : gpu::to_string(c.result.verdict);
}

nlohmann::json to_json(const FamilyCheck& c) {
  auto number = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  return {{"family", c.arch.empty() ? nlohmann::json(nullptr) : nlohmann::json(gpu::kernel_row(c.key.row).name)},
          {"dtype", gpu::dtype_suffix(c.key.dtype)},
          {"head_dim", c.key.head_dim},
          {"device", c.key.device},
          {"arch", c.arch},
          {"max_error", number(c.result.max_error)},
          {"bound", c.result.bound},
          {"millis", c.result.millis},
          {"verdict", verdict_word(c)},
          {"source", c.result.source},
          {"detail", c.result.detail}};
}

nlohmann::json to_json(const std::vector<FamilyCheck>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) out.push_back(to_json(r));
  return out;
}

std::string to_table(const std::vector<FamilyCheck>& rows) {
  std::string text;
  char line[512];
  std::snprintf(line, sizeof line, "%-4s %-7s %-13s %-5s %4s %11s %9s %9s  %s\n", "dev", "arch", "family", "dtype", "dim",
                "max error", "bound", "ms", "verdict");
  text += line;
  double total = 0;
  for (const auto& r : rows) {
    if (r.arch.empty()) {  // a device with nothing to check
      text += "  device " + std::to_string(r.key.device) + ": " + r.result.detail + "\n";
      continue;
    }
    total += r.result.millis;
    std::snprintf(line, sizeof line, "%-4d %-7s %-13s %-5s %4d %11.3g %9.1e %9.2f  %s\n", r.key.device, r.arch.c_str(),
                  gpu::kernel_row(r.key.row).name.c_str(), gpu::dtype_suffix(r.key.dtype), r.key.head_dim,
                  r.result.max_error, r.result.bound, r.result.millis, verdict_word(r).c_str());
    text += line;
    if (r.result.verdict != gpu::Verdict::passed && !r.result.detail.empty()) text += "       " + r.result.detail + "\n";
  }
  std::snprintf(line, sizeof line, "%zu families, %.1f ms in all\n", rows.size(), total);
  return text + line;
}

bool any_failed(const std::vector<FamilyCheck>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const FamilyCheck& r) { return r.result.verdict == gpu::Verdict::failed; });
}

}  // namespace aiter_compat::selftest
