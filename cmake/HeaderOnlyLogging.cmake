# spdlog and fmt as headers only: nothing built here (the CLI, libaiter_compat, the Python
# extension in a wheel) needs libspdlog.so or libfmt.so at run time, machines without the -dev
# packages included. Link spdlog::spdlog_header_only, never spdlog::spdlog, and only to
# probe/src/logging.cpp's library: as headers they cost ~10 s of compile per file that includes
# them, so everything else logs through aiter_compat/probe/logging.hpp.
find_package(spdlog REQUIRED)
# Debian's spdlog is built against an external fmt and its header-only target still links the
# compiled fmt::fmt (libfmt.so); swap that for fmt's header-only target.
get_target_property(_spdlog_links spdlog::spdlog_header_only INTERFACE_LINK_LIBRARIES)
if(_spdlog_links AND "fmt::fmt" IN_LIST _spdlog_links)
  if(NOT TARGET fmt::fmt-header-only)
    find_package(fmt REQUIRED)
  endif()
  list(TRANSFORM _spdlog_links REPLACE "^fmt::fmt$" "fmt::fmt-header-only")
  set_target_properties(spdlog::spdlog_header_only PROPERTIES INTERFACE_LINK_LIBRARIES "${_spdlog_links}")
endif()
unset(_spdlog_links)
