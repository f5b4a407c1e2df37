#pragma once
// Typed errors. A bad argument names the argument, the value found and the value needed; a
// refused call carries every candidate route with all its reasons.
#include <stdexcept>
#include <string>
#include <vector>

namespace aiter_compat {

struct ArgumentError : std::invalid_argument {
  std::string argument, found, needed;
  ArgumentError(std::string arg, std::string found_value, std::string needed_value)
      : std::invalid_argument(arg + ": found " + found_value + ", needed " + needed_value),
        argument(std::move(arg)), found(std::move(found_value)), needed(std::move(needed_value)) {}
};

struct Candidate {
  std::string name;                  // "aiter 0.1.9 at <path>: flash_attn_varlen_func", "fallback varlen_fwd_cpu"
  bool accepted = false;
  std::vector<std::string> reasons;  // why refused (empty when accepted)
};

struct RouteError : std::runtime_error {
  std::string op;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, value: shown as a table
  std::vector<Candidate> candidates;
  RouteError(std::string op_name, std::vector<std::pair<std::string, std::string>> in, std::vector<Candidate> cands);
};

// The message RouteError carries: inputs as aligned rows, then each candidate and its reasons.
std::string format_route_error(const std::string& op, const std::vector<std::pair<std::string, std::string>>& inputs,
                               const std::vector<Candidate>& candidates);

}  // namespace aiter_compat
