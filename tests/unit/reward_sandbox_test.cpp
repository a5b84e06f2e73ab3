// The code sandbox (docs/design.md section 1, docs/rewards.md): run for real as root. Each
// test checks one property from inside the jail, or that a hostile program is stopped, scored 0, and
// leaves no process of the sandbox uids behind.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <spawn.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "roll/reward/code_reward.h"
#include "roll/reward/sandbox.h"

using namespace roll::reward;

namespace {

// The tests use their own uid range, held for the whole test through a lock file, so that sandbox
// runs of other processes (another test binary under ctest -j) never show up in the checks below.
SandboxOptions test_options() {
  SandboxOptions o;
  o.uid_base = 1900000900;
  o.uid_count = 8;
  return o;
}

// Exclusive use of the test uid range (blocks while another test process holds it).
int lock_test_range(const SandboxOptions& o) {
  ::mkdir(o.lock_dir.c_str(), 0700);
  const std::string lock = o.lock_dir + "/test-range-" + std::to_string(o.uid_base) + ".lock";
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0 && ::flock(fd, LOCK_EX) != 0) {
    ::close(fd);
    fd = -1;
  }
  return fd;
}

class RewardSandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = Sandbox::unavailable_reason(options_);
    if (!reason.empty()) GTEST_SKIP() << "sandbox unavailable: " << reason;
    range_lock_ = lock_test_range(options_);
    ASSERT_GE(range_lock_, 0);
  }
  void TearDown() override {
    if (range_lock_ < 0) return;
    check_range_is_empty();
    ::close(range_lock_);
  }
  void check_range_is_empty() {
    // The machine is unharmed: nothing runs as any sandbox uid any more.
    EXPECT_TRUE(Sandbox::processes_of_uid(options_.uid_base, options_.uid_count).empty())
        << "a process of a sandbox uid survived";
  }
  // A trivial program still runs: the host has processes, memory and descriptors left.
  void expect_still_works(const Sandbox& sandbox) {
    SandboxResult r = sandbox.run_python("print(6 * 7)", "", 10);
    EXPECT_TRUE(r.ok()) << r.error << r.stderr_data;
    EXPECT_EQ(r.stdout_data, "42\n");
  }
  SandboxOptions options_ = test_options();
  int range_lock_ = -1;
};

// A Python program printing one "key=value" line per fact; parsed into a map.
std::map<std::string, std::string> facts(const SandboxResult& r) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos < r.stdout_data.size()) {
    size_t nl = r.stdout_data.find('\n', pos);
    if (nl == std::string::npos) nl = r.stdout_data.size();
    const std::string line = r.stdout_data.substr(pos, nl - pos);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
    pos = nl + 1;
  }
  return out;
}

std::string make_temp_dir() {
  char tmpl[] = "/tmp/roll-sandbox-test-XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  EXPECT_NE(dir, nullptr);
  ::chmod(dir, 0777);
  return dir ? dir : "";
}

nlohmann::json assert_case(const std::string& code) { return nlohmann::json::array({{{"assert_code", code}}}); }

}  // namespace

TEST(RewardSandboxCommandLine, HasEveryIsolationFlag) {
  Sandbox sandbox;
  SandboxRequest req;
  req.argv = {"/usr/bin/python3", "-I", "-B", "/sandbox/main.py"};
  req.files = {{"main.py", "print(1)"}};
  req.timeout_s = 5;
  const auto a = sandbox.command_line(req, 1900000007);
  auto has = [&](std::vector<std::string> seq) {
    return std::search(a.begin(), a.end(), seq.begin(), seq.end()) != a.end();
  };
  EXPECT_EQ(a.front(), "/usr/bin/bwrap");
  for (const char* flag : {"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--die-with-parent"})
    EXPECT_TRUE(has({flag})) << flag;
  EXPECT_TRUE(has({"--ro-bind", "/usr", "/usr"}));
  EXPECT_TRUE(has({"--proc", "/proc"}));
  EXPECT_TRUE(has({"--tmpfs", "/tmp"}));
  EXPECT_TRUE(has({"--ro-bind-data", "3", "/sandbox/main.py"}));
  EXPECT_TRUE(has({"--remount-ro", "/"}));
  EXPECT_TRUE(has({"/usr/bin/setpriv", "--reuid", "1900000007", "--regid", "1900000007", "--clear-groups",
                   "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"}));
  EXPECT_TRUE(has({"--cpu=6:7"}));
  for (const char* lim : {"--as=1073741824", "--nproc=32", "--fsize=16777216", "--nofile=64", "--core=0"})
    EXPECT_TRUE(has({lim})) << lim;
  EXPECT_TRUE(has({"--", "/usr/bin/python3", "-I", "-B", "/sandbox/main.py"}));
  // Nothing of the host but /usr, the /etc files python reads, and the /lib-style links.
  for (size_t i = 0; i + 2 < a.size(); ++i) {
    if (a[i] != "--ro-bind" && a[i] != "--ro-bind-try" && a[i] != "--bind") continue;
    EXPECT_TRUE(a[i + 1] == "/usr" || a[i + 1].rfind("/etc/", 0) == 0 || a[i + 1].rfind("/lib", 0) == 0 ||
                a[i + 1] == "/bin" || a[i + 1] == "/sbin")
        << a[i + 1];
  }
}

