// The C API: the same routes as the Python module, over DLTensors.
#include "aiter_compat.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>

#include "aiter_call.hpp"
#include "aiter_compat/probe/probe.hpp"
#include "aiter_compat/shim/errors.hpp"
#include "aiter_compat/shim/router.hpp"
#include "aiter_compat/shim/validate.hpp"
#include "embedded_python_reader.hpp"
#include "aiter_compat/shim/gpu_runner.hpp"
#include "reference_attention.hpp"

namespace aiter_compat::capi {
namespace {

thread_local std::string g_last_error;

// One router per process, made on first use; set_policy replaces it.
std::mutex g_mutex;
std::shared_ptr<Router> g_router;
std::optional<Policy> g_policy;

std::shared_ptr<Router> router() {
  std::lock_guard lock(g_mutex);
  if (g_router) return g_router;
  ProbeOptions options;
  options.dlopen = false;
  EmbeddedPythonReader reader;
  ProbeReport report = run_probe(options, reader);
  std::string source, warning;
  Capabilities caps = Capabilities::from_report(report, load_matrix("", &source, &warning));
  if (caps.aiter_found && caps.aiter_problem.empty()) caps.aiter_problem = torch_problem();
  Policy policy = g_policy.value_or(Policy::automatic);
  if (!g_policy)
    if (const char* env = std::getenv("AITER_COMPAT_POLICY"))
      policy = parse_policy(env).value_or(Policy::automatic);
  g_router = std::make_shared<Router>(std::move(caps), policy);
  return g_router;
}

TensorView view(const char* name, const DLTensor* t) {
  if (!t) return {};
  TensorView v;
  std::string why;
  if (!view_from_dltensor(*t, &v, &why)) throw ArgumentError(name, why, "a tensor of up to 8 dimensions");
  return v;
}

void need(const char* name, const void* p) {
  if (!p) throw ArgumentError(name, "NULL", "a tensor");
}

uint32_t bit(OpId op, const char* param) { return 1u << signature(op).index_of(param); }

template <typename Args>
void window_features(const Args& a, CallFeatures& f) {
  f.window_arity = 2;
  f.window_left = a.window_left >= 0;
  f.window_right = a.window_right >= 0 && !(a.causal && a.window_right == 0);
  if (f.window_left || f.window_right) f.nondefault |= bit(f.op, "window_size");
}

CallFeatures features(OpId op, const TensorView& q, const TensorView& k, const TensorView& v, bool causal) {
  CallFeatures f;
  f.op = op;
  f.dtype = q.dtype;
  f.device = q.device;
  f.head_dim_qk = static_cast<int32_t>(q.shape[q.ndim - 1]);
  f.head_dim_v = static_cast<int32_t>(v.shape[v.ndim - 1]);
  f.q_heads = static_cast<int32_t>(q.shape[q.ndim - 2]);
  f.kv_heads = static_cast<int32_t>(k.shape[k.ndim - 2]);
  f.causal = causal;
  return f;
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

// The keyword arguments of an AITer route: those the route passes and the call sets.
std::vector<KeywordArg> keywords(const Route& r, const CallFeatures& f, const std::vector<KeywordArg>& all) {
  std::vector<KeywordArg> out;
  const OpSignature& sig = signature(f.op);
  for (int i : r.pass_params) {
    const ParamSpec& p = sig.params[i];
    if (!p.required && !((f.nondefault >> i) & 1u)) continue;
    for (const auto& kw : all)
      if (kw.name == p.name) {
        out.push_back(kw);
        if (auto* w = std::get_if<Window2>(&out.back().value); w && r.window_arity) w->arity = r.window_arity;
      }
  }
  return out;
}

aiter_compat_status run_route(const Route& r, const CallFeatures& f, const std::vector<KeywordArg>& all,
                              const DLTensor* lse, const std::function<void()>& cpu, const std::function<void()>& gpu) {
  switch (r.kind) {
    case RouteKind::aiter: {
      std::string error = call_aiter(r.module, r.function, keywords(r, f, all), lse);
      return error.empty() ? AITER_COMPAT_OK : fail(AITER_COMPAT_AITER_FAILED, r.target + " raised " + error);
    }
    case RouteKind::fallback_cpu:
      cpu();
      return AITER_COMPAT_OK;
    case RouteKind::fallback_gpu:
      try {
        gpu();
      } catch (const gpu::GpuError& e) {
        return fail(AITER_COMPAT_NO_ROUTE, r.target + " failed: " + e.what());
      }
      return AITER_COMPAT_OK;
    default:
      throw RouteError(to_string(f.op), f.describe(), r.candidates);
  }
}

}  // namespace
}  // namespace aiter_compat::capi

using namespace aiter_compat;
using namespace aiter_compat::capi;

extern "C" int aiter_compat_abi_version(void) { return AITER_COMPAT_ABI_VERSION; }

extern "C" const char* aiter_compat_last_error(void) { return g_last_error.c_str(); }

extern "C" aiter_compat_status aiter_compat_set_policy(const char* text) {
  return guarded([&] {
    std::optional<Policy> p;
    if (text && !(p = parse_policy(text)))
      throw ArgumentError("policy", std::string("'") + text + "'", "'auto', 'prefer-fallback' or 'aiter-only'");
    std::lock_guard lock(g_mutex);
    g_policy = p;
    g_router.reset();
    return AITER_COMPAT_OK;
  });
}

namespace {

struct VarlenCall {
  VarlenArgs args;
  CallFeatures features;
  std::vector<KeywordArg> keywords;
};

VarlenCall prepare_varlen(const aiter_compat_varlen_args* a) {
  if (!a) throw ArgumentError("args", "NULL", "a pointer to aiter_compat_varlen_args");
  need("q", a->q), need("k", a->k), need("v", a->v), need("out", a->out);
  need("cu_seqlens_q", a->cu_seqlens_q), need("cu_seqlens_k", a->cu_seqlens_k);
  VarlenCall c;
  VarlenArgs& v = c.args;
  v.q = view("q", a->q), v.k = view("k", a->k), v.v = view("v", a->v), v.out = view("out", a->out);
  v.cu_seqlens_q = view("cu_seqlens_q", a->cu_seqlens_q), v.cu_seqlens_k = view("cu_seqlens_k", a->cu_seqlens_k);
  v.sinks = view("sinks", a->sinks), v.lse = view("lse", a->lse);
  v.max_seqlen_q = a->max_seqlen_q, v.max_seqlen_k = a->max_seqlen_k;
  v.softmax_scale = a->softmax_scale, v.causal = a->causal != 0;
  v.window = {a->window_left, a->window_right, 0};
  validate_varlen(v, false);  // metadata first: features read shapes
  const OpId op = OpId::flash_attn_varlen_func;
  c.features = features(op, v.q, v.k, v.v, v.causal);
  CallFeatures& f = c.features;
  f.sinks = a->sinks != nullptr;
  f.return_lse = a->lse != nullptr;
  window_features(*a, f);
  f.nondefault |= bit(op, "out");
  if (f.causal) f.nondefault |= bit(op, "causal");
  if (f.sinks) f.nondefault |= bit(op, "sink_ptr");
  if (f.return_lse) f.nondefault |= bit(op, "return_lse");
  if (a->softmax_scale != 0) f.nondefault |= bit(op, "softmax_scale");
  c.keywords = {{"q", a->q}, {"k", a->k}, {"v", a->v}, {"cu_seqlens_q", a->cu_seqlens_q},
                {"cu_seqlens_k", a->cu_seqlens_k}, {"max_seqlen_q", a->max_seqlen_q},
                {"max_seqlen_k", a->max_seqlen_k}, {"softmax_scale", a->softmax_scale}, {"causal", f.causal},
                {"window_size", Window2{a->window_left, a->window_right, 0, 2}}, {"return_lse", f.return_lse},
                {"out", static_cast<const DLTensor*>(a->out)}, {"sink_ptr", a->sinks}};
  return c;
}

}  // namespace

extern "C" aiter_compat_status aiter_compat_varlen_attention(const aiter_compat_varlen_args* a, void* stream) {
  return guarded([&] {
    VarlenCall c = prepare_varlen(a);
    auto r = router();
    const Route& route = r->route(c.features);
    return run_route(
        route, c.features, c.keywords, a->lse,
        [&] {
          validate_varlen(c.args, true);
          cpu::varlen_attention(c.args);
        },
        [&] { run_gpu(c.args, stream); });  // metadata checked in prepare_varlen
  });
}

extern "C" aiter_compat_status aiter_compat_explain_varlen(const aiter_compat_varlen_args* a, char* buffer, size_t size) {
  return guarded([&] {
    VarlenCall c = prepare_varlen(a);
    Route route = router()->decide(c.features);
    std::string text = "route: " + to_string(route.kind) + (route.target.empty() ? "" : " (" + route.target + ")") +
                       "\n" + format_route_error(to_string(c.features.op), c.features.describe(), route.candidates);
    if (buffer && size) {
      std::strncpy(buffer, text.c_str(), size - 1);
      buffer[size - 1] = '\0';
    }
    return AITER_COMPAT_OK;
  });
}

extern "C" aiter_compat_status aiter_compat_paged_attention(const aiter_compat_paged_args* a, void* stream) {
  return guarded([&] {
    if (!a) throw ArgumentError("args", "NULL", "a pointer to aiter_compat_paged_args");
    need("q", a->q), need("k_cache", a->k_cache), need("v_cache", a->v_cache), need("out", a->out);
    need("cu_seqlens_q", a->cu_seqlens_q), need("seqused_k", a->seqused_k), need("block_table", a->block_table);
    PagedArgs p;
    p.q = view("q", a->q), p.k_cache = view("k_cache", a->k_cache), p.v_cache = view("v_cache", a->v_cache);
    p.cu_seqlens_q = view("cu_seqlens_q", a->cu_seqlens_q), p.seqused_k = view("seqused_k", a->seqused_k);
    p.block_table = view("block_table", a->block_table), p.sinks = view("sinks", a->sinks);
    p.out = view("out", a->out), p.lse = view("lse", a->lse);
    p.max_seqlen_q = a->max_seqlen_q, p.max_seqlen_k = a->max_seqlen_k;
    p.softmax_scale = a->softmax_scale, p.causal = a->causal != 0;
    p.window = {a->window_left, a->window_right, 0};
    validate_paged(p, false);
    const OpId op = OpId::unified_attention;
    CallFeatures f = features(op, p.q, p.k_cache, p.v_cache, p.causal);
    f.block_size = static_cast<int32_t>(p.k_cache.shape[1]);
    f.sinks = a->sinks != nullptr;
    f.return_lse = a->lse != nullptr;
    window_features(*a, f);
    for (const char* name : {"q", "k", "v", "out", "cu_seqlens_q", "max_seqlen_q", "seqused_k", "max_seqlen_k",
                             "softmax_scale", "causal", "block_table"})
      f.nondefault |= bit(op, name);
    if (f.sinks) f.nondefault |= bit(op, "sinks");
    std::vector<KeywordArg> all = {
        {"q", a->q}, {"k", a->k_cache}, {"v", a->v_cache}, {"out", static_cast<const DLTensor*>(a->out)},
        {"cu_seqlens_q", a->cu_seqlens_q}, {"max_seqlen_q", a->max_seqlen_q}, {"seqused_k", a->seqused_k},
        {"max_seqlen_k", a->max_seqlen_k}, {"softmax_scale", a->softmax_scale == 0 ? 1.0 / std::sqrt(double(f.head_dim_qk)) : a->softmax_scale},
        {"causal", f.causal}, {"window_size", Window2{a->window_left, a->window_right, 0, 2}},
        {"block_table", a->block_table}, {"softcap", 0.0}, {"q_descale", static_cast<const DLTensor*>(nullptr)},
        {"k_descale", static_cast<const DLTensor*>(nullptr)}, {"v_descale", static_cast<const DLTensor*>(nullptr)},
        {"sinks", a->sinks}};
    auto r = router();
    const Route& route = r->route(f);
    return run_route(
        route, f, all, nullptr,
        [&] {
          validate_paged(p, true);
          cpu::paged_attention(p);
        },
        [&] { run_gpu(p, stream); });
  });
}
