#include "aiter_compat/shim/router.hpp"

#include <algorithm>
#include <cstdlib>

#include "aiter_compat/gpu_runtime/family_verdicts.hpp"
#include "aiter_compat/gpu_runtime/kernel_table.hpp"
#include "aiter_compat/probe/op_table.hpp"
#include "aiter_compat/shim/selftest.hpp"

namespace aiter_compat {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string dtype_word(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::f16: return "fp16";
    case DType::f32: return "fp32";
    default: return to_string(t);
  }
}

bool sets_any(const std::vector<std::string>& names, const CallFeatures& f) {
  const OpSignature& sig = signature(f.op);
  for (const auto& n : names)
    if (int i = sig.index_of(n); i >= 0 && ((f.nondefault >> i) & 1u)) return true;
  return false;
}

// Evaluates a quirk's call conditions. A key this code does not know counts as met: for quirks
// that refuse a route, assuming the worst is the safe reading.
bool when_matches(const std::map<std::string, std::vector<std::string>>& when, const CallFeatures& f) {
  auto flag = [](const std::vector<std::string>& v, bool actual) {
    return v.empty() || (v[0] == "true") == actual;
  };
  auto in_ints = [](const std::vector<std::string>& v, int actual) {
    return contains(v, std::to_string(actual));
  };
  for (const auto& [key, values] : when) {
    bool ok = true;
    if (key == "sinks") ok = flag(values, f.sinks);
    else if (key == "causal") ok = flag(values, f.causal);
    else if (key == "bias") ok = flag(values, f.bias);
    else if (key == "alibi") ok = flag(values, f.alibi);
    else if (key == "dropout") ok = flag(values, f.dropout);
    else if (key == "softcap") ok = flag(values, f.softcap);
    else if (key == "dtype") ok = contains(values, dtype_word(f.dtype));
    else if (key == "head_dim_qk") ok = in_ints(values, f.head_dim_qk);
    else if (key == "head_dim_v") ok = in_ints(values, f.head_dim_v);
    // A kernel built for one shape alone (pa_decode_bf16_asm: head dim 64, 8 query heads per KV head).
    else if (key == "head_dim_qk_not") ok = !in_ints(values, f.head_dim_qk);
    else if (key == "group_not") ok = f.kv_heads > 0 && !in_ints(values, f.q_heads / f.kv_heads);
    else if (key == "window") ok = contains(values, (f.window_left || f.window_right) ? "set" : "none");
    else if (key == "sink_size") ok = flag(values, f.window_sink_size);  // StreamingLLM's sink_size > 0
    // Queries per sequence above a bound, and those queries x the query heads of a KV head
    // above one (pa_decode_gluon asserts query_length <= 4 and query_length x group <= 64).
    else if (key == "query_length_over") ok = !values.empty() && f.query_length > std::atoi(values[0].c_str());
    else if (key == "query_rows_over")
      ok = !values.empty() && f.kv_heads > 0 && f.query_length * (f.q_heads / f.kv_heads) > std::atoi(values[0].c_str());
    // The call sets one of these parameters (by the op's own names) to other than its neutral value.
    else if (key == "params_set") ok = sets_any(values, f);
    if (!ok) return false;
  }
  return true;
}

bool refuses_route(const std::string& effect) {
  return effect == "sinks_ignored" || effect == "assertion_error" || effect == "wrong_result" ||
         effect == "runtime_error";
}

std::string kernel_name(OpId op) {
  switch (signature(op).kind) {
    case OpKind::varlen: return "varlen_fwd";
    case OpKind::batch: return "batch_fwd";
    case OpKind::paged:
    case OpKind::decode:
    case OpKind::batch_prefill:
    case OpKind::vectorized_decode: return "paged_fwd";
    case OpKind::merge: return "merge_states";
  }
  return "?";
}

bool is_merge(OpId op) { return signature(op).kind == OpKind::merge; }

