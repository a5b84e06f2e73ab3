#include "roll/core/proc_stat.h"

#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

namespace roll::core {

std::vector<std::string> proc_stat_fields(int pid, int tid) {
  std::ifstream in(tid > 0 ? fmt::format("/proc/{}/task/{}/stat", pid, tid) : fmt::format("/proc/{}/stat", pid));
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // "pid (comm) S ...": comm may hold spaces and parentheses; the fields follow the last ')'.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(stat.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(std::move(f));
  return fields;
}

}  // namespace roll::core
