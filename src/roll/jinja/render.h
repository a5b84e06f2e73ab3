#pragma once
// Runs a parsed template against a context. Scopes follow Jinja: each for-loop iteration, macro
// call and with/generation block gets its own (so `set` there does not leak out; namespaces carry
// state across), `if` does not. Provides `loop`, macros, break/continue. Any error, including
// raise_exception(), becomes a TemplateError naming the template line it happened on.
#include <string>

#include "roll/jinja/ast.h"
#include "roll/jinja/value.h"

namespace roll::jinja {

std::string render(const Body& body, const std::string& template_name, const ValueDict& context);

}  // namespace roll::jinja
