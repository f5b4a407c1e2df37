#pragma once
// Binds a vectorcall (positional arguments and keyword names) to an operation's signature, and
// reads the call's features from the bound values: tensor metadata through the cheap
// attributes every DLPack framework has (shape, dtype, __dlpack_device__), never by exporting.
#include "py_ref.hpp"

#include <string>

#include "aiter_compat/shim/features.hpp"
#include "aiter_compat/shim/signatures.hpp"

namespace aiter_compat::py {

constexpr int kMaxParams = 32;

struct BoundCall {
  const OpSignature* sig = nullptr;
  PyObject* values[kMaxParams] = {};  // borrowed; nullptr when not given
  int index(const char* name) const { return sig->index_of(name); }
  PyObject* value(const char* name) const {
    int i = sig->index_of(name);
    return i < 0 ? nullptr : values[i];
  }
  bool given_not_none(const char* name) const {
    PyObject* v = value(name);
    return v && v != Py_None;
  }
};

struct TensorMeta {
  DType dtype = DType::unsupported;
  DeviceKind device = DeviceKind::cpu;
  int device_id = 0;
  int ndim = 0;
  int64_t shape[8] = {};
};

// Must be called once, with the GIL, before the others.
void init_call_binding();

// Throws ArgumentError for unknown, duplicate or missing arguments.
void bind(const OpSignature& sig, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, BoundCall* out);
void bind_kwargs(const OpSignature& sig, PyObject* kwargs, BoundCall* out);

TensorMeta tensor_meta(const char* name, PyObject* obj);
DType dtype_of_object(PyObject* dtype);  // torch.bfloat16, numpy.dtype('float16'), 'bfloat16', ...

// Throws ArgumentError when a tensor's metadata is unusable.
CallFeatures features_of(const BoundCall& call);

}  // namespace aiter_compat::py
