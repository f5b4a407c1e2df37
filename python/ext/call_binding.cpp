#include "call_binding.hpp"

#include <cmath>
#include <vector>

#include "aiter_compat/shim/errors.hpp"

namespace aiter_compat::py {
namespace {

// Interned parameter names per operation: keyword names are usually interned by the caller's
// code object, so matching is a pointer comparison.
std::vector<std::vector<PyObject*>> g_names;

[[noreturn]] void bad(const std::string& arg, const std::string& found, const std::string& needed) {
  throw ArgumentError(arg, found, needed);
}

int find_param(const OpSignature& sig, PyObject* name) {
  const auto& names = g_names[static_cast<size_t>(sig.id)];
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  for (size_t i = 0; i < names.size(); ++i) {
    int eq = PyUnicode_Compare(names[i], name);
    if (eq == 0) return static_cast<int>(i);
    if (eq == -1 && PyErr_Occurred()) PyErr_Clear();
  }
  return -1;
}

std::string params_list(const OpSignature& sig) {
  std::string s;
  for (const auto& p : sig.params) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

void set_keyword(const OpSignature& sig, PyObject* name, PyObject* value, BoundCall* out) {
  int i = find_param(sig, name);
  if (i >= 0 && !out->values[i]) {
    out->values[i] = value;
    return;
  }
  const char* text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : nullptr;
  std::string key = text ? text : "?";
  if (i < 0) bad(sig.name + "(" + key + "=...)", "an unknown keyword argument", "one of: " + params_list(sig));
  bad(sig.name + "(" + key + "=...)", "a second value for " + key, "each argument once");
}

void check_required(const OpSignature& sig, const BoundCall& b) {
  for (size_t i = 0; i < sig.params.size(); ++i)
    if (sig.params[i].required && !b.values[i]) bad(sig.params[i].name, "nothing", "a value (it is required)");
}

}  // namespace

void init_call_binding() {
  if (!g_names.empty()) return;
  for (const auto& sig : all_signatures()) {
    std::vector<PyObject*> names;
    for (const auto& p : sig.params) names.push_back(PyUnicode_InternFromString(p.name.c_str()));
    g_names.push_back(std::move(names));
  }
}

void bind(const OpSignature& sig, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, BoundCall* out) {
  out->sig = &sig;
  if (nargs > static_cast<Py_ssize_t>(sig.params.size()))
    bad(sig.name, std::to_string(nargs) + " positional arguments", "at most " + std::to_string(sig.params.size()));
  for (Py_ssize_t i = 0; i < nargs; ++i) out->values[i] = args[i];
  if (kwnames)
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k)
      set_keyword(sig, PyTuple_GET_ITEM(kwnames, k), args[nargs + k], out);
  check_required(sig, *out);
}

void bind_kwargs(const OpSignature& sig, PyObject* kwargs, BoundCall* out) {
  out->sig = &sig;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (kwargs && PyDict_Next(kwargs, &pos, &key, &value)) set_keyword(sig, key, value, out);
  check_required(sig, *out);
}

}  // namespace aiter_compat::py
