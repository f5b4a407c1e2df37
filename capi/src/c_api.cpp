// The C API: the Python module's entry points over DLTensors, through the same dispatch core.
// This front only converts: each struct becomes the core's CallArgs, AITer routes go through the
// embedded interpreter, status codes and the thread-local message carry the outcome.
#include "aiter_compat.h"

#include <cstring>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "aiter_call.hpp"
#include "aiter_compat/shim/dispatch.hpp"
#include "aiter_compat/shim/errors.hpp"
#include "aiter_compat/shim/selftest.hpp"
#include "aiter_compat/shim/selftest_report.hpp"
#include "c_call_args.hpp"
#include "embedded_python_reader.hpp"

namespace aiter_compat::capi {
namespace {

thread_local std::string g_last_error;

// One dispatcher per process, made on first use; set_policy replaces it (a call already holding
// the old one finishes on it).
std::mutex g_mutex;
std::shared_ptr<Dispatcher> g_dispatcher;
std::optional<Policy> g_policy;

std::shared_ptr<Dispatcher> dispatcher() {
  std::lock_guard lock(g_mutex);
  if (!g_dispatcher) {
    EmbeddedPythonReader reader;
    Dispatcher::Options o;
    o.probe.dlopen = false;
    o.python = &reader;
    o.policy = g_policy;
    o.aiter_problem = torch_problem;  // AITer's entry points take torch tensors
    o.front = "c";
    g_dispatcher = std::make_shared<Dispatcher>(o);
  }
  return g_dispatcher;
}

aiter_compat_status fail(aiter_compat_status s, std::string message) {
  g_last_error = std::move(message);
  return s;
}

template <typename F>
aiter_compat_status guarded(F&& body) {
  try {
    g_last_error.clear();
    return body();
  } catch (const ArgumentError& e) {
    return fail(AITER_COMPAT_INVALID_ARGUMENT, e.what());
  } catch (const RouteError& e) {
    return fail(AITER_COMPAT_NO_ROUTE, e.what());
  } catch (const std::exception& e) {
    return fail(AITER_COMPAT_INTERNAL_ERROR, std::string("internal error: ") + e.what());
  }
}

aiter_compat_status run(CCallArgs call) {
  CallFeatures f = features_of(call);
  auto d = dispatcher();
  const Route* route = &d->route(f);
  for (bool rerouted = false;; rerouted = true) {
    if (route->kind == RouteKind::aiter) {
      AiterOutcome outcome = call_aiter(route->module, route->function, call.aiter_keywords(*route), call.lse());
      if (outcome.error.empty()) return AITER_COMPAT_OK;
      if (!outcome.unreachable) return fail(AITER_COMPAT_AITER_FAILED, route->target + " raised " + outcome.error);
      // AITer's module could not be imported: route around it from now on.
      route = &d->reroute_without_aiter(f, *route, outcome.error);
    }
    if (route->kind == RouteKind::refused) throw RouteError(to_string(f.op), f.describe(), route->candidates);
    try {
      run_fallback(*route, call, f);
      return AITER_COMPAT_OK;
    } catch (const selftest::FamilyFailed&) {
      if (rerouted) throw;  // decided again with the verdict known: not a second time
      // The call's kernel family failed its self-test on this device: the route is decided
      // again without it (AITer when it can take the call, else refused with the reason).
      route = &d->reroute_after_selftest(f, *route);
    }
  }
}

aiter_compat_status explain(const CCallArgs& call, char* buffer, size_t size) {
  CallFeatures f = features_of(call);
  Route route = dispatcher()->router().decide(f);
  std::string kernel, kernels;
  for (const auto& k : route.kernels) {
    if (k.accepted && kernel.empty()) kernel = k.name;
    kernels += "  " + k.name + (k.accepted ? ": takes the call\n" : ": passed over\n");
    for (const auto& r : k.reasons) kernels += "    - " + r + "\n";
  }
  std::string text = "route: " + to_string(route.kind) + (route.target.empty() ? "" : " (" + route.target + ")") + "\n" +
                     (kernel.empty() ? "" : "kernel: " + kernel + "\n") +
                     format_route_error(to_string(f.op), f.describe(), route.candidates) +
                     (kernels.empty() ? "" : "\nkernels:\n" + kernels);
  if (buffer && size) {
    std::strncpy(buffer, text.c_str(), size - 1);
    buffer[size - 1] = '\0';
  }
  return AITER_COMPAT_OK;
}

}  // namespace
}  // namespace aiter_compat::capi

using namespace aiter_compat;
using namespace aiter_compat::capi;

extern "C" int aiter_compat_abi_version(void) { return AITER_COMPAT_ABI_VERSION; }

extern "C" const char* aiter_compat_last_error(void) { return g_last_error.c_str(); }

