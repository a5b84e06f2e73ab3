#pragma once
// Problems found while loading a config: errors are collected (so `roll validate` can list them
// all) and thrown together at the end; warnings are printed.
#include <string>
#include <vector>

#include "roll/core/error.h"

namespace roll::config {

struct Diagnostic {
  std::string key;      // dotted path, "" for file-level problems
  std::string message;  // complete sentence naming key, file and line
};

class Diagnostics {
 public:
  void error(std::string key, std::string message) { errors_.push_back({std::move(key), std::move(message)}); }
  void warn(std::string key, std::string message) { warnings_.push_back({std::move(key), std::move(message)}); }
  void unknown_key(std::string path, std::string where) { unknown_.push_back({std::move(path), std::move(where)}); }

  const std::vector<Diagnostic>& errors() const { return errors_; }
  const std::vector<Diagnostic>& warnings() const { return warnings_; }
  const std::vector<Diagnostic>& unknown_keys() const { return unknown_; }
  bool ok() const { return errors_.empty(); }

  // Throws ConfigErrors with every error when there is at least one.
  void throw_if_errors() const;

 private:
  std::vector<Diagnostic> errors_, warnings_, unknown_;
};

// Several configuration errors at once; what() lists them one per line.
class ConfigErrors : public ConfigError {
 public:
  explicit ConfigErrors(std::vector<Diagnostic> errors);
  const std::vector<Diagnostic>& errors() const { return errors_; }

 private:
  std::vector<Diagnostic> errors_;
};

}  // namespace roll::config
