#pragma once
// The module's one call path, shared by aiter_compat.<op> and by the functions install() puts
// in AITer's modules: bind, read features, route, run.
#include "py_ref.hpp"

#include "aiter_compat/shim/errors.hpp"
#include "aiter_compat/shim/signatures.hpp"

namespace aiter_compat::py {

PyObject* dispatch(OpId op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames);

// Sets AiterCompatError (with .argument, .found, .needed) and returns nullptr.
PyObject* raise_argument_error(const ArgumentError& e);

}  // namespace aiter_compat::py