TEST_F(RewardSandboxTest, RunsPythonWithStdinAndFiles) {
  Sandbox sandbox(options_);
  SandboxResult r = sandbox.run_python(
      "import sys\nprint(sys.stdin.read().upper())\nprint(open('/sandbox/data.txt').read())\n"
      "sys.stderr.write('to stderr')\nsys.exit(3)\n",
      "hello", 10, {{"data.txt", "xyz"}});
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.signal, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.stdout_data, "HELLO\nxyz\n");
  EXPECT_EQ(r.stderr_data, "to stderr");
  EXPECT_GE(r.uid, options_.uid_base);
  EXPECT_LT(r.uid, options_.uid_base + options_.uid_count);
  EXPECT_GT(r.wall_seconds, 0.0);
  EXPECT_LT(r.wall_seconds, 5.0);
}

TEST_F(RewardSandboxTest, LargeStdinAndOutputRoundTrip) {
  Sandbox sandbox(options_);
  const std::string input(5 << 20, 'a');  // far beyond a pipe's buffer, both ways
  SandboxRequest req;
  req.argv = {options_.python, "-I", "-c", "import sys\nd = sys.stdin.read()\nsys.stdout.write(d)"};
  req.stdin_data = input;
  req.stdout_cap = 6 << 20;
  SandboxResult r = sandbox.run(req);
  ASSERT_TRUE(r.ok()) << r.error << r.stderr_data;
  EXPECT_EQ(r.stdout_data.size(), input.size());
  EXPECT_FALSE(r.output_truncated);
}

TEST_F(RewardSandboxTest, NoCapabilitiesAndUnprivilegedUid) {
  Sandbox sandbox(options_);
  SandboxResult r = sandbox.run_python(
      "import os\n"
      "for line in open('/proc/self/status'):\n"
      "    k, v = line.split(':', 1)\n"
      "    if k.startswith('Cap') or k in ('NoNewPrivs', 'Uid', 'Gid'):\n"
      "        print(k + '=' + ' '.join(v.split()))\n"
      "print('uid=%d' % os.getuid())\nprint('euid=%d' % os.geteuid())\n"
      "print('groups=%s' % os.getgroups())\n",
      "", 10);
  ASSERT_TRUE(r.ok()) << r.error << r.stderr_data;
  auto f = facts(r);
  for (const char* cap : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) EXPECT_EQ(f[cap], "0000000000000000") << cap;
  EXPECT_EQ(f["NoNewPrivs"], "1");
  EXPECT_NE(f["uid"], "0");
  EXPECT_EQ(f["uid"], std::to_string(r.uid));
  EXPECT_EQ(f["euid"], std::to_string(r.uid));
  const std::string u = std::to_string(r.uid);
  EXPECT_EQ(f["Uid"], u + " " + u + " " + u + " " + u);
  EXPECT_EQ(f["Gid"], u + " " + u + " " + u + " " + u);
  EXPECT_EQ(f["groups"], "[]");
}

