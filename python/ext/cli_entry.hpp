#pragma once
// _aiter_compat.cli_main(argv): the aiter-compat command line inside this Python process.
#include "py_ref.hpp"

namespace aiter_compat::py {

// argv: a list of str or bytes, argv[0] ignored. Returns the exit code as an int.
PyObject* api_cli_main(PyObject* self, PyObject* argv);

}  // namespace aiter_compat::py
