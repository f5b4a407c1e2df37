#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "embedded_python_reader.hpp"

#include <mutex>

#include <nlohmann/json.hpp>

#include "aiter_compat/probe/op_table.hpp"
#include "aiter_compat/probe/phase_timer.hpp"
#include "embedded_text.hpp"

namespace aiter_compat {
namespace {

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();  // public only from 3.13
#endif
}

// Starts an interpreter when the process has none, then releases the GIL so any thread can
// attach with PyGILState_Ensure. Done once per process.
void ensure_interpreter() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (Py_IsInitialized()) return;
    PhaseTimer t("interpreter start");
    Py_InitializeEx(0);  // 0: leave the host's signal handlers alone
    PyEval_SaveThread();
  });
}

std::string ops_argument() {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& spec : attention_ops()) ops.push_back({{"name", spec.name}, {"modules", spec.modules}});
  return ops.dump();
}

// The introspection module, compiled once per interpreter and kept (under the GIL).
PyObject* introspect_module(std::string& error) {
  static PyObject* module = nullptr;
  if (module) return module;
  PhaseTimer t("introspection module load");
  PyObject* code = Py_CompileString(embedded::aiter_introspect_py, "<aiter_compat/aiter_introspect.py>", Py_file_input);
  if (!code) {
    error = fetch_python_error();
    return nullptr;
  }
  module = PyImport_ExecCodeModule("_aiter_compat_introspect", code);
  Py_DECREF(code);
  if (!module) error = fetch_python_error();
  return module;
}

}  // namespace

std::string fetch_python_error() {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  std::string text = "unknown Python error";
  if (value) {
    PyObject* s = PyObject_Str(value);
    const char* c = s ? PyUnicode_AsUTF8(s) : nullptr;
    const char* tn = type ? reinterpret_cast<PyTypeObject*>(type)->tp_name : "Exception";
    text = std::string(tn) + ": " + (c ? c : "?");
    Py_XDECREF(s);
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  PyErr_Clear();
  return text;
}

ChannelReading EmbeddedPythonReader::read(Channel channel, const std::string& aiter_root) {
  ChannelReading failed;
  failed.channel = channel;
  ensure_interpreter();
  if (interpreter_finalizing()) {
    failed.failure = "the Python interpreter is shutting down";
    return failed;
  }
  PyGILState_STATE gil = PyGILState_Ensure();
  std::string error;
  std::string result;
  if (PyObject* module = introspect_module(error)) {
    static const std::string ops = ops_argument();
    PhaseTimer t(to_string(channel) + " channel (python side)");
    PyObject* out = PyObject_CallMethod(module, "run", "sss", to_string(channel).c_str(), aiter_root.c_str(), ops.c_str());
    if (out && PyUnicode_Check(out)) {
      Py_ssize_t n = 0;
      const char* text = PyUnicode_AsUTF8AndSize(out, &n);
      if (text) result.assign(text, static_cast<size_t>(n));
      else error = fetch_python_error();
    } else {
      error = out ? "the introspection returned no text" : fetch_python_error();
    }
    Py_XDECREF(out);
  }
  PyGILState_Release(gil);
  if (!error.empty()) {
    failed.failure = error;
    return failed;
  }
  return parse_channel_reading(channel, result);
}

}  // namespace aiter_compat
