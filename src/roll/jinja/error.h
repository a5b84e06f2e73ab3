#pragma once
// The error every template problem raises: a syntax error, a runtime type error or the template's
// own raise_exception(). It names the template and the template line so that a user with a broken
// tokenizer_config.json can find the statement at fault.
#include <string>

#include "roll/core/error.h"

namespace roll::jinja {

class TemplateError : public roll::Error {
 public:
  TemplateError(const std::string& template_name, int line, const std::string& message)
      : roll::Error("template '" + template_name + "' line " + std::to_string(line) + ": " + message),
        line_(line),
        message_(message) {}
  int line() const { return line_; }
  // The message without the location prefix (raise_exception's argument, for instance).
  const std::string& message() const { return message_; }

 private:
  int line_;
  std::string message_;
};

}  // namespace roll::jinja
