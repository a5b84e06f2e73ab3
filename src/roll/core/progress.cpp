#include "roll/core/progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>

#include "roll/core/log.h"

namespace roll {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<int64_t>(seconds);
  const int64_t h = total / 3600, m = (total / 60) % 60, s = total % 60;
  return h > 0 ? fmt::format("{}:{:02}:{:02}", h, m, s) : fmt::format("{:02}:{:02}", m, s);
}

std::string format_rate(int64_t done, double elapsed_s, std::string_view unit) {
  if (done <= 0 || elapsed_s <= 0) return fmt::format("?{}/s", unit);
  const double rate = static_cast<double>(done) / elapsed_s;
  // Below one unit per second the inverse reads better (tqdm does the same).
  return rate >= 1.0 ? fmt::format("{:.2f}{}/s", rate, unit) : fmt::format("{:.2f}s/{}", 1.0 / rate, unit);
}

std::string format_eta(const ProgressSnapshot& s) {
  if (s.total <= 0 || s.done <= 0 || s.elapsed_s <= 0) return "?";
  const double left = static_cast<double>(std::max<int64_t>(s.total - s.done, 0));
  return format_duration(left * s.elapsed_s / static_cast<double>(s.done));
}

std::string format_progress_counts(const ProgressSnapshot& s) {
  std::string text = s.total > 0 ? fmt::format("{}/{} [{}<{}, ", s.done, s.total, format_duration(s.elapsed_s),
                                               format_eta(s))
                                 : fmt::format("{}{} [{}, ", s.done, s.unit, format_duration(s.elapsed_s));
  text += format_rate(s.done, s.elapsed_s, s.unit);
  if (!s.postfix.empty()) text += ", " + s.postfix;
  text += ']';
  return text;
}

namespace {

// State and clock handling common to both reporters; subclasses decide when and how to print.
class ProgressBase : public ProgressReporter {
 public:
  explicit ProgressBase(ProgressOptions options) : options_(std::move(options)) {
    if (!options_.clock) options_.clock = [] { return std::chrono::steady_clock::now(); };
  }

  void start(std::string task, int64_t total, std::string unit) override {
    std::lock_guard lock(mu_);
    snap_ = ProgressSnapshot{std::move(task), std::move(unit), "", 0, total, 0};
    start_ = last_emit_ = options_.clock();
    last_emit_done_ = 0;
    running_ = true;
    on_start();
  }

  void advance(int64_t n) override {
    std::lock_guard lock(mu_);
    if (!running_) return;
    snap_.done += n;
    const auto now = options_.clock();
    snap_.elapsed_s = seconds(now - start_);
    if (due(now)) {
      last_emit_ = now;
      last_emit_done_ = snap_.done;
      on_update();
    }
  }

  void set_postfix(std::string postfix) override {
    std::lock_guard lock(mu_);
    snap_.postfix = std::move(postfix);
  }

  void finish() override {
    std::lock_guard lock(mu_);
    if (!running_) return;
    snap_.elapsed_s = seconds(options_.clock() - start_);
    running_ = false;
    on_finish();
  }

 protected:
  static double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
  virtual bool due(std::chrono::steady_clock::time_point now) const = 0;
  virtual void on_start() = 0;
  virtual void on_update() = 0;
  virtual void on_finish() = 0;

  ProgressOptions options_;
  ProgressSnapshot snap_;
  std::chrono::steady_clock::time_point start_, last_emit_;
  int64_t last_emit_done_ = 0;
  bool running_ = false;
  std::mutex mu_;
};

class TerminalProgress final : public ProgressBase {
 public:
  explicit TerminalProgress(ProgressOptions options) : ProgressBase(std::move(options)) {
    if (!options_.sink)
      options_.sink = [](std::string_view s) {
        std::fwrite(s.data(), 1, s.size(), stderr);
        std::fflush(stderr);
      };
    if (options_.min_interval_s < 0) options_.min_interval_s = 0.1;
    if (options_.width <= 0) {
      winsize ws{};
      options_.width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 100;
    }
  }
  ~TerminalProgress() override {
    // Leave the cursor on a fresh line so later output does not overwrite the bar.
    if (running_) options_.sink("\n");
  }

