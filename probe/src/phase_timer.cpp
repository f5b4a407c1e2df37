#include "aiter_compat/probe/phase_timer.hpp"

#include "aiter_compat/probe/logging.hpp"

namespace aiter_compat {

PhaseTimer::PhaseTimer(std::string phase) : phase_(std::move(phase)), start_(std::chrono::steady_clock::now()) {}

PhaseTimer::~PhaseTimer() {
  log_phase(phase_, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count());
}

void log_phase(const std::string& phase, double ms) {
  logging::process(logging::Level::debug, "phase " + phase + ": " + logging::fixed(ms, 2) + " ms");
}

}  // namespace aiter_compat
