#pragma once
// A worker process the driver started (docs/design.md section 3): posix_spawn + exec, never a bare fork of
// a threaded process. Its stdout and stderr arrive on one pipe that a reader thread forwards to
// the driver's stderr, prefixed with the worker's name as Ray prefixes actor output, and keeps the
// last lines for failure reports. Exit is seen through a pidfd, not through the RPC sockets.
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "roll/runtime/worker_process.h"

namespace roll::runtime {

struct SpawnOptions {
  std::string name;                        // for the output prefix and error messages
  std::vector<std::string> argv;           // argv[0] is the executable path
  std::map<std::string, std::string> env;  // the complete environment of the child
  bool forward_output = true;              // copy output lines to our stderr as "(name pid=N) line"
  size_t keep_lines = 40;                  // lines kept for last_lines()
  // Called once, from the watcher thread, when the process has exited (after its output is drained).
  std::function<void(const std::string& exit_description)> on_exit;
};

class ChildProcess : public WorkerProcess {
 public:
  // Starts the process; throws roll::Error naming the executable when spawning fails.
  static std::shared_ptr<ChildProcess> spawn(SpawnOptions options);
  ~ChildProcess() override;  // kills the process if it still runs, joins the threads

  pid_t pid() const override;
  const std::string& name() const;
  bool running() const override;
  // "exited with status 3", "killed by signal 9 (SIGKILL)"; nullopt while running.
  std::optional<std::string> exit_description() const override;
  std::optional<int> exit_code() const;  // the status, or -signal
  std::vector<std::string> last_lines() const override;

  void signal(int sig);
  // Waits up to `timeout` for the process to end; true when it has.
  bool wait_for(std::chrono::milliseconds timeout) override;
  // SIGTERM, then SIGKILL after `grace`; returns once the process is gone.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000)) override;

  struct Impl;

 private:
  explicit ChildProcess(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The current process environment as a map (the base a worker's environment is built from).
std::map<std::string, std::string> current_environment();

// In a worker: die with the driver. Sets PR_SET_PDEATHSIG (SIGKILL) and exits at once when the
// parent is already gone (not `expected_parent`), closing the race between spawn and prctl.
// The signal follows the driver *thread* that spawned us, so the driver spawns from long-lived
// threads only.
void die_with_parent(pid_t expected_parent);

}  // namespace roll::runtime
