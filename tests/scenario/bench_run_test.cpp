// The benchmark keys end to end: a closed loop of one user sends each request the moment the previous one
// is over, so the benchmark lasts exactly the requests' end-to-end latencies back to back; the warm-up is
// sent but counted in no figure; bad benchmark keys are errors naming the key.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/scenario/runner.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu {
namespace bench_run_test {

const std::filesystem::path kBenchSmall = std::filesystem::path(NVL_SCENARIO_DIR) / "bench" / "bench-small.json";
const std::vector<std::string> kQuiet = {"outputs.trace=false", "outputs.html=false"};

std::vector<std::string> with(std::vector<std::string> sets) {
  sets.insert(sets.end(), kQuiet.begin(), kQuiet.end());
  return sets;
}

TEST(BenchRun, OneUserRunsTheRequestsBackToBack) {
  const Scenario sc = load_scenario(
      kBenchSmall, with({"workload.source=bench:isl=256,osl=16", "workload.concurrency=1", "workload.requests=2",
                         "workload.warmup_requests=1"}));
  const RunReport r = run_scenario(sc);
  ASSERT_EQ(r.stop_reason, "quiescent");
  EXPECT_EQ(r.requests_total, 3u) << "two measured requests and one warm-up";
  const BenchmarkMetrics& b = r.benchmark;
  EXPECT_EQ(b.completed, 2u);
  EXPECT_EQ(b.warmup_requests, 1u);
  EXPECT_EQ(b.concurrency, 1);
  EXPECT_EQ(b.output_tokens, 2u * 16u);
  EXPECT_EQ(b.input_tokens, 2u * 256u);
  // The second request leaves when the first is over: the duration is the sum of the two E2Es.
  EXPECT_NEAR(b.duration_s * 1e3, 2 * b.e2e_ms.mean, 1e-6);
  EXPECT_NEAR(b.request_throughput_per_s, 2 / b.duration_s, 1e-9);
  // 15 gaps a request, which add up to its E2E - TTFT: the mean gap is the mean TPOT.
  EXPECT_EQ(b.itl_ms.count, 2u * 15u);
  EXPECT_NEAR(b.itl_ms.mean, b.tpot_ms.mean, 1e-9);
  EXPECT_NEAR(b.tpot_ms.mean, (b.e2e_ms.mean - b.ttft_ms.mean) / 15, 1e-9);
  // Per user: the mean of 1000 / TPOT over the requests, at least 1000 / mean TPOT (harmonic <= arithmetic mean).
  EXPECT_GE(b.output_tokens_per_s_per_user, 1e3 / b.tpot_ms.mean * (1 - 1e-9));
  EXPECT_NEAR(b.output_tokens_per_s_per_gpu * 8, b.output_tokens_per_s, 1e-9);
}

void expect_scenario_error(const std::vector<std::string>& sets, const std::string& key) {
  try {
    (void)load_scenario(kBenchSmall, with(sets));
    ADD_FAILURE() << "expected an InputError naming " << key;
  } catch (const rt::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

TEST(BenchRun, BadBenchmarkKeysNameTheKey) {
  expect_scenario_error({"workload.source=bench:isl=0,osl=8"}, "workload.source");
  expect_scenario_error({"workload.source=bench:isl=8,osl=8,speed=1"}, "speed");
  expect_scenario_error({"workload.source=bench:isl=8,osl=8,isl_spread=1.5"}, "isl_spread");
  expect_scenario_error({"workload.concurrency=0"}, "workload.concurrency");
  expect_scenario_error({"workload.requests=0"}, "workload.requests");
  expect_scenario_error({"workload.warmup_requests=-1"}, "workload.warmup_requests");
  expect_scenario_error({R"(workload={"source": "bench:isl=8,osl=8", "concurrency": 2})"}, "workload.requests");
  expect_scenario_error({R"(workload={"source": "bench:isl=8,osl=8", "requests": 4, "warmup_requests": 2})"},
                        "workload.warmup_requests");
  expect_scenario_error({"workload.starts=recorded"}, "workload.starts");
  expect_scenario_error({"workload.rate_sessions_per_s=2"}, "workload.rate_sessions_per_s");
  expect_scenario_error({"workload.max_sessions=3"}, "workload.max_sessions");
  expect_scenario_error({"workload.trace_block_tokens=64"}, "workload.trace_block_tokens");
}

TEST(BenchRun, WithoutConcurrencyTheRequestsArriveOpenLoop) {
  const Scenario sc = load_scenario(
      kBenchSmall, with({R"(workload={"source": "bench:isl=128,osl=4", "requests": 5, "rate_sessions_per_s": 20})"}));
  const RunReport r = run_scenario(sc);
  ASSERT_EQ(r.stop_reason, "quiescent");
  EXPECT_EQ(r.requests_total, 5u);
  EXPECT_EQ(r.benchmark.completed, 5u);
  EXPECT_EQ(r.benchmark.concurrency, 0);
  EXPECT_EQ(r.benchmark.warmup_requests, 0u);
  EXPECT_EQ(r.benchmark.output_tokens, 5u * 4u);
}

TEST(BenchRun, RequestsCountOnlyOneRequestSessions) {
  const Scenario sc = load_scenario(
      kBenchSmall, with({R"(workload={"source": "gen:codex:trials=2,seed=1", "requests": 2, "concurrency": 1})"}));
  try {
    (void)run_scenario(sc);
    ADD_FAILURE() << "expected an InputError naming workload.requests";
  } catch (const rt::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("workload.requests"), std::string::npos) << e.what();
  }
}

}  // namespace bench_run_test
}  // namespace nvl::emu