TEST_F(RewardSandboxTest, CannotRemountRootOrWriteOutsideTmp) {
  Sandbox sandbox(options_);
  SandboxResult r = sandbox.run_python(
      "import ctypes, os, subprocess\n"
      "p = subprocess.run(['/usr/bin/mount', '-o', 'remount,rw', '/'], capture_output=True)\n"
      "print('mount_cmd=%d' % p.returncode)\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "rc = libc.mount(b'none', b'/', None, 32, None)  # MS_REMOUNT\n"
      "print('mount_syscall=%d errno=%d' % (rc, ctypes.get_errno()))\n"
      "rc = libc.mount(b'none', b'/usr', None, 32, None)\n"
      "print('mount_usr=%d' % rc)\n"
      "for path in ('/usr/roll-probe', '/roll-probe', '/etc/roll-probe', '/sandbox/x'):\n"
      "    try:\n"
      "        open(path, 'w').write('x')\n"
      "        print('write ' + path + '=ok')\n"
      "    except OSError as e:\n"
      "        print('write ' + path + '=' + type(e).__name__)\n"
      "open('/tmp/ok', 'w').write('fine')\nprint('tmp=' + open('/tmp/ok').read())\n",
      "", 10);
  ASSERT_TRUE(r.ok()) << r.error << r.stderr_data;
  auto f = facts(r);
  EXPECT_NE(f["mount_cmd"], "0");
  EXPECT_EQ(f["mount_syscall"], "-1 errno=1");  // EPERM
  EXPECT_EQ(f["mount_usr"], "-1");
  for (const char* p : {"write /usr/roll-probe", "write /roll-probe", "write /etc/roll-probe", "write /sandbox/x"})
    EXPECT_NE(f[p], "ok") << p;
  EXPECT_EQ(f["tmp"], "fine");
  EXPECT_FALSE(std::filesystem::exists("/usr/roll-probe"));
}

TEST_F(RewardSandboxTest, CannotSeeProjectCheckoutOrHostProcesses) {
  Sandbox sandbox(options_);
  const std::string src = ROLL_SOURCE_DIR;
  SandboxResult r = sandbox.run_python(
      "import os, sys\n"
      "src = sys.stdin.read()\n"
      "print('src=%s' % os.path.exists(src))\n"
      "print('cmake=%s' % os.path.exists(os.path.join(src, 'CMakeLists.txt')))\n"
      "print('work=%s' % os.path.exists('/work'))\n"
      "print('root=%s' % ','.join(sorted(os.listdir('/'))))\n"
      "print('pids=%d' % len([p for p in os.listdir('/proc') if p.isdigit()]))\n"
      "print('home=%s' % os.path.exists('/root'))\n"
      "print('run=%s' % os.path.exists('/run'))\n",
      src, 10);
  ASSERT_TRUE(r.ok()) << r.error << r.stderr_data;
  ASSERT_TRUE(std::filesystem::exists(src + "/CMakeLists.txt"));  // the host does see it
  auto f = facts(r);
  EXPECT_EQ(f["src"], "False");
  EXPECT_EQ(f["cmake"], "False");
  EXPECT_EQ(f["work"], "False");
  EXPECT_EQ(f["home"], "False");
  EXPECT_EQ(f["run"], "False");
  const std::set<std::string> allowed = {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32",
                                         "proc", "sandbox", "sbin", "tmp", "usr"};
  std::string entry;
  for (char c : f["root"] + ",") {
    if (c != ',') { entry += c; continue; }
    EXPECT_TRUE(allowed.count(entry)) << "unexpected /" << entry;
    entry.clear();
  }
  // Its own pid namespace: bwrap's init and the program, not the host's processes.
  EXPECT_LE(std::stoi(f["pids"]), 3);
}

