// _aiter_compat: AITer's attention entry points with AITer's newest signatures, dispatched per
// call to AITer (by keyword, only what the install accepts), a fallback kernel, or a clear error.
// This front only converts: Python objects to the core's CallArgs and back; the dispatch core
// (shim/) computes the features, decides the route and runs the fallbacks.
#include "py_ref.hpp"

#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "aiter_compat/probe/op_table.hpp"
#include "aiter_compat/probe/render.hpp"
#include "aiter_compat/shim/dispatch.hpp"
#include "aiter_compat/shim/errors.hpp"
#include "aiter_compat/probe/logging.hpp"
#include "aiter_compat/gpu_runtime/launch.hpp"
#include "aiter_compat/shim/selftest.hpp"
#include "aiter_compat/shim/selftest_report.hpp"
#include "aiter_patch.hpp"
#include "aiter_route.hpp"
#include "call_binding.hpp"
#include "cli_entry.hpp"
#include "dispatch_entry.hpp"
#include "embedded_python_reader.hpp"
#include "py_call_args.hpp"
#include "py_tensors.hpp"

namespace aiter_compat::py {
namespace {

PyObject* g_error = nullptr;  // aiter_compat.AiterCompatError
PyObject* g_stream_name = nullptr;

// The module's dispatch state, made on first use. Never destroyed at exit: its Python references
// must not be released after the interpreter has finalised. reset() (with the GIL) replaces it.
struct State {
  std::unique_ptr<Dispatcher> dispatcher;
  AiterCalls aiter;
};
State* g_state = nullptr;
std::optional<Policy> g_policy_override;

// Making (or replacing) the state runs the probe, which runs Python, which lets other threads
// take the GIL: without this lock, threads making their first calls at once would each probe and
// make a dispatcher, and all but the last would be lost (their calls uncounted). It is waited for
// with the GIL released, so that the thread holding it can take the GIL back.
std::mutex g_state_mutex;

std::unique_lock<std::mutex> lock_state() {
  std::unique_lock<std::mutex> lock(g_state_mutex, std::defer_lock);
  Py_BEGIN_ALLOW_THREADS
  lock.lock();
  Py_END_ALLOW_THREADS
  return lock;
}

State& state() {
  if (g_state) return *g_state;
  auto lock = lock_state();
  if (!g_state) {
    EmbeddedPythonReader reader;
    Dispatcher::Options o;
    o.probe.live = PyDict_GetItemString(PyImport_GetModuleDict(), "aiter") != nullptr;
    o.probe.dlopen = false;  // the route table needs the Python side; native modules load with aiter
    o.python = &reader;
    o.policy = g_policy_override;
    auto s = std::make_unique<State>();
    s->dispatcher = std::make_unique<Dispatcher>(o);
    g_state = s.release();
  }
  return *g_state;
}

void set_attr(PyObject* exc, const char* name, PyObject* owned) {
  if (owned) PyObject_SetAttrString(exc, name, owned);
  Py_XDECREF(owned);
  PyErr_Clear();
}

}  // namespace

PyObject* raise_argument_error(const ArgumentError& e) {
  Ref exc(PyObject_CallFunction(g_error, "s", e.what()));
  if (!exc) return nullptr;
  set_attr(exc.get(), "argument", PyUnicode_FromString(e.argument.c_str()));
  set_attr(exc.get(), "found", PyUnicode_FromString(e.found.c_str()));
  set_attr(exc.get(), "needed", PyUnicode_FromString(e.needed.c_str()));
  PyErr_SetObject(g_error, exc.get());
  return nullptr;
}

namespace {

PyObject* candidates_list(const std::vector<Candidate>& cands) {
  PyObject* list = PyList_New(0);
  for (const auto& c : cands) {
    PyObject* reasons = PyList_New(0);
    for (const auto& r : c.reasons) {
      PyObject* s = PyUnicode_FromString(r.c_str());
      PyList_Append(reasons, s);
      Py_DECREF(s);
    }
    PyObject* d = Py_BuildValue("{s:s,s:O,s:N}", "name", c.name.c_str(), "accepted", c.accepted ? Py_True : Py_False,
                                "reasons", reasons);
    PyList_Append(list, d);
    Py_DECREF(d);
  }
  return list;
}

PyObject* rows_list(const std::vector<std::pair<std::string, std::string>>& rows) {
  PyObject* list = PyList_New(0);
  for (const auto& [k, v] : rows) {
    PyObject* t = Py_BuildValue("(ss)", k.c_str(), v.c_str());
    PyList_Append(list, t);
    Py_DECREF(t);
  }
  return list;
}

PyObject* raise_route_error(const RouteError& e) {
  Ref exc(PyObject_CallFunction(g_error, "s", e.what()));
  if (!exc) return nullptr;
  set_attr(exc.get(), "candidates", candidates_list(e.candidates));
  set_attr(exc.get(), "inputs", rows_list(e.inputs));
  PyErr_SetObject(g_error, exc.get());
  return nullptr;
}

// Runs `body`, turning our C++ errors into AiterCompatError.
template <typename F>
PyObject* guarded(F&& body) {
  try {
    return body();
  } catch (const ArgumentError& e) {
    return raise_argument_error(e);
  } catch (const RouteError& e) {
    return raise_route_error(e);
  } catch (const PythonErrorSet&) {
    return nullptr;
  } catch (const std::exception& e) {
    PyErr_Format(g_error, "internal error: %s", e.what());
    return nullptr;
  }
}

// What the op returns: out, (out, lse) or None.
PyObject* returned(const FallbackRun& run, const PyCallArgs& args) {
  switch (run.returns) {
    case Returns::nothing: Py_RETURN_NONE;
    case Returns::out: return Ref::borrow(args.out_object()).release();
    case Returns::out_and_lse: return check(PyTuple_Pack(2, args.out_object(), args.lse_object())).release();
  }
  Py_RETURN_NONE;
}

// Splits off the front's own `stream=` keyword (not in AITer's signatures): the stream to run on
// instead of the framework's current one. Returns the keyword names left (nullptr: none).
PyObject* take_stream(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, std::vector<PyObject*>& kept,
                      Ref& kept_names, PyObject** stream) {
  if (!kwnames) return nullptr;
  const Py_ssize_t n = PyTuple_GET_SIZE(kwnames);
  // Names in a call's code are interned: a pointer compare finds the keyword; a name built at
  // run time (**kwargs) is compared by value, only where its length is that of "stream".
  Py_ssize_t at = -1;
  for (Py_ssize_t k = 0; k < n && at < 0; ++k) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, k);
    if (name == g_stream_name ||
        (PyUnicode_GET_LENGTH(name) == 6 && PyUnicode_Compare(name, g_stream_name) == 0))
      at = k;
  }
  if (at < 0) return kwnames;
  *stream = args[nargs + at];
  kept.assign(args, args + nargs);
  kept_names = check(PyTuple_New(n - 1));
  for (Py_ssize_t k = 0, j = 0; k < n; ++k) {
    if (k == at) continue;
    PyObject* name = PyTuple_GET_ITEM(kwnames, k);
    Py_INCREF(name);
    PyTuple_SET_ITEM(kept_names.get(), j++, name);
    kept.push_back(args[nargs + k]);
  }
  return kept_names.get();
}

}  // namespace

