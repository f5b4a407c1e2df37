# find_package(aiter_compat) for C and C++ engines: the imported target aiter_compat::aiter_compat
# (libaiter_compat and aiter_compat.h). Written by cmake/Install.cmake.

####### Expanded from @PACKAGE_INIT@ by configure_package_config_file() #######
####### Any changes to this file will be overwritten by the next CMake run ####
####### The input file was aiter_compatConfig.cmake.in                            ########

get_filename_component(PACKAGE_PREFIX_DIR "${CMAKE_CURRENT_LIST_DIR}/../../../" ABSOLUTE)

macro(set_and_check _var _file)
  set(${_var} "${_file}")
  if(NOT EXISTS "${_file}")
    message(FATAL_ERROR "File or directory ${_file} referenced by variable ${_var} does not exist !")
  endif()
endmacro()

macro(check_required_components _NAME)
  foreach(comp ${${_NAME}_FIND_COMPONENTS})
    if(NOT ${_NAME}_${comp}_FOUND)
      if(${_NAME}_FIND_REQUIRED_${comp})
        set(${_NAME}_FOUND FALSE)
      endif()
    endif()
  endforeach()
endmacro()

####################################################################################

include("${CMAKE_CURRENT_LIST_DIR}/aiter_compatTargets.cmake")

# aiter_compat.h includes <dlpack/dlpack.h>: DLPack's CMake package when installed (Debian's
# libdlpack-dev ships one), else the header wherever find_path sees it.
find_package(dlpack CONFIG QUIET)
if(TARGET dlpack::dlpack)
  set_property(TARGET aiter_compat::aiter_compat APPEND PROPERTY INTERFACE_LINK_LIBRARIES dlpack::dlpack)
else()
  find_path(AITER_COMPAT_DLPACK_INCLUDE_DIR dlpack/dlpack.h)
  if(NOT AITER_COMPAT_DLPACK_INCLUDE_DIR)
    set(aiter_compat_FOUND FALSE)
    set(aiter_compat_NOT_FOUND_MESSAGE
        "aiter_compat.h includes dlpack/dlpack.h, which was not found: install DLPack (Debian: libdlpack-dev)")
    return()
  endif()
  set_property(TARGET aiter_compat::aiter_compat APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES
               "${AITER_COMPAT_DLPACK_INCLUDE_DIR}")
endif()

check_required_components(aiter_compat)
