#pragma once
// A worker process as the driver's Cluster sees it, wherever it runs: a ChildProcess of the
// driver, or a process a node agent started on another node (RemoteNode). Exit is reported by
// whoever watches it (pidfd locally; the agent, or a lost heartbeat, remotely).
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace roll::runtime {

class WorkerProcess {
 public:
  virtual ~WorkerProcess() = default;
  virtual pid_t pid() const = 0;  // 0 until known (a remote start not yet answered)
  // Whether pid() is a process of this machine (its /proc can be read here).
  virtual bool on_this_node() const { return true; }
  virtual bool running() const = 0;
  // "exited with status 3", "killed by signal 9 (SIGKILL)"; nullopt while running.
  virtual std::optional<std::string> exit_description() const = 0;
  virtual std::vector<std::string> last_lines() const = 0;
  // Waits up to `timeout` for the process to end; true when it has.
  virtual bool wait_for(std::chrono::milliseconds timeout) = 0;
  // SIGTERM, then SIGKILL after `grace`; returns once the process is gone (or given up on).
  virtual void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000)) = 0;
};

}  // namespace roll::runtime