PyObject* dispatch(OpId op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&]() -> PyObject* {
    std::vector<PyObject*> kept;
    Ref kept_names;
    PyObject* stream = nullptr;
    PyObject* names = take_stream(args, nargs, kwnames, kept, kept_names, &stream);
    BoundCall call;
    bind(signature(op), stream ? kept.data() : args, nargs, names, &call);
    PyCallArgs call_args(call);
    call_args.set_stream(stream);
    CallFeatures f = features_of(call_args);
    State& s = state();
    const Route* route = &s.dispatcher->route(f);
    for (bool rerouted = false;; rerouted = true) {
      if (route->kind == RouteKind::aiter) {
        std::string unreachable;
        if (PyObject* result = s.aiter.call(*route, call_args, &unreachable)) return result;
        if (unreachable.empty()) return nullptr;  // AITer ran and raised: its error stands
        route = &s.dispatcher->reroute_without_aiter(f, *route, unreachable);
      }
      if (route->kind == RouteKind::refused) throw RouteError(to_string(op), f.describe(), route->candidates);
      try {
        return returned(run_fallback(*route, call_args, f), call_args);
      } catch (const selftest::FamilyFailed&) {
        if (rerouted) throw;  // decided again with the verdict known: not a second time
        route = &s.dispatcher->reroute_after_selftest(f, *route);
      }
    }
  });
}

namespace {

#define ENTRY(op)                                                                                  \
  PyObject* entry_##op(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {  \
    return dispatch(OpId::op, args, nargs, kwnames);                                               \
  }
