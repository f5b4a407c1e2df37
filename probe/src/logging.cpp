// The one translation unit that includes spdlog (see logging.hpp).
#include "aiter_compat/probe/logging.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>

#include <spdlog/cfg/helpers.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace aiter_compat::logging {
namespace {

spdlog::level::level_enum to_spdlog(Level level) { return static_cast<spdlog::level::level_enum>(level); }

spdlog::logger& library_logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    const char* levels = std::getenv("AITER_COMPAT_LOG_LEVEL");
    const bool per_logger = levels && std::string_view(levels).find_first_of(",=") != std::string_view::npos;
    // "warn,aiter_compat=debug": spdlog's registry gives each logger its named level as it is made.
    if (per_logger) spdlog::cfg::helpers::load_levels(levels);
    auto l = spdlog::get("aiter_compat");
    if (!l) l = spdlog::stderr_color_mt("aiter_compat");
    if (levels && !per_logger) l->set_level(spdlog::level::from_str(levels));
    return l;
  }();
  return *logger;
}

}  // namespace

static_assert(static_cast<int>(Level::trace) == spdlog::level::trace && static_cast<int>(Level::err) == spdlog::level::err &&
                  static_cast<int>(Level::off) == spdlog::level::off,
              "Level follows spdlog's level_enum");

void library(Level level, std::string_view text) { library_logger().log(to_spdlog(level), "{}", text); }

void set_library_level(Level level) { library_logger().set_level(to_spdlog(level)); }

void process(Level level, std::string_view text) { spdlog::log(to_spdlog(level), "{}", text); }

void use_command_line_logger() {
  static const bool logger_set = [] {
    spdlog::set_default_logger(spdlog::stderr_color_mt("aiter-compat"));
    return true;
  }();
  (void)logger_set;
  if (const char* levels = std::getenv("AITER_COMPAT_LOG_LEVEL")) spdlog::cfg::helpers::load_levels(levels);
}

Level level_named(std::string_view name) {
  return static_cast<Level>(spdlog::level::from_str(std::string(name)));
}

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

}  // namespace aiter_compat::logging
