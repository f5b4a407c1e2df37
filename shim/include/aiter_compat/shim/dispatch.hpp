#pragma once
// The dispatch core both fronts call: the process's routing state (the probe's report and the
// router built from it, with the policy), and the one runner of fallback routes. A front turns
// its values into a CallArgs, asks for the route, and either calls AITer with the route's
// keywords (the only part it does itself: AITer is a Python function) or lets the core run the
// fallback.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "aiter_compat/gpu_runtime/kernel_table.hpp"
#include "aiter_compat/probe/probe.hpp"
#include "aiter_compat/shim/call_args.hpp"
#include "aiter_compat/shim/route_trace.hpp"
#include "aiter_compat/shim/router.hpp"

namespace aiter_compat {

class Dispatcher {
 public:
  struct Options {
    ProbeOptions probe;                 // how to probe (live when aiter is already imported, ...)
    PythonReader* python = nullptr;     // the probe's Python side
    std::optional<Policy> policy;       // default: AITER_COMPAT_POLICY, else auto
    // Asked once AITer is found: why it cannot be called from this front ("" when it can).
    std::function<std::string()> aiter_problem;
    std::string front = "python";       // which front made it, for the trace ("python", "c")
  };
  explicit Dispatcher(const Options& options);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  const ProbeReport& report() const { return report_; }
  Router& router() { return *router_.load(std::memory_order_acquire); }
  const Router& router() const { return *router_.load(std::memory_order_acquire); }
  const std::string& front() const { return front_; }
  // The route for a call about to run, counted as one call of that route (the only per-call
  // work of the trace and stats(): a relaxed atomic increment). A route decided by this call is
  // written to the trace, and the first reroute of each op away from an AITer entry point that
  // exists is logged (one warning, with the reasons).
  const Route& route(const CallFeatures& f);
  // AITer's function could not be reached (its import raised, say): decide every route again
  // without AITer, with `why` as the reason. Routes handed out before stay valid until the
  // dispatcher is destroyed.
  void disable_aiter(const std::string& why);
  // The call given `failed` (an AITer route) found AITer unreachable: takes back its count,
  // disables AITer and returns the call's new route (counted).
  const Route& reroute_without_aiter(const CallFeatures& f, const Route& failed, const std::string& why);
  // The call given `failed` (a GPU route) found its kernel family failed on the device: takes
  // back its count and returns the call's new route (counted), decided with that verdict.
  const Route& reroute_after_selftest(const CallFeatures& f, const Route& failed);
  // Calls per op and route target since this dispatcher was made, over every router it had.
  std::vector<RouteCount> stats() const;
  // Visits every route of every router this dispatcher had (routes before disable_aiter too).
  void for_each_route(const std::function<void(const CallFeatures&, const Route&)>& visit) const;

 private:
  ProbeReport report_;
  std::string front_;
  std::atomic<Router*> router_{nullptr};          // the current one, read without a lock
  // A kernel family failed its self-test since the current router was made: make another.
  void renew_router(uint64_t generation);
  std::vector<std::unique_ptr<Router>> routers_;  // every one made: their routes stay referenced
  mutable std::mutex mutex_;
  bool warned_[kOpCount] = {};
};

// AITER_COMPAT_POLICY, read once; auto when unset or not a policy (with one warning).
Policy policy_from_environment();

// What a fallback run leaves for the front to return: the op's results.
enum class Returns { nothing, out, out_and_lse };
struct FallbackRun {
  Returns returns = Returns::nothing;
  gpu::KernelId kernel = gpu::KernelId::cpu_reference;  // the row that ran
};

// Runs a fallback route (fallback_cpu or fallback_gpu): exports the tensors, makes the outputs
// the call did not give, checks every argument (contents too before the CPU kernels touch
// memory; on the GPU the kernels clamp every index), and runs. Throws ArgumentError for bad
// arguments and RouteError when the GPU runtime fails; selftest::FamilyFailed (a RouteError)
// when the call's widest GPU family failed its self-test on this device: the front then asks
// for the route again, which no longer offers that family, and runs the call there.
FallbackRun run_fallback(const Route& route, CallArgs& call, const CallFeatures& f);

}  // namespace aiter_compat
