#include "aiter_compat/gpu_runtime/family_verdicts.hpp"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

namespace aiter_compat::gpu {
namespace {

// The states of the usual range (2 vendors, 16 devices, every row, every family type, head dims
// up to 256) in a flat table of atomics; the details, and any key outside that range, in a map.
constexpr int kDevices = 16, kRows = 8, kTypes = AC_KTYPES, kDims = 257;
constexpr size_t kSlots = size_t{2} * kDevices * kRows * kTypes * kDims;
std::atomic<uint8_t> g_states[kSlots];
std::atomic<uint64_t> g_generation{0};
std::mutex g_mutex;
std::map<FamilyKey, FamilyResult>& details() {
  static std::map<FamilyKey, FamilyResult> d;
  return d;
}

long slot(const FamilyKey& k) {
  const int row = static_cast<int>(k.row);
  if (k.device < 0 || k.device >= kDevices || row >= kRows || k.dtype < 0 || k.dtype >= kTypes || k.head_dim < 0 ||
      k.head_dim >= kDims)
    return -1;
  return (((static_cast<long>(k.vendor == Vendor::amd) * kDevices + k.device) * kRows + row) * kTypes + k.dtype) * kDims +
         k.head_dim;
}

}  // namespace

std::string to_string(Verdict v) {
  switch (v) {
    case Verdict::unknown: return "unknown";
    case Verdict::passed: return "pass";
    case Verdict::failed: return "fail";
  }
  return "?";
}

bool FamilyKey::operator<(const FamilyKey& o) const {
  return std::tie(vendor, device, row, dtype, head_dim) < std::tie(o.vendor, o.device, o.row, o.dtype, o.head_dim);
}
bool FamilyKey::operator==(const FamilyKey& o) const {
  return std::tie(vendor, device, row, dtype, head_dim) == std::tie(o.vendor, o.device, o.row, o.dtype, o.head_dim);
}

std::string family_label(const FamilyKey& k) {
  return kernel_row(k.row).name + " " + dtype_suffix(k.dtype) + " d" + std::to_string(k.head_dim);
}

Verdict verdict_of(const FamilyKey& k) {
  const long s = slot(k);
  if (s >= 0) return static_cast<Verdict>(g_states[s].load(std::memory_order_acquire));
  std::lock_guard lock(g_mutex);
  auto it = details().find(k);
  return it == details().end() ? Verdict::unknown : it->second.verdict;
}

FamilyResult result_of(const FamilyKey& k) {
  std::lock_guard lock(g_mutex);
  auto it = details().find(k);
  return it == details().end() ? FamilyResult{} : it->second;
}

void record_verdict(const FamilyKey& k, const FamilyResult& r) {
  std::lock_guard lock(g_mutex);
  FamilyResult& held = details()[k];
  const bool was_failed = held.verdict == Verdict::failed;
  held = r;
  if (const long s = slot(k); s >= 0) g_states[s].store(static_cast<uint8_t>(r.verdict), std::memory_order_release);
  // Routers decided with a failure in mind, or before one, decide again.
  if (was_failed || r.verdict == Verdict::failed) g_generation.fetch_add(1, std::memory_order_acq_rel);
}

std::vector<std::pair<FamilyKey, FamilyResult>> all_verdicts() {
  std::lock_guard lock(g_mutex);
  return {details().begin(), details().end()};
}

void clear_verdicts() {
  std::lock_guard lock(g_mutex);
  for (const auto& [k, r] : details())
    if (const long s = slot(k); s >= 0) g_states[s].store(0, std::memory_order_release);
  details().clear();
  g_generation.fetch_add(1, std::memory_order_acq_rel);
}

uint64_t verdict_generation() { return g_generation.load(std::memory_order_acquire); }

FaultSpec parse_fault(const std::string& text) {
  FaultSpec f;
  f.text = text;
  if (text.empty()) return f;
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t colon; (colon = text.find(':', start)) != std::string::npos; start = colon + 1)
    parts.push_back(text.substr(start, colon - start));
  parts.push_back(text.substr(start));
  std::string rows;
  bool found = false;
  for (const auto& r : kernel_rows()) {
    if (r.device != KernelDevice::gpu) continue;
    rows += (rows.empty() ? "" : ", ") + r.name;
    if (r.name == parts[0]) f.row = r.id, found = true;
  }
  if (!found) f.error = "row " + parts[0] + " is not a GPU row of the kernel table (" + rows + ")";
  if (f.error.empty() && parts.size() > 1) {
    const std::string& t = parts[1];
    f.dtype = t == "f32" || t == "float32" ? AC_DTYPE_F32
              : t == "f16" || t == "fp16" || t == "float16" ? AC_DTYPE_F16
              : t == "bf16" || t == "bfloat16" ? AC_DTYPE_BF16
              : t == "f16_kv8" ? AC_KTYPE_F16_KV8
              : t == "bf16_kv8" ? AC_KTYPE_BF16_KV8 : -2;
    if (f.dtype == -2) f.error = "dtype " + t + " is not one of f32, f16, bf16, f16_kv8, bf16_kv8";
  }
  if (f.error.empty() && parts.size() > 2) {
    char* end = nullptr;
    const long d = std::strtol(parts[2].c_str(), &end, 10);
    if (parts[2].empty() || *end || d <= 0 || d > 1024) f.error = "head dim " + parts[2] + " is not a positive number";
    else f.head_dim = static_cast<int>(d);
  }
  if (f.error.empty() && parts.size() > 3) f.error = "takes ROW[:DTYPE[:DIM]], found " + std::to_string(parts.size()) + " parts";
  f.set = f.error.empty();
  return f;
}

namespace {
FaultSpec& fault_slot() {
  static FaultSpec f = [] {
    const char* v = std::getenv("AITER_COMPAT_SELFTEST_FAULT");
    return parse_fault(v ? v : "");
  }();
  return f;
}
}  // namespace

const FaultSpec& selftest_fault() { return fault_slot(); }
void set_selftest_fault(const FaultSpec& f) { fault_slot() = f; }

}  // namespace aiter_compat::gpu
