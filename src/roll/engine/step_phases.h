#pragma once
// Wall time of one engine forward, by phase: what a decode step spends on the products, on
// attention and on the element-wise passes between them. The forward marks a phase when it ends
// (each phase finishes all its threads before the next starts, so wall time is the phase's own);
// marking costs one clock read (~20 ns), about 250 per step.
#include <array>
#include <chrono>
#include <cstddef>

namespace roll::engine {

enum class StepPhase : int {
  embed,      // token embedding, RoPE angles
  norm,       // RMSNorms (input, post-attention, q/k, final)
  qkv,        // q/k/v products
  rope,
  attention,  // paged attention (writes the step's k/v into the cache)
  o_proj,     // output product and residual add
  gate_up,    // gate and up products
  swiglu,
  down,       // down product and residual add
  lm_head,    // selecting the sampled rows and the LM head product
  count
};

constexpr size_t kNumStepPhases = static_cast<size_t>(StepPhase::count);

// Phase names as bench_engine prints them, in enum order.
const char* step_phase_name(StepPhase p);

struct StepPhaseSeconds {
  std::array<double, kNumStepPhases> seconds{};

  double& operator[](StepPhase p) { return seconds[static_cast<size_t>(p)]; }
  double operator[](StepPhase p) const { return seconds[static_cast<size_t>(p)]; }
  StepPhaseSeconds& operator+=(const StepPhaseSeconds& o) {
    for (size_t i = 0; i < kNumStepPhases; ++i) seconds[i] += o.seconds[i];
    return *this;
  }
};

// Charges the time since the previous mark to the phase that just ended.
class StepPhaseClock {
 public:
  explicit StepPhaseClock(StepPhaseSeconds& out) : out_(out), last_(Clock::now()) {}
  void mark(StepPhase ended) {
    const auto now = Clock::now();
    out_[ended] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }

 private:
  using Clock = std::chrono::steady_clock;
  StepPhaseSeconds& out_;
  Clock::time_point last_;
};

}  // namespace roll::engine
