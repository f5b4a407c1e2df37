#pragma once
// Logging for every part of aiter-compat, through spdlog. Callers hand over finished text: spdlog
// and fmt are used as headers only (nothing needs libspdlog.so or libfmt.so at run time, see
// cmake/HeaderOnlyLogging.cmake), which costs about ten seconds of compile time in each
// translation unit that includes them, so logging.cpp is the only one that does.
#include <string>
#include <string_view>

namespace aiter_compat::logging {

// spdlog's levels, in its order.
enum class Level { trace, debug, info, warn, err, critical, off };

// The library's logger, "aiter_compat" on stderr, its level from AITER_COMPAT_LOG_LEVEL: the
// shim, the C API and the Python module report through it.
void library(Level level, std::string_view text);
void set_library_level(Level level);

// The process's default logger: spdlog's own, or "aiter-compat" on stderr once the command line
// has called use_command_line_logger(). The probe's phases and warnings go there.
void process(Level level, std::string_view text);
// Makes the default logger "aiter-compat" on stderr (once per process; the Python extension may
// run the command line several times) and applies AITER_COMPAT_LOG_LEVEL's levels, which may
// name loggers ("warn,aiter_compat=debug").
void use_command_line_logger();

// spdlog's level names ("trace", "debug", "info", "warning" or "warn", "error", "critical",
// "off"); an unknown name is off, as in spdlog.
Level level_named(std::string_view name);

// `value` with `digits` digits after the point ("%.2f"), for timings in log lines.
std::string fixed(double value, int digits);

}  // namespace aiter_compat::logging

namespace aiter_compat {

// The library's logger at the levels the code uses.
inline void log_debug(std::string_view text) { logging::library(logging::Level::debug, text); }
inline void log_info(std::string_view text) { logging::library(logging::Level::info, text); }
inline void log_warn(std::string_view text) { logging::library(logging::Level::warn, text); }

}  // namespace aiter_compat
