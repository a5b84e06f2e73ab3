#pragma once
// Splits template source into tokens as Jinja's lexer does, whitespace control included: `{%-` and
// `-%}` strip, trim_blocks drops the newline after a block or comment tag, lstrip_blocks drops the
// indentation before one (HF renders with both on). Comments vanish here; `{% raw %}` becomes data.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace roll::jinja {

enum class TokenType { Data, VariableBegin, VariableEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Operator, End };

struct Token {
  TokenType type;
  std::string text;  // data, name, unescaped string literal or operator
  std::int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Syntax errors are TemplateError naming `template_name` and the line.
std::vector<Token> tokenize(std::string_view source, const std::string& template_name, const LexerOptions& options);

}  // namespace roll::jinja
