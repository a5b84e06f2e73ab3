#include "roll/core/process_memory.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace roll::core {

std::optional<ProcessMemory> process_memory(pid_t pid) {
  const std::string path = pid == 0 ? "/proc/self/status" : "/proc/" + std::to_string(pid) + "/status";
  std::ifstream in(path);
  if (!in) return std::nullopt;
  ProcessMemory m;
  bool rss = false, hwm = false;
  std::string line;
  while (std::getline(in, line)) {
    long long kb = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %lld kB", &kb) == 1) m.rss_bytes = kb * 1024, rss = true;
    else if (std::sscanf(line.c_str(), "VmHWM: %lld kB", &kb) == 1) m.peak_rss_bytes = kb * 1024, hwm = true;
  }
  if (!rss || !hwm) return std::nullopt;  // a kernel thread or a zombie has no memory lines
  return m;
}

int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : int64_t{8} << 30;
}

}  // namespace roll::core