// The Python function an AITer entry point of the op table is (Triton's flash_attn_varlen_func
// has the key triton_flash_attn_varlen_func).
std::string function_of(const std::string& aiter_name) {
  const OpSpec* spec = find_op(aiter_name);
  return spec ? spec->function() : aiter_name;
}

// The call as the kernel table sees it; features come separately (named by parameter below).
gpu::KernelQuery query_of(const CallFeatures& f, const std::string& arch) {
  gpu::KernelQuery q;
  q.op = is_merge(f.op) ? gpu::KernelOp::merge_states : gpu::KernelOp::attention;
  q.dtype = family_type(f);
  q.head_dim = f.head_dim_qk, q.head_dim_v = f.head_dim_v;
  q.q_heads = f.q_heads, q.kv_heads = f.kv_heads;
  q.block_size = f.block_size;
  q.batch_contiguous = f.batch_contiguous;
  q.arch = arch;
  return q;
}

// Every reason a kernel row cannot take the call: the table's, then each parameter the call sets
// whose feature the row lacks, by the parameter's name.
std::vector<std::string> row_reasons(const gpu::KernelRow& row, const CallFeatures& f, const std::string& arch) {
  std::vector<std::string> why = row.route_reasons(query_of(f, arch));
  const OpSignature& sig = signature(f.op);
  for (size_t i = 0; i < sig.params.size(); ++i) {
    const uint32_t lacking = sig.params[i].kernel_features & ~row.features;
    if ((f.nondefault >> i) & 1u && lacking) why.push_back(sig.params[i].name + " is not supported");
  }
  if ((f.kernel_features & gpu::kStreamingSink) && !(row.features & gpu::kStreamingSink) && sig.index_of(Role::sink_size) < 0)
    why.push_back("window_size sink_size > 0 (StreamingLLM) is not supported");
  if ((f.kernel_features & gpu::kTokenScales) && !(row.features & gpu::kTokenScales))
    why.push_back("fp8 scales per token (" + sig.name_of(Role::k_descale) + ", " + sig.name_of(Role::v_descale) + " or " +
                  sig.name_of(Role::q_descale) + " of more than one element) are not supported; scales per tensor are");
  if ((f.kernel_features & gpu::kVectorizedCache) && !(row.features & gpu::kVectorizedCache))
    why.push_back(sig.params[static_cast<size_t>(sig.index_of(Role::k))].name + " is a 5-D vectorized cache: " +
                  "this kernel reads [pages, page_size, kv_heads, head_dim] pages (or [slots, kv_heads, head_dim])");
  return why;
}

}  // namespace

std::optional<Policy> parse_policy(const std::string& text) {
  if (text == "auto") return Policy::automatic;
  if (text == "prefer-fallback") return Policy::prefer_fallback;
  if (text == "aiter-only") return Policy::aiter_only;
  return std::nullopt;
}

std::string to_string(Policy p) {
  switch (p) {
    case Policy::automatic: return "auto";
    case Policy::prefer_fallback: return "prefer-fallback";
    case Policy::aiter_only: return "aiter-only";
  }
  return "?";
}

std::string to_string(RouteKind k) {
  switch (k) {
    case RouteKind::aiter: return "aiter";
    case RouteKind::fallback_cpu: return "fallback (cpu)";
    case RouteKind::fallback_gpu: return "fallback (gpu)";
    case RouteKind::refused: return "refused";
  }
  return "?";
}

