#pragma once
// A throwaway jail for untrusted code (docs/design.md section 1, "code sandbox"). One run is
//
//   bwrap  (new pid/net/ipc/uts/cgroup namespaces, --die-with-parent, only /usr and a few /etc files
//           read-only, fresh /proc and /dev, private size-capped /tmp, the run's files under /sandbox,
//           every capability dropped except the three setpriv needs)
//   -> setpriv (switch to a dedicated unprivileged host uid, no groups, empty inheritable and bounding
//               sets, no_new_privs)
//   -> prlimit (AS, CPU, NPROC, FSIZE, NOFILE, CORE)
//   -> the program.
//
// As root, bwrap alone leaves every capability (the code could remount / read-write) and RLIMIT_NPROC
// does not bind uid 0: hence the uid switch. Each concurrent run holds its own uid from a range shared
// by every process on the machine (flock'ed lock files), so NPROC counts only that run's processes and
// leftovers can be found and killed by uid. stdout/stderr come back through capped pipes; a wall-clock
// timeout kills the jail's pid namespace (and, failing that, bwrap's process group). Processes are
// started with posix_spawn and see no descriptor of ours besides their stdin/stdout/stderr pipes.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace roll::reward {

struct SandboxLimits {
  uint64_t address_space_bytes = 1ull << 30;  // RLIMIT_AS
  int cpu_seconds = 0;                         // RLIMIT_CPU per process; 0: ceil(timeout) + 1
  int max_processes = 32;                      // RLIMIT_NPROC (counted per host uid)
  uint64_t max_file_bytes = 16ull << 20;       // RLIMIT_FSIZE
  int max_open_files = 64;                     // RLIMIT_NOFILE
  uint64_t tmpfs_bytes = 64ull << 20;          // size of the private /tmp
};

struct SandboxOptions {
  std::string bwrap = "/usr/bin/bwrap";
  std::string setpriv = "/usr/bin/setpriv";
  std::string prlimit = "/usr/bin/prlimit";
  std::string python = "/usr/bin/python3";  // Debian's, never a pyenv/venv one
  // Host uids (= gids) uid_base .. uid_base + uid_count - 1, one per concurrent run. They need no
  // passwd entry; a uid that has one is refused unless its name starts with "rollsbx".
  uint32_t uid_base = 1900000000;
  uint32_t uid_count = 64;
  std::string lock_dir = "/run/rollcpp-sandbox";  // root-only; never visible inside the jail
  SandboxLimits limits;
  size_t stdout_cap = 1u << 20;
  size_t stderr_cap = 64u << 10;
  bool kill_on_output_cap = true;  // stop a program once it writes past a cap
  double slot_wait_seconds = 600;  // how long run() waits for a free uid
};

struct SandboxFile {
  std::string name;  // file name under /sandbox (no '/')
  std::string content;
};

struct SandboxRequest {
  std::vector<std::string> argv;  // run inside the jail; argv[0] an absolute path (under /usr)
  std::vector<SandboxFile> files;  // read-only under /sandbox
  std::string stdin_data;
  double timeout_s = 10;  // wall clock from spawn to exit
  std::optional<SandboxLimits> limits;  // default: SandboxOptions::limits
  std::optional<size_t> stdout_cap;     // default: SandboxOptions::stdout_cap
};

struct SandboxResult {
  bool started = false;  // false: the jail could not be set up or no uid was free (see error)
  std::string error;
  int exit_code = -1;  // exit status as bwrap reports it (a signal n becomes 128 + n)
  int signal = 0;      // the signal that ended the program, 0 if it exited
  bool timed_out = false;
  bool output_truncated = false;  // stdout or stderr went past its cap
  bool killed = false;            // we killed it (timeout or output cap)
  // bwrap itself ended by a signal we did not send (the OOM killer, an operator): what the
  // program would have done is unknown, and the caller may run it again.
  bool jail_killed = false;
  std::string stdout_data, stderr_data;  // at most the caps
  double wall_seconds = 0;
  uint32_t uid = 0;  // the host uid it ran as
  bool ok() const { return started && !timed_out && !killed && signal == 0 && exit_code == 0; }
};

class Sandbox {
 public:
  explicit Sandbox(SandboxOptions options = {});

  // "" when this machine can run jails with these options, else why not (not root, a missing tool,
  // a uid of the range that belongs to someone).
  static std::string unavailable_reason(const SandboxOptions& options = {});
  const SandboxOptions& options() const { return options_; }

  // Thread-safe; blocks while every uid of the range is in use.
  SandboxResult run(const SandboxRequest& request) const;
  // `python3 -I -B /sandbox/main.py` with `script` as main.py.
  SandboxResult run_python(std::string script, std::string stdin_data, double timeout_s,
                           std::vector<SandboxFile> extra_files = {}) const;

  // The command line of one run as host `uid`; file i is read by bwrap from descriptor 3 + i.
  std::vector<std::string> command_line(const SandboxRequest& request, uint32_t uid) const;
  // Host pids whose real, effective or saved uid is one of uid .. uid + count - 1.
  static std::vector<pid_t> processes_of_uid(uint32_t uid, uint32_t count = 1);

 private:
  SandboxOptions options_;
  std::string unavailable_;
};

}  // namespace roll::reward
