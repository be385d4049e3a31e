// Scenario files: defaults, --set overrides, and every kind of bad input is an InputError that names the
// file and the key path.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu {
namespace scenario_loader_test {

class ScenarioFile : public ::testing::Test {
 protected:
  std::filesystem::path write(const std::string& text) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("nvl_scenario_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir);
    const auto file = dir / "s.json";
    std::ofstream(file) << text;
    return file;
  }
  // The error message of loading `text`, empty when it loads.
  std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
    try {
      load_scenario(write(text), overrides);
    } catch (const rt::InputError& e) {
      return e.what();
    }
    return "";
  }
};

const char* kMinimal = R"({"name": "t", "deployment": {"pools": [{"name": "dep", "role": "mixed", "dp": 8, "ep": 8}, {"name": "prefill", "role": "prefill", "tp": 8}]},
                           "workload": {"source": "gen:codex:trials=2"}})";

TEST_F(ScenarioFile, AMinimalFileTakesTheDocumentedDefaults) {
  const Scenario s = load_scenario(write(kMinimal));
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.seed, 1u);
  EXPECT_EQ(s.cluster.fabric_profile, "gb300-nvl72");
  EXPECT_EQ(s.model.profile, "glm-5");
  ASSERT_EQ(s.deployment.pools.size(), 2u);
  const ScenarioPool& dep = s.deployment.pools[0];
  EXPECT_EQ(dep.instances, 1);
  EXPECT_EQ(dep.tp, 1);
  EXPECT_EQ(dep.pp, 1);
  EXPECT_EQ(dep.weights, "fp8");
  EXPECT_EQ(dep.kv_dtype, "fp8") << "the model's";
  EXPECT_EQ(dep.placement.kind, ScenarioPlacement::Kind::automatic);
  EXPECT_EQ(dep.max_running, 256);
  EXPECT_EQ(s.deployment.pools[1].ep, 1);
  EXPECT_EQ(s.deployment.router_policy, "cache_aware");
  EXPECT_EQ(s.workload.source, "gen:codex:trials=2");
}

TEST_F(ScenarioFile, SetOverridesApplyBeforeChecking) {
  const Scenario s = load_scenario(write(kMinimal), {"seed=7", "deployment.grace_tier=write_back", "deployment.grace_bytes_per_gpu=100000000000",
                                                     "run.max_sim_seconds=2.5", "model.profile=deepseek-v3"});
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.deployment.grace_tier, "write_back");
  EXPECT_DOUBLE_EQ(s.run.max_sim_seconds, 2.5);
  EXPECT_EQ(s.model.profile, "deepseek-v3");
  EXPECT_NE(error_of(kMinimal, {"deployment.pools[0].dp=-1"}).find("deployment.pools[0].dp"), std::string::npos);
  EXPECT_NE(error_of(kMinimal, {"nokey"}).find("key.path=value"), std::string::npos);
  EXPECT_EQ(load_scenario(write(kMinimal), {"deployment.kv_block_tokens=16"}).deployment.kv_block_tokens, 16);
  EXPECT_NE(error_of(kMinimal, {"deployment.kv_block_tokens=0"}).find("deployment.kv_block_tokens"), std::string::npos);
  const Scenario e =
      load_scenario(write(kMinimal), {"deployment.pools[dep].eplb={\"redundant_experts\": 32}", "deployment.pools[dep].mtp_draft_tokens=1"});
  EXPECT_EQ(e.deployment.pools[0].eplb.redundant_experts, 32);
  EXPECT_EQ(e.deployment.pools[0].mtp_draft_tokens, 1);
  EXPECT_NE(error_of(kMinimal, {"deployment.pools[dep].eplb={\"expert_skew\": -1}"}).find("deployment.pools[0].eplb.expert_skew"),
            std::string::npos);
  EXPECT_NE(error_of(kMinimal, {"deployment.pools[dep].eplb={\"bogus\": 1}"}).find("deployment.pools[0].eplb.bogus"),
            std::string::npos);
}

