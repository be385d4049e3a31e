// Dotted key paths into a JSON document, as assertions, studies and comparisons name report figures.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emu/rt/json_path.h"

namespace nvl::rt {
namespace json_path_test {

TEST(JsonPath, FindsNestedNumbersAndNothingElse) {
  const nlohmann::json doc = {{"latency_ms", {{"ttft", {{"p90", 12.5}}}}}, {"scenario", "s"}, {"a.b", 1}};
  EXPECT_EQ(number_at(doc, "latency_ms.ttft.p90"), 12.5);
  EXPECT_NE(value_at(doc, "latency_ms.ttft"), nullptr);
  EXPECT_FALSE(number_at(doc, "latency_ms.ttft").has_value()) << "an object, not a number";
  EXPECT_FALSE(number_at(doc, "scenario").has_value()) << "a string";
  EXPECT_EQ(value_at(doc, "latency_ms..p90"), nullptr);
  EXPECT_EQ(value_at(doc, ""), nullptr);
  EXPECT_EQ(value_at(doc, "latency_ms.ttft.p90.x"), nullptr);
  EXPECT_EQ(value_at(doc, "a.b"), nullptr) << "a dot always separates keys";
}

}  // namespace json_path_test
}  // namespace nvl::rt
