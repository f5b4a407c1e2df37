#include "call_binding.hpp"

#include <cmath>
#include <vector>

#include "aiter_compat/shim/errors.hpp"

namespace aiter_compat::py {
namespace {

// Interned parameter names per operation: keyword names are usually interned by the caller's
// code object, so matching is a pointer comparison.
std::vector<std::vector<PyObject*>> g_names;
PyObject *g_shape, *g_dtype, *g_dlpack_device;

// dtype objects seen so far (strong references; frameworks keep a handful of singletons).
std::vector<std::pair<PyObject*, DType>> g_dtype_cache;

[[noreturn]] void bad(const std::string& arg, const std::string& found, const std::string& needed) {
  throw ArgumentError(arg, found, needed);
}

std::string type_name(PyObject* o) { return Py_TYPE(o)->tp_name; }

int find_param(const OpSignature& sig, PyObject* name) {
  const auto& names = g_names[static_cast<size_t>(sig.id)];
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  for (size_t i = 0; i < names.size(); ++i) {
    int eq = PyUnicode_Compare(names[i], name);
    if (eq == 0) return static_cast<int>(i);
    if (eq == -1 && PyErr_Occurred()) PyErr_Clear();
  }
  return -1;
}

std::string params_list(const OpSignature& sig) {
  std::string s;
  for (const auto& p : sig.params) s += (s.empty() ? "" : ", ") + p.name;
  return s;
}

void set_keyword(const OpSignature& sig, PyObject* name, PyObject* value, BoundCall* out) {
  int i = find_param(sig, name);
  const char* text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : nullptr;
  std::string key = text ? text : "?";
  if (i < 0) bad(sig.name + "(" + key + "=...)", "an unknown keyword argument", "one of: " + params_list(sig));
  if (out->values[i]) bad(sig.name + "(" + key + "=...)", "a second value for " + key, "each argument once");
  out->values[i] = value;
}

void check_required(const OpSignature& sig, const BoundCall& b) {
  for (size_t i = 0; i < sig.params.size(); ++i)
    if (sig.params[i].required && !b.values[i]) bad(sig.params[i].name, "nothing", "a value (it is required)");
}

double as_double(const char* name, PyObject* v) {
  double d = PyFloat_AsDouble(v);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    bad(name, "a " + type_name(v), "a number");
  }
  return d;
}

bool truthy(const char* name, PyObject* v) {
  int t = PyObject_IsTrue(v);
  if (t < 0) {
    PyErr_Clear();
    bad(name, "a " + type_name(v) + " without a truth value", "a bool");
  }
  return t == 1;
}

struct WindowValue {
  int arity = 0;
  int64_t left = -1, right = -1, sink_size = 0;
};

WindowValue window_of(PyObject* v) {
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

bool is_neutral(const ParamSpec& p, PyObject* v, const WindowValue& window) {
  switch (p.default_kind) {
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
    case DefaultKind::window: return window.left < 0 && window.right < 0 && window.sink_size == 0;
    case DefaultKind::other: return false;
  }
  return false;
}

// Sinks are one logit per head in float32 or the model's 16-bit dtype, on every route (AITer
// converts them to float32 itself); an integer or fp8 tensor is a caller's mistake.
void check_sink_dtype(const char* name, PyObject* sinks) {
  Ref dtype(PyObject_GetAttr(sinks, g_dtype));
  if (!dtype) {
    PyErr_Clear();
    bad(name, "a " + type_name(sinks) + " without a dtype", "a tensor of float32, bfloat16 or float16");
  }
  DType t = dtype_of_object(dtype.get());
  if (!is_float16_or_32(t)) {
    std::string found = to_string(t);
    if (t == DType::unsupported) {
      Ref text(PyObject_Str(dtype.get()));
      const char* s = text ? PyUnicode_AsUTF8(text.get()) : nullptr;
      if (!s) PyErr_Clear();
      found = s ? s : "unknown";
    }
    bad(name, "dtype " + found, "float32, bfloat16 or float16");
  }
}

}  // namespace

void init_call_binding() {
  if (!g_names.empty()) return;
  for (const auto& sig : all_signatures()) {
    std::vector<PyObject*> names;
    for (const auto& p : sig.params) names.push_back(PyUnicode_InternFromString(p.name.c_str()));
    g_names.push_back(std::move(names));
  }
  g_shape = PyUnicode_InternFromString("shape");
  g_dtype = PyUnicode_InternFromString("dtype");
  g_dlpack_device = PyUnicode_InternFromString("__dlpack_device__");
}

void bind(const OpSignature& sig, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, BoundCall* out) {
  out->sig = &sig;
  if (nargs > static_cast<Py_ssize_t>(sig.params.size()))
    bad(sig.name, std::to_string(nargs) + " positional arguments", "at most " + std::to_string(sig.params.size()));
  for (Py_ssize_t i = 0; i < nargs; ++i) out->values[i] = args[i];
  if (kwnames)
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); ++k)
      set_keyword(sig, PyTuple_GET_ITEM(kwnames, k), args[nargs + k], out);
  check_required(sig, *out);
}

