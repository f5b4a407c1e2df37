#pragma once
// The library's one logger ("aiter_compat", stderr), its level from AITER_COMPAT_LOG_LEVEL.
#include <memory>

#include <spdlog/logger.h>

namespace aiter_compat {

spdlog::logger& log();

}  // namespace aiter_compat
