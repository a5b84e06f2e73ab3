#include "roll/reward/sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <grp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "roll/core/log.h"

namespace roll::reward {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Moves `fd` to a number >= 64 (close-on-exec), so that the spawn's dup2 targets 0 .. 3 + files
// never coincide with one of its sources.
int move_high(int fd) {
  if (fd < 0) return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 64);
  int saved = errno;
  ::close(fd);
  errno = saved;
  return moved;
}

int pidfd_open_checked(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }
int pidfd_kill(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

bool set_nonblocking(int fd) {
  int fl = ::fcntl(fd, F_GETFL);
  return fl >= 0 && ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

bool write_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t k = ::write(fd, data.data() + off, data.size() - off);
    if (k < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += static_cast<size_t>(k);
  }
  return true;
}

struct ProcInfo {
  pid_t pid = 0;
  pid_t ppid = 0;
  uid_t uid[3] = {0, 0, 0};  // real, effective, saved
};

bool read_proc(pid_t pid, ProcInfo& info) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(pid));
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return false;
  char buf[4096];
  ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return false;
  buf[n] = 0;
  info.pid = pid;
  bool have_uid = false, have_ppid = false;
  for (char* line = buf; line && *line;) {
    char* next = std::strchr(line, '\n');
    if (next) *next++ = 0;
    unsigned long a = 0, b = 0, c = 0;
    if (std::strncmp(line, "PPid:", 5) == 0) {
      info.ppid = static_cast<pid_t>(std::strtol(line + 5, nullptr, 10));
      have_ppid = true;
    } else if (std::sscanf(line, "Uid: %lu %lu %lu", &a, &b, &c) == 3) {
      info.uid[0] = static_cast<uid_t>(a);
      info.uid[1] = static_cast<uid_t>(b);
      info.uid[2] = static_cast<uid_t>(c);
      have_uid = true;
    }
    line = next;
  }
  return have_uid && have_ppid;
}

std::vector<ProcInfo> scan_procs() {
  std::vector<ProcInfo> out;
  DIR* dir = ::opendir("/proc");
  if (!dir) return out;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || !end || *end) continue;
    ProcInfo info;
    if (read_proc(static_cast<pid_t>(pid), info)) out.push_back(info);
  }
  ::closedir(dir);
  return out;
}

bool has_uid(const ProcInfo& p, uint32_t uid) {
  return p.uid[0] == uid || p.uid[1] == uid || p.uid[2] == uid;
}

// SIGKILL `pid` if, seen through a pidfd (so a recycled pid is never hit), it still satisfies `ours`.
void kill_if(pid_t pid, const std::function<bool(const ProcInfo&)>& ours) {
  UniqueFd pidfd(pidfd_open_checked(pid));
  if (pidfd.get() < 0) return;
  ProcInfo now;
  if (read_proc(pid, now) && ours(now)) pidfd_kill(pidfd.get(), SIGKILL);
}

