#pragma once
// Binds a vectorcall (positional arguments and keyword names) to an operation's signature:
// each parameter's object by index, or nullptr when not given.
#include "py_ref.hpp"

#include "aiter_compat/shim/signatures.hpp"

namespace aiter_compat::py {

struct BoundCall {
  const OpSignature* sig = nullptr;
  PyObject* values[kMaxParams] = {};  // borrowed; nullptr when not given
};

// Must be called once, with the GIL, before the others.
void init_call_binding();

// Throw ArgumentError for unknown, duplicate or missing arguments.
void bind(const OpSignature& sig, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, BoundCall* out);
void bind_kwargs(const OpSignature& sig, PyObject* kwargs, BoundCall* out);

}  // namespace aiter_compat::py
