#pragma once
// The C API's AITer route: AITer's attention entry points are Python functions, so the call goes
// through the embedded interpreter, the caller's tensors wrapped with torch.from_dlpack.
#include <dlpack/dlpack.h>

#include <string>
#include <variant>
#include <vector>

namespace aiter_compat::capi {

struct Window2 {
  int64_t left, right, sink_size;
  int arity;
};
using ArgValue = std::variant<const DLTensor*, int64_t, double, bool, Window2>;

struct KeywordArg {
  std::string name;
  ArgValue value;
};

// Whether torch can be imported in the embedded interpreter ("" when yes, else why not).
std::string torch_problem();

struct AiterOutcome {
  std::string error;         // "" on success, else the Python error's text
  bool unreachable = false;  // the module or function could not be had (not AITer raising)
};

// Calls module.function(**kwargs); copies the returned LSE into lse_out when given.
AiterOutcome call_aiter(const std::string& module, const std::string& function, const std::vector<KeywordArg>& kwargs,
                        const DLTensor* lse_out);

}  // namespace aiter_compat::capi
