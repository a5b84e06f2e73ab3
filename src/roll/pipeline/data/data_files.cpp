#include "roll/pipeline/data/data_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "roll/core/error.h"

namespace roll::pipeline {
namespace {

namespace fs = std::filesystem;

constexpr size_t kNamedProblems = 5;   // malformed rows named per file
constexpr size_t kProblemChars = 200;  // of each message

std::string extension_of(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

JsonRecord parse_record(std::string_view text, int64_t line) {
  JsonRecord r;
  r.line = line;
  try {
    r.value = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number too large
    r.value = nullptr;
    r.error = fmt::format("bad JSON: {}", e.what());
  }
  return r;
}

std::vector<JsonRecord> json_lines(const std::string& text) {
  std::vector<JsonRecord> out;
  size_t pos = 0;
  for (int64_t line = 1; pos <= text.size(); ++line) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string_view row(text.data() + pos, nl - pos);
    if (std::any_of(row.begin(), row.end(), [](char c) { return !is_blank(c); })) out.push_back(parse_record(row, line));
    pos = nl + 1;
  }
  return out;
}

// Splits a top-level array into its elements by scanning strings and brackets (each element is
// then parsed alone, so one bad element does not lose the file).
std::vector<JsonRecord> json_array(const std::string& path, const std::string& text, size_t open) {
  std::vector<JsonRecord> out;
  int64_t line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(open), '\n');
  const int64_t open_line = line;
  int depth = 0;
  bool in_string = false, escaped = false;
  size_t start = std::string::npos;  // start of the current element
  int64_t start_line = 0;
  auto finish = [&](size_t end) {
    if (start == std::string::npos) {
      out.push_back({nullptr, line, "empty array element"});
    } else {
      out.push_back(parse_record(std::string_view(text.data() + start, end - start), start_line));
      start = std::string::npos;
    }
  };
  for (size_t i = open + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (depth == 0 && (c == ',' || c == ']')) {
      if (c == ']' && start == std::string::npos && out.empty()) return out;  // "[]"
      finish(i);
      if (c == ']') {
        for (size_t k = i + 1; k < text.size(); ++k)
          if (!is_blank(text[k])) {
            const int64_t at = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(k), '\n');
            throw Error(fmt::format("{}:{}: unexpected text after the closing ']' of the JSON array", path, at));
          }
        return out;
      }
      continue;
    }
    if (!is_blank(c) && start == std::string::npos) {
      start = i;
      start_line = line;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if ((c == '}' || c == ']') && depth > 0) --depth;
  }
  throw Error(fmt::format("{}:{}: the JSON array opened here is never closed", path, open_line));
}

}  // namespace

std::vector<JsonRecord> read_json_records(const std::string& path) {
  const std::string ext = extension_of(path);
  if (ext == ".arrow" || ext == ".csv" || ext == ".parquet" || ext == ".txt")
    throw NotSupportedError(fmt::format("data file type '{}' ({})", ext, path));
  if (ext != ".json" && ext != ".jsonl")
    throw Error(fmt::format("{}: unknown data file type '{}'; RLVR data files are .json or .jsonl", path, ext));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open the data file", path));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("{}: cannot read the data file", path));
  std::string text = buffer.str();
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.replace(0, 3, 3, ' ');  // UTF-8 BOM; keeps offsets
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (ext == ".json" && first != std::string::npos && text[first] == '[') return json_array(path, text, first);
  return json_lines(text);
}

void note_malformed_row(int64_t line, const std::string& why, int64_t& count, std::vector<std::string>& named) {
  ++count;
  if (named.size() >= kNamedProblems) return;
  named.push_back(fmt::format("line {}: {}", line, why.size() > kProblemChars ? why.substr(0, kProblemChars) + "..." : why));
}

std::string malformed_summary(int64_t count, const std::vector<std::string>& named) {
  std::string out;
  for (const auto& p : named) out += (out.empty() ? "" : "; ") + p;
  if (count > static_cast<int64_t>(named.size()))
    out += fmt::format("; ({} more)", count - static_cast<int64_t>(named.size()));
  return out;
}

std::vector<std::string> expand_data_files(const std::vector<std::string>& names, const std::string& key) {
  std::vector<std::string> out;
  for (const auto& name : names) {
    std::error_code ec;
    if (fs::is_directory(name, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(name, ec)) {
        const std::string ext = extension_of(entry.path().string());
        if (entry.is_regular_file() && (ext == ".json" || ext == ".jsonl")) found.push_back(entry.path().string());
      }
      if (ec) throw Error(fmt::format("{}: cannot list the directory '{}': {}", key, name, ec.message()));
      if (found.empty()) throw Error(fmt::format("{}: the directory '{}' holds no .json or .jsonl file", key, name));
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(name, ec)) {
      out.push_back(name);
    } else {
      throw Error(fmt::format("{}: the data file '{}' does not exist", key, name));
    }
  }
  return out;
}

}  // namespace roll::pipeline
