#include "aiter_route.hpp"

#include "aiter_patch.hpp"
#include "embedded_python_reader.hpp"

namespace aiter_compat::py {

PyObject* AiterCalls::call(const Route& route, const PyCallArgs& args, std::string* unreachable) {
  auto it = bindings_.find(&route);
  if (it == bindings_.end()) {
    Binding b;
    // AITer's own function: the one install() recorded, else the module's attribute (unwrapped
    // if it is a patch): never a patched name, which would route the call back here.
    if (PyObject* original = registered_original(route.module, route.function)) {
      b.function = Ref::borrow(original);
    } else {
      Ref module(PyImport_ImportModule(route.module.c_str()));
      if (module) b.function = Ref(PyObject_GetAttrString(module.get(), route.function.c_str()));
      if (!b.function) {
        *unreachable = "import " + route.module + " failed: " + fetch_python_error();
        return nullptr;
      }
      b.function = Ref::borrow(unpatched(b.function.get()));
    }
    const OpSignature& sig = args.signature();
    b.kwnames = check(PyTuple_New(static_cast<Py_ssize_t>(route.aiter_params.size())));
    for (size_t k = 0; k < route.aiter_params.size(); ++k)
      PyTuple_SET_ITEM(b.kwnames.get(), k,
                       PyUnicode_InternFromString(sig.params[static_cast<size_t>(route.aiter_params[k])].name.c_str()));
    it = bindings_.emplace(&route, std::move(b)).first;
  }
  PyObject* argv[kMaxParams];
  for (size_t k = 0; k < route.aiter_params.size(); ++k) argv[k] = args.value(route.aiter_params[k]);
  Ref adapted;
  if (route.window_param >= 0) {
    // vLLM passes (left, right); releases from 0.1.8 want (left, right, sink_size), older ones two.
    PyObject* w = argv[route.window_param];
    PyObject* left = PySequence_GetItem(w, 0);
    PyObject* right = left ? PySequence_GetItem(w, 1) : nullptr;
    if (!right) {
      Py_XDECREF(left);
      throw PythonErrorSet{};
    }
    adapted = Ref(route.window_arity == 3 ? Py_BuildValue("(NNi)", left, right, 0) : Py_BuildValue("(NN)", left, right));
    if (!adapted) throw PythonErrorSet{};
    argv[route.window_param] = adapted.get();
  }
  if (PyObject* stream = args.explicit_stream(); stream && stream != Py_None) {
    // AITer runs on torch's current stream: make the caller's current for the call.
    static PyObject* helper = nullptr;
    if (!helper) {
      Ref m(check(PyImport_ImportModule("aiter_compat._outputs")));
      helper = check(PyObject_GetAttrString(m.get(), "call_on_stream")).release();
    }
    Ref kwargs(check(PyDict_New()));
    for (size_t k = 0; k < route.aiter_params.size(); ++k)
      if (PyDict_SetItem(kwargs.get(), PyTuple_GET_ITEM(it->second.kwnames.get(), k), argv[k]) < 0) throw PythonErrorSet{};
    return PyObject_CallFunctionObjArgs(helper, stream, it->second.function.get(), kwargs.get(), nullptr);
  }
  return PyObject_Vectorcall(it->second.function.get(), argv, 0, it->second.kwnames.get());
}

}  // namespace aiter_compat::py
