#include "py_tensors.hpp"

#include <dlpack/dlpack.h>

#include "aiter_compat/shim/errors.hpp"

namespace aiter_compat::py {
namespace {

PyObject *g_shape, *g_dtype, *g_dlpack_device, *g_data_ptr, *g_stride, *g_get_device, *g_strides, *g_itemsize;

// dtype objects seen so far (strong references; frameworks keep a handful of singletons).
std::vector<std::pair<PyObject*, DType>> g_dtype_cache;

[[noreturn]] void bad(const std::string& arg, const std::string& found, const std::string& needed) {
  throw ArgumentError(arg, found, needed);
}

std::string type_name(PyObject* o) { return Py_TYPE(o)->tp_name; }

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

// A tuple of integers (a shape or strides) into `out`; false when it is none.
bool read_ints(PyObject* seq, int64_t* out, int* n, int max = 8) {
  Ref dims = PyTuple_Check(seq) ? Ref::borrow(seq) : Ref(PySequence_Fast(seq, "shape"));
  if (!dims) {
    PyErr_Clear();
    return false;
  }
  Py_ssize_t size = PySequence_Fast_GET_SIZE(dims.get());
  if (size > max) {
    *n = static_cast<int>(size);
    return true;
  }
  *n = static_cast<int>(size);
  for (Py_ssize_t i = 0; i < size; ++i) {
    out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(dims.get(), i));
    if (out[i] == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

// Whether dim 0 of a [batch, seqlen, ...] tensor steps over whole runs of dim 1.
bool evenly_spaced(const TensorMeta& m, const int64_t* strides) {
  return m.ndim < 2 || m.shape[0] <= 1 || strides[0] == m.shape[1] * strides[1];
}

// Strides in elements of a non-torch tensor: numpy and cupy give `strides` in bytes.
bool generic_strides(PyObject* obj, int64_t* strides, int ndim) {
  Ref s(PyObject_GetAttr(obj, g_strides)), item(s ? PyObject_GetAttr(obj, g_itemsize) : nullptr);
  int n = 0;
  long long size = item ? PyLong_AsLongLong(item.get()) : -1;
  if (!s || !item || size <= 0 || !read_ints(s.get(), strides, &n) || n != ndim) {
    PyErr_Clear();
    return false;
  }
  for (int i = 0; i < n; ++i) strides[i] /= size;
  return true;
}

// A torch tensor that would join autograd's graph: it requires grad and grad mode is on. The
// fallback kernels are forward-only: their output would sit outside the graph, and backward
// would fail later with torch's own, unrelated-looking error.
bool joins_autograd(PyObject* obj) {
  Ref wants_grad(PyObject_GetAttrString(obj, "requires_grad"));
  if (!wants_grad) {
    PyErr_Clear();
    return false;
  }
  if (PyObject_IsTrue(wants_grad.get()) != 1) return false;
  PyObject* torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");  // borrowed
  Ref enabled(torch ? PyObject_CallMethod(torch, "is_grad_enabled", nullptr) : nullptr);
  PyErr_Clear();
  return !enabled || PyObject_IsTrue(enabled.get()) == 1;
}

}  // namespace

void init_tensors() {
  if (g_shape) return;
  g_shape = PyUnicode_InternFromString("shape");
  g_dtype = PyUnicode_InternFromString("dtype");
  g_dlpack_device = PyUnicode_InternFromString("__dlpack_device__");
  g_data_ptr = PyUnicode_InternFromString("data_ptr");
  g_stride = PyUnicode_InternFromString("stride");
  g_get_device = PyUnicode_InternFromString("get_device");
  g_strides = PyUnicode_InternFromString("strides");
  g_itemsize = PyUnicode_InternFromString("itemsize");
}

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

std::string dtype_text(PyObject* dtype) {
  Ref text(PyObject_Str(dtype));
  const char* s = text ? PyUnicode_AsUTF8(text.get()) : nullptr;
  if (!s) {
    PyErr_Clear();
    return "unknown";
  }
  std::string t = s;
  return t.rfind("torch.", 0) == 0 ? t.substr(6) : t;
}

DType dtype_of_object(PyObject* dtype) {
  for (const auto& [obj, t] : g_dtype_cache)
    if (obj == dtype) return t;
  DType t = dtype_from_name(dtype_text(dtype));
  if (g_dtype_cache.size() < 64) {
    Py_INCREF(dtype);
    g_dtype_cache.emplace_back(dtype, t);
  }
  return t;
}

TensorMeta tensor_meta(const std::string& name, PyObject* obj, bool batch_layout) {
  TensorMeta m;
  if (!obj || obj == Py_None) bad(name, "None", "a tensor");
  const bool torch = is_torch_tensor(obj);
  Ref shape(PyObject_GetAttr(obj, g_shape));
  Ref dtype(shape ? PyObject_GetAttr(obj, g_dtype) : nullptr);
  Ref device(dtype ? PyObject_CallMethodNoArgs(obj, torch ? g_get_device : g_dlpack_device) : nullptr);
  if (!device) {
    PyErr_Clear();
    bad(name, "a " + type_name(obj), "a tensor with shape, dtype and __dlpack_device__ (torch, numpy, cupy)");
  }
  if (!read_ints(shape.get(), m.shape, &m.ndim)) bad(name, "a shape that is no sequence of integers", "a tensor");
  if (m.ndim > 8) bad(name, std::to_string(m.ndim) + " dimensions", "at most 8");
  m.dtype = dtype_of_object(dtype.get());
  if (torch) {
    const long index = PyLong_AsLong(device.get());  // -1: CPU
    if (index == -1 && PyErr_Occurred()) throw PythonErrorSet{};
    m.device = index < 0 ? DeviceKind::cpu : torch_is_rocm() ? DeviceKind::rocm : DeviceKind::cuda;
    m.device_id = index < 0 ? 0 : static_cast<int>(index);
  } else {
    long dev_type = -1, dev_id = 0;
    if (!PyTuple_Check(device.get()) || PyTuple_GET_SIZE(device.get()) != 2 ||
        (dev_type = PyLong_AsLong(PyTuple_GET_ITEM(device.get(), 0))) < 0 ||
        (dev_id = PyLong_AsLong(PyTuple_GET_ITEM(device.get(), 1))) < 0) {
      PyErr_Clear();
      bad(name, "a __dlpack_device__() that is not (type, id)", "DLPack's (device_type, device_id)");
    }
    m.device = device_kind_of(DLDevice{static_cast<DLDeviceType>(dev_type), static_cast<int32_t>(dev_id)});
    m.device_id = static_cast<int>(dev_id);
  }
  if (batch_layout && m.ndim >= 2) {
    int64_t strides[8];
    int n = 0;
    bool known = false;
    if (torch) {
      Ref s(PyObject_CallMethodNoArgs(obj, g_stride));
      known = s && read_ints(s.get(), strides, &n) && n == m.ndim;
    } else {
      known = generic_strides(obj, strides, m.ndim);
    }
    PyErr_Clear();
    m.batch_contiguous = !known || evenly_spaced(m, strides);  // unknown: the export will tell
  }
  return m;
}

TensorView tensor_view(const std::string& name, PyObject* obj, const TensorMeta* meta, std::vector<Ref>& held) {
  if (!obj || obj == Py_None) return {};
  if (is_torch_tensor(obj)) {
    if (joins_autograd(obj))
      throw ArgumentError(name, "a tensor that requires grad, with autograd on",
                          "one that does not: the fallback kernels compute the forward pass only (no backward); "
                          "detach() it or call under torch.no_grad()");
    TensorMeta m = meta ? *meta : tensor_meta(name, obj, false);
    if (m.dtype != DType::unsupported) {
      TensorView v;
      Ref ptr(check(PyObject_CallMethodNoArgs(obj, g_data_ptr)));
      Ref strides(check(PyObject_CallMethodNoArgs(obj, g_stride)));
      int n = 0;
      if (!read_ints(strides.get(), v.strides, &n) || n != m.ndim)
        throw ArgumentError(name, std::to_string(n) + " strides for " + std::to_string(m.ndim) + " dimensions",
                            "a tensor of up to 8 dimensions");
      v.data = PyLong_AsVoidPtr(ptr.get());
      v.ndim = m.ndim;
      for (int i = 0; i < m.ndim; ++i) v.shape[i] = m.shape[i];
      v.dtype = m.dtype;
      v.raw_dtype = to_dlpack(m.dtype);
      v.device = m.device;
      v.device_id = m.device_id;
      held.push_back(Ref::borrow(obj));  // keeps the tensor (and its memory) alive
      return v;
    }
  }
  Ref capsule(PyObject_CallMethod(obj, "__dlpack__", nullptr));
  if (!capsule) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    Ref t(type), val(value), b(tb);
    Ref text(val ? PyObject_Str(val.get()) : nullptr);
    PyErr_Clear();
    std::string why = text ? PyUnicode_AsUTF8(text.get()) : "no __dlpack__";
    throw ArgumentError(name, "a " + type_name(obj) + " that cannot be exported (" + why + ")",
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
  held.push_back(std::move(capsule));
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
Ref empty_like(PyObject* like, const std::vector<int64_t>& shape, DType dtype) {
  Ref dims(check(PyTuple_New(static_cast<Py_ssize_t>(shape.size()))));
  for (size_t i = 0; i < shape.size(); ++i) PyTuple_SET_ITEM(dims.get(), i, PyLong_FromLongLong(shape[i]));
  const bool other = dtype == DType::f32 || dtype == DType::bf16;
  if (is_torch_tensor(like)) {
    // Tensor.new_empty: like's device (and dtype unless float32 or bfloat16 is asked for).
    static PyObject *new_empty = nullptr, *float32_kwargs = nullptr, *bfloat16_kwargs = nullptr;
    if (!new_empty) {
      PyObject* torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");  // borrowed
      Ref f32(check(PyObject_GetAttrString(torch, "float32"))), bf16(check(PyObject_GetAttrString(torch, "bfloat16")));
      float32_kwargs = check(Py_BuildValue("{s:O}", "dtype", f32.get())).release();
      bfloat16_kwargs = check(Py_BuildValue("{s:O}", "dtype", bf16.get())).release();
      new_empty = PyUnicode_InternFromString("new_empty");
    }
    Ref method(check(PyObject_GetAttr(like, new_empty)));
    Ref args(check(PyTuple_Pack(1, dims.get())));
    PyObject* kwargs = dtype == DType::f32 ? float32_kwargs : dtype == DType::bf16 ? bfloat16_kwargs : nullptr;
    return check(PyObject_Call(method.get(), args.get(), kwargs));
  }
  static PyObject* helper = nullptr;
  Ref name = other ? Ref(check(PyUnicode_FromString(to_string(dtype).c_str()))) : Ref::borrow(Py_None);
  return check(PyObject_CallFunctionObjArgs(outputs_helper(helper, "empty_like"), like, dims.get(), name.get(), nullptr));
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
      Ref s(check(PyObject_CallOneArg(raw_stream, index.get())));
      return PyLong_AsVoidPtr(s.get());
    }
  }
  static PyObject* helper = nullptr;
  Ref s(check(PyObject_CallFunctionObjArgs(outputs_helper(helper, "current_stream"), like, nullptr)));
  return PyLong_AsVoidPtr(s.get());
}

}  // namespace aiter_compat::py