ENTRY(flash_attn_varlen_func)
ENTRY(flash_attn_func)
ENTRY(unified_attention)
ENTRY(paged_attention_decode)
ENTRY(merge_attn_states)
ENTRY(triton_flash_attn_varlen_func)
ENTRY(triton_flash_attn_func)
ENTRY(mha_batch_prefill_func)
ENTRY(flash_attn_varlen_fp8_pertensor_func)
ENTRY(flash_attn_fp8_pertensor_func)
ENTRY(pa_decode_gluon)
ENTRY(pa_decode_bf16_asm)
#undef ENTRY

PyObject* json_to_python(const nlohmann::json& j) {
  Ref json_module(PyImport_ImportModule("json"));
  if (!json_module) return nullptr;
  return PyObject_CallMethod(json_module.get(), "loads", "s", j.dump().c_str());
}

PyObject* route_dict(const CallFeatures& f, const Route& r) {
  return Py_BuildValue("{s:s,s:s,s:s,s:s,s:N,s:N,s:N,s:K}", "op", to_string(f.op).c_str(), "route",
                       to_string(r.kind).c_str(), "target", r.target.c_str(), "kernel", r.kernel().c_str(), "features",
                       rows_list(f.describe()), "candidates", candidates_list(r.candidates), "kernels",
                       candidates_list(r.kernels), "calls", static_cast<unsigned long long>(r.calls.value()));
}

PyObject* api_probe(PyObject*, PyObject*) {
  return guarded([] { return json_to_python(to_json(state().dispatcher->report())); });
}

PyObject* api_routes(PyObject*, PyObject*) {
  return guarded([]() -> PyObject* {
    PyObject* list = PyList_New(0);
    for (const auto& [f, r] : state().dispatcher->router().decided()) {
      PyObject* d = route_dict(f, r);
      PyList_Append(list, d);
      Py_DECREF(d);
    }
    return list;
  });
}

// {op: {target: calls}} since the dispatch state was made (the last reset() or set_policy()).
PyObject* api_stats(PyObject*, PyObject*) {
  return guarded([]() -> PyObject* {
    Ref out(check(PyDict_New()));
    for (const auto& c : state().dispatcher->stats()) {
      const std::string op = to_string(c.op);
      PyObject* per_op = PyDict_GetItemString(out.get(), op.c_str());  // borrowed
      if (!per_op) {
        Ref fresh(check(PyDict_New()));
        if (PyDict_SetItemString(out.get(), op.c_str(), fresh.get()) < 0) throw PythonErrorSet{};
        per_op = fresh.get();
      }
      Ref calls(check(PyLong_FromUnsignedLongLong(c.calls)));
      if (PyDict_SetItemString(per_op, c.target.c_str(), calls.get()) < 0) throw PythonErrorSet{};
    }
    return out.release();
  });
}

// {op: (function, [candidate modules, newest first])} for every AITer entry point the routes
// serve: what install() patches (the probe's own table, so both look in the same places). The
// function is the name in those modules (Triton's flash_attn_varlen_func for the op
// triton_flash_attn_varlen_func).
PyObject* api_routed_entry_points(PyObject*, PyObject*) {
  return guarded([]() -> PyObject* {
    Ref out(check(PyDict_New()));
    for (const auto& sig : all_signatures()) {
      const OpSpec* spec = sig.aiter_name.empty() ? nullptr : find_op(sig.aiter_name);
      if (!spec) continue;
      Ref modules(check(PyList_New(0)));
      for (const auto& m : spec->modules) {
        Ref text(check(PyUnicode_FromString(m.c_str())));
        if (PyList_Append(modules.get(), text.get()) < 0) throw PythonErrorSet{};
      }
      Ref entry(check(Py_BuildValue("(sO)", spec->function().c_str(), modules.get())));
      if (PyDict_SetItemString(out.get(), sig.aiter_name.c_str(), entry.get()) < 0) throw PythonErrorSet{};
    }
    return out.release();
  });
}

// The route trace's exit line, now (once per process): for exits that skip C's atexit handlers,
// such as a multiprocessing child forked and ended with os._exit.
PyObject* api_trace_write_counts(PyObject*, PyObject*) {
  RouteTrace::instance().write_counts();
  Py_RETURN_NONE;
}

// In a child just forked (os.register_at_fork): its calls count from zero.
PyObject* api_after_fork_in_child(PyObject*, PyObject*) {
  RouteTrace::instance().forked();
  Py_RETURN_NONE;
}

