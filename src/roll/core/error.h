#pragma once
// Errors raised on bad input. Every message names what is at fault (key, file, line, tensor,
// worker) so a user can fix it without reading our code.
#include <stdexcept>
#include <string>

namespace roll {

// Bad user input or an impossible request: reported to the user, never a crash.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A configuration problem; `key` is the dotted path (may be empty for file-level problems).
class ConfigError : public Error {
 public:
  ConfigError(std::string key, const std::string& message)
      : Error(message), key_(std::move(key)) {}
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// A feature ROLL has that rollcpp does not implement yet (listed in docs/known-gaps.md).
class NotSupportedError : public Error {
 public:
  explicit NotSupportedError(const std::string& what)
      : Error(what + " is not supported in rollcpp yet; see docs/known-gaps.md") {}
};

}  // namespace roll
