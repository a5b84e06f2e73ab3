#pragma once
// Log destinations beyond stderr (kept out of log.h, which every file includes).
#include <string>
#include <vector>

namespace roll::log {

// Also writes every line to `path` (created with its folder; appended to), as ROLL's
// log_rank_<WORKER_NAME>_<RANK>_<WORLD_SIZE>.log; lines reach the file as they are logged, so a
// crash loses none. Throws roll::Error naming the file.
void add_file(const std::string& path);
// The files add_file opened, in order.
std::vector<std::string> files();
// Flushes every sink (before a process exits or reports a failure).
void flush();

}  // namespace roll::log
