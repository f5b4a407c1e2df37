#----------------------------------------------------------------
# Generated CMake target import file for configuration "RelWithDebInfo".
#----------------------------------------------------------------

# Commands may need to know the format version.
set(CMAKE_IMPORT_FILE_VERSION 1)

# Import target "aiter_compat::aiter_compat" for configuration "RelWithDebInfo"
set_property(TARGET aiter_compat::aiter_compat APPEND PROPERTY IMPORTED_CONFIGURATIONS RELWITHDEBINFO)
set_target_properties(aiter_compat::aiter_compat PROPERTIES
  IMPORTED_LINK_DEPENDENT_LIBRARIES_RELWITHDEBINFO "Python3::Python"
  IMPORTED_LOCATION_RELWITHDEBINFO "${_IMPORT_PREFIX}/lib/libaiter_compat.so.0.1.0"
  IMPORTED_SONAME_RELWITHDEBINFO "libaiter_compat.so.5"
  )

list(APPEND _cmake_import_check_targets aiter_compat::aiter_compat )
list(APPEND _cmake_import_check_files_for_aiter_compat::aiter_compat "${_IMPORT_PREFIX}/lib/libaiter_compat.so.0.1.0" )

# Commands beyond this point should not need to know the version.
set(CMAKE_IMPORT_FILE_VERSION)
