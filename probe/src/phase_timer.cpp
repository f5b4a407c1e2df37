#include "aiter_compat/probe/phase_timer.hpp"

#include <spdlog/spdlog.h>

namespace aiter_compat {

PhaseTimer::PhaseTimer(std::string phase) : phase_(std::move(phase)), start_(std::chrono::steady_clock::now()) {}

PhaseTimer::~PhaseTimer() {
  log_phase(phase_, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count());
}

void log_phase(const std::string& phase, double ms) { spdlog::debug("phase {}: {:.2f} ms", phase, ms); }

}  // namespace aiter_compat
