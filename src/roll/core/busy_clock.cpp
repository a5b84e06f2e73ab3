#include "roll/core/busy_clock.h"

#include <chrono>
#include <mutex>

namespace roll {
namespace {

using Clock = std::chrono::steady_clock;

struct BusyState {
  std::mutex mu;
  int open = 0;              // scopes open now, on any thread
  Clock::time_point since;   // when `open` last went from 0 to 1
  double closed_s = 0;       // busy time of the intervals already ended
};

BusyState& state() {
  static BusyState s;
  return s;
}

}  // namespace

BusyScope::BusyScope() {
  auto& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  if (s.open++ == 0) s.since = Clock::now();
}

BusyScope::~BusyScope() {
  auto& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  if (--s.open == 0) s.closed_s += std::chrono::duration<double>(Clock::now() - s.since).count();
}

double busy_seconds() {
  auto& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  double total = s.closed_s;
  if (s.open > 0) total += std::chrono::duration<double>(Clock::now() - s.since).count();
  return total;
}

}  // namespace roll