 private:
  bool due(std::chrono::steady_clock::time_point now) const override {
    return seconds(now - last_emit_) >= options_.min_interval_s || (snap_.total > 0 && snap_.done >= snap_.total);
  }
  void on_start() override { draw(); }
  void on_update() override { draw(); }
  void on_finish() override {
    draw();
    options_.sink("\n");
  }

  void draw() {
    const std::string counts = format_progress_counts(snap_);
    std::string line = "\r" + snap_.task + ": ";
    if (snap_.total > 0) {
      const double frac = std::clamp(static_cast<double>(snap_.done) / static_cast<double>(snap_.total), 0.0, 1.0);
      line += fmt::format("{:3d}%|", static_cast<int>(frac * 100));
      const int used = static_cast<int>(line.size() - 1 + 2 + counts.size());
      const int bar = std::clamp(options_.width - used - 1, 10, 60);
      // Eighth blocks give a smooth bar, as tqdm's.
      static const char* kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
      const int eighths = static_cast<int>(frac * bar * 8);
      const int full = eighths / 8;
      for (int i = 0; i < full; ++i) line += "█";
      int cells = full;
      if (full < bar && eighths % 8 != 0) {
        line += kEighths[eighths % 8];
        ++cells;
      }
      line.append(static_cast<size_t>(bar - cells), ' ');
      line += "| ";
    }
    line += counts;
    line += "\x1b[K";  // clear what a longer previous line left behind
    options_.sink(line);
  }
};

class LogProgress final : public ProgressBase {
 public:
  explicit LogProgress(ProgressOptions options) : ProgressBase(std::move(options)) {
    if (!options_.sink) options_.sink = [](std::string_view s) { log::info("{}", s); };
    if (options_.min_interval_s < 0) options_.min_interval_s = 10.0;
  }

 private:
  bool due(std::chrono::steady_clock::time_point now) const override {
    // The last step's line is finish()'s "... done": printing it here too would repeat it.
    if (snap_.total > 0 && snap_.done >= snap_.total) return false;
    if (options_.every_steps > 0 && snap_.done - last_emit_done_ >= options_.every_steps) return true;
    return seconds(now - last_emit_) >= options_.min_interval_s;
  }
  void on_start() override {
    options_.sink(snap_.total > 0 ? fmt::format("{}: started, {} {}", snap_.task, snap_.total, snap_.unit)
                                  : fmt::format("{}: started", snap_.task));
  }
  void on_update() override { options_.sink(line()); }
  void on_finish() override { options_.sink(line() + " done"); }

  std::string line() const {
    std::string pct = snap_.total > 0 ? fmt::format(" {}%", std::clamp<int64_t>(snap_.done * 100 / snap_.total, 0, 100))
                                      : "";
    return fmt::format("{}:{} {}", snap_.task, pct, format_progress_counts(snap_));
  }
};

}  // namespace

std::unique_ptr<ProgressReporter> make_terminal_progress(ProgressOptions options) {
  return std::make_unique<TerminalProgress>(std::move(options));
}

std::unique_ptr<ProgressReporter> make_log_progress(ProgressOptions options) {
  return std::make_unique<LogProgress>(std::move(options));
}

std::unique_ptr<ProgressReporter> make_progress(ProgressOptions options) {
  if (isatty(STDERR_FILENO)) return make_terminal_progress(std::move(options));
  return make_log_progress(std::move(options));
}

std::unique_ptr<ProgressReporter> make_step_progress(ProgressOptions options) {
  if (options.every_steps <= 0) options.every_steps = 1;
  return make_log_progress(std::move(options));
}

}  // namespace roll
