#include "roll/core/thread_stacks.h"

#include <cxxabi.h>
#include <dirent.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <execinfo.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "roll/core/proc_stat.h"

namespace roll::core {
namespace {

constexpr int kMaxFrames = 64;

// The one capture in progress. `target` holds the tid asked to record; the handler of that thread
// claims it by swapping in -tid, so a thread that answers after its turn timed out finds another
// tid there and leaves the frames alone.
std::atomic<int> g_target{0};
std::array<void*, kMaxFrames> g_frames;
std::atomic<int> g_count{0};
std::atomic<uintptr_t> g_interrupted_pc{0};
sem_t g_done;
std::once_flag g_installed;
std::mutex g_capture;

int stack_signal() { return SIGRTMIN + 3; }

int current_tid() { return static_cast<int>(syscall(SYS_gettid)); }

// Where the signal interrupted the thread (0 where the architecture is not known here: the
// frames are then cut after the handler's two).
uintptr_t interrupted_pc(void* context) {
  [[maybe_unused]] auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.pc);
#else
  return 0;
#endif
}

void on_stack_signal(int, siginfo_t*, void* context) {
  const int saved_errno = errno;
  const int tid = current_tid();
  int expected = tid;
  if (g_target.compare_exchange_strong(expected, -tid)) {
    g_interrupted_pc = interrupted_pc(context);
    g_count = backtrace(g_frames.data(), kMaxFrames);
    sem_post(&g_done);
  }
  errno = saved_errno;
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

std::string state_name(char c) {
  switch (c) {
    case 'R': return "R (running)";
    case 'S': return "S (sleeping)";
    case 'D': return "D (disk sleep: uninterruptible, in the kernel)";
    case 'T': return "T (stopped)";
    case 't': return "t (tracing stop)";
    case 'Z': return "Z (zombie)";
    case 'X': return "X (dead)";
    case 'I': return "I (idle)";
    default: return std::string(1, c);
  }
}

std::vector<int> thread_ids() {
  std::vector<int> tids;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.push_back(std::atoi(e->d_name));
    closedir(d);
  }
  return tids;
}

std::string demangle(const char* name) {
  if (!name) return {};
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

// An inlined function's name: its linkage name demangled, else its plain name (from the abstract
// origin the inlined scope points to).
std::string die_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name})
    if (const char* s = dwarf_formstring(dwarf_attr_integrate(die, at, &attr))) return demangle(s);
  if (const char* s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr))) return s;
  return "??";
}

// Names and source lines of addresses in this process's modules (libdw).
class Symbolizer {
 public:
  Symbolizer() {
    callbacks_.find_elf = dwfl_linux_proc_find_elf;
    callbacks_.find_debuginfo = dwfl_standard_find_debuginfo;
    callbacks_.debuginfo_path = &debuginfo_path_;
    dwfl_ = dwfl_begin(&callbacks_);
    if (dwfl_) {
      dwfl_report_begin(dwfl_);
      if (dwfl_linux_proc_report(dwfl_, getpid()) != 0 || dwfl_report_end(dwfl_, nullptr, nullptr) != 0) {
        dwfl_end(dwfl_);
        dwfl_ = nullptr;
      }
    }
  }
  ~Symbolizer() {
    if (dwfl_) dwfl_end(dwfl_);
  }

  // The frames at return address `pc` (`lookup`: the address to name, pc - 1 for a return
  // address so that the call's line is found), innermost first: one per inlined call, then the
  // function proper.
  std::vector<StackFrame> frames_at(uintptr_t pc, uintptr_t lookup) {
    StackFrame base;
    base.pc = pc;
    if (!dwfl_) return {base};
    Dwfl_Module* m = dwfl_addrmodule(dwfl_, lookup);
    if (!m) return {base};
    const char* mainfile = nullptr;
    const char* modname = dwfl_module_info(m, nullptr, nullptr, nullptr, nullptr, nullptr, &mainfile, nullptr);
    std::string mod = modname ? modname : (mainfile ? mainfile : "");
    if (auto slash = mod.rfind('/'); slash != std::string::npos) mod = mod.substr(slash + 1);
    base.module = mod;
    base.function = demangle(dwfl_module_addrname(m, lookup));
    // The line table's row is the innermost inlined code's; each inlined scope names its call site,
    // which is the line of the frame around it.
    std::string file;
    int line = 0;
    if (Dwfl_Line* l = dwfl_module_getsrc(m, lookup)) {
      if (const char* f = dwfl_lineinfo(l, nullptr, &line, nullptr, nullptr, nullptr)) file = f;
    }
    std::vector<StackFrame> out;
    Dwarf_Addr bias = 0;
    Dwarf_Die* cu = dwfl_module_addrdie(m, lookup, &bias);
    Dwarf_Files* files = nullptr;
    size_t nfiles = 0;
    if (cu && dwarf_getsrcfiles(cu, &files, &nfiles) != 0) files = nullptr;
    Dwarf_Die* scopes = nullptr;
    const int n = cu ? dwarf_getscopes(cu, lookup - bias, &scopes) : 0;
    for (int i = 0; i < n; ++i) {
      Dwarf_Die* die = &scopes[i];
      const int tag = dwarf_tag(die);
      if (tag == DW_TAG_subprogram) break;
      if (tag != DW_TAG_inlined_subroutine) continue;
      StackFrame f = base;
      f.function = die_name(die);
      f.file = file;
      f.line = line;
      f.inlined = true;
      out.push_back(std::move(f));
      Dwarf_Attribute attr;
      Dwarf_Word v = 0;
      file.clear();
      line = 0;
      if (files && dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &v) == 0)
        if (const char* name = dwarf_filesrc(files, v, nullptr, nullptr)) file = name;
      if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &v) == 0) line = static_cast<int>(v);
    }
    std::free(scopes);
    base.file = file;
    base.line = line;
    out.push_back(std::move(base));
    return out;
  }

 private:
  char* debuginfo_path_ = nullptr;
  Dwfl_Callbacks callbacks_{};
  Dwfl* dwfl_ = nullptr;
};

