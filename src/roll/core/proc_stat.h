#pragma once
// A process's or thread's /proc stat line, split: what the watchdog (its state letter) and the
// dashboard (its CPU time) read.
#include <string>
#include <vector>

namespace roll::core {

// The fields of /proc/<pid>/stat (of /proc/<pid>/task/<tid>/stat when tid > 0) after the command
// name, in order: [0] the state letter, ... [11] utime, [12] stime (clock ticks). Empty when it
// cannot be read (the process is gone).
std::vector<std::string> proc_stat_fields(int pid, int tid = 0);

}  // namespace roll::core