// _log(level, text): one line through the library's logger (install() reports through it).
PyObject* api_log(PyObject*, PyObject* args) {
  const char *level = nullptr, *text = nullptr;
  if (!PyArg_ParseTuple(args, "ss", &level, &text)) return nullptr;
  logging::library(logging::level_named(level), text);
  Py_RETURN_NONE;
}

PyObject* api_explain(PyObject*, PyObject* args, PyObject* kwargs) {
  return guarded([&]() -> PyObject* {
    const char* name = nullptr;
    if (!PyArg_ParseTuple(args, "s", &name)) throw PythonErrorSet{};
    for (const auto& sig : all_signatures()) {
      if (sig.name != name) continue;
      BoundCall call;
      bind_kwargs(sig, kwargs, &call);
      PyCallArgs call_args(call);
      CallFeatures f = features_of(call_args);
      return route_dict(f, state().dispatcher->router().decide(f));
    }
    throw ArgumentError("name", std::string("'") + name + "'",
                        "flash_attn_varlen_func, flash_attn_func, unified_attention, paged_attention_decode or "
                        "merge_attn_states");
  });
}

// warmup(device=None, dtypes=None, head_dims=None, fresh=False): the self-test of every family
// now (ahead of graph capture), with the GIL released while the GPU works.
PyObject* api_warmup(PyObject*, PyObject* args, PyObject* kwargs) {
  return guarded([&]() -> PyObject* {
    static const char* names[] = {"device", "dtypes", "head_dims", "fresh", nullptr};
    PyObject *device = Py_None, *dtypes = Py_None, *dims = Py_None;
    int fresh = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOp:warmup", const_cast<char**>(names), &device, &dtypes, &dims,
                                     &fresh))
      throw PythonErrorSet{};
    std::optional<int> dev;
    if (device != Py_None) {
      if (!PyLong_Check(device)) throw ArgumentError("device", Py_TYPE(device)->tp_name, "an int or None");
      dev = static_cast<int>(PyLong_AsLong(device));
    }
    auto strings = [](PyObject* seq, const char* what) {
      std::vector<std::string> out;
      if (seq == Py_None) return out;
      Ref items(check(PySequence_Fast(seq, "a list")));
      for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.get()); ++i) {
        PyObject* item = PySequence_Fast_GET_ITEM(items.get(), i);
        Ref text(PyObject_Str(item));  // torch.bfloat16 -> "torch.bfloat16"
        if (!text) throw PythonErrorSet{};
        std::string name = PyUnicode_AsUTF8(text.get());
        if (name.rfind("torch.", 0) == 0) name = name.substr(6);
        out.push_back(name);
      }
      (void)what;
      return out;
    };
    const std::vector<std::string> dtype_names = strings(dtypes, "dtypes");
    std::vector<int> head_dims;
    for (const auto& d : strings(dims, "head_dims")) {
      char* end = nullptr;
      const long v = std::strtol(d.c_str(), &end, 10);
      if (d.empty() || *end) throw ArgumentError("head_dims", "'" + d + "'", "ints");
      head_dims.push_back(static_cast<int>(v));
    }
    selftest::Run run;
    std::exception_ptr error;
    Py_BEGIN_ALLOW_THREADS
    try {
      run = selftest::run_on_present_gpus(fresh != 0, dev, dtype_names, head_dims);
    } catch (...) {
      error = std::current_exception();
    }
    Py_END_ALLOW_THREADS
    if (error) std::rethrow_exception(error);
    if (!run.gpu_present) log_info("warmup: no GPU to check (" + run.no_gpu + ")");
    return json_to_python(selftest::to_json(run.rows));
  });
}

// _force_kernel_row(name | None): every call on that kernel row (the benchmark's families).
PyObject* api_force_kernel_row(PyObject*, PyObject* arg) {
  return guarded([&]() -> PyObject* {
    if (arg == Py_None) {
      gpu::force_row(std::nullopt);
      Py_RETURN_NONE;
    }
    const char* name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : nullptr;
    std::string rows;
    for (const auto& row : gpu::kernel_rows()) {
      if (row.device != gpu::KernelDevice::gpu || row.op != gpu::KernelOp::attention) continue;
      if (name && row.name == name) {
        gpu::force_row(row.id);
        Py_RETURN_NONE;
      }
      rows += (rows.empty() ? "" : ", ") + row.name;
    }
    throw ArgumentError("row", name ? std::string("'") + name + "'" : "a non-string", "None or one of " + rows);
  });
}

