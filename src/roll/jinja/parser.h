#pragma once
// Builds the syntax tree from tokens with Jinja's grammar and operator precedence (condition,
// or, and, not, comparisons, + -, ~, * / // %, **, unary, then postfix, filters and tests).
// Statements: for (with else, inline if), if/elif/else, set (incl. ns.attr and block form),
// macro, with, filter blocks, break/continue, print and HF's generation tag. Template
// inheritance and includes are rejected with an error naming the line.
#include <string>
#include <vector>

#include "roll/jinja/ast.h"
#include "roll/jinja/lexer.h"

namespace roll::jinja {

Body parse(const std::vector<Token>& tokens, const std::string& template_name);

}  // namespace roll::jinja
