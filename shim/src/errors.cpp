#include "aiter_compat/shim/errors.hpp"

#include <algorithm>

namespace aiter_compat {

std::string format_route_error(const std::string& op, const std::vector<std::pair<std::string, std::string>>& inputs,
                               const std::vector<Candidate>& candidates) {
  std::string msg = op + ": no route can run this call correctly\n\ninputs:\n";
  size_t width = 0;
  for (const auto& [name, _] : inputs) width = std::max(width, name.size());
  for (const auto& [name, value] : inputs) msg += "  " + name + std::string(width - name.size() + 2, ' ') + value + "\n";
  msg += "\ncandidates:\n";
  for (const auto& c : candidates) {
    msg += "  " + c.name + (c.accepted ? ": accepted\n" : ": refused\n");
    for (const auto& r : c.reasons) msg += "    - " + r + "\n";
  }
  return msg;
}

RouteError::RouteError(std::string op_name, std::vector<std::pair<std::string, std::string>> in,
                       std::vector<Candidate> cands)
    : std::runtime_error(format_route_error(op_name, in, cands)),
      op(std::move(op_name)), inputs(std::move(in)), candidates(std::move(cands)) {}

}  // namespace aiter_compat
