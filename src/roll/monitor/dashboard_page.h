#pragma once
// The dashboard's page (dashboard_page.html, embedded into the binary at build time).
#include <string_view>

namespace roll::monitor {

std::string_view dashboard_page_html();

}  // namespace roll::monitor
