#pragma once
// Reading the rows of ROLL's JSON data files (docs/config.md DataArguments.file_name, 4.1), before any
// encoding: `.jsonl` is JSON lines; `.json` is a JSON array when its first character is '[', else
// JSON lines (HF datasets' json loader reads both). Each row keeps the line it starts on, so bad rows
// can be reported as file:line. A row that does not parse is returned with its error, not thrown:
// the caller counts and reports it and keeps the other rows.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace roll::pipeline {

struct JsonRecord {
  nlohmann::json value;  // null when error is set
  int64_t line = 0;      // 1-based line where the row starts
  std::string error;     // why the row could not be parsed ("" when it could)
};

// Throws roll::Error naming the file when it cannot be opened, or a JSON array is not closed;
// NotSupportedError for ROLL's other data types (arrow, csv, parquet, txt).
std::vector<JsonRecord> read_json_records(const std::string& path);

// Malformed rows of one file as the loaders report them: every one counted in `count`, the first
// few named in `named` as "line N: why" (why shortened).
void note_malformed_row(int64_t line, const std::string& why, int64_t& count, std::vector<std::string>& named);
// "line 3: why; line 9: why; (4 more)", or "" when there are none.
std::string malformed_summary(int64_t count, const std::vector<std::string>& named);

// file_name entries as ROLL takes them: a file stays, a directory becomes its .json/.jsonl files in
// name order. Throws roll::Error naming `key` and the entry when it does not exist or a directory
// holds no data file.
std::vector<std::string> expand_data_files(const std::vector<std::string>& names, const std::string& key);

}  // namespace roll::pipeline