extern "C" aiter_compat_status aiter_compat_stats(char* buffer, size_t size) {
  return guarded([&] {
    nlohmann::ordered_json counts = nlohmann::ordered_json::object();
    for (const auto& c : dispatcher()->stats()) counts[to_string(c.op)][c.target] = c.calls;
    const std::string text = counts.dump();
    if (!buffer || size < text.size() + 1)
      throw ArgumentError("buffer", std::to_string(buffer ? size : 0) + " bytes",
                          "at least " + std::to_string(text.size() + 1) + " bytes for the stats' JSON");
    std::memcpy(buffer, text.c_str(), text.size() + 1);
    return AITER_COMPAT_OK;
  });
}

extern "C" aiter_compat_status aiter_compat_warmup(int device) {
  return guarded([&] {
    if (device < -1) throw ArgumentError("device", std::to_string(device), "-1 (every device) or a device index");
    selftest::run_on_present_gpus(/*fresh=*/false, device >= 0 ? std::optional<int>(device) : std::nullopt);
    return AITER_COMPAT_OK;
  });
}

extern "C" aiter_compat_status aiter_compat_selftest_verdicts(char* buffer, size_t size) {
  return guarded([&] {
    const std::string text = selftest::to_json(selftest::known_verdicts()).dump();
    if (!buffer || size < text.size() + 1)
      throw ArgumentError("buffer", std::to_string(buffer ? size : 0) + " bytes",
                          "at least " + std::to_string(text.size() + 1) + " bytes for the verdicts' JSON");
    std::memcpy(buffer, text.c_str(), text.size() + 1);
    return AITER_COMPAT_OK;
  });
}

extern "C" aiter_compat_status aiter_compat_set_policy(const char* text) {
  return guarded([&] {
    std::optional<Policy> p;
    if (text && !(p = parse_policy(text)))
      throw ArgumentError("policy", std::string("'") + text + "'", "'auto', 'prefer-fallback' or 'aiter-only'");
    std::lock_guard lock(g_mutex);
    g_policy = p;
    g_dispatcher.reset();
    return AITER_COMPAT_OK;
  });
}

#define AC_ENTRY(fn, args_type)                                                                 \
  extern "C" aiter_compat_status aiter_compat_##fn(const args_type* a, void* stream) {          \
    return guarded([&] { return run(call_of(a, stream)); });                                    \
  }
AC_ENTRY(varlen_attention, aiter_compat_varlen_args)
AC_ENTRY(batch_attention, aiter_compat_batch_args)
AC_ENTRY(paged_attention, aiter_compat_paged_args)
AC_ENTRY(paged_decode, aiter_compat_decode_args)
AC_ENTRY(merge_attn_states, aiter_compat_merge_args)
AC_ENTRY(batch_prefill, aiter_compat_batch_prefill_args)
AC_ENTRY(gluon_decode, aiter_compat_gluon_decode_args)
AC_ENTRY(asm_decode, aiter_compat_asm_decode_args)
AC_ENTRY(fp8_pertensor_attention, aiter_compat_fp8_pertensor_args)
#undef AC_ENTRY

extern "C" aiter_compat_status aiter_compat_triton_varlen_attention(const aiter_compat_varlen_args* a, void* stream) {
  return guarded([&] { return run(triton_call_of(a, stream)); });
}
extern "C" aiter_compat_status aiter_compat_triton_batch_attention(const aiter_compat_batch_args* a, void* stream) {
  return guarded([&] { return run(triton_call_of(a, stream)); });
}

#define AC_EXPLAIN(fn, args_type)                                                                   \
  extern "C" aiter_compat_status aiter_compat_explain_##fn(const args_type* a, char* buffer, size_t size) { \
    return guarded([&] { return explain(call_of(a, nullptr), buffer, size); });                     \
  }
AC_EXPLAIN(varlen, aiter_compat_varlen_args)
AC_EXPLAIN(batch, aiter_compat_batch_args)
AC_EXPLAIN(paged, aiter_compat_paged_args)
AC_EXPLAIN(decode, aiter_compat_decode_args)
AC_EXPLAIN(merge, aiter_compat_merge_args)
AC_EXPLAIN(batch_prefill, aiter_compat_batch_prefill_args)
AC_EXPLAIN(gluon_decode, aiter_compat_gluon_decode_args)
AC_EXPLAIN(asm_decode, aiter_compat_asm_decode_args)
AC_EXPLAIN(fp8_pertensor, aiter_compat_fp8_pertensor_args)
#undef AC_EXPLAIN

extern "C" aiter_compat_status aiter_compat_explain_triton_varlen(const aiter_compat_varlen_args* a, char* buffer, size_t size) {
  return guarded([&] { return explain(triton_call_of(a, nullptr), buffer, size); });
}
extern "C" aiter_compat_status aiter_compat_explain_triton_batch(const aiter_compat_batch_args* a, char* buffer, size_t size) {
  return guarded([&] { return explain(triton_call_of(a, nullptr), buffer, size); });
}
