#pragma once
// A value of a JSON document by its dotted key path ("latency_ms.ttft.p90"), as scenario assertions, study
// files and report comparisons name report.json's figures.
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace nvl::rt {

// Null where the document has no such path (an empty key, such as "a..b", never matches).
const nlohmann::json* value_at(const nlohmann::json& doc, std::string_view dotted_path);
// The number there; nullopt where the path holds none.
std::optional<double> number_at(const nlohmann::json& doc, std::string_view dotted_path);

}  // namespace nvl::rt
