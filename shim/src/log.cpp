#include "aiter_compat/shim/log.hpp"

#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace aiter_compat {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::get("aiter_compat");
    if (!l) l = spdlog::stderr_color_mt("aiter_compat");
    if (const char* level = std::getenv("AITER_COMPAT_LOG_LEVEL")) l->set_level(spdlog::level::from_str(level));
    return l;
  }();
  return *logger;
}

}  // namespace aiter_compat
