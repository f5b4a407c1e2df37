#include "aiter_compat/shim/selftest.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <limits>
#include <set>
#include <tuple>

#include "aiter_compat/gpu_runtime/runtime.hpp"
#include "aiter_compat/shim/gpu_runner.hpp"
#include "aiter_compat/probe/logging.hpp"
#include "aiter_compat/shim/selftest_cache.hpp"
#include "aiter_compat/shim/selftest_cases.hpp"
#include "aiter_compat/shim/validate.hpp"
#include "reference_attention.hpp"

namespace aiter_compat::selftest {
namespace {

using gpu::FamilyKey;
using gpu::FamilyResult;
using gpu::KernelId;
using gpu::Verdict;

constexpr int kForcedSplits = 3;  // with the ragged lengths, some splits hold no keys

std::atomic<int> g_mode{-1};
std::recursive_mutex g_run_mutex;  // one check at a time; a check may need another first

Mode parse_mode() {
  const char* v = std::getenv("AITER_COMPAT_SELFTEST");
  const std::string text = v ? v : "";
  if (text.empty() || text == "first-use") return Mode::first_use;
  if (text == "always") return Mode::always;
  if (text == "off") return Mode::off;
  log_warn("AITER_COMPAT_SELFTEST=" + text + " is not one of first-use, always, off; using first-use");
  return Mode::first_use;
}

DeviceKind device_kind(gpu::Vendor v) { return v == gpu::Vendor::amd ? DeviceKind::rocm : DeviceKind::cuda; }

// The case staged on the device: one allocation, one copy in, the outputs copied back.
struct Staged {
  gpu::Vendor vendor;
  unsigned char* base = nullptr;
  Staged(gpu::Vendor v, const Case& c) : vendor(v) {
    base = static_cast<unsigned char*>(gpu::device_alloc(v, c.staging_bytes));
  }
  void upload(const Case& c, void* stream) {
    for (const auto& b : c.buffers) gpu::copy_to_device(vendor, base + b.offset, b.host.data(), b.host.size(), stream);
  }
  ~Staged() {
    try {
      gpu::device_free(vendor, base);
    } catch (...) {  // the check's own error is the one to report
    }
  }
  void read_back(Case& c, void* stream) {
    for (int i : {c.out, c.lse})
      if (i >= 0) {
        Buffer& b = c.buffers[static_cast<size_t>(i)];
        gpu::copy_to_host(vendor, b.host.data(), base + b.offset, b.host.size(), stream);
      }
    gpu::stream_sync(vendor, stream);
  }
};

// The CPU reference's outputs for a case, computed once per process per (kind, dtype, dim).
const Case& reference(CaseKind kind, int dtype, int dim) {
  static std::mutex mutex;
  static std::map<std::tuple<int, int, int>, Case> done;
  std::lock_guard lock(mutex);
  auto key = std::make_tuple(static_cast<int>(kind), dtype, dim);
  auto it = done.find(key);
  if (it != done.end()) return it->second;
  Case c = make_case(kind, dtype, dim);
  if (kind == CaseKind::merge) {
    MergeArgs a = merge_args(c, nullptr, DeviceKind::cpu, 0);
    validate_merge(a, true);
    cpu::merge_states(a);
  } else if (kind == CaseKind::prefill_varlen || kind == CaseKind::decode_varlen) {
    VarlenArgs a = varlen_args(c, nullptr, DeviceKind::cpu, 0);
    validate_varlen(a, true);
    cpu::varlen_attention(a);
  } else {
    PagedArgs a = paged_args(c, nullptr, DeviceKind::cpu, 0);
    validate_paged(a, true);
    cpu::paged_attention(a);
  }
  return done.emplace(key, std::move(c)).first->second;
}

double max_error_lse(const Case& got, const Case& want) {
  if (got.lse < 0) return 0;
  return lse_error(got.buffers[static_cast<size_t>(got.lse)], want.buffers[static_cast<size_t>(want.lse)]);
}

struct Outcome {
  bool ran = false;  // false: the row does not take this case (alignment, shape)
  double error = 0, lse_error = 0;
};

// One case on one row (and split count; on the warpgroup row, its default kernel or producer
// twin) of the device: staged, planned (does the row take it?), launched, read back and compared.
Outcome run_case(const FamilyKey& k, CaseKind kind, int splits, void* stream, std::optional<bool> twin = std::nullopt) {
  const Case& want = reference(kind, k.dtype, k.head_dim);
  Case got = want;  // the same inputs, the outputs poisoned again
  poison_outputs(got);
  Staged staged(k.vendor, got);
  const DeviceKind dev = device_kind(k.vendor);
  GpuOptions o;
  o.only_row = k.row == KernelId::split_merge ? KernelId::generic : k.row;
  o.force_splits = splits;
  o.producer_twin = twin;
  auto run = [&](const GpuOptions& opts) {
    if (kind == CaseKind::merge) return run_gpu(merge_args(got, staged.base, dev, k.device), stream, opts);
    if (kind == CaseKind::prefill_varlen || kind == CaseKind::decode_varlen)
      return run_gpu(varlen_args(got, staged.base, dev, k.device), stream, opts);
    return run_gpu(paged_args(got, staged.base, dev, k.device), stream, opts);
  };
  Outcome out;
  GpuOptions plan = o;
  plan.plan_only = true;
  try {
    run(plan);
  } catch (const gpu::RowDoesNotFit&) {
    return out;  // planned on the staging buffer's addresses (alignment), before any copy
  }
  staged.upload(got, stream);
  run(o);
  staged.read_back(got, stream);
  out.ran = true;
  out.error = max_error(got.buffers[static_cast<size_t>(got.out)], want.buffers[static_cast<size_t>(want.out)]);
  out.lse_error = max_error_lse(got, want);
  return out;
}


// The cases each row is checked on, with the split counts: the generic row and every faster
// row unsplit and (when the split merge passed) split; the split merge through the generic row.
std::vector<CaseKind> cases_of(KernelId row, int dtype) {
  switch (row) {
    case KernelId::merge_states: return {CaseKind::merge};
    case KernelId::split_merge:
      return gpu::kv8_type(dtype) ? std::vector<CaseKind>{CaseKind::extend_paged, CaseKind::decode_paged}
                                  : std::vector<CaseKind>{CaseKind::prefill_varlen, CaseKind::decode_paged};
    default: return case_kinds(dtype);
  }
}

FamilyResult check(const FamilyKey& k, void* stream);

// Runs a family's cases; the result says which case was worst.
FamilyResult measure(const FamilyKey& k, void* stream) {
  FamilyResult r;
  r.bound = bound_for(k.dtype);
  r.source = "measured";
  std::vector<int> split_counts = {k.row == KernelId::split_merge ? kForcedSplits : 1};
  if (k.row == KernelId::split_merge) {
    const FamilyResult generic = check({k.vendor, k.device, KernelId::generic, k.dtype, k.head_dim}, stream);
    if (generic.verdict != Verdict::passed) {
      r.verdict = Verdict::failed;
      r.detail = "not checked: the generic kernel it merges for failed its own self-test";
      return r;
    }
  } else if (k.row != KernelId::merge_states && k.row != KernelId::generic) {
    const FamilyResult merge = check({k.vendor, k.device, KernelId::split_merge, k.dtype, k.head_dim}, stream);
    if (merge.verdict == Verdict::passed) split_counts.push_back(kForcedSplits);
  }
  // The warpgroup row's verdict holds for both of its kernels: the default one and, where the
  // code object has it, the producer twin that the launcher takes for some calls.
  const std::vector<std::optional<bool>> kernels =
      k.row == KernelId::tiled_wgmma ? std::vector<std::optional<bool>>{false, true} : std::vector<std::optional<bool>>{std::nullopt};
  int ran = 0;
  double worst = -1;
  for (CaseKind kind : cases_of(k.row, k.dtype))
    for (int splits : split_counts)
      for (const std::optional<bool>& twin : kernels) {
        const Outcome o = run_case(k, kind, splits, stream, twin);
        if (!o.ran) continue;
        ++ran;
        const double rel = std::max(o.error / r.bound, o.lse_error / kLseBound);
        if (!(rel <= worst)) {
          worst = rel;
          r.max_error = o.error;
          r.detail = to_string(kind) + (twin.value_or(false) ? " (producer twin)" : "") +
                     (splits > 1 ? ", keys split " + std::to_string(splits) + " ways" : "") + ": max error " +
                     std::to_string(o.error) + " (bound " + std::to_string(r.bound) + "), LSE error " +
                     std::to_string(o.lse_error) + " (bound " + std::to_string(kLseBound) + ")";
        }
      }
  if (ran == 0) {
    r.verdict = Verdict::unknown;
    r.detail = "no self-test case fits this row (its kernel is not in this device's code object)";
    return r;
  }
  r.verdict = worst <= 1.0 ? Verdict::passed : Verdict::failed;
  return r;
}

// The per-device cache key and what the cache held, read once per device.
struct DeviceCache {
  std::string key;
  std::map<std::string, FamilyResult> entries;
  bool usable = false;  // false: the fault variable is set, or the key could not be made
};

std::map<std::pair<int, int>, DeviceCache>& device_caches() {
  static std::map<std::pair<int, int>, DeviceCache> caches;
  return caches;
}

DeviceCache& device_cache(gpu::Vendor v, int device) {
  auto& caches = device_caches();
  auto id = std::make_pair(static_cast<int>(v), device);
  auto it = caches.find(id);
  if (it != caches.end()) return it->second;
  DeviceCache c;
  // A perturbed kernel's verdict says nothing about the build: never read or written.
  if (!gpu::selftest_fault().set) {
    try {
      c.key = cache_key(v, device);
      c.usable = true;
      std::string problem;
      if (mode() != Mode::always) c.entries = load_cache(c.key, &problem);
      if (!problem.empty()) log_warn("self-test cache: " + problem);
    } catch (const gpu::GpuError& e) {
      log_debug(std::string("self-test cache not used: ") + e.what());
    }
  }
  return caches.emplace(id, std::move(c)).first->second;
}

void warn_failed(const FamilyKey& k, const FamilyResult& r) {
  log_warn("fallback kernel family " + gpu::family_label(k) + " " + reason(k, r) + "; calls take the next candidate");
}

// The verdict of one family: known, cached, or measured now (the run mutex held).
FamilyResult check(const FamilyKey& k, void* stream) {
  if (gpu::verdict_of(k) != Verdict::unknown) return gpu::result_of(k);
  static bool fault_warned = false;
  if (!gpu::selftest_fault().error.empty() && !fault_warned) {
    fault_warned = true;
    log_warn("AITER_COMPAT_SELFTEST_FAULT=" + gpu::selftest_fault().text + " ignored: " + gpu::selftest_fault().error);
  }
  DeviceCache& cache = device_cache(k.vendor, k.device);
  if (auto it = cache.entries.find(cache_family(k)); it != cache.entries.end()) {
    gpu::record_verdict(k, it->second);
    if (it->second.verdict == Verdict::failed) warn_failed(k, it->second);
    return it->second;
  }
  const auto start = std::chrono::steady_clock::now();
  FamilyResult r;
  {
    gpu::DeviceScope scope(k.vendor, k.device);
    // Asked with the device's context current: the driver answers for the calling thread's
    // context, and a process that has not touched the GPU yet (no torch) has none before this.
    if (gpu::stream_capturing(k.vendor, stream).value_or(false))
      throw gpu::GpuError("the fallback kernel family " + gpu::family_label(k) + " has not passed its self-test in this "
                          "process, and the self-test cannot run while the stream is being captured into a graph: "
                          "call aiter_compat.warmup() (aiter_compat_warmup() from C) before capturing, or set "
                          "AITER_COMPAT_SELFTEST=off to trust the kernels unchecked");
    try {
      r = measure(k, stream);
    } catch (const std::exception& e) {  // a launch or copy error is a failure of the family too
      r = {};
      r.verdict = Verdict::failed;
      r.bound = bound_for(k.dtype);
      r.source = "measured";
      r.max_error = std::numeric_limits<double>::infinity();
      r.detail = std::string("the check itself failed: ") + e.what();
    }
  }
  r.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (r.verdict == Verdict::unknown) return r;  // nothing to check: the launcher never picks it
  gpu::record_verdict(k, r);
  log_debug("self-test " + gpu::family_label(k) + ": " + gpu::to_string(r.verdict) + " in " + logging::fixed(r.millis, 2) +
            " ms (" + r.detail + ")");
  if (r.verdict == Verdict::failed) warn_failed(k, r);
  if (cache.usable) {
    std::string problem;
    if (!store_cache(cache.key, cache_family(k), r, &problem)) log_debug("self-test cache not written: " + problem);
  }
  return r;
}

std::vector<int> dims_of(const gpu::KernelRow& row, const std::string& arch, const std::vector<int>& wanted) {
  std::vector<int> dims;
  const std::vector<int> built = row.head_dims_on(arch);
  for (int d : wanted) {
    const bool ok = built.empty() ? (row.max_head_dim == 0 || d <= row.max_head_dim)
                                  : std::find(built.begin(), built.end(), d) != built.end();
    if (ok && d > 0) dims.push_back(d);
  }
  return dims;
}

}  // namespace

std::string to_string(Mode m) {
  switch (m) {
    case Mode::first_use: return "first-use";
    case Mode::always: return "always";
    case Mode::off: return "off";
  }
  return "?";
}

Mode mode() {
  int m = g_mode.load(std::memory_order_acquire);
  if (m < 0) {
    m = static_cast<int>(parse_mode());
    int expected = -1;
    if (!g_mode.compare_exchange_strong(expected, m)) m = expected;
  }
  return static_cast<Mode>(m);
}

void set_mode(Mode m) { g_mode.store(static_cast<int>(m), std::memory_order_release); }

FamilyFailed::FamilyFailed(const FamilyKey& k, const FamilyResult& r, const std::string& why)
    : RouteError("fallback " + gpu::family_label(k), {{"family", gpu::family_label(k)}}, {{gpu::family_label(k), false, {why}}}),
      family(k), result(r) {}

std::string reason(const FamilyKey& k, const FamilyResult& r) {
  std::string arch;
  try {
    arch = gpu::device_arch(k.vendor, k.device);
  } catch (const gpu::GpuError&) {
    arch = "this device";
  }
  return "failed its self-test on " + arch + " (device " + std::to_string(k.device) + ")" +
         (r.source == "cache" ? ", as cached" : "") + ": " + r.detail;
}

FamilyResult ensure(const FamilyKey& k, void* stream) {
  if (gpu::verdict_of(k) != Verdict::unknown) return gpu::result_of(k);
  std::lock_guard lock(g_run_mutex);
  return check(k, stream);
}

void check_before_launch(gpu::AttentionLaunch& l) {
  if (mode() == Mode::off || l.params.total_q == 0 || l.params.hq == 0) return;
  const FamilyKey widest{l.vendor, l.device, KernelId::generic, l.dtype, l.params.head_dim};
  if (gpu::verdict_of(widest) != Verdict::passed) {
    const FamilyResult r = ensure(widest, l.stream);
    if (r.verdict == Verdict::failed) throw FamilyFailed(widest, r, reason(widest, r));
  }
  // The launcher asks only for rows it planned, whose kernels the code object has; one that no
  // fixed case reaches (none is known) is not trusted unchecked: it is recorded as failed.
  l.check = [](const FamilyKey& k, void* stream) {
    FamilyResult r = ensure(k, stream);
    if (r.verdict != Verdict::unknown) return r.verdict;
    r.verdict = Verdict::failed;
    r.source = "measured";
    r.detail = "no self-test case reaches this family for this call's shape: not trusted unchecked";
    gpu::record_verdict(k, r);
    warn_failed(k, r);
    return r.verdict;
  };
}

void check_before_merge(gpu::Vendor v, int device, int dtype, int dim, void* stream) {
  if (mode() == Mode::off) return;
  const FamilyKey k{v, device, KernelId::merge_states, dtype, dim};
  if (gpu::verdict_of(k) == Verdict::passed) return;
  const FamilyResult r = ensure(k, stream);
  if (r.verdict == Verdict::failed) throw FamilyFailed(k, r, reason(k, r));
}

std::vector<FamilyCheck> families(gpu::Vendor v, int device, const std::vector<int>& dtypes,
                                  const std::vector<int>& head_dims) {
  std::vector<FamilyCheck> out;
  const std::string arch = gpu::device_arch(v, device);
  // The order the checks need: the generic row, the split merge, the faster rows, the merge.
  std::vector<KernelId> order = {KernelId::generic, KernelId::split_merge};
  for (const auto& row : gpu::kernel_rows())
    if (row.device == gpu::KernelDevice::gpu && row.op == gpu::KernelOp::attention && row.id != KernelId::generic)
      order.push_back(row.id);
  order.push_back(KernelId::merge_states);
  for (KernelId id : order) {
    const gpu::KernelRow& row = gpu::kernel_row(id);
    if (!row.built_for(arch)) continue;
    for (int t : row.dtypes) {
      if (!dtypes.empty() && std::find(dtypes.begin(), dtypes.end(), t) == dtypes.end()) continue;
      for (int d : dims_of(row, arch, head_dims)) out.push_back({{v, device, id, t, d}, arch, {}});
    }
  }
  return out;
}

std::vector<FamilyCheck> warmup(gpu::Vendor v, int device, const std::vector<int>& dtypes,
                                const std::vector<int>& head_dims, bool fresh) {
  std::vector<FamilyCheck> out = families(v, device, dtypes, head_dims);
  std::lock_guard lock(g_run_mutex);
  if (fresh) {
    for (const auto& f : out) gpu::record_verdict(f.key, {});  // unknown again
    device_cache(v, device).entries.clear();
  }
  for (auto& f : out) f.result = check(f.key, nullptr);
  return out;
}

void forget_all() {
  std::lock_guard lock(g_run_mutex);
  device_caches().clear();
  gpu::clear_verdicts();
}

std::vector<FamilyCheck> known_verdicts() {
  std::vector<FamilyCheck> out;
  for (const auto& [k, r] : gpu::all_verdicts()) {
    if (r.verdict == Verdict::unknown) continue;
    std::string arch;
    try {
      arch = gpu::device_arch(k.vendor, k.device);
    } catch (const gpu::GpuError&) {
    }
    out.push_back({k, arch, r});
  }
  return out;
}

}  // namespace aiter_compat::selftest