// Kills every process of `uid` until none is left (zombies included, which vanish once reaped).
bool clear_uid(uint32_t uid, double wait_s) {
  auto t0 = Clock::now();
  for (;;) {
    bool any = false;
    for (const ProcInfo& p : scan_procs()) {
      if (!has_uid(p, uid)) continue;
      any = true;
      kill_if(p.pid, [uid](const ProcInfo& q) { return has_uid(q, uid); });
    }
    if (!any) return true;
    if (seconds_since(t0) > wait_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// One uid of the range, held through an flock'ed lock file (released when the descriptor closes,
// also when the process dies).
struct UidLease {
  UniqueFd lock;
  uint32_t uid = 0;
};

std::atomic<uint32_t> g_next_uid{0};

bool lease_uid(const SandboxOptions& o, UidLease& lease, std::string& error) {
  ::mkdir(o.lock_dir.c_str(), 0700);
  const uint32_t start = g_next_uid.fetch_add(1);
  auto t0 = Clock::now();
  for (;;) {
    for (uint32_t k = 0; k < o.uid_count; ++k) {
      const uint32_t uid = o.uid_base + (start + k) % o.uid_count;
      const std::string path = fmt::format("{}/uid-{}.lock", o.lock_dir, uid);
      UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
      if (fd.get() < 0) {
        error = fmt::format("cannot open sandbox lock file {}: {}", path, std::strerror(errno));
        return false;
      }
      if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
        lease.lock = std::move(fd);
        lease.uid = uid;
        return true;
      }
    }
    if (seconds_since(t0) > o.slot_wait_seconds) {
      error = fmt::format("all {} sandbox uids ({}..{}) stayed busy for {} s", o.uid_count,
                          o.uid_base, o.uid_base + o.uid_count - 1, o.slot_wait_seconds);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// bwrap, setpriv and prlimit report their own failures as "<tool>: message" and a non-zero status.
bool is_setup_failure(const std::string& err) {
  return starts_with(err, "bwrap: ") || starts_with(err, "setpriv: ") ||
         starts_with(err, "prlimit: ");
}

bool uid_mapped(uint32_t first, uint32_t count) {
  FILE* f = std::fopen("/proc/self/uid_map", "re");
  if (!f) return true;  // no user namespaces: everything is mapped
  unsigned long inside = 0, outside = 0, len = 0;
  bool ok = false;
  while (std::fscanf(f, "%lu %lu %lu", &inside, &outside, &len) == 3)
    if (first >= inside && static_cast<uint64_t>(first) + count <= inside + len) ok = true;
  std::fclose(f);
  return ok;
}

// "" when no user or group other than "rollsbx*" owns an id of the range. One pass over the user
// and group databases (per-id lookups through NSS modules such as systemd's cost ~1 ms each), cached.
std::string uid_range_owner(uint32_t first, uint32_t count) {
  static std::mutex mu;
  static std::map<std::pair<uint32_t, uint32_t>, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(first, count);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  auto in_range = [&](uint64_t id) { return id >= first && id < static_cast<uint64_t>(first) + count; };
  auto foreign = [](const char* name) { return std::string(name).rfind("rollsbx", 0) != 0; };
  std::string owner;
  char buf[16384];
  passwd pw{}, *pwp = nullptr;
  ::setpwent();
  while (owner.empty() && ::getpwent_r(&pw, buf, sizeof buf, &pwp) == 0 && pwp)
    if (in_range(pwp->pw_uid) && foreign(pwp->pw_name))
      owner = fmt::format("sandbox uid {} belongs to user {}; choose another uid_base", pwp->pw_uid, pwp->pw_name);
  ::endpwent();
  group gr{}, *grp = nullptr;
  ::setgrent();
  while (owner.empty() && ::getgrent_r(&gr, buf, sizeof buf, &grp) == 0 && grp)
    if (in_range(grp->gr_gid) && foreign(grp->gr_name))
      owner = fmt::format("sandbox gid {} belongs to group {}; choose another uid_base", grp->gr_gid, grp->gr_name);
  ::endgrent();
  cache[key] = owner;
  return owner;
}

}  // namespace

Sandbox::Sandbox(SandboxOptions options) : options_(std::move(options)) {
  unavailable_ = unavailable_reason(options_);
}

std::string Sandbox::unavailable_reason(const SandboxOptions& o) {
  if (::geteuid() != 0)
    return fmt::format(
        "the code sandbox runs code as a dedicated unprivileged uid and needs root to switch to it "
        "(running as uid {})",
        ::geteuid());
  const std::pair<const std::string*, const char*> tools[] = {
      {&o.bwrap, "bubblewrap"}, {&o.setpriv, "util-linux"}, {&o.prlimit, "util-linux"},
      {&o.python, "python3"}};
  for (const auto& [path, package] : tools)
    if (::access(path->c_str(), X_OK) != 0)
      return fmt::format("{} is missing (Debian package {})", *path, package);
  if (o.python.rfind("/usr/", 0) != 0)
    return fmt::format("sandbox python {} is not under /usr, the only tree the jail sees", o.python);
  if (o.uid_count == 0 || o.uid_base == 0 ||
      static_cast<uint64_t>(o.uid_base) + o.uid_count > 4294967294ull)
    return fmt::format("bad sandbox uid range {} + {}", o.uid_base, o.uid_count);
  if (!uid_mapped(o.uid_base, o.uid_count))
    return fmt::format("sandbox uids {}..{} are not mapped in this user namespace", o.uid_base,
                       o.uid_base + o.uid_count - 1);
  return uid_range_owner(o.uid_base, o.uid_count);
  return "";
}

std::vector<std::string> Sandbox::command_line(const SandboxRequest& req, uint32_t uid) const {
  const SandboxLimits& lim = req.limits ? *req.limits : options_.limits;
  const int cpu = lim.cpu_seconds > 0 ? lim.cpu_seconds
                                      : static_cast<int>(std::ceil(std::max(req.timeout_s, 0.0))) + 1;
  std::vector<std::string> a = {options_.bwrap,
                                "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                                "--unshare-cgroup-try", "--hostname", "rollsbx", "--die-with-parent",
                                // Root inside the jail only long enough for setpriv to drop it.
                                "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add",
                                "CAP_SETGID", "--cap-add", "CAP_SETPCAP",
                                "--ro-bind", "/usr", "/usr"};
  // Merged-/usr systems have /bin, /lib... as symlinks into /usr; older layouts as directories.
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    struct stat st {};
    if (::lstat(top, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[256];
      ssize_t n = ::readlink(top, target, sizeof target - 1);
      if (n <= 0) continue;
      a.insert(a.end(), {"--symlink", std::string(target, static_cast<size_t>(n)), top});
    } else if (S_ISDIR(st.st_mode)) {
      a.insert(a.end(), {"--ro-bind", top, top});
    }
  }
  // The /etc files python reads: the loader cache, the local time zone, Debian's site config.
  std::vector<std::string> etc = {"/etc/ld.so.cache", "/etc/localtime"};
  if (DIR* dir = ::opendir("/etc")) {
    while (dirent* e = ::readdir(dir))
      if (std::strncmp(e->d_name, "python3", 7) == 0) etc.push_back(std::string("/etc/") + e->d_name);
    ::closedir(dir);
    std::sort(etc.begin() + 2, etc.end());
  }
  for (const auto& p : etc) a.insert(a.end(), {"--ro-bind-try", p, p});
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size",
                     std::to_string(lim.tmpfs_bytes), "--tmpfs", "/tmp"});
  for (size_t i = 0; i < req.files.size(); ++i)
    a.insert(a.end(), {"--perms", "0444", "--ro-bind-data", std::to_string(3 + i),
                       "/sandbox/" + req.files[i].name});
  const std::string id = std::to_string(uid);
  a.insert(a.end(), {"--remount-ro", "/", "--chdir", "/tmp", "--",
                     options_.setpriv, "--reuid", id, "--regid", id, "--clear-groups",
                     "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
                     options_.prlimit,
                     fmt::format("--as={}", lim.address_space_bytes),
                     fmt::format("--cpu={}:{}", cpu, cpu + 1),
                     fmt::format("--nproc={}", lim.max_processes),
                     fmt::format("--fsize={}", lim.max_file_bytes),
                     fmt::format("--nofile={}", lim.max_open_files),
                     "--core=0", "--"});
  a.insert(a.end(), req.argv.begin(), req.argv.end());
  return a;
}

std::vector<pid_t> Sandbox::processes_of_uid(uint32_t uid, uint32_t count) {
  std::vector<pid_t> out;
  for (const ProcInfo& p : scan_procs())
    for (uid_t id : p.uid)
      if (id >= uid && static_cast<uint64_t>(id) < static_cast<uint64_t>(uid) + count) {
        out.push_back(p.pid);
        break;
      }
  return out;
}

SandboxResult Sandbox::run_python(std::string script, std::string stdin_data, double timeout_s,
                                  std::vector<SandboxFile> extra_files) const {
  SandboxRequest req;
  req.argv = {options_.python, "-I", "-B", "/sandbox/main.py"};
  req.files.push_back({"main.py", std::move(script)});
  for (auto& f : extra_files) req.files.push_back(std::move(f));
  req.stdin_data = std::move(stdin_data);
  req.timeout_s = timeout_s;
  return run(req);
}

SandboxResult Sandbox::run(const SandboxRequest& req) const {
  SandboxResult r;
  if (!unavailable_.empty()) {
    r.error = unavailable_;
    return r;
  }
  if (req.argv.empty() || req.argv[0].empty() || req.argv[0][0] != '/') {
    r.error = "sandbox argv[0] must be an absolute path";
    return r;
  }
  if (req.files.size() > 32) {
    r.error = "at most 32 sandbox files";
    return r;
  }
  for (const auto& f : req.files)
    if (f.name.empty() || f.name.find('/') != std::string::npos || f.name == "." || f.name == "..") {
      r.error = fmt::format("bad sandbox file name '{}'", f.name);
      return r;
    }

  UidLease lease;
  if (!lease_uid(options_, lease, r.error)) return r;
  r.uid = lease.uid;
  clear_uid(lease.uid, 2.0);  // leftovers of an owner that died mid-run

  // The run's files travel as sealed-off memory files that bwrap copies into the jail.
  std::vector<UniqueFd> files;
  for (const auto& f : req.files) {
    UniqueFd fd(::memfd_create("roll-sandbox-file", MFD_CLOEXEC));
    if (fd.get() < 0 || !write_all(fd.get(), f.content) || ::lseek(fd.get(), 0, SEEK_SET) != 0) {
      r.error = fmt::format("cannot stage sandbox file {}: {}", f.name, std::strerror(errno));
      return r;
    }
    files.emplace_back(move_high(fd.release()));
  }
  int p_in[2], p_out[2], p_err[2];
  if (::pipe2(p_in, O_CLOEXEC) != 0) {
    r.error = fmt::format("pipe: {}", std::strerror(errno));
    return r;
  }
  UniqueFd in_r(move_high(p_in[0])), in_w(move_high(p_in[1]));
  if (::pipe2(p_out, O_CLOEXEC) != 0) {
    r.error = fmt::format("pipe: {}", std::strerror(errno));
    return r;
  }
  UniqueFd out_r(move_high(p_out[0])), out_w(move_high(p_out[1]));
  if (::pipe2(p_err, O_CLOEXEC) != 0) {
    r.error = fmt::format("pipe: {}", std::strerror(errno));
    return r;
  }
  UniqueFd err_r(move_high(p_err[0])), err_w(move_high(p_err[1]));
  for (int fd : {in_r.get(), in_w.get(), out_r.get(), out_w.get(), err_r.get(), err_w.get()})
    if (fd < 0) {
      r.error = "cannot set up sandbox pipes";
      return r;
    }
  set_nonblocking(in_w.get());
  set_nonblocking(out_r.get());
  set_nonblocking(err_r.get());

  const std::vector<std::string> args = command_line(req, lease.uid);
  std::vector<char*> argv;
  for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  static const char* const envp[] = {"PATH=/usr/bin:/bin", "HOME=/tmp",       "TMPDIR=/tmp",
                                     "LANG=C.UTF-8",       "LC_ALL=C.UTF-8", nullptr};

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_r.get(), 0);
  posix_spawn_file_actions_adddup2(&fa, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&fa, err_w.get(), 2);
  for (size_t i = 0; i < files.size(); ++i)
    posix_spawn_file_actions_adddup2(&fa, files[i].get(), static_cast<int>(3 + i));
  // Nothing else of ours (sockets, stores, lock files) reaches bwrap or the code.
  posix_spawn_file_actions_addclosefrom_np(&fa, static_cast<int>(3 + files.size()));
  posix_spawnattr_init(&attr);
  sigset_t no_signals, defaults;
  sigemptyset(&no_signals);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM,
                  SIGXCPU, SIGXFSZ, SIGTSTP, SIGTTIN, SIGTTOU})
    sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &no_signals);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  // A new session: no controlling terminal, and bwrap's process group is the one to kill.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);

  // Writing stdin to a program that exited raises SIGPIPE: keep it off this thread, drain it after.
  sigset_t pipe_set, old_mask;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);

  pid_t pid = -1;
  const auto t0 = Clock::now();
  const int spawn_rc = ::posix_spawn(&pid, args[0].c_str(), &fa, &attr, argv.data(),
                                     const_cast<char* const*>(envp));
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  in_r.reset();
  out_w.reset();
  err_w.reset();
  files.clear();
  if (spawn_rc != 0) {
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    r.error = fmt::format("cannot start {}: {}", args[0], std::strerror(spawn_rc));
    return r;
  }

  UniqueFd pidfd(pidfd_open_checked(pid));
  size_t in_off = 0;
  if (req.stdin_data.empty()) in_w.reset();
  std::string* sinks[2] = {&r.stdout_data, &r.stderr_data};
  const size_t caps[2] = {req.stdout_cap.value_or(options_.stdout_cap), options_.stderr_cap};
  UniqueFd* readers[2] = {&out_r, &err_r};
  bool exited = false, kill_sent = false, group_killed = false;
  int status = 0;
  double exit_at = 0, kill_at = 0;

  // Kill the jail: its pid-1 (bwrap's child) takes the whole pid namespace with it, and bwrap
  // then exits and reaps it; if there is no such child yet, bwrap's process group goes.
  auto kill_jail = [&](double now) {
    kill_sent = true;
    kill_at = now;
    r.killed = true;
    bool inner = false;
    for (const ProcInfo& p : scan_procs()) {
      if (p.ppid == pid) {
        inner = true;
        kill_if(p.pid, [pid](const ProcInfo& q) { return q.ppid == pid; });
      } else if (has_uid(p, lease.uid)) {
        kill_if(p.pid, [uid = lease.uid](const ProcInfo& q) { return has_uid(q, uid); });
      }
    }
    if (!inner) {
      ::kill(-pid, SIGKILL);
      group_killed = true;
    }
  };

  char buf[65536];
  for (;;) {
    const double now = seconds_since(t0);
    if (!exited) {
      pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        exited = true;
        exit_at = now;
        r.wall_seconds = now;
        in_w.reset();
      }
    }
    const bool drained = out_r.get() < 0 && err_r.get() < 0;
    if (exited && (drained || now - exit_at > 1.0)) break;
    if (!exited && !kill_sent && now >= req.timeout_s) {
      r.timed_out = true;
      kill_jail(now);
    }
    if (!exited && kill_sent && !group_killed && now - kill_at > 1.0) {
      ::kill(-pid, SIGKILL);
      group_killed = true;
    }
    if (!exited && group_killed && now - kill_at > 10.0) {
      // bwrap survived SIGKILL for 10 s (a process stuck in the kernel): wait for it.
      ::waitpid(pid, &status, 0);
      exited = true;
      r.wall_seconds = seconds_since(t0);
      break;
    }

    pollfd fds[4];
    int nfds = 0, idx_read[2] = {-1, -1}, idx_in = -1;
    for (int k = 0; k < 2; ++k)
      if (readers[k]->get() >= 0) {
        idx_read[k] = nfds;
        fds[nfds++] = {readers[k]->get(), POLLIN, 0};
      }
    if (in_w.get() >= 0) {
      idx_in = nfds;
      fds[nfds++] = {in_w.get(), POLLOUT, 0};
    }
    if (!exited && pidfd.get() >= 0) fds[nfds++] = {pidfd.get(), POLLIN, 0};
    int wait_ms = 20;
    if (!exited && !kill_sent)
      wait_ms = static_cast<int>(std::clamp((req.timeout_s - now) * 1000.0 + 1.0, 1.0, 200.0));
    if (pidfd.get() < 0 && !exited) wait_ms = std::min(wait_ms, 10);
    int pr = ::poll(fds, static_cast<nfds_t>(nfds), wait_ms);
    if (pr < 0 && errno != EINTR) {  // cannot watch it any more: end it rather than guess
      r.error = fmt::format("poll: {}", std::strerror(errno));
      r.killed = true;
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      exited = true;
      r.wall_seconds = seconds_since(t0);
      break;
    }
    if (pr <= 0) continue;

    for (int k = 0; k < 2; ++k) {
      if (idx_read[k] < 0 || !fds[idx_read[k]].revents) continue;
      ssize_t n = ::read(readers[k]->get(), buf, sizeof buf);
      if (n > 0) {
        std::string& sink = *sinks[k];
        const size_t room = caps[k] - std::min(caps[k], sink.size());
        sink.append(buf, std::min(room, static_cast<size_t>(n)));
        if (static_cast<size_t>(n) > room) {
          r.output_truncated = true;
          if (options_.kill_on_output_cap && !kill_sent && !exited) kill_jail(seconds_since(t0));
        }
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        readers[k]->reset();
      }
    }
    if (idx_in >= 0 && fds[idx_in].revents) {
      const size_t chunk = std::min<size_t>(req.stdin_data.size() - in_off, 65536);
      ssize_t n = ::write(in_w.get(), req.stdin_data.data() + in_off, chunk);
      if (n > 0) in_off += static_cast<size_t>(n);
      if (in_off >= req.stdin_data.size() || (n < 0 && errno != EAGAIN && errno != EINTR))
        in_w.reset();  // all written, or the program closed its stdin
    }
  }
  in_w.reset();
  timespec zero{0, 0};
  if (!sigismember(&old_mask, SIGPIPE))
    while (::sigtimedwait(&pipe_set, nullptr, &zero) > 0) {
    }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);

  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
    if (r.exit_code > 128 && r.exit_code <= 128 + 64) r.signal = r.exit_code - 128;
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.exit_code = 128 + r.signal;
    r.jail_killed = !r.killed;  // a program's own signals reach us as bwrap's exit status 128 + n
  }
  r.started = true;
  if (!r.killed && r.exit_code != 0 && is_setup_failure(r.stderr_data)) {
    r.started = false;
    r.error = r.stderr_data.substr(0, r.stderr_data.find('\n'));
  }
  if (!clear_uid(lease.uid, 3.0))
    log::warn("sandbox: processes of uid {} survived SIGKILL for 3 s", lease.uid);
  return r;
}

}  // namespace roll::reward
