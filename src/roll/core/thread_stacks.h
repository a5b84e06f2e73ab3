#pragma once
// Every thread's stack of this process, with function names and source lines (docs/runtime.md,
// "Hang watchdog"): what a worker answers when the driver's watchdog finds a call running far
// past its usual time, and what `roll status --stacks` prints on demand.
//
// Each thread is interrupted in turn by a real-time signal whose handler records its return
// addresses (glibc backtrace); names and lines come from the binary's symbol table and its -g1
// line tables through elfutils' libdw, with inlined calls expanded into frames of their own (as
// gdb and eu-stack -i show them), so a frame's line is in that frame's function. The handler is installed with SA_RESTART, so blocking reads
// and writes resume; poll-like calls return EINTR, which the RPC loops retry.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace roll::core {

struct StackFrame {
  uintptr_t pc = 0;
  std::string function;  // demangled; empty when the address has no symbol
  std::string file;      // source file of the line tables; empty without them
  int line = 0;
  std::string module;    // the binary or shared library, basename
  bool inlined = false;  // a function inlined into the next frame (same pc; its line is in the caller)
};

struct ThreadStack {
  int tid = 0;
  std::string name;   // /proc/self/task/<tid>/comm
  std::string state;  // "S (sleeping)", "R (running)", ...
  bool answered = false;  // false: the thread did not run the handler in time (signal blocked)
  std::vector<StackFrame> frames;  // innermost first
};

// Installs the handler (once per process; later calls do nothing). Workers call it at start.
void install_thread_stack_handler();

// Every thread of this process; one capture at a time per process. A thread that does not take
// the signal within `per_thread` is listed with answered = false and its /proc state.
std::vector<ThreadStack> capture_thread_stacks(std::chrono::milliseconds per_thread = std::chrono::milliseconds(500));

// "thread 4242 roll (S (sleeping))\n  #0 0x... roll::f(int) at src/x.cpp:12 [roll]\n..."
std::string format_thread_stacks(const std::vector<ThreadStack>& stacks);
nlohmann::json thread_stacks_json(const std::vector<ThreadStack>& stacks);

// /proc/<pid>/stat's state letter with its meaning ("T (stopped)"), or "" when unreadable.
std::string process_state(int pid, int tid = 0);

}  // namespace roll::core
