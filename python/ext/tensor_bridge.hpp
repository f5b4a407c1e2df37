#pragma once
// Tensors in and out of the fallback routes through DLPack: any object with __dlpack__ (torch,
// numpy, cupy) becomes a TensorView while its capsule is held; outputs are made by the input's
// own framework so callers get back the kind of tensor they passed.
#include "py_ref.hpp"

#include <string>
#include <vector>

#include "aiter_compat/shim/tensor.hpp"

namespace aiter_compat::py {

class ImportedTensors {
 public:
  // Exports obj through __dlpack__ (torch tensors: read through their C methods) and keeps it
  // alive until this object dies. None gives an undefined view. Throws ArgumentError naming
  // `name` when obj cannot be exported.
  TensorView add(const char* name, PyObject* obj);

 private:
  std::vector<Ref> held_;  // DLPack capsules, or torch tensors read directly
};

// A new uninitialised tensor of `like`'s framework and device: like's dtype, or float32.
Ref empty_like(PyObject* like, const std::vector<int64_t>& shape, bool float32);

// The stream `like`'s framework would run on now, on like's device (torch, cupy); 0 for CPU
// tensors and other frameworks. `view`: like as imported (its device).
void* current_stream(PyObject* like, const TensorView& view);

}  // namespace aiter_compat::py
