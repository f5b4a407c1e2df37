#include "aiter_patch.hpp"

#include <structmember.h>

#include <map>
#include <utility>
#include <vector>

#include "dispatch_entry.hpp"

#if PY_VERSION_HEX < 0x03090000
#define Py_TPFLAGS_HAVE_VECTORCALL _Py_TPFLAGS_HAVE_VECTORCALL
#endif

namespace aiter_compat::py {
namespace {

struct PatchedFunction {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  OpId op;
  // Leading positional parameters the release names as the newest signature does: calls with no
  // more positional arguments than this go to the dispatch unchanged (the common case: engines
  // call AITer by keyword).
  Py_ssize_t shared;
  PyObject* original;    // the AITer function replaced
  PyObject* positional;  // tuple of str: the release's positional parameter names, in order
  PyObject* qualified;   // str: "aiter.ops.mha.flash_attn_varlen_func", where it was put
};

// Positional arguments past the shared prefix are passed on as keywords named by the release.
PyObject* dispatch_renamed(PatchedFunction* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const Py_ssize_t known = PyTuple_GET_SIZE(self->positional);
  if (nargs > known)
    return raise_argument_error(ArgumentError(PyUnicode_AsUTF8(self->qualified), std::to_string(nargs) + " positional arguments",
                                              "at most " + std::to_string(known) + " (the installed release's positional parameters)"));
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  Ref names(PyTuple_New(nargs - self->shared + nkw));
  if (!names) return nullptr;
  std::vector<PyObject*> argv(args, args + self->shared);
  Py_ssize_t j = 0;
  for (Py_ssize_t i = self->shared; i < nargs; ++i, ++j) {
    PyObject* name = PyTuple_GET_ITEM(self->positional, i);
    Py_INCREF(name);
    PyTuple_SET_ITEM(names.get(), j, name);
    argv.push_back(args[i]);
  }
  for (Py_ssize_t k = 0; k < nkw; ++k, ++j) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, k);
    Py_INCREF(name);
    PyTuple_SET_ITEM(names.get(), j, name);
    argv.push_back(args[nargs + k]);
  }
  return dispatch(self->op, argv.data(), self->shared, names.get());
}

PyObject* patched_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<PatchedFunction*>(callable);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs <= self->shared) return dispatch(self->op, args, nargs, kwnames);
  return dispatch_renamed(self, args, nargs, kwnames);
}

const OpSignature* routed_op(const char* name) {
  for (const auto& sig : all_signatures())
    if (sig.name == name && !sig.aiter_name.empty()) return &sig;
  return nullptr;
}

// PatchedFunction(op, original, positional_names, qualified_name)
PyObject* patched_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  const char* op_name = nullptr;
  PyObject *original = nullptr, *names = nullptr, *qualified = nullptr;
  static const char* keywords[] = {"op", "original", "positional_names", "qualified_name", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sOOU", const_cast<char**>(keywords), &op_name, &original, &names,
                                   &qualified))
    return nullptr;
  const OpSignature* sig = routed_op(op_name);
  if (!sig)
    return raise_argument_error(ArgumentError("op", std::string("'") + op_name + "'",
                                              "an AITer entry point aiter-compat routes (flash_attn_varlen_func, "
                                              "flash_attn_func or unified_attention)"));
  if (!PyCallable_Check(original))
    return raise_argument_error(ArgumentError("original", Py_TYPE(original)->tp_name, "a callable"));
  Ref positional(PySequence_Tuple(names));
  if (!positional) return nullptr;
  Py_ssize_t shared = 0;
  const Py_ssize_t n = PyTuple_GET_SIZE(positional.get());
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* name = PyTuple_GET_ITEM(positional.get(), i);
    if (!PyUnicode_Check(name))
      return raise_argument_error(ArgumentError("positional_names", Py_TYPE(name)->tp_name, "parameter names (str)"));
    const char* text = PyUnicode_AsUTF8(name);
    if (shared == i && static_cast<size_t>(i) < sig->params.size() && sig->params[static_cast<size_t>(i)].name == text)
      ++shared;
  }
  auto* self = reinterpret_cast<PatchedFunction*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->vectorcall = patched_vectorcall;
  self->op = sig->id;
  self->shared = shared;
  Py_INCREF(original);
  self->original = original;
  self->positional = positional.release();
  Py_INCREF(qualified);
  self->qualified = qualified;
  return reinterpret_cast<PyObject*>(self);
}

