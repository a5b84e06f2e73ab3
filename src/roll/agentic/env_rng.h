#pragma once
// Deterministic random numbers for environment generation: the same seed gives the same maps and
// levels on every build of rollcpp (own integer/real draws instead of the standard library's
// implementation-defined distributions). Not bit-identical to ROLL's numpy streams (spec 6.6).
#include <cstdint>
#include <random>

namespace roll::agentic {

class EnvRng {
 public:
  explicit EnvRng(uint64_t seed) : gen_(seed ^ 0x9E3779B97F4A7C15ull) {}
  // Uniform integer in [0, n), n > 0, by rejection (no modulo bias).
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = gen_();
    while (x >= limit);
    return x % n;
  }
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo))); }
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  std::mt19937_64 gen_;
};

}  // namespace roll::agentic