Capabilities Capabilities::from_report(const ProbeReport& report, const CompatMatrix& matrix) {
  Capabilities c;
  c.aiter_found = report.aiter.found && !report.aiter.foreign;
  c.aiter_label = !report.aiter.found          ? std::string("aiter (not installed)")
                  : report.aiter.version.empty() ? "aiter (version unknown) at " + report.aiter.path
                                                 : "aiter " + report.aiter.version + " at " + report.aiter.path;
  if (report.aiter.foreign) c.aiter_problem = report.aiter.reason;
  if (auto it = report.channels.find("live"); it != report.channels.end() && it->second.import_error)
    c.aiter_problem = "import aiter failed: " + it->second.import_error->error;
  for (const auto& op : report.ops)
    c.entries[op.name] = {op.present, op.module, op.param_names(), op.window_arity,
                          op.import_error ? op.import_error->where + ": " + op.import_error->error : ""};
  // The probe matched each quirk to the install (versions, arch, parameters): only the call
  // conditions are left to decide per call. "possible" ones are assumed to apply.
  for (const auto& hit : report.quirks)
    for (const auto& q : matrix.quirks())
      if (q.id == hit.id) c.quirks.push_back({q, hit.status == "applies" ? "" : hit.why});
  if (report.device.present) c.device_archs = report.device.archs.empty() ? std::vector<std::string>{report.device.arch}
                                                                          : report.device.archs;
  else c.gpu_problem = report.device.reason;
  for (const auto& k : report.fallback_kernels)
    for (const auto& a : k.archs)
      if (!contains(c.gpu_fallback_archs, a)) c.gpu_fallback_archs.push_back(a);
  // Where each parameter first appeared, for "takes no sink_ptr (first in 0.1.10)".
  for (const auto& rel : matrix.releases())
    for (const auto& [name, op] : rel.ops)
      for (const auto& p : op.params) c.first_release[name].emplace(p, rel.version.text);
  return c;
}

Router::Router(Capabilities caps, Policy policy, uint64_t verdict_generation)
    : caps_(std::move(caps)), policy_(policy), verdict_generation_(verdict_generation) {}

Candidate Router::aiter_candidate(const CallFeatures& f, Route* r) const {
  const OpSignature& sig = signature(f.op);
  Candidate c;
  c.name = caps_.aiter_label + ": " + (sig.aiter_name.empty() ? sig.name : sig.aiter_name);
  if (sig.aiter_name.empty()) {
    c.reasons.push_back(sig.no_aiter_reason);
    return c;
  }
  if (!caps_.aiter_found) {
    c.reasons.push_back("AITer is not installed");
    return c;
  }
  if (!caps_.aiter_problem.empty()) c.reasons.push_back(caps_.aiter_problem);
  auto it = caps_.entries.find(sig.aiter_name);
  if (it == caps_.entries.end() || !it->second.present) {
    c.reasons.push_back(sig.aiter_name + " is not in this install");
    return c;
  }
  const AiterEntry& e = it->second;
  if (!e.import_error.empty()) c.reasons.push_back(sig.aiter_name + " cannot be imported: " + e.import_error);
  if (f.device != DeviceKind::rocm)
    c.reasons.push_back("AITer runs on AMD GPUs (ROCm); the tensors are on " + to_string(f.device));
  // unified_attention (Triton) also takes fp8 e4m3 queries and caches (its descales and
  // output_scale); the other entry points 16-bit floats.
  const bool fp8_ok = sig.aiter_takes_fp8;
  if (!is_16bit_float(f.dtype) && !(fp8_ok && is_e4m3(f.dtype)))
    c.reasons.push_back(std::string("AITer takes float16") + (fp8_ok ? ", bfloat16 or fp8 e4m3" : " or bfloat16") +
                        ", not " + to_string(f.dtype));
  auto first_in = [&](const std::string& param) {
    auto op_it = caps_.first_release.find(sig.aiter_name);
    if (op_it == caps_.first_release.end()) return std::string();
    auto p = op_it->second.find(param);
    return p == op_it->second.end() ? std::string() : " (first in " + p->second + ")";
  };
  for (size_t i = 0; i < sig.params.size(); ++i) {
    const ParamSpec& p = sig.params[i];
    const bool set = (f.nondefault >> i) & 1u;
    if (contains(e.params, p.name)) {
      if (r && (p.required || set)) {  // what the call passes: the required ones and those it sets
        if (p.role == Role::window && f.window_arity && e.window_arity && f.window_arity != *e.window_arity)
          r->window_param = static_cast<int>(r->aiter_params.size());
        r->aiter_params.push_back(static_cast<int>(i));
      }
      continue;
    }
    if (p.required || (set && !p.hint))
      c.reasons.push_back(sig.aiter_name + " takes no " + p.name + first_in(p.name) +
                          (p.required ? "" : ", and this call sets it"));
  }
  if (f.return_lse && !contains(e.params, "return_lse"))
    c.reasons.push_back(sig.aiter_name + " returns no LSE, and this call asks for it");
  if (f.window_arity > 0 && e.window_arity == 2 && f.window_sink_size)
    c.reasons.push_back("window_size takes (left, right) in this release; sink_size > 0 needs a 3-value window");
  if (r) r->window_arity = e.window_arity.value_or(0);
  for (const auto& [q, assumed] : caps_.quirks) {
    if (!refuses_route(q.effect) || !contains(q.ops, sig.aiter_name)) continue;
    if (!when_matches(q.when, f)) continue;
    c.reasons.push_back("quirk " + q.id + ": " + q.summary + (assumed.empty() ? "" : " (assumed: " + assumed + ")"));
  }
  c.accepted = c.reasons.empty();
  return c;
}

