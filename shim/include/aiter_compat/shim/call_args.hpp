#pragma once
// One call as the core sees it, whichever front it came through: the values of the op's
// parameters, by index into its signature, read through this interface. The Python module
// implements it over the objects of a vectorcall, the C API over its argument structs; the core
// computes the features, plans AITer's keywords and runs the fallbacks from it alone.
#include <cstdint>
#include <functional>
#include <vector>

#include "aiter_compat/shim/signatures.hpp"
#include "aiter_compat/shim/tensor.hpp"

namespace aiter_compat {

// A tensor's routing facts: read without exporting it.
struct TensorMeta {
  DType dtype = DType::unsupported;
  DeviceKind device = DeviceKind::cpu;
  int device_id = 0;
  int ndim = 0;
  int64_t shape[8] = {};
  bool batch_contiguous = true;  // asked for with batch_layout: dim 0 steps over whole dim-1 runs
};

struct WindowValue {
  int arity = 0;  // values given: 0 (none), 2 or 3
  int64_t left = -1, right = -1, sink_size = 0;
};

class CallArgs {
 public:
  virtual ~CallArgs() = default;
  virtual const OpSignature& signature() const = 0;

  // Whether parameter i was given a value other than None.
  virtual bool given(int i) const = 0;
  // Whether parameter i is absent or holds its neutral value (its DefaultKind).
  virtual bool neutral(int i) const = 0;
  // Readers; each throws ArgumentError naming the parameter when the value is not of its kind.
  // `batch_layout`: also tell whether the sequences of a [batch, seqlen, ...] tensor are evenly spaced.
  virtual TensorMeta meta(int i, bool batch_layout = false) const = 0;
  virtual DType dtype(int i) const = 0;  // of a tensor, reading nothing else
  virtual double number(int i) const = 0;    // None: 0
  virtual int64_t integer(int i, int64_t otherwise) const = 0;  // None: otherwise
  virtual bool flag(int i) const = 0;        // None: false
  virtual WindowValue window(int i) const = 0;
  // Whether the call asks for the LSE: its return_lse, or (C API) an lse buffer given.
  virtual bool wants_lse() const {
    const int i = signature().index_of(Role::return_lse);
    return i >= 0 && flag(i);
  }

  // For the fallback routes. view(): the tensor exported (kept alive by the front for the call);
  // an undefined view for None. output(): where an output with no parameter of its own goes
  // (out when the call gave none, the LSE): the caller's buffer where its front has one (the C
  // API's lse), else a new tensor like parameter `like` (its framework, device, and `dtype`, or
  // like's own for DType::unsupported), which the front returns to its caller.
  virtual TensorView view(int i) = 0;
  virtual TensorView output(int like, const std::vector<int64_t>& shape, DType dtype, Role role) = 0;
  // The stream the caller's framework would run on now, on the tensors' device (null for CPU).
  virtual void* stream(int like, const TensorView& view) = 0;
  // Runs `work` (a kernel launch or the CPU kernels) letting other threads go on: the Python
  // front releases the GIL around it.
  virtual void run_unlocked(const std::function<void()>& work) { work(); }
};

}  // namespace aiter_compat
