// --require sinks: can a model with learned sinks run here, each phase served by AITer or by a
// fallback kernel for the GPU present? And --require sinks:OP for one entry point.
#include <algorithm>

#include "aiter_compat/probe/op_table.hpp"
#include "aiter_compat/probe/requirements.hpp"

namespace aiter_compat {
namespace {

// What serves one family of calls, as data: the AITer entry points engines call for it (any one
// taking sinks serves), and the fallback kernel families that serve it through aiter_compat.
struct Family {
  std::string name;
  std::vector<std::string> aiter_ops;
  std::vector<std::string> kernels;  // fallback kernel families, first match reported
  std::string front;                 // the aiter_compat call that reaches them
};

// The kernel table's rows (gpu_runtime/src/kernel_table.cpp) that serve each phase, fastest
// first; the generic row takes every call a GPU route takes, so any GPU with code objects has it.
const std::vector<std::string> kPrefillKernels = {"tiled_wgmma", "tiled_rows", "generic"};
const std::vector<std::string> kDecodeKernels = {"tiled_keys", "decode", "generic"};

// An engine's two phases: prefill is flash_attn_varlen_func in every engine's AITer backend;
// decode is unified_attention or the paged decode kernels (vLLM's ROCm backends).
const std::vector<Family>& model_families() {
  static const std::vector<Family> families = {
      {"prefill", {"flash_attn_varlen_func"}, kPrefillKernels, "aiter_compat.flash_attn_varlen_func"},
      {"decode", {"unified_attention", "pa_fwd_asm", "paged_attention_v1"}, kDecodeKernels,
       "aiter_compat.unified_attention or aiter_compat.paged_attention_decode"},
  };
  return families;
}

// One entry point: AITer's, or the aiter_compat call of the same name where there is one.
Family op_family(const std::string& op) {
  if (op == "flash_attn_varlen_func" || op == "flash_attn_func" || op == "mha_batch_prefill_func")
    return {op, {op}, kPrefillKernels, "aiter_compat." + op};
  if (op == "triton_flash_attn_varlen_func" || op == "triton_flash_attn_func")
    return {op, {op}, kPrefillKernels, "aiter_compat.triton_mha." + op.substr(std::string("triton_").size())};
  if (op == "unified_attention") return {op, {op}, kDecodeKernels, "aiter_compat." + op};
  // AITer's 5-D caches: the generic kernel alone reads them.
  if (op == "pa_decode_gluon" || op == "pa_decode_bf16_asm") return {op, {op}, {"generic"}, "aiter_compat." + op};
  // pa_fwd_asm, paged_attention_v1: no such call; the fp8 per-tensor names are routed to AITer
  // alone (no fallback kernel takes fp8 q/k/v).
  return {op, {op}, {}, ""};
}

// Quirks under which an entry point that takes sinks still fails to serve them: it drops them,
// or it fails when given them.
bool breaks_sinks(const std::string& effect) { return effect == "sinks_ignored" || effect == "runtime_error"; }

bool is_amd_arch(const std::string& arch) { return arch.rfind("gfx", 0) == 0; }

// "aiter OP (takes sinks)" when AITer serves op with sinks here; else why not, in reasons. A
// quirk that drops sinks and applies (or may apply: GPU unknown) keeps AITer from serving it;
// notes say so when a fallback may take those calls.
std::string aiter_serves(const ProbeReport& r, const std::string& op_name, std::vector<std::string>& reasons,
                         std::vector<std::string>& quirk_notes) {
  const std::string who = "aiter " + op_name;
  if (!r.aiter.found) {
    reasons.push_back("aiter: not found (" + r.aiter.reason + ")");
    return {};
  }
  if (r.aiter.foreign) {
    reasons.push_back("aiter: " + r.aiter.reason);
    return {};
  }
  if (auto live = r.channels.find("live"); live != r.channels.end() && live->second.import_error) {
    reasons.push_back("aiter: import failed (" + live->second.import_error->error + ")");
    return {};
  }
  if (r.device.present && !is_amd_arch(r.device.arch)) {
    reasons.push_back("aiter: runs on AMD GPUs (gfx*), and the GPU here is " + r.device.arch);
    return {};
  }
  const OpReport* op = r.op(op_name);
  if (!op || !op->present) {
    reasons.push_back(who + ": not in this install" +
                      (op && !op->errors.empty() ? " (" + op->errors.front().error + ")" : std::string()));
    return {};
  }
  if (op->sinks != Support::supported) {
    reasons.push_back(who + ": sinks " + std::string(to_string(op->sinks)) + " (" + op->sinks_reason + ")");
    return {};
  }
  bool dropped = false;
  for (const auto& q : r.quirks) {
    if (!breaks_sinks(q.effect) || std::find(q.ops.begin(), q.ops.end(), op_name) == q.ops.end()) continue;
    dropped = true;
    std::string text = who + ": " + op->sinks_reason + ", but quirk " + q.id + " " +
                       (q.status == "applies" ? "applies" : "may apply") + " (" + q.summary + ") [" + q.why + "]";
    reasons.push_back(text);
    quirk_notes.push_back(text);
  }
  return dropped ? std::string() : who + " (" + op->sinks_reason + ")";
}

// "fallback K (arch) via FRONT" for the first kernel family built for the GPU here; else why not
// (named by the last family, the one that bounds the GPU route).
std::string fallback_serves(const ProbeReport& r, const Family& f, std::vector<std::string>& reasons) {
  if (f.kernels.empty()) {
    reasons.push_back("fallback: aiter_compat has no call named " + f.name + " to route to a kernel");
    return {};
  }
  std::vector<std::string> built;
  for (const auto& k : r.fallback_kernels)
    for (const auto& a : k.archs)
      if (std::find(f.kernels.begin(), f.kernels.end(), k.name) != f.kernels.end() &&
          std::find(built.begin(), built.end(), a) == built.end())
        built.push_back(a);
  if (built.empty()) {
    reasons.push_back("fallback: no " + f.kernels.back() + " kernels built into this aiter-compat");
    return {};
  }
  if (!r.device.present) {
    reasons.push_back("fallback: no GPU found here (" + r.device.reason + ")");
    return {};
  }
  for (const auto& name : f.kernels)
    for (const auto& k : r.fallback_kernels)
      if (k.name == name && std::find(k.archs.begin(), k.archs.end(), r.device.arch) != k.archs.end())
        return "fallback " + name + " (" + r.device.arch + ") via " + f.front;
  std::string list;
  for (const auto& a : built) list += (list.empty() ? "" : ", ") + a;
  reasons.push_back("fallback: " + f.kernels.back() + " is built for " + list + ", not for the GPU here (" +
                    r.device.arch + ")");
  return {};
}

FamilyVerdict judge(const ProbeReport& r, const Family& f) {
  FamilyVerdict v;
  v.family = f.name;
  std::vector<std::string> quirk_notes;
  for (const auto& op : f.aiter_ops) {
    v.served_by = aiter_serves(r, op, v.reasons, quirk_notes);
    if (!v.served_by.empty()) break;
  }
  if (v.served_by.empty()) v.served_by = fallback_serves(r, f, v.reasons);
  if (!v.served_by.empty() && v.served_by.rfind("fallback", 0) == 0)
    for (const auto& q : quirk_notes)
      v.notes.push_back(q + "; aiter_compat sends the calls it affects to the fallback, the others to AITer");
  // "aiter: not found" comes once per entry point tried; say it once, keeping the order.
  std::vector<std::string> unique;
  for (auto& reason : v.reasons)
    if (std::find(unique.begin(), unique.end(), reason) == unique.end()) unique.push_back(std::move(reason));
  v.reasons = std::move(unique);
  return v;
}

}  // namespace

std::vector<std::string> known_requirements() {
  std::vector<std::string> out = {"sinks"};
  for (const auto& op : attention_ops()) out.push_back("sinks:" + op.name);
  return out;
}

RequirementCheck check_requirement(const ProbeReport& report, const std::string& feature) {
  RequirementCheck check;
  check.feature = feature;
  std::vector<Family> families;
  if (feature == "sinks") {
    families = model_families();
  } else if (feature.rfind("sinks:", 0) == 0 && find_op(feature.substr(6))) {
    families = {op_family(feature.substr(6))};
  } else {
    std::string known;
    for (const auto& k : known_requirements()) known += (known.empty() ? "" : ", ") + k;
    check.unmet.push_back("unknown requirement '" + feature + "' (known: " + known + ")");
    return check;
  }
  for (const auto& f : families) {
    FamilyVerdict v = judge(report, f);
    if (v.served_by.empty())
      for (const auto& reason : v.reasons) check.unmet.push_back(v.family + ": " + reason);
    check.families.push_back(std::move(v));
  }
  return check;
}

}  // namespace aiter_compat