TEST_F(RewardSandboxTest, CannotConnectToOurUnixSockets) {
  const std::string dir = make_temp_dir();
  const std::string path = dir + "/roll.sock";
  int fs = ::socket(AF_UNIX, SOCK_STREAM, 0);  // deliberately inheritable
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(fs, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fs, 4), 0);
  ::chmod(path.c_str(), 0777);
  // An abstract socket too: those are per network namespace, not files.
  const std::string abstract_name = "roll-sandbox-test-" + std::to_string(::getpid());
  int as = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un aaddr{};
  aaddr.sun_family = AF_UNIX;
  std::memcpy(aaddr.sun_path + 1, abstract_name.data(), abstract_name.size());
  const socklen_t alen = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + abstract_name.size());
  ASSERT_EQ(::bind(as, reinterpret_cast<sockaddr*>(&aaddr), alen), 0);
  ASSERT_EQ(::listen(as, 4), 0);
  {  // both are reachable from the host
    int c = ::socket(AF_UNIX, SOCK_STREAM, 0);
    EXPECT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ::close(c);
    c = ::socket(AF_UNIX, SOCK_STREAM, 0);
    EXPECT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&aaddr), alen), 0);
    ::close(c);
  }
  Sandbox sandbox(options_);
  SandboxResult r = sandbox.run_python(
      "import os, socket, sys\n"
      "path, name = sys.stdin.read().split('\\n')\n"
      "def attempt(key, address):\n"
      "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
      "    try:\n"
      "        s.connect(address)\n"
      "        print(key + '=connected')\n"
      "    except OSError as e:\n"
      "        print(key + '=' + type(e).__name__)\n"
      "attempt('path', path)\n"
      "attempt('abstract', '\\0' + name)\n"
      "print('fds=' + ','.join(sorted(os.listdir('/proc/self/fd'))))\n",
      path + "\n" + abstract_name, 10);
  ::close(fs);
  ::close(as);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(r.ok()) << r.error << r.stderr_data;
  auto f = facts(r);
  EXPECT_EQ(f["path"], "FileNotFoundError");
  EXPECT_EQ(f["abstract"], "ConnectionRefusedError");
  // Only stdin, stdout, stderr (and the descriptor listing /proc/self/fd): no socket of ours leaked.
  EXPECT_EQ(f["fds"], "0,1,2,3");
}

TEST_F(RewardSandboxTest, CannotReachTheNetwork) {
  int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(ls, 4), 0);
  socklen_t len = sizeof addr;
  ::getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  {
    int c = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);  // reachable from here
    ::close(c);
  }
  Sandbox sandbox(options_);
  SandboxResult r = sandbox.run_python(
      "import socket, sys\n"
      "port = int(sys.stdin.read())\n"
      "s = socket.socket()\ns.settimeout(2)\n"
      "try:\n"
      "    s.connect(('127.0.0.1', port))\n"
      "    print('loopback=connected')\n"
      "except OSError as e:\n"
      "    print('loopback=' + type(e).__name__)\n"
      "s = socket.socket()\ns.settimeout(2)\n"
      "try:\n"
      "    s.connect(('1.1.1.1', 53))\n"
      "    print('internet=connected')\n"
      "except OSError as e:\n"
      "    print('internet=' + type(e).__name__)\n"
      "print('interfaces=' + ','.join(n for _, n in socket.if_nameindex()))\n"
      "print('host=' + socket.gethostname())\n",
      std::to_string(port), 10);
  ::close(ls);
  ASSERT_TRUE(r.ok()) << r.error << r.stderr_data;
  auto f = facts(r);
  EXPECT_NE(f["loopback"], "connected");
  EXPECT_NE(f["internet"], "connected");
  EXPECT_EQ(f["interfaces"], "lo");
  EXPECT_EQ(f["host"], "rollsbx");
}

TEST_F(RewardSandboxTest, ForkBombIsStoppedAndScoredZero) {
  Sandbox sandbox(options_);
  CodeRewardOptions ro;
  ro.timeout_s = 2;
  ro.startup_allowance_s = 1;
  CodeSandboxReward reward(sandbox, ro);
  const std::string response =
      "```python\nimport os\ndef f(x):\n    return x\nwhile True:\n    try:\n        os.fork()\n"
      "    except OSError:\n        pass\n```";
  const auto t0 = std::chrono::steady_clock::now();
  CodeRewardResult res = reward.compute(response, assert_case("assert f(1) == 1"), "assert");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(res.score, 0.0);
  EXPECT_EQ(res.error_class, CodeErrorClass::runtime);
  EXPECT_EQ(res.error_message, "Time Limit Exceeded");
  EXPECT_LT(secs, 8.0);
  expect_still_works(sandbox);
}

