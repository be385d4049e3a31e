#include "emu/rt/json_path.h"

#include <string>

namespace nvl::rt {

const nlohmann::json* value_at(const nlohmann::json& doc, std::string_view dotted_path) {
  const nlohmann::json* node = &doc;
  std::size_t begin = 0;
  for (;;) {
    const auto dot = dotted_path.find('.', begin);
    const std::string key(dotted_path.substr(begin, dot == std::string_view::npos ? std::string_view::npos : dot - begin));
    if (key.empty() || !node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
    if (dot == std::string_view::npos) return node;
    begin = dot + 1;
  }
}

std::optional<double> number_at(const nlohmann::json& doc, std::string_view dotted_path) {
  const nlohmann::json* v = value_at(doc, dotted_path);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

}  // namespace nvl::rt
