#pragma once
// Text files compiled into the libraries (cmake/EmbedText.cmake generates the definitions), so
// the probe works from a bare binary: the matrix and the introspection script always travel along.
#include <cstddef>

namespace aiter_compat::embedded {

extern const char compat_matrix_yaml[];
// The probe's Python side (probe/python/*.py), each as source and as bytecode compiled by the
// build's Python (its magic number, then the marshalled code object): cmake's embed_python.
extern const char static_reading_py[], name_search_py[], aiter_introspect_py[];
extern const unsigned char static_reading_pyc[], name_search_pyc[], aiter_introspect_pyc[];
extern const std::size_t static_reading_pyc_size, name_search_pyc_size, aiter_introspect_pyc_size;
extern const char capi_glue_py[];

}  // namespace aiter_compat::embedded