TEST_F(RewardSandboxTest, ForkBombHitsTheProcessLimit) {
  Sandbox sandbox(options_);
  SandboxResult r = sandbox.run_python(
      "import os, time\nn = 0\n"
      "try:\n"
      "    while True:\n"
      "        if os.fork() == 0:\n"
      "            time.sleep(60)\n"
      "            os._exit(0)\n"
      "        n += 1\n"
      "except OSError as e:\n"
      "    print('forked=%d error=%s' % (n, type(e).__name__))\n",
      "", 5);
  ASSERT_TRUE(r.ok()) << r.error << r.stderr_data;
  auto f = facts(r);
  // NPROC binds the dedicated uid: at most 32 processes, then EAGAIN (BlockingIOError).
  EXPECT_LT(std::stoi(f["forked"]), options_.limits.max_processes);
  EXPECT_NE(r.stdout_data.find("error=BlockingIOError"), std::string::npos) << r.stdout_data;
  // The sleeping children died with the jail although the program itself exited at once.
  EXPECT_LT(r.wall_seconds, 5.0);
  EXPECT_TRUE(Sandbox::processes_of_uid(r.uid).empty());
}

TEST_F(RewardSandboxTest, DetachedChildDiesWithTheJail) {
  Sandbox sandbox(options_);
  SandboxResult r = sandbox.run_python(
      "import os, sys, time\n"
      "if os.fork() == 0:\n"
      "    os.setsid()\n"
      "    os.close(1); os.close(2)\n"
      "    time.sleep(100)\n"
      "print('parent done')\n",
      "", 10);
  ASSERT_TRUE(r.ok()) << r.error << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "parent done\n");
  EXPECT_LT(r.wall_seconds, 5.0);
  EXPECT_TRUE(Sandbox::processes_of_uid(r.uid).empty());
}

