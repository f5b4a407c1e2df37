#include "run_fallback.hpp"

#include <cmath>

#include "aiter_compat/shim/errors.hpp"
#include "aiter_compat/shim/validate.hpp"
#include "aiter_compat/shim/gpu_runner.hpp"
#include "reference_attention.hpp"
#include "tensor_bridge.hpp"

namespace aiter_compat::py {
namespace {

int64_t as_int(const BoundCall& c, const char* name, int64_t fallback) {
  PyObject* v = c.value(name);
  if (!v || v == Py_None) return fallback;
  long long x = PyLong_AsLongLong(v);
  if (x == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    throw ArgumentError(name, std::string("a ") + Py_TYPE(v)->tp_name, "an integer");
  }
  return x;
}

double as_float(const BoundCall& c, const char* name) {
  PyObject* v = c.value(name);
  if (!v || v == Py_None) return 0.0;
  double d = PyFloat_AsDouble(v);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw ArgumentError(name, std::string("a ") + Py_TYPE(v)->tp_name, "a number");
  }
  return d;
}

Window window(const BoundCall& c) {
  Window w;
  PyObject* v = c.value("window_size");
  if (!v || v == Py_None) return w;
  Ref seq(PySequence_Fast(v, "window_size"));
  if (!seq) throw PythonErrorSet{};
  auto item = [&](Py_ssize_t i) { return PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq.get(), i)); };
  w.left = item(0);
  w.right = item(1);
  if (PySequence_Fast_GET_SIZE(seq.get()) == 3) w.sink_size = item(2);
  return w;
}

// The CPU kernels run without the GIL: other Python threads go on meanwhile.
template <typename F>
void without_gil(F&& f) {
  Py_BEGIN_ALLOW_THREADS
  f();
  Py_END_ALLOW_THREADS
}

// Runs on the route's kernels: the GPU ones with the GIL released (they only enqueue).
template <typename Args>
void execute(const Route& route, Args& a, PyObject* like, const TensorView& like_view, void (*cpu_kernel)(const Args&),
             gpu::KernelId (*gpu_kernel)(const Args&, void*), void (*check_args)(const Args&, bool)) {
  if (route.kind == RouteKind::fallback_gpu) {
    check_args(a, false);  // contents live on the GPU; the kernels clamp every index
    void* stream = current_stream(like, like_view);  // the framework's current stream
    std::string error;
    Py_BEGIN_ALLOW_THREADS
    try {
      gpu_kernel(a, stream);
    } catch (const std::exception& e) {
      error = e.what();
    }
    Py_END_ALLOW_THREADS
    if (!error.empty()) throw RouteError(route.target, {{"error", error}}, {{route.target, false, {error}}});
    return;
  }
  check_args(a, true);
  without_gil([&] { cpu_kernel(a); });
}

Ref varlen(const BoundCall& c, const CallFeatures& f, const Route& route) {
  ImportedTensors t;
  VarlenArgs a;
  a.batch_layout = f.op == OpId::flash_attn_func;
  PyObject* q = c.value("q");
  a.q = t.add("q", q);
  a.k = t.add("k", c.value("k"));
  a.v = t.add("v", c.value("v"));
  if (!a.batch_layout) {
    a.cu_seqlens_q = t.add("cu_seqlens_q", c.value("cu_seqlens_q"));
    a.cu_seqlens_k = t.add("cu_seqlens_k", c.value("cu_seqlens_k"));
    a.max_seqlen_q = as_int(c, "max_seqlen_q", 0);
    a.max_seqlen_k = as_int(c, "max_seqlen_k", 0);
  }
  a.sinks = t.add("sink_ptr", c.value("sink_ptr"));
  a.softmax_scale = as_float(c, "softmax_scale");
  a.causal = f.causal;
  a.window = window(c);
  a.dropout_p = as_float(c, "dropout_p");
  a.softcap = as_float(c, "logits_soft_cap");
  Ref out = Ref::borrow(c.value("out") == Py_None ? nullptr : c.value("out"));
  if (a.q.ndim != (a.batch_layout ? 4 : 3)) validate_varlen(a, false);  // names the bad shape
  std::vector<int64_t> out_shape(a.q.shape, a.q.shape + a.q.ndim);
  out_shape.back() = a.v.shape[a.v.ndim - 1];
  if (!out) out = empty_like(q, out_shape, false);
  a.out = t.add("out", out.get());
  Ref lse;
  if (f.return_lse) {
    std::vector<int64_t> shape = a.batch_layout ? std::vector<int64_t>{a.q.shape[0], a.q.shape[2], a.q.shape[1]}
                                                : std::vector<int64_t>{a.q.shape[1], a.q.shape[0]};
    lse = empty_like(q, shape, true);
    a.lse = t.add("lse", lse.get());
  }
  execute<VarlenArgs>(route, a, q, a.q, cpu::varlen_attention, run_gpu, validate_varlen);
  if (!lse) return out;
  return check(PyTuple_Pack(2, out.get(), lse.get()));
}

