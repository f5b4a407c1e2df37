#include "tensor_bridge.hpp"

#include <dlpack/dlpack.h>

#include "aiter_compat/shim/errors.hpp"
#include "call_binding.hpp"

namespace aiter_compat::py {

namespace {

// torch tensors are read through their own C methods: Tensor.__dlpack__ is Python code that
// costs several microseconds per tensor, most of a GPU fallback call's host time.
bool is_torch_tensor(PyObject* obj) {
  static PyTypeObject* tensor_type = nullptr;
  if (!tensor_type) {
    PyObject* torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");  // borrowed
    if (!torch) return false;
    Ref type(PyObject_GetAttrString(torch, "Tensor"));
    if (!type || !PyType_Check(type.get())) {
      PyErr_Clear();
      return false;
    }
    tensor_type = reinterpret_cast<PyTypeObject*>(type.release());  // kept for the process
  }
  return PyObject_TypeCheck(obj, tensor_type);
}

bool torch_is_rocm() {
  static int rocm = -1;
  if (rocm < 0) {
    Ref version(PyImport_ImportModule("torch.version"));
    Ref hip(version ? PyObject_GetAttrString(version.get(), "hip") : nullptr);
    PyErr_Clear();
    rocm = hip && hip.get() != Py_None;
  }
  return rocm == 1;
}

int64_t as_i64(PyObject* o) {
  long long v = PyLong_AsLongLong(o);
  if (v == -1 && PyErr_Occurred()) throw PythonErrorSet{};
  return v;
}

TensorView torch_view(const char* name, PyObject* obj) {
  TensorView v;
  Ref ptr(check(PyObject_CallMethod(obj, "data_ptr", nullptr)));
  Ref shape(check(PyObject_GetAttrString(obj, "shape")));
  Ref strides(check(PyObject_CallMethod(obj, "stride", nullptr)));
  Ref dtype(check(PyObject_GetAttrString(obj, "dtype")));
  Ref device(check(PyObject_CallMethod(obj, "get_device", nullptr)));
  const Py_ssize_t ndim = PyTuple_Size(shape.get());
  if (ndim < 0 || ndim > 8 || PyTuple_Size(strides.get()) != ndim)
    throw ArgumentError(name, std::to_string(ndim) + " dimensions", "a tensor of up to 8 dimensions");
  v.data = PyLong_AsVoidPtr(ptr.get());
  v.ndim = static_cast<int>(ndim);
  for (Py_ssize_t i = 0; i < ndim; ++i) {
    v.shape[i] = as_i64(PyTuple_GET_ITEM(shape.get(), i));
    v.strides[i] = as_i64(PyTuple_GET_ITEM(strides.get(), i));
  }
  v.dtype = dtype_of_object(dtype.get());
  v.raw_dtype = to_dlpack(v.dtype);
  const int64_t index = as_i64(device.get());
  v.device = index < 0 ? DeviceKind::cpu : torch_is_rocm() ? DeviceKind::rocm : DeviceKind::cuda;
  v.device_id = index < 0 ? 0 : static_cast<int>(index);
  return v;
}

}  // namespace

TensorView ImportedTensors::add(const char* name, PyObject* obj) {
  if (!obj || obj == Py_None) return {};
  if (is_torch_tensor(obj)) {
    TensorView v = torch_view(name, obj);
    if (v.dtype != DType::unsupported) {
      held_.push_back(Ref::borrow(obj));  // keeps the tensor (and its memory) alive
      return v;
    }
  }
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
  held_.push_back(std::move(capsule));
  return view;
}

namespace {

// aiter_compat._outputs.<name>, for the frameworks other than torch; looked up on first use
// through `cache` and kept for the process.
PyObject* outputs_helper(PyObject*& cache, const char* name) {
  if (!cache) {
    Ref module(check(PyImport_ImportModule("aiter_compat._outputs")));
    cache = check(PyObject_GetAttrString(module.get(), name)).release();
  }
  return cache;
}

}  // namespace

// torch's allocations and stream are reached through its C methods, as are its tensors' fields:
// the Python helpers (torch.empty with a device object, torch.cuda.current_stream) cost a few
// microseconds per call of an eager decode whose kernel takes ten.
Ref empty_like(PyObject* like, const std::vector<int64_t>& shape, bool float32) {
  Ref dims(check(PyTuple_New(static_cast<Py_ssize_t>(shape.size()))));
  for (size_t i = 0; i < shape.size(); ++i) PyTuple_SET_ITEM(dims.get(), i, PyLong_FromLongLong(shape[i]));
  if (is_torch_tensor(like)) {
    // Tensor.new_empty: like's device (and dtype unless float32 is asked for).
    static PyObject* float32_type = nullptr;
    if (!float32_type) {
      PyObject* torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");  // borrowed
      float32_type = check(PyObject_GetAttrString(torch, "float32")).release();
    }
    Ref method(check(PyObject_GetAttrString(like, "new_empty")));
    Ref args(check(PyTuple_Pack(1, dims.get())));
    Ref kwargs(float32 ? check(Py_BuildValue("{s:O}", "dtype", float32_type)) : Ref());
    return check(PyObject_Call(method.get(), args.get(), kwargs.get()));
  }
  static PyObject* helper = nullptr;
  return check(PyObject_CallFunctionObjArgs(outputs_helper(helper, "empty_like"), like, dims.get(),
                                            float32 ? Py_True : Py_False, nullptr));
}

void* current_stream(PyObject* like, const TensorView& view) {
  if (view.device == DeviceKind::cpu) return nullptr;
  if (is_torch_tensor(like)) {
    // torch._C._cuda_getCurrentRawStream(device): the pointer torch.cuda.current_stream wraps.
    static PyObject* raw_stream = nullptr;
    static bool looked = false;
    if (!looked) {
      looked = true;
      PyObject* torch_c = PyDict_GetItemString(PyImport_GetModuleDict(), "torch._C");  // borrowed
      raw_stream = torch_c ? PyObject_GetAttrString(torch_c, "_cuda_getCurrentRawStream") : nullptr;
      if (!raw_stream) PyErr_Clear();  // a torch without it: the helper below answers
    }
    if (raw_stream) {
      Ref index(check(PyLong_FromLong(view.device_id)));
      Ref s(check(PyObject_CallFunctionObjArgs(raw_stream, index.get(), nullptr)));
      return PyLong_AsVoidPtr(s.get());
    }
  }
  static PyObject* helper = nullptr;
  Ref s(check(PyObject_CallFunctionObjArgs(outputs_helper(helper, "current_stream"), like, nullptr)));
  return PyLong_AsVoidPtr(s.get());
}

}  // namespace aiter_compat::py