PyObject* api_selftest_verdicts(PyObject*, PyObject*) {
  return guarded([] { return json_to_python(selftest::to_json(selftest::known_verdicts())); });
}

void reset_state(std::optional<Policy> policy) {
  auto lock = lock_state();
  g_policy_override = policy;
  delete g_state;  // with the GIL: its references are released here
  g_state = nullptr;
}

PyObject* api_set_policy(PyObject*, PyObject* arg) {
  return guarded([&]() -> PyObject* {
    const char* text = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : nullptr;
    auto policy = text ? parse_policy(text) : std::nullopt;
    if (!policy) throw ArgumentError("policy", text ? std::string("'") + text + "'" : "a non-string",
                                     "'auto', 'prefer-fallback' or 'aiter-only'");
    reset_state(policy);
    Py_RETURN_NONE;
  });
}

PyObject* api_get_policy(PyObject*, PyObject*) {
  return guarded([] { return PyUnicode_FromString(to_string(state().dispatcher->router().policy()).c_str()); });
}

PyObject* api_reset(PyObject*, PyObject*) {
  reset_state(std::nullopt);
  Py_RETURN_NONE;
}

#define VECTORCALL(f) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(f))
PyMethodDef methods[] = {
    {"flash_attn_varlen_func", VECTORCALL(entry_flash_attn_varlen_func), METH_FASTCALL | METH_KEYWORDS,
     "AITer's flash_attn_varlen_func (newest signature), routed to AITer or a fallback."},
    {"flash_attn_func", VECTORCALL(entry_flash_attn_func), METH_FASTCALL | METH_KEYWORDS,
     "AITer's flash_attn_func (newest signature), routed to AITer or a fallback."},
    {"unified_attention", VECTORCALL(entry_unified_attention), METH_FASTCALL | METH_KEYWORDS,
     "AITer's unified_attention (newest signature), routed to AITer or a fallback."},
    {"paged_attention_decode", VECTORCALL(entry_paged_attention_decode), METH_FASTCALL | METH_KEYWORDS,
     "paged_attention_decode(q, k_cache, v_cache, block_table, seqused_k, softmax_scale=None, "
     "window_size=(-1, -1), sinks=None, out=None, return_lse=False, cu_seqlens_q=None, softcap=0.0, "
     "q_descale=None, k_descale=None, v_descale=None, output_scale=None): decode (or extend) over vLLM's NHD "
     "paged cache with learned sinks; the cache may be fp8 e4m3 (fn or fnuz) with its descales."},
    {"merge_attn_states", VECTORCALL(entry_merge_attn_states), METH_FASTCALL | METH_KEYWORDS,
     "merge_attn_states(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse=None, sinks=None): "
     "merges two partial attention states (computed without sinks) and adds the sink once."},
    {"triton_flash_attn_varlen_func", VECTORCALL(entry_triton_flash_attn_varlen_func), METH_FASTCALL | METH_KEYWORDS,
     "AITer's Triton flash_attn_varlen_func (aiter.ops.triton.attention.mha, sink=), routed to AITer or a fallback."},
    {"triton_flash_attn_func", VECTORCALL(entry_triton_flash_attn_func), METH_FASTCALL | METH_KEYWORDS,
     "AITer's Triton flash_attn_func (aiter.ops.triton.attention.mha, sink=), routed to AITer or a fallback."},
    {"mha_batch_prefill_func", VECTORCALL(entry_mha_batch_prefill_func), METH_FASTCALL | METH_KEYWORDS,
     "AITer's mha_batch_prefill_func (newest signature: paged prefill over kv_indptr/kv_page_indices or a "
     "block_table), routed to AITer or a fallback."},
    {"flash_attn_varlen_fp8_pertensor_func", VECTORCALL(entry_flash_attn_varlen_fp8_pertensor_func),
     METH_FASTCALL | METH_KEYWORDS,
     "AITer's flash_attn_varlen_fp8_pertensor_func (newest signature), routed to AITer or refused with the reasons."},
    {"flash_attn_fp8_pertensor_func", VECTORCALL(entry_flash_attn_fp8_pertensor_func), METH_FASTCALL | METH_KEYWORDS,
     "AITer's flash_attn_fp8_pertensor_func (newest signature), routed to AITer or refused with the reasons."},
    {"pa_decode_gluon", VECTORCALL(entry_pa_decode_gluon), METH_FASTCALL | METH_KEYWORDS,
     "AITer's pa_decode_gluon (v0.1.10's signature: output, query, key_cache [blocks, kv_heads, head_dim / x, "
     "block_size, x], value_cache 5-D or [blocks, kv_heads, head_dim, block_size], ..., sinks, sliding_window, ps): "
     "paged decode over AITer's vectorized caches, written into output; routed to AITer or a fallback."},
    {"pa_decode_bf16_asm", VECTORCALL(entry_pa_decode_bf16_asm), METH_FASTCALL | METH_KEYWORDS,
     "AITer's pa_decode_bf16_asm (Q [batch, mtp + 1, kv_heads, gqa, head_dim], K [pages, kv_heads, head_dim / 16, "
     "page_size, 16], V [pages, kv_heads, page_size / 16, head_dim, 16], kv_indices, context_lens, softmax_scale, "
     "kv_indptr, ..., work_info, split_o, split_lse, sink, out): paged decode with sinks; returns out. Routed to "
     "AITer (gfx1250) or a fallback, which writes the rows work_info splits to split_o / split_lse for pa_reduce_v1."},
    {"probe", api_probe, METH_NOARGS, "The probe's report of the install, as a dict."},
    {"routes", api_routes, METH_NOARGS, "The routes decided so far, with their features, candidates and calls."},
    {"stats", api_stats, METH_NOARGS,
     "Calls per operation and route target since the last reset(): {op: {target: calls}} (target 'refused' for "
     "calls refused with AiterCompatError)."},
    {"_routed_entry_points", api_routed_entry_points, METH_NOARGS,
     "{op: (function, [candidate modules])}: the AITer entry points install() puts the routes under."},
    {"_trace_write_counts", api_trace_write_counts, METH_NOARGS,
     "Writes the route trace's counts line now (once per process; AITER_COMPAT_TRACE)."},
    {"_after_fork_in_child", api_after_fork_in_child, METH_NOARGS,
     "In a forked child: call counts start from zero."},
    {"_log", api_log, METH_VARARGS, "_log(level, text): one line through aiter-compat's logger."},
    {"explain", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(api_explain)), METH_VARARGS | METH_KEYWORDS,
     "explain(name, **call): the route and every reason for a call, without running it."},
    {"warmup", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(api_warmup)), METH_VARARGS | METH_KEYWORDS,
     "warmup(device=None, dtypes=None, head_dims=None, fresh=False): run the self-test of every fallback GPU kernel "
     "family now (before CUDA/HIP graph capture); returns one dict per family (docs/selftest.md)."},
    {"_force_kernel_row", api_force_kernel_row, METH_O,
     "_force_kernel_row(name | None): run every GPU call on that kernel row (benchmarks); None: the launcher's choice."},
    {"selftest_verdicts", api_selftest_verdicts, METH_NOARGS,
     "The self-test verdicts known in this process: one dict per family (docs/selftest.md)."},
    {"set_policy", api_set_policy, METH_O, "set_policy('auto' | 'prefer-fallback' | 'aiter-only')"},
    {"get_policy", api_get_policy, METH_NOARGS, "The routing policy in force."},
    {"reset", api_reset, METH_NOARGS, "Forget the probe and every route; the next call probes again."},
    {"cli_main", api_cli_main, METH_O, "cli_main(argv): run the aiter-compat command line; returns its exit code."},
    {nullptr, nullptr, 0, nullptr}};
#undef VECTORCALL

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_aiter_compat", nullptr, -1, methods};

}  // namespace
}  // namespace aiter_compat::py

PyMODINIT_FUNC PyInit__aiter_compat() {
  using namespace aiter_compat::py;
  PyObject* m = PyModule_Create(&module_def);
  if (!m) return nullptr;
  g_error = PyErr_NewExceptionWithDoc("aiter_compat.AiterCompatError",
                                      "A call aiter-compat cannot run correctly: a bad argument (argument, found, "
                                      "needed) or no route (inputs, candidates with their reasons).",
                                      PyExc_RuntimeError, nullptr);
  if (!g_error || PyModule_AddObject(m, "AiterCompatError", g_error) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  Py_INCREF(g_error);
  g_stream_name = PyUnicode_InternFromString("stream");
  // CMake's project version, the one the package metadata is generated from (pyproject.toml).
  if (PyModule_AddStringConstant(m, "__version__", AITER_COMPAT_VERSION) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  init_call_binding();
  init_tensors();
  if (init_patching(m) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
