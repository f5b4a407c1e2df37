#pragma once
// What aiter_compat.install() puts in AITer's modules, and how the AITer route still reaches
// AITer's own functions afterwards.
//
// PatchedFunction: a C callable standing in for one AITer entry point. A call runs the module's
// dispatch exactly as aiter_compat.<op> does (vectorcall, no Python frame); positional arguments
// are bound by the installed release's parameter order, which older releases do not share with
// the newest signature the dispatch binds to. It keeps the function it replaced as __wrapped__
// (inspect.signature, and with it the live probe, reads the original's parameters).
//
// The originals' registry: install() records AITer's function for each (module, name) it
// patches; the AITer route binds to the registered original, never to whatever the module
// attribute holds now, so a patched name (or someone's wrapper around it) cannot call itself.
#include "py_ref.hpp"

#include <string>

namespace aiter_compat::py {

// Adds PatchedFunction and the registry's functions to the module. Returns -1 on error.
int init_patching(PyObject* module);

// The original registered for module.name (borrowed), or nullptr when install() recorded none.
PyObject* registered_original(const std::string& module, const std::string& name);

// fn itself, or, when fn is a PatchedFunction, the function it replaced (borrowed).
PyObject* unpatched(PyObject* fn);

}  // namespace aiter_compat::py
