#pragma once
// Process plumbing of `roll start`'s daemons (docs/design.md section 3): starting one detached (own
// session, output to its log file) and waiting until it says it is ready, the daemon's side of
// that pipe, its stop signals, and refusing a second daemon of the same role on one machine.
#include <chrono>
#include <string>
#include <vector>

#include <signal.h>

#include "roll/runtime/cluster_state.h"

namespace roll::runtime {

// Starts `argv` in its own session (stdin /dev/null, stdout and stderr appended to `log_file`)
// with ROLL_READY_FD set, and waits up to `timeout` for its first report. Returns the message of
// "ready <message>"; throws roll::Error with the daemon's error, or naming the log file when it
// exits or stays silent.
std::string start_detached(const std::vector<std::string>& argv, const std::string& log_file,
                           std::chrono::milliseconds timeout);

// The daemon's side: the fd from ROLL_READY_FD (-1 when run in the foreground without one).
int ready_fd_from_env();
// Writes "ready <message>" or "error <message>" to `fd` and closes it; nothing when fd < 0.
void report_ready(int fd, bool ok, const std::string& message);

// SIGTERM and SIGINT, blocked in every thread started after this is built, taken by wait().
class StopSignals {
 public:
  StopSignals();
  // Waits up to `timeout`; true when a stop signal came (then it stays true).
  bool wait(std::chrono::milliseconds timeout);

 private:
  sigset_t set_;
  bool got_ = false;
};

// Throws roll::Error when a live daemon of `role` is recorded under `dir`; removes a stale record.
void ensure_no_daemon(const std::string& dir, DaemonRole role);

}  // namespace roll::runtime
