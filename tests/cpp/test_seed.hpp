#pragma once
// Random inputs that can be replayed: every generator starts from one seed, fixed unless
// AITER_COMPAT_TEST_SEED gives another, and every failure in the generator's scope prints it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

namespace aiter_compat::testing_support {

// The default is fixed so that a run is the same everywhere; a failure names the seed and the
// variable to set, so another seed (for a wider search) can be replayed exactly.
inline uint32_t test_seed() {
  constexpr uint32_t kDefault = 20240611;
  const char* text = std::getenv("AITER_COMPAT_TEST_SEED");
  if (!text || !*text) return kDefault;
  char* end = nullptr;
  const unsigned long value = std::strtoul(text, &end, 0);
  if (*end != '\0') {
    ADD_FAILURE() << "AITER_COMPAT_TEST_SEED='" << text << "' is not a number; using " << kDefault;
    return kDefault;
  }
  return static_cast<uint32_t>(value);
}

// A generator holding the trace that names its seed: declare it in the test body, and every
// assertion that fails while it lives says how to replay the inputs.
class SeededRng {
 public:
  SeededRng() : seed_(test_seed()), rng_(seed_), trace_(__FILE__, __LINE__, replay_line(seed_)) {}
  std::mt19937& operator*() { return rng_; }
  std::mt19937* operator->() { return &rng_; }
  operator std::mt19937&() { return rng_; }
  uint32_t seed() const { return seed_; }

 private:
  static std::string replay_line(uint32_t seed) {
    return "random inputs from seed " + std::to_string(seed) + " (replay: AITER_COMPAT_TEST_SEED=" +
           std::to_string(seed) + ")";
  }
  uint32_t seed_;
  std::mt19937 rng_;
  ::testing::ScopedTrace trace_;
};

}  // namespace aiter_compat::testing_support