Candidate Router::cpu_candidate(const CallFeatures& f) const {
  Candidate c;
  c.name = "fallback " + kernel_name(f.op) + " (cpu reference)";
  if (f.device != DeviceKind::cpu) c.reasons.push_back("runs on CPU tensors; these are on " + to_string(f.device));
  for (auto& r : row_reasons(gpu::kernel_row(gpu::KernelId::cpu_reference), f, "")) c.reasons.push_back(std::move(r));
  c.accepted = c.reasons.empty();
  return c;
}

// A GPU route exists where the widest row of the op takes the call (the generic kernel, or the
// merge): it fits every launch. The faster rows are recorded for the launcher and explain().
Candidate Router::gpu_candidate(const CallFeatures& f, std::vector<Candidate>* kernels) const {
  Candidate c;
  c.name = "fallback " + kernel_name(f.op) + " (gpu)";
  const std::string arch = f.device_id >= 0 && static_cast<size_t>(f.device_id) < caps_.device_archs.size()
                               ? caps_.device_archs[static_cast<size_t>(f.device_id)]
                               : "";
  if (f.device == DeviceKind::cpu) {
    c.reasons.push_back("runs on GPU tensors; these are on cpu");
  } else if (caps_.gpu_fallback_archs.empty()) {
    c.reasons.push_back("no GPU fallback kernels are built into this aiter-compat");
  } else if (caps_.device_archs.empty()) {
    c.reasons.push_back("no GPU was found at start-up" + (caps_.gpu_problem.empty() ? "" : " (" + caps_.gpu_problem + ")"));
  } else if (arch.empty()) {
    c.reasons.push_back("the tensors are on device " + std::to_string(f.device_id) + ", but " +
                        std::to_string(caps_.device_archs.size()) + " device(s) were found");
  } else if ((f.device == DeviceKind::rocm) != (arch.rfind("gfx", 0) == 0)) {
    c.reasons.push_back("the tensors are on " + to_string(f.device) + " but the GPU found is " + arch);
  } else if (!contains(caps_.gpu_fallback_archs, arch)) {
    c.reasons.push_back("no kernel built for " + arch + " (built: " + join(caps_.gpu_fallback_archs, ", ") + ")");
  }
  const gpu::KernelOp op = is_merge(f.op) ? gpu::KernelOp::merge_states : gpu::KernelOp::attention;
  const gpu::KernelId widest = op == gpu::KernelOp::merge_states ? gpu::KernelId::merge_states : gpu::KernelId::generic;
  for (const auto& row : gpu::kernel_rows()) {
    if (row.device != gpu::KernelDevice::gpu || row.op != op) continue;
    Candidate k{row.name, false, row_reasons(row, f, arch)};
    if (f.device != DeviceKind::cpu && f.device_id >= 0) {  // a family that failed on this device
      const gpu::FamilyKey family{f.device == DeviceKind::rocm ? gpu::Vendor::amd : gpu::Vendor::nvidia, f.device_id,
                                  row.id, query_of(f, arch).dtype,
                                  op == gpu::KernelOp::merge_states ? f.head_dim_v : f.head_dim_qk};
      if (family.dtype >= 0 && gpu::verdict_of(family) == gpu::Verdict::failed)
        k.reasons.push_back(selftest::reason(family, gpu::result_of(family)));
    }
    k.accepted = k.reasons.empty() && c.reasons.empty();
    if (row.id == widest)
      for (const auto& r : k.reasons) c.reasons.push_back(r);
    if (kernels) kernels->push_back(std::move(k));
  }
  c.accepted = c.reasons.empty();
  return c;
}