int patched_traverse(PyObject* o, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<PatchedFunction*>(o);
  Py_VISIT(self->original);
  Py_VISIT(self->positional);
  Py_VISIT(self->qualified);
  return 0;
}

int patched_clear(PyObject* o) {
  auto* self = reinterpret_cast<PatchedFunction*>(o);
  Py_CLEAR(self->original);
  Py_CLEAR(self->positional);
  Py_CLEAR(self->qualified);
  return 0;
}

void patched_dealloc(PyObject* o) {
  PyObject_GC_UnTrack(o);
  patched_clear(o);
  Py_TYPE(o)->tp_free(o);
}

PyObject* patched_repr(PyObject* o) {
  auto* self = reinterpret_cast<PatchedFunction*>(o);
  return PyUnicode_FromFormat("<aiter_compat route for %U>", self->qualified);
}

// __name__, __qualname__, __module__ and __doc__ are the original's, so engines' logs and
// introspection see the AITer function they asked for.
PyObject* original_attribute(PyObject* o, void* name) {
  auto* self = reinterpret_cast<PatchedFunction*>(o);
  PyObject* value = PyObject_GetAttrString(self->original, static_cast<const char*>(name));
  if (!value && PyErr_ExceptionMatches(PyExc_AttributeError)) {
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  return value;
}

PyObject* op_name(PyObject* o, void*) {
  return PyUnicode_FromString(to_string(reinterpret_cast<PatchedFunction*>(o)->op).c_str());
}

PyObject* shared_positional(PyObject* o, void*) {
  return PyLong_FromSsize_t(reinterpret_cast<PatchedFunction*>(o)->shared);
}

// Pickled by reference, as Python functions are: the original's module and qualified name, which
// name this object while installed (pickle checks that) and AITer's function after uninstall().
PyObject* patched_reduce(PyObject* o, PyObject*) {
  return PyObject_GetAttrString(reinterpret_cast<PatchedFunction*>(o)->original, "__qualname__");
}

PyMethodDef patched_methods[] = {
    {"__reduce__", patched_reduce, METH_NOARGS, "Pickled by reference (module and qualified name)."},
    {nullptr, nullptr, 0, nullptr}};

PyMemberDef patched_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(PatchedFunction, original), READONLY, "The AITer function this stands in for."},
    {"__aiter_compat_original__", T_OBJECT, offsetof(PatchedFunction, original), READONLY,
     "The AITer function this stands in for."},
    {"qualified_name", T_OBJECT, offsetof(PatchedFunction, qualified), READONLY, "module.name where it was put."},
    {"positional_names", T_OBJECT, offsetof(PatchedFunction, positional), READONLY,
     "The installed release's positional parameter names, in order."},
    {nullptr, 0, 0, 0, nullptr}};