// The worker that owns a jail dies (SIGKILL, no cleanup of ours runs): bwrap's --die-with-parent
// chain ends the program too. The owner is this test binary started again in a child role.
TEST(RewardSandboxOwner, JailDiesWithItsOwner) {
  const SandboxOptions o = test_options();
  if (std::getenv("ROLL_SANDBOX_TEST_OWNER")) {  // child role: run a long jail until killed
    Sandbox(o).run_python("import time\ntime.sleep(60)\n", "", 60);
    std::_Exit(0);
  }
  const std::string reason = Sandbox::unavailable_reason(o);
  if (!reason.empty()) GTEST_SKIP() << "sandbox unavailable: " << reason;
  const int range_lock = lock_test_range(o);
  ASSERT_GE(range_lock, 0);
  std::vector<std::string> args = {"/proc/self/exe", "--gtest_filter=RewardSandboxOwner.JailDiesWithItsOwner"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char env0[] = "ROLL_SANDBOX_TEST_OWNER=1";
  char* envp[] = {env0, nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t owner = -1;
  ASSERT_EQ(::posix_spawn(&owner, "/proc/self/exe", &fa, nullptr, argv.data(), envp), 0);
  posix_spawn_file_actions_destroy(&fa);
  auto wait_for = [&](bool want_running, double seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
      if (Sandbox::processes_of_uid(o.uid_base, o.uid_count).empty() != want_running) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  EXPECT_TRUE(wait_for(true, 10)) << "the owner never started its jail";
  ::kill(owner, SIGKILL);
  ::waitpid(owner, nullptr, 0);
  EXPECT_TRUE(wait_for(false, 5)) << "the jail outlived its owner";
  ::close(range_lock);
}

TEST_F(RewardSandboxTest, TenGigabyteAllocationIsStoppedAndScoredZero) {
  Sandbox sandbox(options_);
  SandboxResult r = sandbox.run_python("x = bytearray(10 * 1024 ** 3)\nprint('allocated')\n", "", 10);
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.stdout_data, "");
  EXPECT_NE(r.stderr_data.find("MemoryError"), std::string::npos) << r.stderr_data;

  // Growing step by step instead of at once is stopped the same way (a 256 MiB jail keeps the
  // memory it really touches small).
  SandboxOptions small = options_;
  small.limits.address_space_bytes = 256ull << 20;
  Sandbox small_sandbox(small);
  CodeRewardOptions ro;
  ro.timeout_s = 8;
  CodeSandboxReward reward(small_sandbox, ro);
  CodeRewardResult res = reward.compute(
      "```python\ndef f(x):\n    return x\nblocks = []\nfor _ in range(10 * 1024):\n"
      "    blocks.append(bytearray(1 << 20))\n```",
      assert_case("assert f(1) == 1"), "assert");
  EXPECT_EQ(res.score, 0.0);
  EXPECT_EQ(res.error_class, CodeErrorClass::runtime);
  EXPECT_EQ(res.error_message, "Memory Limit Exceeded");
  expect_still_works(sandbox);
}

namespace {

// SIGKILLs the first bwrap this process starts (as the OOM killer or an operator would); returns
// at once after one kill, or after ~5 s without one.
std::thread kill_first_jail() {
  return std::thread([parent = ::getpid()] {
    for (int tries = 0; tries < 500; ++tries) {
      for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream stat(e.path() / "stat");
        std::string line;
        std::getline(stat, line);
        const size_t close = line.rfind(')');
        if (close == std::string::npos || line.find("(bwrap)") == std::string::npos) continue;
        std::istringstream rest(line.substr(close + 2));
        char state;
        int ppid = 0;
        rest >> state >> ppid;
        if (ppid != parent) continue;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the program is running by now
        ::kill(std::stoi(name), SIGKILL);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
}

}  // namespace

TEST_F(RewardSandboxTest, AJailKilledFromOutsideIsMarkedAndTheRewardRunsItAgain) {
  Sandbox sandbox(options_);
  std::thread killer = kill_first_jail();
  SandboxResult r = sandbox.run_python("import time\ntime.sleep(5)\nprint(1)\n", "", 10);
  killer.join();
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_TRUE(r.jail_killed);
  EXPECT_FALSE(r.killed);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_FALSE(r.ok());
  EXPECT_LT(r.wall_seconds, 5.0);

  // A correct solution whose first jail is killed from outside still scores 1.
  CodeSandboxReward reward(sandbox, CodeRewardOptions{});
  killer = kill_first_jail();
  CodeRewardResult res = reward.compute("```python\nimport time\ntime.sleep(1)\nprint(int(input()) + 1)\n```",
                                        nlohmann::json{{"inputs", {"1"}}, {"outputs", {"2"}}}, "");
  killer.join();
  EXPECT_EQ(res.score, 1.0) << res.error_message;
}

TEST_F(RewardSandboxTest, InfiniteLoopTimesOutAndScoresZero) {
  Sandbox sandbox(options_);
  SandboxResult r = sandbox.run_python("while True:\n    pass\n", "", 1.0);
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_TRUE(r.timed_out);
  EXPECT_TRUE(r.killed);
  EXPECT_FALSE(r.ok());
  EXPECT_GE(r.wall_seconds, 1.0);
  EXPECT_LT(r.wall_seconds, 3.0);
  EXPECT_TRUE(Sandbox::processes_of_uid(r.uid).empty());

  CodeRewardOptions ro;
  ro.timeout_s = 1;
  ro.startup_allowance_s = 1;
  CodeSandboxReward reward(sandbox, ro);
  CodeRewardResult res = reward.compute(
      "```python\ndef add(a, b):\n    while True:\n        pass\n```",
      nlohmann::json{{"inputs", {"1\n2"}}, {"outputs", {"3"}}, {"fn_name", "add"}}, "");
  EXPECT_EQ(res.score, 0.0);
  EXPECT_EQ(res.error_class, CodeErrorClass::runtime);
  EXPECT_EQ(res.error_message, "Time Limit Exceeded");
}

TEST_F(RewardSandboxTest, CpuLimitKillsABusyProgram) {
  Sandbox sandbox(options_);
  SandboxRequest req;
  req.argv = {options_.python, "-I", "-c", "while True:\n    pass\n"};
  req.timeout_s = 10;
  SandboxLimits lim = options_.limits;
  lim.cpu_seconds = 1;
  req.limits = lim;
  SandboxResult r = sandbox.run(req);
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.signal, 0);  // SIGXCPU at the soft limit (SIGKILL at the hard one)
  EXPECT_LT(r.wall_seconds, 5.0);
}

TEST_F(RewardSandboxTest, GigabyteOfOutputIsCutAndScoresZero) {
  Sandbox sandbox(options_);
  const auto t0 = std::chrono::steady_clock::now();
  SandboxResult r = sandbox.run_python(
      "import sys\nb = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(b)\n", "", 20);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_TRUE(r.output_truncated);
  EXPECT_TRUE(r.killed);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.stdout_data.size(), options_.stdout_cap);
  EXPECT_LT(secs, 5.0);

  SandboxResult e = sandbox.run_python(
      "import sys\nb = 'e' * (1 << 20)\nfor _ in range(1024):\n    sys.stderr.write(b)\n", "", 20);
  EXPECT_TRUE(e.output_truncated);
  EXPECT_EQ(e.stderr_data.size(), options_.stderr_cap);

  CodeRewardOptions ro;
  ro.timeout_s = 10;
  CodeSandboxReward reward(sandbox, ro);
  CodeRewardResult res = reward.compute(
      "```python\nimport sys\nb = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(b)\n```",
      nlohmann::json::array({{{"stdin", ""}, {"expected_stdout", "x"}}}), "stdin");
  EXPECT_EQ(res.score, 0.0);
  EXPECT_EQ(res.error_class, CodeErrorClass::runtime);
  EXPECT_EQ(res.error_message, "Output Limit Exceeded");
  expect_still_works(sandbox);
}

TEST_F(RewardSandboxTest, FileSizeAndTmpfsAreCapped) {
  Sandbox sandbox(options_);
  SandboxResult r = sandbox.run_python(
      "def fill(path, mb):\n"
      "    try:\n"
      "        with open(path, 'wb') as f:\n"
      "            for _ in range(mb):\n"
      "                f.write(b'x' * (1 << 20))\n"
      "        return 'ok'\n"
      "    except OSError as e:\n"
      "        return '%s' % e.errno\n"
      "print('big=' + fill('/tmp/big', 100))\n"
      "print('fill=' + ','.join(fill('/tmp/f%d' % i, 15) for i in range(6)))\n",
      "", 20);
  ASSERT_TRUE(r.ok()) << r.error << r.stderr_data;
  auto f = facts(r);
  EXPECT_EQ(f["big"], "27");  // EFBIG: RLIMIT_FSIZE
  EXPECT_NE(f["fill"].find("28"), std::string::npos) << f["fill"];  // ENOSPC: the 64 MiB /tmp is full
}

TEST_F(RewardSandboxTest, ConcurrentRunsUseDistinctUids) {
  Sandbox sandbox(options_);
  std::vector<SandboxResult> results(4);
  std::vector<std::thread> threads;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] { results[i] = sandbox.run_python("import os, time\ntime.sleep(1)\nprint(os.getuid())", "", 10); });
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::set<uint32_t> uids;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.error << r.stderr_data;
    EXPECT_EQ(r.stdout_data, std::to_string(r.uid) + "\n");
    uids.insert(r.uid);
  }
  EXPECT_EQ(uids.size(), 4u);
  EXPECT_LT(secs, 3.5);  // they ran side by side
}

TEST_F(RewardSandboxTest, SetupFailureIsReportedNotRun) {
  Sandbox sandbox(options_);
  SandboxRequest req;
  req.argv = {"/usr/bin/roll-no-such-program"};
  SandboxResult r = sandbox.run(req);
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("roll-no-such-program"), std::string::npos) << r.error;

  CodeRewardResult res;
  classify_failure(r, res);
  EXPECT_EQ(res.error_class, CodeErrorClass::environment);
}

TEST(RewardSandboxAvailability, ExplainsWhatIsMissing) {
  SandboxOptions o;
  o.bwrap = "/usr/bin/roll-no-bwrap";
  const std::string reason = Sandbox::unavailable_reason(o);
  EXPECT_FALSE(reason.empty());
  Sandbox sandbox(o);
  SandboxResult r = sandbox.run_python("print(1)", "", 5);
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.error, reason);
  o = SandboxOptions{};
  o.uid_base = 0;  // root's uid is never a sandbox uid
  EXPECT_FALSE(Sandbox::unavailable_reason(o).empty());
}
