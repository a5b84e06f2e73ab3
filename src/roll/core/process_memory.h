#pragma once
// How much memory a process holds, from /proc (docs/memory.md): the resident set now and its peak
// (VmRSS, VmHWM), and the machine's physical memory. Workers report these with their busy clocks,
// so each step's metrics carry system/peak_rss_mb/<cluster>, the figure the memory plan predicts.
#include <cstdint>
#include <optional>
#include <sys/types.h>

namespace roll::core {

struct ProcessMemory {
  int64_t rss_bytes = 0;       // VmRSS
  int64_t peak_rss_bytes = 0;  // VmHWM: the most the process has held resident since it started
};

// nullopt when /proc/<pid>/status cannot be read (the process is gone, or no procfs).
std::optional<ProcessMemory> process_memory(pid_t pid = 0);  // 0: this process

// The machine's physical memory (sysconf); 8 GiB when the system will not say.
int64_t physical_memory_bytes();

}  // namespace roll::core