bool wait_done(std::chrono::milliseconds timeout) {
  timespec deadline{};
  clock_gettime(CLOCK_REALTIME, &deadline);
  const auto ns = static_cast<int64_t>(deadline.tv_nsec) + std::chrono::nanoseconds(timeout).count();
  deadline.tv_sec += static_cast<time_t>(ns / 1000000000);
  deadline.tv_nsec = static_cast<long>(ns % 1000000000);
  while (sem_timedwait(&g_done, &deadline) != 0)
    if (errno != EINTR) return false;
  return true;
}

}  // namespace

void install_thread_stack_handler() {
  std::call_once(g_installed, [] {
    sem_init(&g_done, 0, 0);
    // The first backtrace() loads libgcc_s (dlopen, malloc): done here, never in the handler.
    void* warm[2];
    backtrace(warm, 2);
    struct sigaction sa {};
    sa.sa_sigaction = on_stack_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(stack_signal(), &sa, nullptr);
  });
}

std::string process_state(int pid, int tid) {
  const auto fields = proc_stat_fields(pid, tid);
  return fields.empty() || fields[0].empty() ? std::string() : state_name(fields[0][0]);
}

std::vector<ThreadStack> capture_thread_stacks(std::chrono::milliseconds per_thread) {
  install_thread_stack_handler();
  std::lock_guard<std::mutex> one_at_a_time(g_capture);
  const int pid = getpid();
  struct Raw {
    ThreadStack stack;
    uintptr_t interrupted = 0;
    std::vector<uintptr_t> pcs;
  };
  std::vector<Raw> raws;
  for (int tid : thread_ids()) {
    Raw r;
    r.stack.tid = tid;
    r.stack.name = read_first_line(fmt::format("/proc/self/task/{}/comm", tid));
    r.stack.state = process_state(pid, tid);
    g_count = 0;
    g_target = tid;
    bool answered = syscall(SYS_tgkill, pid, tid, stack_signal()) == 0 && wait_done(per_thread);
    if (!answered && g_target.exchange(0) == -tid) answered = wait_done(std::chrono::seconds(5));  // claimed: finishing
    g_target = 0;
    if (answered) {
      r.stack.answered = true;
      r.interrupted = g_interrupted_pc;
      for (int i = 0; i < g_count; ++i) r.pcs.push_back(reinterpret_cast<uintptr_t>(g_frames[i]));
    }
    raws.push_back(std::move(r));
  }
  // Names and lines after every thread ran again: libdw allocates and reads files.
  Symbolizer symbols;
  std::vector<ThreadStack> out;
  for (auto& r : raws) {
    // The recorded frames start in the handler and the signal trampoline; the stack proper starts
    // at the interrupted instruction.
    size_t first = 0;
    while (first < r.pcs.size() && r.pcs[first] != r.interrupted) ++first;
    if (first == r.pcs.size()) first = std::min<size_t>(2, r.pcs.size());
    for (size_t i = first; i < r.pcs.size(); ++i)
      for (auto& f : symbols.frames_at(r.pcs[i], i == first ? r.pcs[i] : r.pcs[i] - 1))
        r.stack.frames.push_back(std::move(f));
    out.push_back(std::move(r.stack));
  }
  return out;
}

std::string format_thread_stacks(const std::vector<ThreadStack>& stacks) {
  std::ostringstream s;
  for (const auto& t : stacks) {
    s << fmt::format("thread {} {} ({})", t.tid, t.name, t.state);
    if (!t.answered) s << ": did not answer (the signal is blocked, or the thread is stuck in the kernel)";
    s << "\n";
    for (size_t i = 0; i < t.frames.size(); ++i) {
      const auto& f = t.frames[i];
      s << fmt::format("  #{:<2} 0x{:012x} {}", i, f.pc, f.function.empty() ? "??" : f.function);
      if (!f.file.empty()) s << fmt::format(" at {}:{}", f.file, f.line);
      if (!f.module.empty()) s << " [" << f.module << "]";
      if (f.inlined) s << " (inlined)";
      s << "\n";
    }
  }
  return s.str();
}

nlohmann::json thread_stacks_json(const std::vector<ThreadStack>& stacks) {
  nlohmann::json threads = nlohmann::json::array();
  for (const auto& t : stacks) {
    nlohmann::json frames = nlohmann::json::array();
    for (const auto& f : t.frames)
      frames.push_back({{"pc", f.pc}, {"function", f.function}, {"file", f.file}, {"line", f.line}, {"module", f.module}, {"inlined", f.inlined}});
    threads.push_back({{"tid", t.tid}, {"name", t.name}, {"state", t.state}, {"answered", t.answered}, {"frames", frames}});
  }
  return threads;
}

}  // namespace roll::core
