#pragma once
// The last lines of a text file, for log tails (the dashboard, a worker's __log_tail answer).
#include <cstddef>
#include <string>
#include <vector>

namespace roll::core {

// The last `lines` lines of `path`, read from at most its last `max_bytes` (a partial first line
// is dropped). Empty when the file cannot be read.
std::vector<std::string> last_lines(const std::string& path, size_t lines, size_t max_bytes = 64 << 10);

}  // namespace roll::core
