#pragma once
// Tensors of any DLPack framework as the core needs them: routing metadata read through cheap
// attributes (shape, dtype, the device), views for the fallbacks, outputs made by the input's
// own framework, and its current stream. torch tensors are read through their C methods
// (Tensor.__dlpack__ and __dlpack_device__ are Python code costing microseconds each).
#include "py_ref.hpp"

#include <string>
#include <vector>

#include "aiter_compat/shim/call_args.hpp"
#include "aiter_compat/shim/tensor.hpp"

namespace aiter_compat::py {

// Must be called once, with the GIL, before the others.
void init_tensors();

bool is_torch_tensor(PyObject* obj);
DType dtype_of_object(PyObject* dtype);  // torch.bfloat16, numpy.dtype('float16'), 'bfloat16', ...
std::string dtype_text(PyObject* dtype);  // its name, for errors about dtypes DType does not know

// Throws ArgumentError naming `name` when obj is no tensor. `batch_layout`: also whether dim 0
// steps over whole runs of dim 1 (strides read only then).
TensorMeta tensor_meta(const std::string& name, PyObject* obj, bool batch_layout);

// Exports obj for a fallback kernel (torch: through its C methods, with `meta` already read;
// others: __dlpack__, the capsule kept in `held`). Throws ArgumentError naming `name`.
TensorView tensor_view(const std::string& name, PyObject* obj, const TensorMeta* meta, std::vector<Ref>& held);

// A new uninitialised tensor of `like`'s framework and device: like's dtype, or float32.
// dtype: float32 or bfloat16, or unsupported for like's own.
Ref empty_like(PyObject* like, const std::vector<int64_t>& shape, DType dtype);

// The stream `like`'s framework would run on now, on like's device (torch, cupy); null for CPU
// tensors and other frameworks. `view`: like as imported (its device).
void* current_stream(PyObject* like, const TensorView& view);

}  // namespace aiter_compat::py
