#pragma once
// HTML escaping as Python's markupsafe.escape does it (& < > " '): the chat templates' jinja
// `escape` filter and the report pages share it.
#include <string>
#include <string_view>

namespace roll {

std::string html_escape(std::string_view s);

}  // namespace roll
