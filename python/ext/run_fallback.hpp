#pragma once
// Runs a call on the fallback kernels: exports the tensors, makes the outputs, checks every
// argument (contents included) and launches the kernel without the GIL.
#include "call_binding.hpp"
#include "py_ref.hpp"

#include "aiter_compat/shim/router.hpp"

namespace aiter_compat::py {

// Returns the call's result (out, (out, lse), or None for unified_attention); throws
// ArgumentError, PythonErrorSet or RouteError.
Ref run_fallback(const BoundCall& call, const CallFeatures& f, const Route& route);

}  // namespace aiter_compat::py
