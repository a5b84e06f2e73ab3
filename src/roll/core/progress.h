#pragma once
// Progress reporting any layer can use: a tqdm-like bar redrawn in place on a terminal, or throttled log
// lines when stderr is a file or pipe (CI logs, multi-node log collection) where a redrawn bar is noise.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace roll {

class ProgressReporter {
 public:
  virtual ~ProgressReporter() = default;
  // total <= 0: unknown total (no percentage, no ETA).
  virtual void start(std::string task, int64_t total, std::string unit = "it") = 0;
  virtual void advance(int64_t n = 1) = 0;
  virtual void set_postfix(std::string postfix) = 0;
  virtual void finish() = 0;
};

using ProgressClock = std::function<std::chrono::steady_clock::time_point()>;
using ProgressSink = std::function<void(std::string_view)>;

struct ProgressOptions {
  ProgressSink sink;    // empty: stderr (terminal bar) or log::info (line log)
  ProgressClock clock;  // empty: std::chrono::steady_clock::now; tests inject a fake one
  double min_interval_s = -1;  // < 0: the reporter's default (bar redraw 0.1 s, log line 10 s)
  int64_t every_steps = 0;     // line log only: also log each time this many more steps are done
  int width = 0;               // bar only: terminal columns; 0 asks the terminal (fallback 100)
};

std::unique_ptr<ProgressReporter> make_terminal_progress(ProgressOptions options = {});
std::unique_ptr<ProgressReporter> make_log_progress(ProgressOptions options = {});
// The bar when stderr is a TTY, else the line log.
std::unique_ptr<ProgressReporter> make_progress(ProgressOptions options = {});
// The line log with one line per advance (every_steps 1 unless set), on a terminal too: for the
// driver's loops (pipeline steps, checkpoints), whose steps other log lines and the workers'
// forwarded output come between, where a redrawn bar would be split and repeated.
std::unique_ptr<ProgressReporter> make_step_progress(ProgressOptions options = {});

// Formatting shared by both reporters (tqdm's conventions), exposed for tests.
struct ProgressSnapshot {
  std::string task;
  std::string unit = "it";
  std::string postfix;
  int64_t done = 0;
  int64_t total = 0;
  double elapsed_s = 0;
};
std::string format_duration(double seconds);                                // "00:07", "01:05", "1:02:03", "?"
std::string format_rate(int64_t done, double elapsed_s, std::string_view unit);  // "3.05it/s", "2.50s/it", "?it/s"
std::string format_eta(const ProgressSnapshot& s);                          // time left at the mean rate, or "?"
// "37/100 [00:12<00:20, 3.05it/s, postfix]" (no "/total" and no ETA when the total is unknown).
std::string format_progress_counts(const ProgressSnapshot& s);

}  // namespace roll
