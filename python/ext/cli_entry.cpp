// The wheel's `aiter-compat` console script and `python -m aiter_compat` call this: the same
// C++ command line as the CMake-built executable (cli/cli.cpp), run in the calling interpreter
// instead of an embedded one, so the probe sees that interpreter's sys.path (its venv).
#include "cli_entry.hpp"

#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "cli.hpp"

namespace aiter_compat::py {

PyObject* api_cli_main(PyObject*, PyObject* argv_object) {
  Ref seq(PySequence_Fast(argv_object, "cli_main(argv): argv must be a list of str or bytes"));
  if (!seq) return nullptr;
  std::vector<std::string> args;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.get());
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq.get(), i);
    // File names that are not UTF-8 reach C++ as the bytes the OS gave Python.
    Ref bytes(PyUnicode_Check(item) ? PyUnicode_EncodeFSDefault(item) : Ref::borrow(item).release());
    if (!bytes) return nullptr;
    if (!PyBytes_Check(bytes.get())) {
      PyErr_Format(PyExc_TypeError, "cli_main(argv): argv[%zd] is %s, not str or bytes", i, Py_TYPE(item)->tp_name);
      return nullptr;
    }
    args.emplace_back(PyBytes_AS_STRING(bytes.get()), static_cast<size_t>(PyBytes_GET_SIZE(bytes.get())));
  }
  if (args.empty()) args.emplace_back("aiter-compat");
  // `bench` runs `python -m aiter_compat.bench`: in this interpreter's executable (its venv),
  // unless AITER_COMPAT_PYTHON names another.
  if (args.size() > 1 && args[1] == "bench") {
    Ref exe(PySys_GetObject("executable") ? Ref::borrow(PySys_GetObject("executable")) : Ref());
    if (exe && PyUnicode_Check(exe.get()))
      if (const char* path = PyUnicode_AsUTF8(exe.get()); path && *path) setenv("AITER_COMPAT_PYTHON", path, 0);
    PyErr_Clear();
  }
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  int rc = 0;
  try {
    rc = cli::run(static_cast<int>(argv.size()), argv.data());
  } catch (const std::exception& e) {  // never let a C++ exception unwind into the interpreter
    PyErr_Format(PyExc_RuntimeError, "aiter-compat: %s", e.what());
    return nullptr;
  }
  return PyLong_FromLong(rc);
}

}  // namespace aiter_compat::py
