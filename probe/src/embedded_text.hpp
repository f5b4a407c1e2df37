#pragma once
// Text files compiled into the libraries (cmake/EmbedText.cmake generates the definitions), so
// the probe works from a bare binary: the matrix and the introspection script always travel along.
namespace aiter_compat::embedded {

extern const char compat_matrix_yaml[];
extern const char aiter_introspect_py[];
extern const char capi_glue_py[];

}  // namespace aiter_compat::embedded
