#include "py_call_args.hpp"

#include "aiter_compat/shim/errors.hpp"
#include "py_tensors.hpp"

namespace aiter_compat::py {
namespace {

[[noreturn]] void bad(const std::string& arg, const std::string& found, const std::string& needed) {
  throw ArgumentError(arg, found, needed);
}

std::string type_name(PyObject* o) { return Py_TYPE(o)->tp_name; }

}  // namespace

WindowValue window_value(PyObject* v) {
  WindowValue w;
  if (!v || v == Py_None) return w;
  Ref seq(PySequence_Fast(v, "window_size"));
  if (!seq) {
    PyErr_Clear();
    bad("window_size", "a " + type_name(v), "a tuple (left, right) or (left, right, sink_size)");
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.get());
  if (n != 2 && n != 3) bad("window_size", std::to_string(n) + " values", "(left, right) or (left, right, sink_size)");
  int64_t vals[3] = {-1, -1, 0};
  for (Py_ssize_t i = 0; i < n; ++i) {
    long long x = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq.get(), i));
    if (x == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      bad("window_size[" + std::to_string(i) + "]", "a non-integer", "an integer");
    }
    vals[i] = x;
  }
  w.arity = static_cast<int>(n);
  w.left = vals[0], w.right = vals[1], w.sink_size = vals[2];
  return w;
}

bool PyCallArgs::neutral(int i) const {
  PyObject* v = value(i);
  if (!v) return true;
  switch (signature().params[static_cast<size_t>(i)].default_kind) {
    case DefaultKind::value: return false;
    case DefaultKind::none: return v == Py_None;
    case DefaultKind::false_: return v == Py_False || v == Py_None || (PyLong_Check(v) && PyLong_AsLong(v) == 0);
    case DefaultKind::zero: {
      if (v == Py_None) return true;
      double d = PyFloat_AsDouble(v);
      if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      }
      return d == 0.0;
    }
    case DefaultKind::window: {
      WindowValue w = window(i);
      return w.left < 0 && w.right < 0 && w.sink_size == 0;
    }
    case DefaultKind::other: return false;
  }
  return false;
}

TensorMeta PyCallArgs::meta(int i, bool batch_layout) const {
  if (!metas_[i] || (batch_layout && !strides_read_[i])) {
    metas_[i] = tensor_meta(signature().params[static_cast<size_t>(i)].name, value(i), batch_layout);
    strides_read_[i] = batch_layout;
  }
  return *metas_[i];
}

DType PyCallArgs::dtype(int i) const {
  if (metas_[i]) return metas_[i]->dtype;
  // A torch tensor's whole metadata costs three C calls and spares them to the export after.
  if (is_torch_tensor(value(i))) return meta(i, false).dtype;
  static PyObject* name = PyUnicode_InternFromString("dtype");
  Ref d(PyObject_GetAttr(value(i), name));
  if (!d) {
    PyErr_Clear();
    bad(signature().params[static_cast<size_t>(i)].name, "a " + type_name(value(i)) + " without a dtype", "a tensor");
  }
  DType t = dtype_of_object(d.get());
  if (t == DType::unsupported)
    bad(signature().params[static_cast<size_t>(i)].name, "dtype " + dtype_text(d.get()), "a dtype this library knows");
  return t;
}

double PyCallArgs::number(int i) const {
  PyObject* v = value(i);
  if (!v || v == Py_None) return 0.0;
  double d = PyFloat_AsDouble(v);  // a 0-d tensor too, through its __float__
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    bad(signature().params[static_cast<size_t>(i)].name, "a " + type_name(v), "a number");
  }
  return d;
}

int64_t PyCallArgs::integer(int i, int64_t otherwise) const {
  PyObject* v = value(i);
  if (!v || v == Py_None) return otherwise;
  long long x = PyLong_AsLongLong(v);
  if (x == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    bad(signature().params[static_cast<size_t>(i)].name, "a " + type_name(v), "an integer");
  }
  return x;
}

bool PyCallArgs::flag(int i) const {
  PyObject* v = value(i);
  if (!v || v == Py_None) return false;
  int t = PyObject_IsTrue(v);
  if (t < 0) {
    PyErr_Clear();
    bad(signature().params[static_cast<size_t>(i)].name, "a " + type_name(v) + " without a truth value", "a bool");
  }
  return t == 1;
}

WindowValue PyCallArgs::window(int i) const {
  if (!window_) window_ = window_value(value(i));  // an op has one window parameter
  return *window_;
}

TensorView PyCallArgs::view(int i) {
  if (!given(i)) return {};
  return tensor_view(signature().params[static_cast<size_t>(i)].name, value(i), metas_[i] ? &*metas_[i] : nullptr,
                     held_);
}

TensorView PyCallArgs::output(int like, const std::vector<int64_t>& shape, DType dtype, Role role) {
  Ref made = empty_like(value(like), shape, dtype);
  const char* name = role == Role::out ? "out" : "lse";
  // Its metadata is known: like's device, the shape asked for, like's dtype or float32.
  std::optional<TensorMeta> m = metas_[like];
  if (m) {
    m->ndim = static_cast<int>(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) m->shape[d] = shape[d];
    if (dtype != DType::unsupported) m->dtype = dtype;
  }
  TensorView v = tensor_view(name, made.get(), m ? &*m : nullptr, held_);
  (role == Role::out ? out_ : lse_) = std::move(made);
  return v;
}

void* PyCallArgs::stream(int like, const TensorView& view) {
  if (!stream_ || stream_ == Py_None) return current_stream(value(like), view);
  if (PyLong_Check(stream_)) return PyLong_AsVoidPtr(stream_);
  // torch.cuda.Stream has cuda_stream, cupy's Stream ptr: the raw handle either way.
  for (const char* attr : {"cuda_stream", "ptr"}) {
    Ref handle(PyObject_GetAttrString(stream_, attr));
    if (handle && PyLong_Check(handle.get())) return PyLong_AsVoidPtr(handle.get());
    PyErr_Clear();
  }
  bad("stream", "a " + type_name(stream_), "a stream (torch.cuda.Stream, a cupy stream) or its handle as an int");
}

void PyCallArgs::run_unlocked(const std::function<void()>& work) {
  // The kernels never touch Python objects: other Python threads go on meanwhile.
  std::exception_ptr error;
  Py_BEGIN_ALLOW_THREADS
  try {
    work();
  } catch (...) {
    error = std::current_exception();
  }
  Py_END_ALLOW_THREADS
  if (error) std::rethrow_exception(error);
}

PyObject* PyCallArgs::out_object() const {
  if (out_) return out_.get();
  const int i = signature().index_of(Role::out);
  return value(i);
}

}  // namespace aiter_compat::py
