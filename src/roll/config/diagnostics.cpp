#include "roll/config/diagnostics.h"

namespace roll::config {
namespace {
std::string join_messages(const std::vector<Diagnostic>& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += "\n";
    out += e.message;
  }
  return out;
}
}  // namespace

ConfigErrors::ConfigErrors(std::vector<Diagnostic> errors)
    : ConfigError(errors.empty() ? "" : errors.front().key, join_messages(errors)), errors_(std::move(errors)) {}

void Diagnostics::throw_if_errors() const {
  if (!errors_.empty()) throw ConfigErrors(errors_);
}

}  // namespace roll::config
