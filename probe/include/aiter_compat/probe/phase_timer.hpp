#pragma once
// Wall time of one phase of a probe (interpreter start, matrix parse, tree walk, ...), logged at
// debug level as "phase NAME: X.XX ms" when it ends. AITER_COMPAT_LOG_LEVEL=debug shows where
// start-up goes (bench/probe_static.py reads these lines) without changing the report.
#include <chrono>
#include <string>

namespace aiter_compat {

class PhaseTimer {
 public:
  explicit PhaseTimer(std::string phase);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  std::string phase_;
  std::chrono::steady_clock::time_point start_;
};

// Logs a phase measured elsewhere (the Python side reports its own).
void log_phase(const std::string& phase, double ms);

}  // namespace aiter_compat
