#pragma once
// The module's one dispatch state: the probe report, the router built from it, and for each
// AITer route the bound function and keyword names, all made on first use and kept.
#include "py_ref.hpp"

#include <memory>
#include <string>
#include <unordered_map>

#include "aiter_compat/probe/report.hpp"
#include "aiter_compat/shim/router.hpp"
#include "call_binding.hpp"

namespace aiter_compat::py {

struct AiterBinding {
  Ref function;
  Ref kwnames;                // the keywords passed, in order
  std::vector<int> params;    // our parameter index for each keyword
  int window_param = -1;      // position in params of window_size, when its arity must change
};

class DispatchState {
 public:
  // Creates the state on first use (probes the install: the live channel when aiter is already
  // imported, else the static one). Holds the GIL.
  static DispatchState& get();
  // Drops everything decided, e.g. after set_policy; the next call probes again.
  static void reset(std::optional<Policy> policy);

  Router& router() { return *router_; }
  const ProbeReport& report() const { return report_; }
  // The AITer function and keywords of a route; nullptr with a Python error set on failure.
  const AiterBinding* aiter_binding(const Route& route, const CallFeatures& f);
  // Logs the first reroute of each operation.
  void note_route(const Route& route, const CallFeatures& f);
  // AITer's function could not be reached (its import raised, say): decide every route again
  // without AITer, with `why` as the reason. Invalidates routes and bindings handed out before.
  void disable_aiter(const std::string& why);

 private:
  DispatchState(std::optional<Policy> policy);
  ProbeReport report_;
  std::unique_ptr<Router> router_;
  std::unordered_map<const Route*, AiterBinding> bindings_;
  std::unordered_map<int, bool> warned_;
};

}  // namespace aiter_compat::py
