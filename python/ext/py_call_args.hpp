#pragma once
// A vectorcall's objects as the dispatch core reads them (CallArgs): scalars and windows read
// from Python objects, tensors' metadata read once and kept for the export, outputs made by the
// input's framework and kept for the return.
#include "py_ref.hpp"

#include <optional>
#include <vector>

#include "aiter_compat/shim/call_args.hpp"
#include "call_binding.hpp"

namespace aiter_compat::py {

class PyCallArgs final : public CallArgs {
 public:
  explicit PyCallArgs(const BoundCall& call) : call_(call) {}

  const OpSignature& signature() const override { return *call_.sig; }
  bool given(int i) const override { return i >= 0 && call_.values[i] && call_.values[i] != Py_None; }
  bool neutral(int i) const override;
  TensorMeta meta(int i, bool batch_layout) const override;
  DType dtype(int i) const override;
  double number(int i) const override;
  int64_t integer(int i, int64_t otherwise) const override;
  bool flag(int i) const override;
  WindowValue window(int i) const override;
  TensorView view(int i) override;
  TensorView output(int like, const std::vector<int64_t>& shape, DType dtype, Role role) override;
  void* stream(int like, const TensorView& view) override;
  void run_unlocked(const std::function<void()>& work) override;

  PyObject* value(int i) const { return i >= 0 ? call_.values[i] : nullptr; }
  // The caller's `stream=` (a stream object or its handle as an int); null: the framework's current one.
  void set_stream(PyObject* s) { stream_ = s; }
  PyObject* explicit_stream() const { return stream_; }
  // The object to return for out (given or made) and lse (made).
  PyObject* out_object() const;
  PyObject* lse_object() const { return lse_.get(); }

 private:
  const BoundCall& call_;
  mutable std::optional<TensorMeta> metas_[kMaxParams];  // read once per call
  mutable bool strides_read_[kMaxParams] = {};           // batch_contiguous known
  mutable std::optional<WindowValue> window_;            // parsed once
  std::vector<Ref> held_;  // exported tensors and capsules, alive until the call returns
  Ref out_, lse_;          // outputs made here
  PyObject* stream_ = nullptr;
};

// The window_size object as values; throws ArgumentError for anything else.
WindowValue window_value(PyObject* v);

}  // namespace aiter_compat::py