TEST_F(ScenarioFile, StepOutcomeKeysOutOfRangeAreNamed) {
  const auto expect_named = [&](const std::string& override, const std::string& key) {
    const std::string e = error_of(kMinimal, {override});
    EXPECT_NE(e.find(key), std::string::npos) << override << ": " << e;
  };
  expect_named("deployment.pools[dep].mtp_acceptance_rate=1.5", "deployment.pools[0].mtp_acceptance_rate");
  expect_named("deployment.pools[dep].mtp_acceptance_rate=-0.1", "deployment.pools[0].mtp_acceptance_rate");
  expect_named("deployment.pools[dep].eplb={\"expert_skew\": 1, \"drift_interval_ms\": -5}",
               "deployment.pools[0].eplb.drift_interval_ms");
  expect_named("deployment.pools[dep].eplb={\"expert_skew\": 1, \"drift_fraction\": 2}",
               "deployment.pools[0].eplb.drift_fraction");
  // A uniform popularity has nothing to drift.
  const std::string e = error_of(kMinimal, {"deployment.pools[dep].eplb={\"drift_interval_ms\": 1000}"});
  EXPECT_NE(e.find("deployment.pools[0].eplb.drift_interval_ms"), std::string::npos) << e;
  EXPECT_NE(e.find("expert_skew"), std::string::npos) << e;
  const Scenario ok = load_scenario(write(kMinimal), {"deployment.pools[dep].mtp_acceptance_rate=0.7",
                                                      "deployment.pools[dep].eplb={\"expert_skew\": 1, \"drift_interval_ms\": 500, \"drift_fraction\": 0.5}"});
  EXPECT_DOUBLE_EQ(*ok.deployment.pools[0].mtp_acceptance_rate, 0.7);
  EXPECT_DOUBLE_EQ(ok.deployment.pools[0].eplb.drift_interval_ms, 500);
  EXPECT_DOUBLE_EQ(ok.deployment.pools[0].eplb.drift_fraction, 0.5);
  EXPECT_NE(error_of(kMinimal, {"deployment.pools[dep].two_batch_overlap=3"}).find("deployment.pools[0].two_batch_overlap"),
            std::string::npos);
}

