#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "aiter_call.hpp"

#include "embedded_python_reader.hpp"
#include "embedded_text.hpp"

namespace aiter_compat::capi {
namespace {

PyObject* glue() {  // under the GIL
  static PyObject* module = nullptr;
  if (!module) {
    run_site_once();  // the glue imports torch and aiter from site-packages
    PyObject* code = Py_CompileString(embedded::capi_glue_py, "<aiter_compat/capi_glue.py>", Py_file_input);
    if (code) module = PyImport_ExecCodeModule("_aiter_compat_capi_glue", code);
    Py_XDECREF(code);
  }
  return module;
}

void delete_managed(DLManagedTensor* self) { delete self; }

void capsule_destructor(PyObject* capsule) {
  // DLPack: a capsule still named "dltensor" was never consumed; its owner frees it.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    m->deleter(m);
  }
}

const char* dtype_name(DLDataType t) {
  if (t.code == kDLBfloat && t.bits == 16) return "bfloat16";
  if (t.code == kDLFloat) return t.bits == 16 ? "float16" : t.bits == 32 ? "float32" : "float64";
  if (t.code == kDLInt) return t.bits == 32 ? "int32" : "int64";
  return "unknown";
}

// A Python tensor over the caller's memory (borrowed for the call's duration).
PyObject* wrap(const DLTensor* t) {
  if (!t) Py_RETURN_NONE;
  auto* m = new DLManagedTensor{*t, nullptr, delete_managed};
  PyObject* capsule = PyCapsule_New(m, "dltensor", capsule_destructor);
  if (!capsule) {
    delete m;
    return nullptr;
  }
  PyObject* shape = PyTuple_New(t->ndim);
  for (int i = 0; i < t->ndim; ++i) PyTuple_SET_ITEM(shape, i, PyLong_FromLongLong(t->shape[i]));
  PyObject* out = PyObject_CallMethod(glue(), "tensor", "N(ii)Ns", capsule, static_cast<int>(t->device.device_type),
                                      t->device.device_id, shape, dtype_name(t->dtype));
  return out;
}

PyObject* to_python(const ArgValue& v) {
  if (auto* t = std::get_if<const DLTensor*>(&v)) return wrap(*t);
  if (auto* i = std::get_if<int64_t>(&v)) return PyLong_FromLongLong(*i);
  if (auto* d = std::get_if<double>(&v)) return PyFloat_FromDouble(*d);
  if (auto* b = std::get_if<bool>(&v)) return PyBool_FromLong(*b);
  const auto& w = std::get<Window2>(v);
  return w.arity == 3 ? Py_BuildValue("(LLL)", w.left, w.right, w.sink_size) : Py_BuildValue("(LL)", w.left, w.right);
}

}  // namespace

std::string torch_problem() {
  PyGILState_STATE gil = PyGILState_Ensure();
  std::string why;
  PyObject* m = glue();
  PyObject* r = m ? PyObject_CallMethod(m, "torch_available", nullptr) : nullptr;
  if (!r) why = "cannot check for torch: " + fetch_python_error();
  else if (r != Py_True) why = "torch cannot be imported here, and AITer's Python entry points take torch tensors";
  Py_XDECREF(r);
  PyGILState_Release(gil);
  return why;
}

AiterOutcome call_aiter(const std::string& module, const std::string& function, const std::vector<KeywordArg>& kwargs,
                        const DLTensor* lse_out) {
  PyGILState_STATE gil = PyGILState_Ensure();
  std::string error;
  bool unreachable = false;
  PyObject* dict = PyDict_New();
  PyObject* lse = nullptr;
  for (const auto& kw : kwargs) {
    PyObject* value = to_python(kw.value);
    if (!value || PyDict_SetItemString(dict, kw.name.c_str(), value) < 0) {
      Py_XDECREF(value);
      error = "preparing " + kw.name + ": " + fetch_python_error();
      break;
    }
    Py_DECREF(value);
  }
  if (error.empty() && lse_out && !(lse = wrap(lse_out))) error = "preparing lse: " + fetch_python_error();
  if (error.empty()) {
    PyObject* r = PyObject_CallMethod(glue(), "call", "ssOO", module.c_str(), function.c_str(), dict,
                                      lse ? lse : Py_None);
    if (!r) {
      PyObject* marker = PyObject_GetAttrString(glue(), "Unreachable");
      unreachable = marker && PyErr_ExceptionMatches(marker);
      Py_XDECREF(marker);
      error = fetch_python_error();
    }
    Py_XDECREF(r);
  }
  Py_XDECREF(lse);
  Py_DECREF(dict);
  PyGILState_Release(gil);
  return {error, unreachable};
}

}  // namespace aiter_compat::capi