Route Router::decide(const CallFeatures& f) const {
  Route r;
  Route aiter_route;
  Candidate aiter = aiter_candidate(f, &aiter_route);
  Candidate cpu = cpu_candidate(f);
  std::vector<Candidate> kernels;
  Candidate gpu = gpu_candidate(f, &kernels);
  if (policy_ == Policy::aiter_only) {
    for (Candidate* fb : {&cpu, &gpu}) {
      fb->reasons.push_back("policy aiter-only allows AITer routes only");
      fb->accepted = false;
    }
  }
  auto take_aiter = [&] {
    r.kind = RouteKind::aiter;
    const auto& e = caps_.entries.at(signature(f.op).aiter_name);
    r.module = e.module;
    r.function = function_of(signature(f.op).aiter_name);
    r.target = e.module + "." + r.function;
    r.aiter_params = aiter_route.aiter_params;
    r.window_param = aiter_route.window_param;
    r.window_arity = aiter_route.window_arity;
  };
  auto take_fallback = [&]() -> bool {
    if (cpu.accepted) {
      r.kind = RouteKind::fallback_cpu;
      r.target = cpu.name;
      return true;
    }
    if (gpu.accepted) {
      r.kind = RouteKind::fallback_gpu;
      r.target = gpu.name;
      r.kernels = kernels;
      return true;
    }
    return false;
  };
  if (policy_ == Policy::prefer_fallback) {
    if (!take_fallback() && aiter.accepted) take_aiter();
  } else if (aiter.accepted) {
    take_aiter();
  } else {
    take_fallback();
  }
  if (r.kind != RouteKind::fallback_gpu) r.kernels = std::move(kernels);  // explain() shows why not
  r.candidates = {aiter, cpu, gpu};
  auto entry = caps_.entries.find(signature(f.op).aiter_name);
  r.rerouted = r.kind != RouteKind::aiter && entry != caps_.entries.end() && entry->second.present;
  return r;
}

std::string Route::kernel() const {
  switch (kind) {
    case RouteKind::aiter: return target;
    case RouteKind::fallback_cpu: return gpu::kernel_row(gpu::KernelId::cpu_reference).name;
    case RouteKind::fallback_gpu:
      for (const auto& k : kernels)
        if (k.accepted) return k.name;
      return "";
    case RouteKind::refused: return "";
  }
  return "";
}

const Route& Router::route(const CallFeatures& f, bool* fresh) {
  {
    std::shared_lock lock(mutex_);
    auto it = routes_.find(f);
    if (it != routes_.end()) {
      if (fresh) *fresh = false;
      return *it->second;
    }
  }
  auto decided = std::make_unique<Route>(decide(f));
  std::unique_lock lock(mutex_);
  auto [it, inserted] = routes_.emplace(f, std::move(decided));
  if (fresh) *fresh = inserted;  // two threads may decide the same features: one inserts
  return *it->second;  // routes never move: callers may keep the reference
}

void Router::for_each_route(const std::function<void(const CallFeatures&, const Route&)>& visit) const {
  std::shared_lock lock(mutex_);
  for (const auto& [f, r] : routes_) visit(f, *r);
}

std::vector<std::pair<CallFeatures, Route>> Router::decided() const {
  std::shared_lock lock(mutex_);
  std::vector<std::pair<CallFeatures, Route>> out;
  for (const auto& [f, r] : routes_) out.emplace_back(f, *r);
  return out;
}

}  // namespace aiter_compat
