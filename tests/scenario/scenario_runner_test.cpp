// The CI scenario end to end: every request completes, and one seed gives one event-log hash.
#include <filesystem>

#include <gtest/gtest.h>

#include "emu/scenario/runner.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu {
namespace {

const std::filesystem::path kSmallPd = std::filesystem::path(NVL_SCENARIO_DIR) / "ci" / "small-pd.json";

TEST(ScenarioRunner, TheCiScenarioCompletesEveryRequest) {
  const RunReport r = run_scenario(load_scenario(kSmallPd));
  EXPECT_EQ(r.stop_reason, "quiescent");
  EXPECT_GT(r.requests_total, 0u);
  EXPECT_EQ(r.requests_completed, r.requests_total);
  EXPECT_EQ(r.requests_failed, 0u);
  EXPECT_EQ(r.requests_in_flight, 0u);
  EXPECT_EQ(r.routing.at("local") + r.routing.at("prefill_worker"), r.requests_total);
  EXPECT_GT(r.routing.at("prefill_worker"), 0u) << "the coding-agent prompts include long uncached ones";
  EXPECT_GT(r.kv_transfer_bytes, 0u);
  EXPECT_EQ(r.ttft.count, r.requests_completed);
  EXPECT_LE(r.ttft.p50, r.ttft.p99);
  EXPECT_GT(r.output_tokens_per_s(), 0);
}

TEST(ScenarioRunner, OneSeedGivesOneEventLogHash) {
  const RunReport a = run_scenario(load_scenario(kSmallPd));
  const RunReport b = run_scenario(load_scenario(kSmallPd));
  EXPECT_EQ(a.event_log_hash, b.event_log_hash);
  EXPECT_EQ(a.sim_time_s, b.sim_time_s);
  const RunReport other = run_scenario(load_scenario(kSmallPd, {"seed=2"}));
  EXPECT_NE(other.event_log_hash, a.event_log_hash);
}

TEST(ScenarioRunner, TheTimeLimitStopsARun) {
  const RunReport r = run_scenario(load_scenario(kSmallPd, {"run.max_sim_seconds=5"}));
  EXPECT_EQ(r.stop_reason, "time_limit");
  EXPECT_LE(r.sim_time_s, 5.0);
  EXPECT_EQ(r.requests_failed, 0u);
}

}  // namespace
}  // namespace nvl::emu
