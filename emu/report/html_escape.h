#pragma once
// Text for HTML and SVG: the characters markup gives meaning to, as entities (safe in element text
// and in quoted attribute values).
#include <string>
#include <string_view>

namespace nvl::emu {

std::string html_escape(std::string_view s);

}  // namespace nvl::emu
