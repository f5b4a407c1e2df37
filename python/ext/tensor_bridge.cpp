#include "tensor_bridge.hpp"

#include <dlpack/dlpack.h>

#include "aiter_compat/shim/errors.hpp"

namespace aiter_compat::py {

TensorView ImportedTensors::add(const char* name, PyObject* obj) {
  if (!obj || obj == Py_None) return {};
  Ref capsule(PyObject_CallMethod(obj, "__dlpack__", nullptr));
  if (!capsule) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    Ref t(type), v(value), b(tb);
    Ref text(v ? PyObject_Str(v.get()) : nullptr);
    PyErr_Clear();
    std::string why = text ? PyUnicode_AsUTF8(text.get()) : "no __dlpack__";
    throw ArgumentError(name, std::string("a ") + Py_TYPE(obj)->tp_name + " that cannot be exported (" + why + ")",
                        "a tensor supporting DLPack (a writable one for outputs)");
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.get(), "dltensor"));
  if (!managed) {
    PyErr_Clear();
    throw ArgumentError(name, "a DLPack capsule that is not a 'dltensor'", "an unversioned DLPack capsule");
  }
  TensorView view;
  std::string why;
  if (!view_from_dltensor(managed->dl_tensor, &view, &why)) throw ArgumentError(name, why, "a tensor of up to 8 dimensions");
  // The producer frees the tensor when the capsule is collected unconsumed, as DLPack specifies.
  capsules_.push_back(std::move(capsule));
  return view;
}

Ref empty_like(PyObject* like, const std::vector<int64_t>& shape, bool float32) {
  static PyObject* helper = nullptr;
  if (!helper) {
    Ref module(check(PyImport_ImportModule("aiter_compat._outputs")));
    helper = check(PyObject_GetAttrString(module.get(), "empty_like")).release();
  }
  Ref dims(check(PyTuple_New(static_cast<Py_ssize_t>(shape.size()))));
  for (size_t i = 0; i < shape.size(); ++i) PyTuple_SET_ITEM(dims.get(), i, PyLong_FromLongLong(shape[i]));
  return check(PyObject_CallFunctionObjArgs(helper, like, dims.get(), float32 ? Py_True : Py_False, nullptr));
}

}  // namespace aiter_compat::py
