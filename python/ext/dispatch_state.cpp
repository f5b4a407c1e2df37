#include "dispatch_state.hpp"

#include <cstdlib>

#include <spdlog/cfg/helpers.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "aiter_compat/probe/probe.hpp"
#include "embedded_python_reader.hpp"

namespace aiter_compat::py {
namespace {

// Never destroyed at exit: its Python references must not be released after the interpreter
// has finalised. reset() (which runs with the GIL) replaces it.
DispatchState* g_state = nullptr;
std::optional<Policy> g_policy_override;

std::shared_ptr<spdlog::logger> logger() {
  static std::shared_ptr<spdlog::logger> log = [] {
    auto l = spdlog::stderr_color_mt("aiter_compat");
    if (const char* levels = std::getenv("AITER_COMPAT_LOG_LEVEL")) {
      auto level = spdlog::level::from_str(levels);
      l->set_level(level);
    }
    return l;
  }();
  return log;
}

Policy policy_from_env() {
  const char* text = std::getenv("AITER_COMPAT_POLICY");
  if (!text || !*text) return Policy::automatic;
  if (auto p = parse_policy(text)) return *p;
  logger()->warn("AITER_COMPAT_POLICY={} is not one of auto, prefer-fallback, aiter-only; using auto", text);
  return Policy::automatic;
}

}  // namespace

DispatchState::DispatchState(std::optional<Policy> policy) {
  ProbeOptions options;
  options.live = PyDict_GetItemString(PyImport_GetModuleDict(), "aiter") != nullptr;
  options.dlopen = false;  // the route table needs the Python side; native modules load with aiter
  EmbeddedPythonReader reader;
  report_ = run_probe(options, reader);
  std::string source, warning;
  const CompatMatrix& matrix = load_matrix("", &source, &warning);
  router_ = std::make_unique<Router>(Capabilities::from_report(report_, matrix), policy.value_or(policy_from_env()));
  std::string ops;
  for (const auto& op : report_.ops)
    if (op.present) ops += (ops.empty() ? "" : ", ") + op.name + (op.sinks == Support::supported ? " (sinks)" : "");
  logger()->info("{}; policy {}; entry points: {}; GPU {}", router_->capabilities().aiter_found
                     ? router_->capabilities().aiter_label : std::string("no AITer"),
                 to_string(router_->policy()), ops.empty() ? "none" : ops,
                 report_.device.present ? report_.device.arch : "none");
}

DispatchState& DispatchState::get() {
  if (!g_state) g_state = new DispatchState(g_policy_override);
  return *g_state;
}

void DispatchState::reset(std::optional<Policy> policy) {
  g_policy_override = policy;
  delete g_state;
  g_state = nullptr;
}

void DispatchState::note_route(const Route& route, const CallFeatures& f) {
  if (!route.rerouted || warned_[static_cast<int>(f.op)]) return;
  warned_[static_cast<int>(f.op)] = true;
  std::string why;
  for (const auto& r : route.candidates.front().reasons) why += (why.empty() ? "" : "; ") + r;
  logger()->warn("{} goes to {} instead of AITer: {}", to_string(f.op),
                 route.kind == RouteKind::refused ? "no route" : route.target, why);
}

void DispatchState::disable_aiter(const std::string& why) {
  Capabilities caps = router_->capabilities();
  caps.aiter_problem = why;
  Policy policy = router_->policy();
  bindings_.clear();
  router_ = std::make_unique<Router>(std::move(caps), policy);
  warned_.clear();
  logger()->warn("AITer is routed around from now on: {}", why);
}

const AiterBinding* DispatchState::aiter_binding(const Route& route, const CallFeatures& f) {
  auto it = bindings_.find(&route);
  if (it != bindings_.end()) return &it->second;
  AiterBinding b;
  Ref module(PyImport_ImportModule(route.module.c_str()));
  if (!module) return nullptr;
  b.function = Ref(PyObject_GetAttrString(module.get(), route.function.c_str()));
  if (!b.function) return nullptr;
  const OpSignature& sig = signature(f.op);
  std::vector<int> passed;
  for (int i : route.pass_params)
    if (sig.params[i].required || ((f.nondefault >> i) & 1u)) passed.push_back(i);
  b.kwnames = Ref(PyTuple_New(static_cast<Py_ssize_t>(passed.size())));
  for (size_t k = 0; k < passed.size(); ++k) {
    PyTuple_SET_ITEM(b.kwnames.get(), k, PyUnicode_InternFromString(sig.params[passed[k]].name.c_str()));
    if (sig.params[passed[k]].name == "window_size" && f.window_arity && route.window_arity &&
        f.window_arity != route.window_arity)
      b.window_param = static_cast<int>(k);
  }
  b.params = std::move(passed);
  return &bindings_.emplace(&route, std::move(b)).first->second;
}

}  // namespace aiter_compat::py