Ref paged(const BoundCall& c, const CallFeatures& f, const Route& route) {
  ImportedTensors t;
  PagedArgs a;
  const bool decode = f.op == OpId::paged_attention_decode;
  PyObject* q = c.value("q");
  a.q = t.add("q", q);
  a.k_cache = t.add(decode ? "k_cache" : "k", c.value(decode ? "k_cache" : "k"));
  a.v_cache = t.add(decode ? "v_cache" : "v", c.value(decode ? "v_cache" : "v"));
  a.seqused_k = t.add("seqused_k", c.value("seqused_k"));
  a.block_table = t.add("block_table", c.value("block_table"));
  a.sinks = t.add("sinks", c.value("sinks"));
  a.softmax_scale = as_float(c, "softmax_scale");
  a.causal = f.causal;
  a.window = window(c);
  a.softcap = as_float(c, "softcap");
  std::vector<int32_t> arange;  // decode without cu_seqlens_q: one query token per sequence
  if (c.given_not_none("cu_seqlens_q")) {
    a.cu_seqlens_q = t.add("cu_seqlens_q", c.value("cu_seqlens_q"));
    a.max_seqlen_q = as_int(c, "max_seqlen_q", decode ? INT32_MAX : 0);
  } else {
    int64_t batch = a.q.ndim > 0 ? a.q.shape[0] : 0;
    arange.resize(static_cast<size_t>(batch + 1));
    for (int64_t i = 0; i <= batch; ++i) arange[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    a.cu_seqlens_q.data = arange.data();
    a.cu_seqlens_q.dtype = DType::i32;
    a.cu_seqlens_q.raw_dtype = {kDLInt, 32, 1};
    a.cu_seqlens_q.device = a.q.device;
    a.cu_seqlens_q.device_id = a.q.device_id;
    a.cu_seqlens_q.ndim = 1;
    a.cu_seqlens_q.shape[0] = batch + 1;
    a.cu_seqlens_q.strides[0] = 1;
    a.max_seqlen_q = 1;
    a.one_query_per_sequence = true;
  }
  a.max_seqlen_k = decode ? -1 : as_int(c, "max_seqlen_k", 0);
  if (!decode) a.max_seqlen_q = as_int(c, "max_seqlen_q", 0);
  Ref out = Ref::borrow(c.value("out") == Py_None ? nullptr : c.value("out"));
  if (a.q.ndim != 3 || a.v_cache.ndim != 4) validate_paged(a, false);
  if (!out) out = empty_like(q, {a.q.shape[0], a.q.shape[1], a.v_cache.shape[3]}, false);
  a.out = t.add("out", out.get());
  Ref lse;
  if (f.return_lse) {
    lse = empty_like(q, {a.q.shape[1], a.q.shape[0]}, true);
    a.lse = t.add("lse", lse.get());
  }
  execute<PagedArgs>(route, a, q, a.q, cpu::paged_attention, run_gpu, validate_paged);
  if (!decode) return Ref::borrow(Py_None);
  if (!lse) return out;
  return check(PyTuple_Pack(2, out.get(), lse.get()));
}

Ref merge(const BoundCall& c, const Route& route) {
  ImportedTensors t;
  MergeArgs a;
  a.output = t.add("output", c.value("output"));
  a.prefix_output = t.add("prefix_output", c.value("prefix_output"));
  a.prefix_lse = t.add("prefix_lse", c.value("prefix_lse"));
  a.suffix_output = t.add("suffix_output", c.value("suffix_output"));
  a.suffix_lse = t.add("suffix_lse", c.value("suffix_lse"));
  a.output_lse = t.add("output_lse", c.value("output_lse"));
  a.sinks = t.add("sinks", c.value("sinks"));
  execute<MergeArgs>(route, a, c.value("output"), a.output, cpu::merge_states, run_gpu, validate_merge);
  return Ref::borrow(Py_None);
}

}  // namespace

Ref run_fallback(const BoundCall& call, const CallFeatures& f, const Route& route) {
  switch (f.op) {
    case OpId::flash_attn_varlen_func:
    case OpId::flash_attn_func: return varlen(call, f, route);
    case OpId::unified_attention:
    case OpId::paged_attention_decode: return paged(call, f, route);
    case OpId::merge_attn_states: return merge(call, route);
  }
  return Ref::borrow(Py_None);
}

}  // namespace aiter_compat::py
