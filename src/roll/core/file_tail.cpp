#include "roll/core/file_tail.h"

#include <fstream>
#include <iterator>

namespace roll::core {

std::vector<std::string> last_lines(const std::string& path, size_t lines, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff size = in.tellg();
  const auto window = static_cast<std::streamoff>(max_bytes);
  const std::streamoff from = size > window ? size - window : 0;
  in.seekg(from);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> all;
  size_t start = 0;
  if (from > 0) {
    const size_t nl = text.find('\n');
    start = nl == std::string::npos ? text.size() : nl + 1;
  }
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    all.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  if (all.size() > lines) all.erase(all.begin(), all.end() - static_cast<std::ptrdiff_t>(lines));
  return all;
}

}  // namespace roll::core
