// The replay's arithmetic on hand-made numbers: error in percent, quantiles, groups with their median and
// p90 |error| and not-expressible reasons, and the JSON names that checks outside the project read.
#include <gtest/gtest.h>

#include <sstream>

#include "emu/measured/replay_summary.h"

namespace nvl::emu {
namespace replay_summary_test {

ReplayRow compared(const std::string& backend, double measured_ttft, double emulated_ttft, double measured_tpot,
                   double emulated_tpot) {
  return {.id = "r", .system = "gb200", .backend = backend, .precision = "fp8", .expressible = true,
          .measured_ttft_ms = measured_ttft, .measured_tpot_ms = measured_tpot, .emulated_ttft_ms = emulated_ttft,
          .emulated_tpot_ms = emulated_tpot};
}

ReplayRow refused(const std::string& backend, const std::string& reason) {
  return {.id = "n", .system = "gb200", .backend = backend, .precision = "fp8", .reason = reason,
          .measured_ttft_ms = 100, .measured_tpot_ms = 10};
}

TEST(ReplaySummary, ErrorIsRelativeToTheMeasurement) {
  EXPECT_DOUBLE_EQ(error_pct(200, 250), 25);
  EXPECT_DOUBLE_EQ(error_pct(200, 150), -25);
  const ReplayRow r = compared("sglang", 100, 90, 20, 23);
  EXPECT_DOUBLE_EQ(*r.ttft_error_pct(), -10);
  EXPECT_DOUBLE_EQ(*r.tpot_error_pct(), 15);
  EXPECT_FALSE(refused("sglang", "x").ttft_error_pct());
}

TEST(ReplaySummary, QuantilesInterpolateBetweenOrderStatistics) {
  EXPECT_DOUBLE_EQ(quantile({3, 1, 2}, 0.5), 2);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.5), 2.5);
  // 0.9 of the way over 11 values 0..10 is the value 9; over 1..5, position 3.6: 4.6.
  EXPECT_DOUBLE_EQ(quantile({10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 0.9), 9);
  EXPECT_DOUBLE_EQ(quantile({5, 4, 3, 2, 1}, 0.9), 4.6);
  EXPECT_DOUBLE_EQ(quantile({7}, 0.9), 7);
}

TEST(ReplaySummary, GroupsTakeMedianAndP90OfAbsoluteErrors) {
  // sglang errors: ttft +10, -20, +30 (|.| 10, 20, 30); tpot -5, +5, -50 (|.| 5, 5, 50).
  const std::vector<ReplayRow> rows = {
      compared("sglang", 100, 110, 10, 9.5), compared("trtllm", 100, 100, 10, 10), compared("sglang", 100, 80, 10, 10.5),
      refused("sglang", "deployment.pools[1].dp: DEP prefill"), compared("sglang", 100, 130, 10, 5),
      refused("sglang", "deployment.pools[1].dp: DEP prefill"), refused("sglang", "model x: no profile")};
  const auto groups = summarise(rows);
  ASSERT_EQ(groups.size(), 2u);
  const ReplayGroup& s = groups[0];
  EXPECT_EQ(s.backend, "sglang");
  EXPECT_EQ(s.rows, 6u);
  EXPECT_EQ(s.compared, 3u);
  EXPECT_EQ(s.not_expressible, 3u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_NEAR(*s.ttft_median_abs_error_pct, 20, 1e-9);
  EXPECT_NEAR(*s.ttft_p90_abs_error_pct, 28, 1e-9);  // 20 + 0.8 x (30 - 20)
  EXPECT_NEAR(*s.tpot_median_abs_error_pct, 5, 1e-9);
  EXPECT_NEAR(*s.tpot_p90_abs_error_pct, 41, 1e-9);  // 5 + 0.8 x (50 - 5)
  EXPECT_EQ(s.reasons.at("deployment.pools[1].dp: DEP prefill"), 2u);
  EXPECT_EQ(s.reasons.at("model x: no profile"), 1u);
  EXPECT_EQ(groups[1].backend, "trtllm");
  EXPECT_EQ(groups[1].rows, 1u);
  EXPECT_DOUBLE_EQ(*groups[1].ttft_median_abs_error_pct, 0);
}

TEST(ReplaySummary, AGroupWithoutComparedRowsHasNoErrorFigures) {
  const auto groups = summarise({refused("vllm", "why")});
  EXPECT_FALSE(groups[0].ttft_median_abs_error_pct);
  EXPECT_FALSE(groups[0].tpot_p90_abs_error_pct);
}

TEST(ReplaySummary, JsonUsesTheFixedNames) {
  ReplayRow a = compared("sglang", 100, 110, 10, 9.5);
  a.id = "a";
  a.config = "agg tp8";
  const std::vector<ReplayRow> rows = {a, refused("sglang", "no profile")};
  const nlohmann::json j = replay_json(rows, summarise(rows));
  const nlohmann::json& r = j.at("rows").at(0);
  EXPECT_EQ(r.at("id"), "a");
  EXPECT_EQ(r.at("expressible"), true);
  EXPECT_EQ(r.at("reason"), "");
  EXPECT_DOUBLE_EQ(r.at("measured_ttft_ms").get<double>(), 100);
  EXPECT_DOUBLE_EQ(r.at("emulated_ttft_ms").get<double>(), 110);
  EXPECT_NEAR(r.at("ttft_error_pct").get<double>(), 10, 1e-9);
  EXPECT_DOUBLE_EQ(r.at("measured_tpot_ms").get<double>(), 10);
  EXPECT_DOUBLE_EQ(r.at("emulated_tpot_ms").get<double>(), 9.5);
  EXPECT_NEAR(r.at("tpot_error_pct").get<double>(), -5, 1e-9);
  EXPECT_EQ(r.at("config"), "agg tp8");
  const nlohmann::json& n = j.at("rows").at(1);
  EXPECT_EQ(n.at("expressible"), false);
  EXPECT_EQ(n.at("reason"), "no profile");
  EXPECT_TRUE(n.at("emulated_ttft_ms").is_null());
  EXPECT_TRUE(n.at("tpot_error_pct").is_null());
  const nlohmann::json& g = j.at("groups").at(0);
  EXPECT_EQ(g.at("rows"), 2);
  EXPECT_EQ(g.at("not_expressible"), 1);
  EXPECT_EQ(g.at("not_expressible_reasons").at(0).at("reason"), "no profile");
}

TEST(ReplaySummary, TablesShowEveryRowAndReason) {
  const std::vector<ReplayRow> rows = {compared("sglang", 100, 110, 10, 9.5), refused("sglang", "no profile")};
  std::ostringstream table, summary;
  print_rows(table, rows);
  print_groups(summary, summarise(rows));
  EXPECT_NE(table.str().find("+10.0%"), std::string::npos);
  EXPECT_NE(table.str().find("-5.0%"), std::string::npos);
  EXPECT_NE(table.str().find("not expressible: no profile"), std::string::npos);
  EXPECT_NE(summary.str().find("not expressible (gb200 sglang fp8, 1 row): no profile"), std::string::npos);
}

}  // namespace replay_summary_test
}  // namespace nvl::emu