void bind_kwargs(const OpSignature& sig, PyObject* kwargs, BoundCall* out) {
  out->sig = &sig;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (kwargs && PyDict_Next(kwargs, &pos, &key, &value)) set_keyword(sig, key, value, out);
  check_required(sig, *out);
}

DType dtype_of_object(PyObject* dtype) {
  for (const auto& [obj, t] : g_dtype_cache)
    if (obj == dtype) return t;
  Ref text(PyObject_Str(dtype));
  if (!text) {
    PyErr_Clear();
    return DType::unsupported;
  }
  const char* s = PyUnicode_AsUTF8(text.get());
  DType t = s ? dtype_from_name(s) : DType::unsupported;
  if (!s) PyErr_Clear();
  if (g_dtype_cache.size() < 64) {
    Py_INCREF(dtype);
    g_dtype_cache.emplace_back(dtype, t);
  }
  return t;
}

TensorMeta tensor_meta(const char* name, PyObject* obj) {
  TensorMeta m;
  if (!obj || obj == Py_None) bad(name, "None", "a tensor");
  Ref shape(PyObject_GetAttr(obj, g_shape));
  Ref dtype(shape ? PyObject_GetAttr(obj, g_dtype) : nullptr);
  Ref device(dtype ? PyObject_CallMethodNoArgs(obj, g_dlpack_device) : nullptr);
  if (!device) {
    PyErr_Clear();
    bad(name, "a " + type_name(obj), "a tensor with shape, dtype and __dlpack_device__ (torch, numpy, cupy)");
  }
  // torch.Size and numpy shapes are tuples: read them in place; other sequences are converted.
  Ref dims = PyTuple_Check(shape.get()) ? shape : Ref(PySequence_Fast(shape.get(), "shape"));
  if (!dims) {
    PyErr_Clear();
    bad(name, "a shape that is no sequence", "a tensor");
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(dims.get());
  if (n > 8) bad(name, std::to_string(n) + " dimensions", "at most 8");
  m.ndim = static_cast<int>(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    m.shape[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(dims.get(), i));
    if (m.shape[i] == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      bad(name, "a non-integer size in its shape", "integer sizes");
    }
  }
  m.dtype = dtype_of_object(dtype.get());
  long dev_type = -1, dev_id = 0;
  if (!PyTuple_Check(device.get()) || PyTuple_GET_SIZE(device.get()) != 2 ||
      (dev_type = PyLong_AsLong(PyTuple_GET_ITEM(device.get(), 0))) < 0 ||
      (dev_id = PyLong_AsLong(PyTuple_GET_ITEM(device.get(), 1))) < 0) {
    PyErr_Clear();
    bad(name, "a __dlpack_device__() that is not (type, id)", "DLPack's (device_type, device_id)");
  }
  m.device = device_kind_of(DLDevice{static_cast<DLDeviceType>(dev_type), static_cast<int32_t>(dev_id)});
  m.device_id = static_cast<int>(dev_id);
  return m;
}

// merge_attn_states: the features are the partial outputs' dtype, device and shape.
CallFeatures merge_features(const BoundCall& call) {
  CallFeatures f;
  f.op = OpId::merge_attn_states;
  TensorMeta out = tensor_meta("output", call.value("output"));
  TensorMeta prefix = tensor_meta("prefix_output", call.value("prefix_output"));
  TensorMeta suffix = tensor_meta("suffix_output", call.value("suffix_output"));
  if (prefix.ndim != 3) bad("prefix_output", std::to_string(prefix.ndim) + " dimensions", "3 ([tokens, heads, head_dim])");
  for (auto [name, m] : {std::pair{"output", &out}, {"suffix_output", &suffix}})
    if (m->dtype != prefix.dtype || m->device != prefix.device || m->device_id != prefix.device_id)
      bad(name, to_string(m->dtype) + " on " + to_string(m->device), "prefix_output's dtype and device");
  f.dtype = prefix.dtype;
  f.device = prefix.device;
  f.head_dim_qk = f.head_dim_v = static_cast<int32_t>(prefix.shape[2]);
  f.q_heads = f.kv_heads = static_cast<int32_t>(prefix.shape[1]);
  f.sinks = call.given_not_none("sinks");
  if (f.sinks) check_sink_dtype("sinks", call.value("sinks"));
  f.return_lse = call.given_not_none("output_lse");
  const OpSignature& sig = *call.sig;
  for (size_t i = 0; i < sig.params.size(); ++i)
    if (call.values[i] && !is_neutral(sig.params[i], call.values[i], WindowValue{})) f.nondefault |= 1u << i;
  return f;
}

CallFeatures features_of(const BoundCall& call) {
  const OpSignature& sig = *call.sig;
  if (sig.id == OpId::merge_attn_states) return merge_features(call);
  CallFeatures f;
  f.op = sig.id;
  const bool paged = sig.id == OpId::unified_attention || sig.id == OpId::paged_attention_decode;
  const char* kname = sig.id == OpId::paged_attention_decode ? "k_cache" : "k";
  const char* vname = sig.id == OpId::paged_attention_decode ? "v_cache" : "v";
  TensorMeta q = tensor_meta("q", call.value("q")), k = tensor_meta(kname, call.value(kname)),
             v = tensor_meta(vname, call.value(vname));
  f.dtype = q.dtype;
  f.device = q.device;
  if (q.dtype == DType::i32 || q.dtype == DType::i64)
    bad("q", "dtype " + to_string(q.dtype), "a floating-point dtype (float16, bfloat16, float32)");
  if (q.ndim < 3 || k.ndim < 3 || v.ndim < 3)
    bad(q.ndim < 3 ? "q" : k.ndim < 3 ? kname : vname, std::to_string(std::min({q.ndim, k.ndim, v.ndim})) + " dimensions",
        "at least 3 ([..., heads, head_dim])");
  f.head_dim_qk = static_cast<int32_t>(q.shape[q.ndim - 1]);
  f.head_dim_v = static_cast<int32_t>(v.shape[v.ndim - 1]);
  f.q_heads = static_cast<int32_t>(q.shape[q.ndim - 2]);
  f.kv_heads = static_cast<int32_t>(k.shape[k.ndim - 2]);
  if (f.kv_heads <= 0 || f.q_heads % f.kv_heads != 0)
    bad(kname, std::to_string(f.kv_heads) + " heads for q's " + std::to_string(f.q_heads),
        "a divisor of q's head count (grouped-query attention)");
  if (k.dtype != q.dtype) bad(kname, "dtype " + to_string(k.dtype), "q's dtype " + to_string(q.dtype));
  if (v.dtype != q.dtype) bad(vname, "dtype " + to_string(v.dtype), "q's dtype " + to_string(q.dtype));
  if (k.device != q.device || v.device != q.device || k.device_id != q.device_id || v.device_id != q.device_id)
    bad(k.device != q.device || k.device_id != q.device_id ? kname : vname, "another device",
        "q's device " + to_string(q.device) + ":" + std::to_string(q.device_id));
  if (paged) f.block_size = static_cast<int32_t>(k.shape[1]);

  WindowValue w = window_of(call.value("window_size"));
  f.window_arity = static_cast<int8_t>(w.arity);
  PyObject* causal = call.value("causal");
  f.causal = sig.id == OpId::paged_attention_decode ? true : causal && truthy("causal", causal);
  f.window_left = w.left >= 0;
  f.window_right = w.right >= 0 && !(f.causal && w.right == 0);
  f.window_sink_size = w.sink_size > 0;
  const char* sink_name =
      sig.id == OpId::unified_attention || sig.id == OpId::paged_attention_decode ? "sinks" : "sink_ptr";
  f.sinks = call.given_not_none(sink_name);
  if (f.sinks) check_sink_dtype("sinks", call.value(sink_name));
  if (PyObject* d = call.value("dropout_p")) f.dropout = as_double("dropout_p", d) != 0.0;
  f.bias = call.given_not_none("bias") || call.given_not_none("qq_bias");
  f.alibi = call.given_not_none("alibi_slopes");
  for (const char* cap : {"logits_soft_cap", "softcap"})
    if (PyObject* s = call.value(cap); s && s != Py_None) f.softcap = f.softcap || as_double(cap, s) != 0.0;
  if (PyObject* r = call.value("return_lse")) f.return_lse = truthy("return_lse", r);
  if (PyObject* r = call.value("return_attn_probs")) f.return_attn_probs = truthy("return_attn_probs", r);
  for (const char* d : {"q_descale", "k_descale", "v_descale", "q_scales"}) f.descale = f.descale || call.given_not_none(d);
  for (size_t i = 0; i < sig.params.size(); ++i)
    if (call.values[i] && !is_neutral(sig.params[i], call.values[i], w)) f.nondefault |= 1u << i;
  return f;
}

}  // namespace aiter_compat::py
