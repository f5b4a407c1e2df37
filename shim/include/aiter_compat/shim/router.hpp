#pragma once
// Chooses, for each call, where it runs: AITer by keyword, a fallback kernel, or nowhere (an
// error listing every candidate and why it was refused). Routes depend only on the capabilities
// (from the probe) and the call's features, so each distinct feature set is decided once.
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
};

struct Capabilities {
  bool aiter_found = false;
  std::string aiter_label;  // "aiter 0.1.9 at /path" for messages
  std::string aiter_problem;  // why AITer cannot be used at all (import failed, foreign, ...)
  std::map<std::string, AiterEntry> entries;
  std::vector<MatrixQuirk> quirks;  // those whose versions match the install
  std::string gpu_arch;             // of the GPU present ("" if none or unknown)
  std::string gpu_problem;          // why none was found
  std::vector<std::string> gpu_fallback_archs;  // archs the fallback GPU kernels were built for
  // entry point -> parameter -> first matrix release that has it
  std::map<std::string, std::map<std::string, std::string>> first_release;

  static Capabilities from_report(const ProbeReport& report, const CompatMatrix& matrix);
};

enum class RouteKind { aiter, fallback_cpu, fallback_gpu, refused };
std::string to_string(RouteKind k);

struct Route {
  RouteKind kind = RouteKind::refused;
  std::string target;  // "aiter.ops.mha.flash_attn_varlen_func", "fallback varlen_fwd (cpu reference)"
  std::string module, function;  // AITer route: where to find the function
  std::vector<int> pass_params;  // AITer route: indices of our parameters to pass by keyword
  int window_arity = 0;          // AITer route: arity AITer's window_size wants (0: leave as given)
  std::vector<Candidate> candidates;  // every candidate considered, with reasons
  bool rerouted = false;         // an AITer entry point exists but the call went elsewhere
};

class Router {
 public:
  Router(Capabilities caps, Policy policy);

  // The route for these features: decided on first sight, then looked up (shared lock only).
  const Route& route(const CallFeatures& f);
  // The same decision, not remembered (explain, tests).
  Route decide(const CallFeatures& f) const;

  Policy policy() const { return policy_; }
  const Capabilities& capabilities() const { return caps_; }
  // Every route decided so far, with the features that led to it.
  std::vector<std::pair<CallFeatures, Route>> decided() const;

 private:
  Candidate aiter_candidate(const CallFeatures& f, Route* r) const;
  Candidate cpu_candidate(const CallFeatures& f) const;
  Candidate gpu_candidate(const CallFeatures& f) const;

  Capabilities caps_;
  Policy policy_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<CallFeatures, std::unique_ptr<Route>, CallFeaturesHash> routes_;
};

}  // namespace aiter_compat