PyGetSetDef patched_getset[] = {
    {"__name__", original_attribute, nullptr, nullptr, const_cast<char*>("__name__")},
    {"__qualname__", original_attribute, nullptr, nullptr, const_cast<char*>("__qualname__")},
    {"__module__", original_attribute, nullptr, nullptr, const_cast<char*>("__module__")},
    {"__doc__", original_attribute, nullptr, nullptr, const_cast<char*>("__doc__")},
    {"op", op_name, nullptr, const_cast<char*>("The aiter-compat operation it dispatches to."), nullptr},
    {"shared_positional", shared_positional, nullptr,
     const_cast<char*>("Leading positional parameters the release names as the newest signature does."), nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject PatchedFunctionType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// (module, name) -> AITer's original function, strong references. Never destroyed: the
// references must not be released after the interpreter has finalised.
std::map<std::pair<std::string, std::string>, PyObject*>& originals() {
  static auto* registry = new std::map<std::pair<std::string, std::string>, PyObject*>();
  return *registry;
}

PyObject* api_register_original(PyObject*, PyObject* args) {
  const char *module = nullptr, *name = nullptr;
  PyObject* fn = nullptr;
  if (!PyArg_ParseTuple(args, "ssO", &module, &name, &fn)) return nullptr;
  PyObject* original = unpatched(fn);
  Py_INCREF(original);
  PyObject*& slot = originals()[{module, name}];
  Py_XDECREF(slot);
  slot = original;
  Py_RETURN_NONE;
}

PyObject* api_forget_original(PyObject*, PyObject* args) {
  const char *module = nullptr, *name = nullptr;
  if (!PyArg_ParseTuple(args, "ss", &module, &name)) return nullptr;
  auto it = originals().find({module, name});
  if (it != originals().end()) {
    Py_DECREF(it->second);
    originals().erase(it);
  }
  Py_RETURN_NONE;
}

PyObject* api_original_of(PyObject*, PyObject* args) {
  const char *module = nullptr, *name = nullptr;
  if (!PyArg_ParseTuple(args, "ss", &module, &name)) return nullptr;
  PyObject* fn = registered_original(module, name);
  if (!fn) Py_RETURN_NONE;
  Py_INCREF(fn);
  return fn;
}

PyMethodDef registry_methods[] = {
    {"_register_original", api_register_original, METH_VARARGS,
     "_register_original(module, name, fn): the AITer route of module.name calls fn (unwrapped if patched)."},
    {"_forget_original", api_forget_original, METH_VARARGS, "_forget_original(module, name)"},
    {"original_of", api_original_of, METH_VARARGS,
     "original_of(module, name): the AITer function install() recorded for module.name, or None."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

PyObject* registered_original(const std::string& module, const std::string& name) {
  auto it = originals().find({module, name});
  return it == originals().end() ? nullptr : it->second;
}

PyObject* unpatched(PyObject* fn) {
  while (fn && Py_TYPE(fn) == &PatchedFunctionType) fn = reinterpret_cast<PatchedFunction*>(fn)->original;
  return fn;
}

int init_patching(PyObject* module) {
  PatchedFunctionType.tp_name = "aiter_compat.PatchedFunction";
  PatchedFunctionType.tp_doc =
      "PatchedFunction(op, original, positional_names, qualified_name): what install() puts in place of an AITer "
      "entry point; calls go through aiter-compat's routing.";
  PatchedFunctionType.tp_basicsize = sizeof(PatchedFunction);
  PatchedFunctionType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL;
  PatchedFunctionType.tp_vectorcall_offset = offsetof(PatchedFunction, vectorcall);
  PatchedFunctionType.tp_call = PyVectorcall_Call;
  PatchedFunctionType.tp_new = patched_new;
  PatchedFunctionType.tp_traverse = patched_traverse;
  PatchedFunctionType.tp_clear = patched_clear;
  PatchedFunctionType.tp_dealloc = patched_dealloc;
  PatchedFunctionType.tp_repr = patched_repr;
  PatchedFunctionType.tp_members = patched_members;
  PatchedFunctionType.tp_methods = patched_methods;
  PatchedFunctionType.tp_getset = patched_getset;
  if (PyType_Ready(&PatchedFunctionType) < 0) return -1;
  Py_INCREF(&PatchedFunctionType);
  if (PyModule_AddObject(module, "PatchedFunction", reinterpret_cast<PyObject*>(&PatchedFunctionType)) < 0) return -1;
  return PyModule_AddFunctions(module, registry_methods);
}

}  // namespace aiter_compat::py
