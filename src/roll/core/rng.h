#pragma once
// The project's random numbers where the same seed must give the same stream on every build:
// splitmix64's finaliser (hashing a seed, a position or a token run into 64 well-mixed bits) and a
// seeded generator with its own integer and real draws (the standard library's distributions
// are implementation-defined). Environment maps, data generation, shuffles, the sampler's
// per-token streams and the prefix cache's block hashes all use these.
#include <cstdint>
#include <random>

namespace roll {

// splitmix64's finaliser alone: each input bit moves every output bit (0 maps to 0).
constexpr uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// splitmix64's output function: the golden-ratio step, then the finaliser.
constexpr uint64_t splitmix64(uint64_t x) { return mix64(x + 0x9e3779b97f4a7c15ull); }

class SeededRng {
 public:
  explicit SeededRng(uint64_t seed) : gen_(seed ^ 0x9E3779B97F4A7C15ull) {}
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

}  // namespace roll
