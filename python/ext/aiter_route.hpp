#pragma once
// The AITer route of the Python module: AITer's function, bound once per route (the function
// object and the tuple of keyword names the route passes), called with the caller's own objects
// by keyword. window_size is rebuilt only where the release wants another arity. The function is
// AITer's original even after install() patched its name (aiter_patch.hpp).
#include "py_ref.hpp"

#include <string>
#include <unordered_map>

#include "aiter_compat/shim/router.hpp"
#include "py_call_args.hpp"

namespace aiter_compat::py {

class AiterCalls {
 public:
  // AITer's result, or nullptr: with *unreachable set when the module could not be imported
  // (the caller routes again without AITer), else with AITer's own Python error set.
  PyObject* call(const Route& route, const PyCallArgs& args, std::string* unreachable);

 private:
  struct Binding {
    Ref function, kwnames;
  };
  std::unordered_map<const Route*, Binding> bindings_;  // routes never move (Router::route)
};

}  // namespace aiter_compat::py
