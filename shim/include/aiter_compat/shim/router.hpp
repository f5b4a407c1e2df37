#pragma once
// Chooses, for each call, where it runs: AITer by keyword, a fallback kernel, or nowhere (an
// error listing every candidate and why it was refused). Routes depend only on the capabilities
// (from the probe) and the call's features, so each distinct feature set is decided once; the
// route carries everything the call then needs (AITer's keywords, the kernels that may run).
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "aiter_compat/probe/matrix.hpp"
#include "aiter_compat/probe/report.hpp"
#include "aiter_compat/shim/errors.hpp"
#include "aiter_compat/shim/features.hpp"

namespace aiter_compat {

enum class Policy { automatic, prefer_fallback, aiter_only };
std::optional<Policy> parse_policy(const std::string& text);  // auto, prefer-fallback, aiter-only
std::string to_string(Policy p);

// What the router knows of the install: one row per AITer entry point, plus the quirks.
struct AiterEntry {
  bool present = false;
  std::string module;
  std::vector<std::string> params;
  std::optional<int> window_arity;
  std::string import_error;  // where importing it fails (a package above its module), or empty
};

// A quirk of the matrix that the probe found applying to this install (versions, arch and
// parameters already matched); the router checks only its call conditions.
struct AppliedQuirk {
  MatrixQuirk quirk;
  std::string assumed;  // why it is assumed rather than known ("" when known)
};

struct Capabilities {
  bool aiter_found = false;
  std::string aiter_label;  // "aiter 0.1.9 at /path" for messages
  std::string aiter_problem;  // why AITer cannot be used at all (import failed, foreign, ...)
  std::map<std::string, AiterEntry> entries;
  std::vector<AppliedQuirk> quirks;
  std::vector<std::string> device_archs;  // of each GPU present, by index (empty: none found)
  std::string gpu_problem;                // why none was found
  std::vector<std::string> gpu_fallback_archs;  // archs the fallback GPU kernels were built for
  // entry point -> parameter -> first matrix release that has it
  std::map<std::string, std::map<std::string, std::string>> first_release;

  static Capabilities from_report(const ProbeReport& report, const CompatMatrix& matrix);
};

enum class RouteKind { aiter, fallback_cpu, fallback_gpu, refused };
std::string to_string(RouteKind k);

// Calls taken by one route: the only per-call work the trace and stats() add, one relaxed atomic
// increment. On a cache line of its own, so that threads counting calls do not evict the route's
// read-mostly fields from each other's caches. Copying a route (explain, routes()) copies the count.
class alignas(64) CallCounter {
 public:
  CallCounter() = default;
  CallCounter(const CallCounter& other) : n_(other.value()) {}
  CallCounter& operator=(const CallCounter& other) {
    n_.store(other.value(), std::memory_order_relaxed);
    return *this;
  }
  void add() { n_.fetch_add(1, std::memory_order_relaxed); }
  void take_back() { n_.fetch_sub(1, std::memory_order_relaxed); }
  uint64_t value() const { return n_.load(std::memory_order_relaxed); }
  void clear() { n_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> n_{0};
};

struct Route {
  RouteKind kind = RouteKind::refused;
  std::string target;  // "aiter.ops.mha.flash_attn_varlen_func", "fallback varlen_fwd (gpu)"
  // AITer route: where the function is, the parameters passed by keyword in order (those the
  // release takes and the call sets, and the required ones), and where window_size sits in that
  // list when the release wants another arity (-1: as given).
  std::string module, function;
  std::vector<int> aiter_params;
  int window_param = -1;
  int window_arity = 0;
  // Fallback routes: each kernel row of the op and whether it takes this call; the launcher runs
  // the first accepted one that the call's tensors fit (alignment, strides), the last always.
  std::vector<Candidate> kernels;
  std::vector<Candidate> candidates;  // every route considered, with reasons
  bool rerouted = false;         // an AITer entry point exists but the call went elsewhere
  // The kernel named for this route in traces and routes(): AITer's function, the CPU reference,
  // or the first GPU row that takes the call (the launcher may still pick it per call's tensors).
  std::string kernel() const;
  mutable CallCounter calls;  // calls that took this route (Dispatcher::route counts them)
};

class Router {
 public:
  // `verdict_generation`: gpu::verdict_generation() when the caller read the verdicts it decides
  // with (a router older than the latest self-test failure is replaced).
  Router(Capabilities caps, Policy policy, uint64_t verdict_generation = 0);

  // The route for these features: decided on first sight, then looked up (shared lock only).
  // *fresh (when given) is set: true for the one caller whose call made the decision, else false.
  const Route& route(const CallFeatures& f, bool* fresh = nullptr);
  // The same decision, not remembered (explain, tests).
  Route decide(const CallFeatures& f) const;

  Policy policy() const { return policy_; }
  uint64_t verdict_generation() const { return verdict_generation_; }
  const Capabilities& capabilities() const { return caps_; }
  // Every route decided so far, with the features that led to it.
  std::vector<std::pair<CallFeatures, Route>> decided() const;
  // Visits every route decided so far, in place (under the shared lock: no copies).
  void for_each_route(const std::function<void(const CallFeatures&, const Route&)>& visit) const;

 private:
  Candidate aiter_candidate(const CallFeatures& f, Route* r) const;
  Candidate cpu_candidate(const CallFeatures& f) const;
  Candidate gpu_candidate(const CallFeatures& f, std::vector<Candidate>* kernels) const;

  Capabilities caps_;
  Policy policy_;
  uint64_t verdict_generation_ = 0;
  mutable std::shared_mutex mutex_;
  std::unordered_map<CallFeatures, std::unique_ptr<Route>, CallFeaturesHash> routes_;
};

}  // namespace aiter_compat
