#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>

#include "embedded_python_reader.hpp"

#include <mutex>

#include <nlohmann/json.hpp>

#include "aiter_compat/probe/logging.hpp"
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

// True while the interpreter this library started has not run `site` yet (under the GIL).
bool g_site_pending = false;

// Starts an interpreter when the process has none, then releases the GIL so any thread can
// attach with PyGILState_Ensure. Done once per process. The configuration is Py_InitializeEx(0)'s
// (the "compat" one: no C locale coercion, no UTF-8 mode, C stdio left alone, the host's signal
// handlers kept, PYTHON* variables honoured) but for one thing: it starts without `site`, as
// `python -S` would. Importing site costs a third of the start, and a static reading of a
// package given by path needs nothing from site-packages; run_site_once() adds them when a
// channel does. (sys.flags.no_site stays 1 afterwards.)
void ensure_interpreter() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (Py_IsInitialized()) return;
    PhaseTimer t("interpreter start");
    PyPreConfig preconfig;
    PyPreConfig_InitPythonConfig(&preconfig);
    preconfig.parse_argv = 0;
    preconfig.utf8_mode = 0;
    preconfig.coerce_c_locale = 0;
    preconfig.coerce_c_locale_warn = 0;
    PyStatus status = Py_PreInitialize(&preconfig);
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.parse_argv = 0;
    config.configure_c_stdio = 0;
    config.install_signal_handlers = 0;
    config.site_import = 0;
    if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) Py_ExitStatusException(status);  // as Py_InitializeEx: fatal
    g_site_pending = true;
    PyEval_SaveThread();
  });
}

// The Python objects a channel returns (dicts, lists, str, bool, int, None) as JSON, without a
// round trip through Python's json module (importing it costs more than reading a small tree).
nlohmann::json to_json(PyObject* o) {
  if (o == Py_None) return nullptr;
  if (PyBool_Check(o)) return o == Py_True;
  if (PyLong_Check(o)) return PyLong_AsLongLong(o);
  if (PyFloat_Check(o)) return PyFloat_AsDouble(o);
  if (PyUnicode_Check(o)) {
    Py_ssize_t n = 0;
    if (const char* s = PyUnicode_AsUTF8AndSize(o, &n)) return std::string(s, static_cast<size_t>(n));
    PyErr_Clear();  // a path with undecodable bytes (surrogate escapes): keep them readable
    PyObject* bytes = PyUnicode_AsEncodedString(o, "utf-8", "backslashreplace");
    std::string text = bytes ? PyBytes_AsString(bytes) : "<unreadable text>";
    Py_XDECREF(bytes);
    PyErr_Clear();
    return text;
  }
  if (PyDict_Check(o)) {
    nlohmann::json j = nlohmann::json::object();
    PyObject *key = nullptr, *value = nullptr;
    Py_ssize_t pos = 0;
    while (PyDict_Next(o, &pos, &key, &value))
      if (PyUnicode_Check(key)) j[to_json(key).get<std::string>()] = to_json(value);
    return j;
  }
  if (PyList_Check(o) || PyTuple_Check(o)) {
    nlohmann::json j = nlohmann::json::array();
    PyObject* seq = PySequence_Fast(o, "a list");
    for (Py_ssize_t i = 0; seq && i < PySequence_Fast_GET_SIZE(seq); ++i)
      j.push_back(to_json(PySequence_Fast_GET_ITEM(seq, i)));
    Py_XDECREF(seq);
    return j;
  }
  PyObject* r = PyObject_Repr(o);
  nlohmann::json j = r ? to_json(r) : nlohmann::json("<unrepresentable>");
  Py_XDECREF(r);
  PyErr_Clear();
  return j;
}

// The op table as the Python side takes it: [{"name", "modules", "function", "search_within"}, ...].
PyObject* ops_argument() {
  PyObject* ops = PyList_New(0);
  for (const auto& spec : attention_ops()) {
    PyObject* modules = PyList_New(0);
    for (const auto& m : spec.modules) {
      PyObject* s = PyUnicode_FromString(m.c_str());
      PyList_Append(modules, s);
      Py_DECREF(s);
    }
    PyObject* op = Py_BuildValue("{s:s,s:N,s:s,s:s}", "name", spec.name.c_str(), "modules", modules, "function",
                                 spec.function().c_str(), "search_within", spec.search_within.c_str());
    PyList_Append(ops, op);
    Py_DECREF(op);
  }
  return ops;
}

