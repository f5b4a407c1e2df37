#include "aiter_compat/shim/dispatch.hpp"

#include <cstdlib>

#include "aiter_compat/gpu_runtime/family_verdicts.hpp"

#include "aiter_compat/probe/logging.hpp"

namespace aiter_compat {

Policy policy_from_environment() {
  const char* text = std::getenv("AITER_COMPAT_POLICY");
  if (!text || !*text) return Policy::automatic;
  if (auto p = parse_policy(text)) return *p;
  log_warn(std::string("AITER_COMPAT_POLICY=") + text + " is not one of auto, prefer-fallback, aiter-only; using auto");
  return Policy::automatic;
}

Dispatcher::Dispatcher(const Options& options) : front_(options.front) {
  report_ = run_probe(options.probe, *options.python);
  std::string source, warning;
  const CompatMatrix& matrix = load_matrix("", &source, &warning);
  Capabilities caps = Capabilities::from_report(report_, matrix);
  if (caps.aiter_found && caps.aiter_problem.empty() && options.aiter_problem) caps.aiter_problem = options.aiter_problem();
  routers_.push_back(std::make_unique<Router>(std::move(caps), options.policy.value_or(policy_from_environment()),
                                              gpu::verdict_generation()));
  router_.store(routers_.back().get(), std::memory_order_release);
  const Router& router = *routers_.back();
  std::string ops;
  for (const auto& op : report_.ops)
    if (op.present) ops += (ops.empty() ? "" : ", ") + op.name + (op.sinks == Support::supported ? " (sinks)" : "");
  log_info((router.capabilities().aiter_found ? router.capabilities().aiter_label : std::string("no AITer")) +
           "; policy " + to_string(router.policy()) + "; entry points: " + (ops.empty() ? "none" : ops) + "; GPU " +
           (report_.device.present ? report_.device.arch : "none"));
  RouteTrace::instance().attach(this);
}

Dispatcher::~Dispatcher() { RouteTrace::instance().detach(this); }

const Route& Dispatcher::route(const CallFeatures& f) {
  // One relaxed-cost load per call: routes decided before a self-test failure offered it.
  if (const uint64_t g = gpu::verdict_generation(); g != router().verdict_generation()) renew_router(g);
  bool fresh = false;
  const Route& r = router().route(f, &fresh);
  r.calls.add();
  if (fresh) RouteTrace::instance().decided(*this, f, r);
  if (r.rerouted && !warned_[static_cast<int>(f.op)]) {
    std::lock_guard lock(mutex_);
    if (!warned_[static_cast<int>(f.op)]) {
      warned_[static_cast<int>(f.op)] = true;
      std::string why;
      for (const auto& reason : r.candidates.front().reasons) why += (why.empty() ? "" : "; ") + reason;
      log_warn(to_string(f.op) + " goes to " + (r.kind == RouteKind::refused ? "no route" : r.target) +
               " instead of AITer: " + why);
    }
  }
  return r;
}

void Dispatcher::renew_router(uint64_t generation) {
  std::lock_guard lock(mutex_);
  if (router().verdict_generation() == generation) return;  // another thread renewed it
  Capabilities caps = router().capabilities();
  routers_.push_back(std::make_unique<Router>(std::move(caps), router().policy(), generation));
  router_.store(routers_.back().get(), std::memory_order_release);
}

const Route& Dispatcher::reroute_after_selftest(const CallFeatures& f, const Route& failed) {
  failed.calls.take_back();  // the call did not run there
  return route(f);
}

void Dispatcher::disable_aiter(const std::string& why) {
  std::lock_guard lock(mutex_);
  Capabilities caps = router().capabilities();
  caps.aiter_problem = why;
  routers_.push_back(std::make_unique<Router>(std::move(caps), router().policy(), gpu::verdict_generation()));
  router_.store(routers_.back().get(), std::memory_order_release);
  for (bool& w : warned_) w = false;
  log_warn("AITer is routed around from now on: " + why);
}

const Route& Dispatcher::reroute_without_aiter(const CallFeatures& f, const Route& failed, const std::string& why) {
  failed.calls.take_back();  // the call did not run there
  disable_aiter(why);
  return route(f);
}

void Dispatcher::for_each_route(const std::function<void(const CallFeatures&, const Route&)>& visit) const {
  std::lock_guard lock(mutex_);
  for (const auto& router : routers_) router->for_each_route(visit);
}

std::vector<RouteCount> Dispatcher::stats() const {
  std::vector<RouteCount> counts;
  for_each_route([&](const CallFeatures& f, const Route& r) { add_count(counts, f.op, r.kind, r.target, r.calls.value()); });
  return counts;
}

}  // namespace aiter_compat