TEST_F(ScenarioFile, AKernelLibraryTheGpuHasNoTablesForIsNamedWithThoseItHas) {
  EXPECT_EQ(load_scenario(write(kMinimal), {"cluster.kernel_library=sglang"}).cluster.kernel_library, "sglang");
  const std::string e = error_of(kMinimal, {"cluster.kernel_library=vllm"});
  EXPECT_NE(e.find("cluster.kernel_library: 'vllm': gb300 has no measured kernel tables for it (expected one of: "
                   "roofline, sglang, trtllm)"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of(kMinimal, {"cluster.gpu_profile=h800", "cluster.kernel_library=trtllm"})
                .find("h800 has no measured kernel tables for it (expected one of: roofline)"),
            std::string::npos);
  EXPECT_NE(error_of(kMinimal, {"cluster.kernel_library=3"}).find("cluster.kernel_library"), std::string::npos);
}

TEST_F(ScenarioFile, AnUnknownKeyIsNamedWithItsPath) {
  const std::string e = error_of(
      R"({"name": "t", "deployment": {"pools": [{"name": "dep", "role": "mixed", "dp": 8, "ep": 8}, {"name": "prefill", "role": "prefill", "tp": 8}], "threshold_token": 4}, "workload": {"source": "gen:codex"}})");
  EXPECT_NE(e.find("deployment.threshold_token"), std::string::npos) << e;
  EXPECT_NE(e.find("s.json"), std::string::npos) << e;
}

TEST_F(ScenarioFile, AWrongTypeIsNamed) {
  const std::string e = error_of(
      R"({"name": "t", "deployment": {"pools": [{"name": "dep", "role": "mixed", "dp": "eight"}]}, "workload": {"source": "gen:codex"}})");
  EXPECT_NE(e.find("deployment.pools[0].dp"), std::string::npos) << e;
}

TEST_F(ScenarioFile, ANegativeValueIsNamed) {
  const std::string e = error_of(
      R"({"name": "t", "deployment": {"pools": [{"name": "dep", "role": "mixed", "instances": -8}]}, "workload": {"source": "gen:codex"}})");
  EXPECT_NE(e.find("deployment.pools[0].instances"), std::string::npos) << e;
  const std::string rate = error_of(kMinimal, {"workload.rate_sessions_per_s=-1"});
  EXPECT_NE(rate.find("workload.rate_sessions_per_s"), std::string::npos) << rate;
}

TEST_F(ScenarioFile, ABadChoiceListsTheAllowedValues) {
  const std::string e = error_of(kMinimal, {"deployment.grace_tier=sometimes"});
  EXPECT_NE(e.find("deployment.grace_tier"), std::string::npos) << e;
  EXPECT_NE(e.find("write_back"), std::string::npos) << e;
}

TEST_F(ScenarioFile, AMissingFileIsAnInputError) {
  EXPECT_THROW(load_scenario("/no/such/scenario.json"), rt::InputError);
  const std::string e = error_of(R"({"name": "t", "deployment": {"pools": [{"name": "dep", "role": "mixed", "dp": 8, "ep": 8}, {"name": "prefill", "role": "prefill", "tp": 8}]}, "workload": {"source": "no-trace.jsonl"}})");
  EXPECT_NE(e.find("workload.source"), std::string::npos) << e;
}

TEST_F(ScenarioFile, MoreGpusThanTheFabricHasIsRejected) {
  const std::string e = error_of(kMinimal, {"deployment.pools[dep].dp=70", "deployment.pools[dep].ep=70",
                                            "deployment.pools[dep].eplb={\"redundant_experts\": 24}"});
  EXPECT_NE(e.find("deployment.pools[1].gpus"), std::string::npos) << e;
  EXPECT_NE(e.find("72 GPUs"), std::string::npos) << e;
  EXPECT_EQ(error_of(kMinimal, {"deployment.pools[dep].dp=64", "deployment.pools[dep].ep=64", "cluster.units=2",
                                "deployment.pools[prefill].tp=64"}),
            "");
}

TEST_F(ScenarioFile, OutputsAndChecksTakeTheDocumentedDefaults) {
  const Scenario s = load_scenario(write(kMinimal));
  EXPECT_TRUE(s.outputs.trace);
  EXPECT_TRUE(s.outputs.html);
  EXPECT_DOUBLE_EQ(s.outputs.timeline_interval_s, 1.0);
  EXPECT_DOUBLE_EQ(s.outputs.trace_window_s, 30.0);
  EXPECT_EQ(s.outputs.trace_max_events, 500'000);
  EXPECT_EQ(s.outputs.trace_detail, "steps");
  EXPECT_FALSE(s.checks.determinism);
  EXPECT_TRUE(s.checks.assertions.empty());
  EXPECT_EQ(s.workload.starts, "poisson");
  EXPECT_DOUBLE_EQ(s.workload.time_scale, 1.0);
}

TEST_F(ScenarioFile, OutputsChecksAndWorkloadScalingAreRead) {
  const Scenario s = load_scenario(
      write(R"({"name": "t", "deployment": {"pools": [{"name": "dep", "role": "mixed", "dp": 8, "ep": 8}, {"name": "prefill", "role": "prefill", "tp": 8}]},
                "workload": {"source": "gen:codex:trials=2", "starts": "recorded", "rate_scale": 2, "time_scale": 0.5},
                "outputs": {"trace": false, "trace_start_s": 5, "trace_window_s": 2, "trace_max_events": 10,
                            "html": false, "timeline_interval_s": 0.25},
                "checks": {"determinism": true,
                           "assertions": [{"metric": "latency_ms.ttft.p90", "max": 5000},
                                          {"metric": "requests.completed", "min": 1}]}})"));
  EXPECT_EQ(s.workload.starts, "recorded");
  EXPECT_DOUBLE_EQ(s.workload.rate_scale, 2.0);
  EXPECT_DOUBLE_EQ(s.workload.time_scale, 0.5);
  EXPECT_FALSE(s.outputs.trace);
  EXPECT_DOUBLE_EQ(s.outputs.trace_start_s, 5.0);
  EXPECT_DOUBLE_EQ(s.outputs.trace_window_s, 2.0);
  EXPECT_EQ(s.outputs.trace_max_events, 10);
  EXPECT_FALSE(s.outputs.html);
  EXPECT_DOUBLE_EQ(s.outputs.timeline_interval_s, 0.25);
  EXPECT_TRUE(s.checks.determinism);
  ASSERT_EQ(s.checks.assertions.size(), 2u);
  EXPECT_EQ(s.checks.assertions[0].metric, "latency_ms.ttft.p90");
  EXPECT_EQ(s.checks.assertions[0].max, 5000.0);
  EXPECT_FALSE(s.checks.assertions[0].min.has_value());
  EXPECT_EQ(s.checks.assertions[1].min, 1.0);
}

TEST_F(ScenarioFile, BadOutputsChecksAndStartsAreNamed) {
  const auto named = [&](const std::vector<std::string>& set, const std::string& key) {
    const std::string e = error_of(kMinimal, set);
    EXPECT_NE(e.find(key), std::string::npos) << e;
  };
  named({"outputs.timeline_interval_s=0"}, "outputs.timeline_interval_s");
  named({"outputs.timeline_interval_s=0.0001"}, "outputs.timeline_interval_s");
  named({"outputs.trace=yes"}, "outputs.trace");
  named({"outputs.html_smoothing_s=-1"}, "outputs.html_smoothing_s");
  EXPECT_DOUBLE_EQ(load_scenario(write(kMinimal), {"outputs.html_smoothing_s=10"}).outputs.html_smoothing_s, 10.0);
  named({"outputs.trace_window_s=-1"}, "outputs.trace_window_s");
  named({"outputs.trace_max_events=0"}, "outputs.trace_max_events");
  named({"outputs.trace_detail=warps"}, "outputs.trace_detail");
  EXPECT_EQ(load_scenario(write(kMinimal), {"outputs.trace_detail=kernels"}).outputs.trace_detail, "kernels");
  named({"outputs.colour=true"}, "outputs.colour");
  named({"workload.starts=sometimes"}, "workload.starts");
  named({"workload.time_scale=0"}, "workload.time_scale");
  named({"workload.burst={\"sessions\": -1, \"within_s\": 5}"}, "workload.burst.sessions");
  named({"workload.burst={\"sessions\": 4}"}, "workload.burst.within_s");
  named({"workload.burst={\"sessions\": 4, \"within_s\": 5, \"at\": 1}"}, "workload.burst.at");
  named({"workload.burst={\"sessions\": 4, \"within_s\": 5}", "workload.concurrency=2"}, "workload.burst");
  const Scenario burst = load_scenario(write(kMinimal), {"workload.burst={\"sessions\": 4, \"at_s\": 30, \"within_s\": 5}"});
  EXPECT_EQ(burst.workload.burst_sessions, 4);
  EXPECT_DOUBLE_EQ(burst.workload.burst_at_s, 30.0);
  EXPECT_DOUBLE_EQ(burst.workload.burst_within_s, 5.0);
  named({"checks.determinism=1"}, "checks.determinism");
  named({"checks.assertions=[{\"metric\": \"latency_ms.ttft.p90\"}]"}, "checks.assertions[0].max");
  named({"checks.assertions=[{\"metric\": \"ttft_p90\", \"max\": 1}]"}, "checks.assertions[0].metric");
  named({"checks.assertions=[{\"metric\": \"requests.failed\", \"max\": 0, \"maxx\": 1}]"},
        "checks.assertions[0].maxx");
}

// Values that used to escape as internal errors (exit 3) mid-run are named at load (exit 2).
TEST_F(ScenarioFile, ValuesThatCannotRunAreNamedAtLoad) {
  const auto says = [&](const std::vector<std::string>& set, const std::string& key, const std::string& problem) {
    const std::string e = error_of(kMinimal, set);
    EXPECT_NE(e.find(key + ": " + problem), std::string::npos) << e;
  };
  // 1e10 s overflows the emulated clock (int64 ns, 292 years): every time is bounded at a year.
  says({"run.max_sim_seconds=1e10"}, "run.max_sim_seconds", "at most a year (31536000 s), found 10000000000.0");
  says({"deployment.kv_transfer_timeout_s=1e12"}, "deployment.kv_transfer_timeout_s", "at most a year");
  says({"cluster.fabric_profile=nope"}, "cluster.fabric_profile",
       "no fabric (node) profile 'nope' (expected one of: gb200-nvl72, gb300-nvl72, hgx-b200, hgx-h100, hgx-h200, hgx-h800)");
  says({"cluster.fabric_profile=leaf-spine"}, "cluster.fabric_profile", "no fabric (node) profile 'leaf-spine'");
  says({"cluster.gpu_profile=nope"}, "cluster.gpu_profile", "no device profile 'nope' (expected one of: b200, b300, gb200");
  // A Grace tier of 0 bytes holds no block: the tier would be on and do nothing.
  says({"deployment.grace_tier=write_back"}, "deployment.grace_bytes_per_gpu", "missing key: grace_tier \"write_back\" needs");
  says({"deployment.grace_tier=write_through", "deployment.grace_bytes_per_gpu=0"}, "deployment.grace_bytes_per_gpu",
       "expected an integer in [1, ");
  EXPECT_EQ(error_of(kMinimal, {"deployment.grace_bytes_per_gpu=1000000000"}), "") << "kept with the tier off, for --set comparisons";
  says({"deployment.pools[dep].mtp_draft_tokens=1000"}, "deployment.pools[0].mtp_draft_tokens", "expected an integer in [0, 16]");
  EXPECT_EQ(error_of(kMinimal, {"deployment.pools[dep].mtp_draft_tokens=2"}), "");
}

TEST_F(ScenarioFile, ADuplicateKeyIsNamed) {
  const std::string e = error_of(
      R"({"name": "t", "seed": 1, "deployment": {"pools": [{"name": "dep", "role": "mixed", "dp": 8, "ep": 8, "dp": 4}]}, "workload": {"source": "gen:codex"}})");
  EXPECT_NE(e.find(": deployment.pools[0].dp: duplicate key"), std::string::npos) << e;
}

TEST_F(ScenarioFile, TheShippedScenariosLoad) {
  for (const char* f : {"ci/small-pd.json", "nvl72-glm5-codex.json", "bench/nvl72x8-glm5-codex.json"}) {
    EXPECT_NO_THROW(load_scenario(std::filesystem::path(NVL_SCENARIO_DIR) / f)) << f;
  }
}

}  // namespace scenario_loader_test
}  // namespace nvl::emu