// One of the probe's Python modules, in the order they import each other.
struct EmbeddedModule {
  const char* name;      // in sys.modules
  const char* filename;  // in tracebacks
  const char* source;
  const unsigned char* bytecode;
  size_t bytecode_size;
};

const EmbeddedModule kModules[] = {
    {"_aiter_compat_static_reading", "<aiter_compat/static_reading.py>", embedded::static_reading_py,
     embedded::static_reading_pyc, embedded::static_reading_pyc_size},
    {"_aiter_compat_name_search", "<aiter_compat/name_search.py>", embedded::name_search_py,
     embedded::name_search_pyc, embedded::name_search_pyc_size},
    {"_aiter_compat_introspect", "<aiter_compat/aiter_introspect.py>", embedded::aiter_introspect_py,
     embedded::aiter_introspect_pyc, embedded::aiter_introspect_pyc_size},
};

// The module's embedded bytecode when this interpreter's version compiled it, else nullptr.
PyObject* embedded_bytecode(const EmbeddedModule& m) {
  const unsigned char* data = m.bytecode;
  if (m.bytecode_size < 4) return nullptr;
  const long magic = static_cast<long>(data[0]) | (static_cast<long>(data[1]) << 8) |
                     (static_cast<long>(data[2]) << 16) | (static_cast<long>(data[3]) << 24);
  if (magic != PyImport_GetMagicNumber()) return nullptr;
  PyObject* code = PyMarshal_ReadObjectFromString(reinterpret_cast<const char*>(data + 4),
                                                  static_cast<Py_ssize_t>(m.bytecode_size - 4));
  if (!code) PyErr_Clear();
  return code;
}

PyObject* load_module(const EmbeddedModule& m, std::string& error) {
  PyObject* code = embedded_bytecode(m);
  if (!code) {
    logging::process(logging::Level::debug, std::string(m.filename) + ": no bytecode for this Python version; compiling the source");
    code = Py_CompileString(m.source, m.filename, Py_file_input);
  }
  if (!code) {
    error = fetch_python_error();
    return nullptr;
  }
  PyObject* module = PyImport_ExecCodeModule(m.name, code);
  Py_DECREF(code);
  if (!module) error = fetch_python_error();
  return module;
}

// The introspection module (the last of kModules), loaded once per interpreter and kept
// (under the GIL).
PyObject* introspect_module(std::string& error) {
  static PyObject* module = nullptr;
  if (module) return module;
  PhaseTimer t("introspection modules load");
  PyObject* loaded = nullptr;
  for (const auto& m : kModules) {
    Py_XDECREF(loaded);
    loaded = load_module(m, error);
    if (!loaded) return nullptr;
  }
  module = loaded;
  return module;
}

// Logs the Python side's own phases ({"locate": ms, ...}).
void log_python_phases(const nlohmann::json& doc, Channel channel) {
  auto it = doc.find("phases_ms");
  if (it == doc.end() || !it->is_object()) return;
  for (const auto& [name, ms] : it->items())
    if (ms.is_number()) log_phase(to_string(channel) + " channel: " + name, ms.get<double>());
}

}  // namespace

void run_site_once() {
  if (!g_site_pending) return;
  g_site_pending = false;
  PhaseTimer t("site (site-packages on sys.path)");
  PyObject* site = PyImport_ImportModule("site");
  PyObject* done = site ? PyObject_CallMethod(site, "main", nullptr) : nullptr;
  if (!done)
    logging::process(logging::Level::warn, "python: running site failed (" + fetch_python_error() +
                                               "); site-packages may be missing from sys.path");
  Py_XDECREF(done);
  Py_XDECREF(site);
}

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
  // The search path matters to a live import and to finding "the aiter python3 would import";
  // a static reading of a given folder needs nothing from site-packages.
  if (channel == Channel::live_import || aiter_root.empty()) run_site_once();
  std::string error;
  nlohmann::json result;
  if (PyObject* module = introspect_module(error)) {
    PhaseTimer t(to_string(channel) + " channel (python side)");
    PyObject* ops = ops_argument();
    PyObject* out = PyObject_CallMethod(module, "run", "ssO", to_string(channel).c_str(), aiter_root.c_str(), ops);
    Py_DECREF(ops);
    if (out && PyDict_Check(out)) result = to_json(out);
    else error = out ? "the introspection returned no report" : fetch_python_error();
    Py_XDECREF(out);
  }
  PyGILState_Release(gil);
  if (!error.empty()) {
    failed.failure = error;
    return failed;
  }
  log_python_phases(result, channel);
  return parse_channel_reading(channel, result);
}

}  // namespace aiter_compat
