# What `cmake --install` puts under the prefix, for C and C++ engines (docs/using.md):
#   bin/aiter-compat, include/aiter_compat.h, lib/libaiter_compat.so.<ABI>,
#   lib/cmake/aiter_compat/ (aiter_compatConfig.cmake, its version file, the exported target
#   aiter_compat::aiter_compat) and lib/pkgconfig/aiter_compat.pc.
# Both package files are relocatable: `cmake --install build --prefix DIR` may pick any DIR.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The header's AITER_COMPAT_ABI_VERSION is the library's SONAME version (one place for it).
file(STRINGS ${PROJECT_SOURCE_DIR}/capi/include/aiter_compat.h _abi_line
     REGEX "^#define AITER_COMPAT_ABI_VERSION [0-9]+$")
string(REGEX REPLACE "^.* " "" AITER_COMPAT_ABI_VERSION "${_abi_line}")
if(NOT AITER_COMPAT_ABI_VERSION)
  message(FATAL_ERROR "no '#define AITER_COMPAT_ABI_VERSION N' line in capi/include/aiter_compat.h")
endif()
set_target_properties(aiter_compat PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${AITER_COMPAT_ABI_VERSION})

install(TARGETS aiter-compat RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS aiter_compat EXPORT aiter_compatTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/capi/include/aiter_compat.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(_config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/aiter_compat)
install(EXPORT aiter_compatTargets NAMESPACE aiter_compat:: DESTINATION ${_config_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/aiter_compatConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/package/aiter_compatConfig.cmake INSTALL_DESTINATION ${_config_dir})
# 0.x releases: only the same minor version promises the same API.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/aiter_compatConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/aiter_compatConfig.cmake
              ${CMAKE_BINARY_DIR}/package/aiter_compatConfigVersion.cmake DESTINATION ${_config_dir})

# pkg-config: the prefix is found from the .pc file's own folder, not fixed at configure time.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(AITER_COMPAT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _up "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
  string(REGEX REPLACE "/$" "" _up "${_up}")
  set(AITER_COMPAT_PC_PREFIX "\${pcfiledir}/${_up}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/aiter_compat.pc.in ${CMAKE_BINARY_DIR}/package/aiter_compat.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/aiter_compat.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
unset(_abi_line)
unset(_config_dir)
unset(_up)
