// A scenario's `faults`: every kind and target form reads as documented, and each kind of bad input
// is an InputError naming the file and the key ("faults[1].target").
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu {
namespace fault_plan_test {

class FaultPlanFile : public ::testing::Test {
 protected:
  // A scenario on 8 normal + 8 prefill GPUs of a GB300 NVL72 with these faults (a JSON array's body).
  std::filesystem::path write(const std::string& faults) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("nvl_faults_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir);
    const auto file = dir / "s.json";
    std::ofstream(file) << R"({"name": "t", "deployment": {"pools": [{"name": "dep", "role": "mixed", "dp": 8, "ep": 8}, {"name": "prefill", "role": "prefill", "tp": 8}]},
                              "workload": {"source": "gen:codex:trials=2"}, "faults": [)"
                        << faults << "]}";
    return file;
  }
  std::string error_of(const std::string& faults) {
    try {
      load_scenario(write(faults));
    } catch (const rt::InputError& e) {
      return e.what();
    }
    return "";
  }
  void expect_error(const std::string& faults, const std::string& key, const std::string& words) {
    const std::string e = error_of(faults);
    EXPECT_NE(e.find("s.json"), std::string::npos) << e;
    EXPECT_NE(e.find(key), std::string::npos) << "expected the key " << key << " in: " << e;
    EXPECT_NE(e.find(words), std::string::npos) << "expected '" << words << "' in: " << e;
  }
};

TEST_F(FaultPlanFile, EveryKindAndTargetFormReads) {
  const Scenario s = load_scenario(write(R"(
    {"kind": "gpu_lost", "at_s": 5, "target": 3},
    {"kind": "gpu_ecc", "at_s": 6, "target": "normal rank 2"},
    {"kind": "nvlink_error", "at_s": 7, "target": "prefill gpu 1", "links": 3, "mode": "degrade", "factor": 0.5},
    {"kind": "link_degrade", "at_s": 8, "target": ["rack0/tray0/gpu0", "rack0/nvswitch0"], "factor": 0.25, "duration_s": 2},
    {"kind": "link_flap", "at_s": 9, "target": ["rack0/tray0/gpu0", "rack0/nvswitch1"], "down_s": 0.5, "up_s": 1, "cycles": 2},
    {"kind": "nic_down", "at_s": 10, "target": "rack0/tray2/nic0", "duration_s": 3},
    {"kind": "partition", "at_s": 11, "target": {"a": "prefill", "b": [0, 1]}, "duration_s": 4},
    {"kind": "straggler", "at_s": 12, "target": "prefill", "factor": 0.5, "duration_s": 5},
    {"kind": "grace_memory_error", "at_s": 13, "target": "normal rank 0"},
    {"kind": "worker_crash", "at_s": 14, "target": 7},
    {"kind": "router_restart", "at_s": 15},
    {"kind": "gpu_ecc", "rate_per_hour": 12, "targets": [1, "normal rank 2"], "start_s": 10, "end_s": 100})"));
  const FaultPlan& p = s.faults;
  ASSERT_EQ(p.scheduled.size(), 11u);
  ASSERT_EQ(p.random.size(), 1u);
  EXPECT_EQ(p.scheduled[0].target.gpu, 3);
  EXPECT_EQ(p.scheduled[1].target.gpu, 2);
  EXPECT_EQ(p.scheduled[2].target.gpu, 9) << "prefill GPUs follow the 8 normal ones";
  EXPECT_TRUE(p.scheduled[2].params.degrade);
  EXPECT_EQ(p.scheduled[2].params.links, 3);
  EXPECT_EQ(p.scheduled[3].target.a, "rack0/tray0/gpu0");
  EXPECT_DOUBLE_EQ(*p.scheduled[3].params.duration_s, 2.0);
  EXPECT_EQ(p.scheduled[4].params.cycles, 2);
  // Prefill GPUs 8-15 sit on trays 2 and 3, two Grace hosts per tray: hosts 4 to 7.
  EXPECT_EQ(p.scheduled[6].target.hosts_a, (std::vector<std::int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(p.scheduled[6].target.hosts_b, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(p.scheduled[7].target.gpu, 8);
  EXPECT_EQ(p.scheduled[10].target.type, FaultTarget::Type::none);
  EXPECT_EQ(p.random[0].targets.size(), 2u);
  EXPECT_DOUBLE_EQ(*p.random[0].end_s, 100.0);
}

TEST_F(FaultPlanFile, PrefillGpusTakeTheFaultsTheWorkerRecoversFrom) {
  const Scenario s = load_scenario(write(R"(
    {"kind": "gpu_lost", "at_s": 5, "target": "prefill"},
    {"kind": "gpu_ecc", "at_s": 6, "target": "prefill gpu 3"},
    {"kind": "worker_crash", "at_s": 7, "target": 15},
    {"kind": "gpu_ecc", "rate_per_hour": 2, "targets": ["prefill gpu 0", "normal rank 1"]})"));
  const FaultPlan& p = s.faults;
  ASSERT_EQ(p.scheduled.size(), 3u);
  EXPECT_EQ(p.scheduled[0].target.gpu, 8);
  EXPECT_EQ(p.scheduled[1].target.gpu, 11);
  EXPECT_EQ(p.scheduled[2].target.gpu, 15);
  ASSERT_EQ(p.random.size(), 1u);
  EXPECT_EQ(p.random[0].targets[0].gpu, 8);
}

TEST_F(FaultPlanFile, BadKindsTimesAndRatesNameTheirKey) {
  expect_error(R"({"kind": "meteor", "at_s": 1})", "faults[0].kind", "not a fault kind");
  expect_error(R"({"at_s": 1, "target": 1})", "faults[0].kind", "");
  expect_error(R"({"kind": "gpu_lost", "target": 1})", "faults[0].at_s", "at_s");
  expect_error(R"({"kind": "gpu_lost", "at_s": -1, "target": 1})", "faults[0].at_s", "");
  expect_error(R"({"kind": "gpu_lost", "rate_per_hour": 0, "targets": [1]})", "faults[0].rate_per_hour", "");
  expect_error(R"({"kind": "gpu_lost", "rate_per_hour": 1, "targets": []})", "faults[0].targets", "at least one");
  expect_error(R"({"kind": "gpu_lost", "rate_per_hour": 1, "target": 1})", "faults[0].target", "targets");
  expect_error(R"({"kind": "gpu_lost", "rate_per_hour": 1, "targets": [1], "start_s": 50, "end_s": 10})",
               "faults[0].end_s", "after start_s");
  expect_error(R"(5)", "faults[0]", "object");
}

TEST_F(FaultPlanFile, BadTargetsNameTheirKey) {
  expect_error(R"({"kind": "gpu_lost", "at_s": 1})", "faults[0].target", "needs a target");
  expect_error(R"({"kind": "gpu_lost", "at_s": 1, "target": 1}, {"kind": "gpu_lost", "at_s": 1, "target": 99})",
               "faults[1].target", "no GPU 99");
  expect_error(R"({"kind": "gpu_ecc", "at_s": 1, "target": "normal rank 8"})", "faults[0].target", "no normal rank 8");
  expect_error(R"({"kind": "gpu_ecc", "at_s": 1, "target": "rank 3"})", "faults[0].target", "normal rank N");
  expect_error(R"({"kind": "grace_memory_error", "at_s": 1, "target": "prefill"})", "faults[0].target", "Grace KV tier");
  expect_error(R"({"kind": "grace_memory_error", "at_s": 1, "target": 12})", "faults[0].target",
               "not the first GPU of a decoding DP rank");
  expect_error(R"({"kind": "straggler", "at_s": 1, "target": "prefill gpu 8", "factor": 0.5, "duration_s": 1})",
               "faults[0].target", "no prefill GPU 8");
  expect_error(R"({"kind": "link_degrade", "at_s": 1, "target": "rack0/tray0/gpu0", "factor": 0.5})", "faults[0].target",
               "two element names");
  expect_error(R"({"kind": "link_degrade", "at_s": 1, "target": ["rack0/tray0/gpu0", "rack9/nvswitch0"], "factor": 0.5})",
               "faults[0].target", "no fabric element named 'rack9/nvswitch0'");
  expect_error(R"({"kind": "link_flap", "at_s": 1, "target": ["rack0/tray0/gpu0", "rack0/tray1/gpu0"]})",
               "faults[0].target", "no link between");
  expect_error(R"({"kind": "nic_down", "at_s": 1, "target": "rack0/tray0/gpu0"})", "faults[0].target", "not a NIC");
  expect_error(R"({"kind": "partition", "at_s": 1, "target": {"a": "prefill"}})", "faults[0].target", "\"b\"");
  expect_error(R"({"kind": "partition", "at_s": 1, "target": {"a": [0, 1], "b": [1]}})", "faults[0].target",
               "both sides");
  expect_error(R"({"kind": "partition", "at_s": 1, "target": {"a": [0], "b": [500]}})", "faults[0].target.b",
               "host ids");
  expect_error(R"({"kind": "router_restart", "at_s": 1, "target": 0})", "faults[0].target", "no target");
  expect_error(R"({"kind": "grace_memory_error", "rate_per_hour": 1, "targets": [1, "prefill"]})", "faults[0].targets[1]",
               "prefill instances have not");
}

TEST_F(FaultPlanFile, AGpuInNoPoolIsNotATarget) {
  // GPUs 2-7 lie between the listed pools: a fault there would change nothing.
  const auto dir = std::filesystem::temp_directory_path() / "nvl_faults_gap";
  std::filesystem::create_directories(dir);
  const auto file = dir / "s.json";
  std::ofstream(file) << R"({"name": "t", "model": {"profile": "deepseek-v3"}, "deployment": {"pools": [
                               {"name": "d", "role": "mixed", "dp": 2, "ep": 2, "gpus": [0, 1]},
                               {"name": "p", "role": "prefill", "tp": 8, "gpus": [8, 9, 10, 11, 12, 13, 14, 15]}]},
                             "workload": {"source": "gen:codex:trials=2"},
                             "faults": [{"kind": "gpu_lost", "at_s": 1, "target": 4}]})";
  try {
    load_scenario(file);
    FAIL() << "GPU 4 is in no pool";
  } catch (const rt::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("faults[0].target: GPU 4 is in no pool of the deployment"), std::string::npos) << e.what();
  }
}

TEST_F(FaultPlanFile, BadParametersNameTheirKey) {
  expect_error(R"({"kind": "straggler", "at_s": 1, "target": 1, "factor": 0.5})", "faults[0].duration_s", "");
  expect_error(R"({"kind": "straggler", "at_s": 1, "target": 1, "factor": 1, "duration_s": 1})", "faults[0].factor",
               "below 1");
  expect_error(R"({"kind": "straggler", "at_s": 1, "target": 1, "factor": 0, "duration_s": 1})", "faults[0].factor", "");
  expect_error(R"({"kind": "link_flap", "at_s": 1, "target": ["rack0/tray0/gpu0", "rack0/nvswitch0"], "cycles": 0})",
               "faults[0].cycles", "");
  expect_error(R"({"kind": "straggler", "at_s": 1, "target": "normal rank 0", "factor": 0.5, "duration_s": 1e12})",
               "faults[0].duration_s", "at most a year");
  expect_error(R"({"kind": "link_flap", "at_s": 1, "target": ["rack0/tray0/gpu0", "rack0/nvswitch0"], "down_s": 100000, "up_s": 100000, "cycles": 1000})",
               "faults[0].cycles", "within a year");
  expect_error(R"({"kind": "gpu_lost", "at_s": 1e300, "target": "normal rank 0"})", "faults[0].at_s", "at most a year");
  expect_error(R"({"kind": "nvlink_error", "at_s": 1, "target": 1, "links": 18})", "faults[0].links", "");
  expect_error(R"({"kind": "nvlink_error", "at_s": 1, "target": 1, "mode": "melt"})", "faults[0].mode", "\"down\"");
  // A key of another kind is unknown here.
  expect_error(R"({"kind": "gpu_lost", "at_s": 1, "target": 1, "factor": 0.5})", "faults[0].factor", "");
  expect_error(R"({"kind": "gpu_lost", "at_s": 1, "target": 1, "duration_s": 5})", "faults[0].duration_s", "");
}

TEST_F(FaultPlanFile, DeploymentHealthOptionsReadAndCheck) {
  const auto dir = std::filesystem::temp_directory_path() / "nvl_faults_health";
  std::filesystem::create_directories(dir);
  const auto file = dir / "s.json";
  std::ofstream(file) << R"({"name": "t", "deployment": {"pools": [{"name": "dep", "role": "mixed", "dp": 8, "ep": 8}, {"name": "prefill", "role": "prefill", "tp": 8}], "health_check_interval_s": 0.25,
                             "fault_detection_delay_s": 0, "gpu_reset_s": 3, "worker_restart_s": 4},
                             "workload": {"source": "gen:codex:trials=2"}})";
  const Scenario s = load_scenario(file);
  EXPECT_DOUBLE_EQ(s.deployment.health_check_interval_s, 0.25);
  EXPECT_DOUBLE_EQ(s.deployment.fault_detection_delay_s, 0);
  EXPECT_DOUBLE_EQ(s.deployment.gpu_reset_s, 3);
  EXPECT_DOUBLE_EQ(s.deployment.worker_restart_s, 4);
  try {
    load_scenario(file, {"deployment.health_check_interval_s=0"});
    ADD_FAILURE() << "a zero check interval loaded";
  } catch (const rt::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("deployment.health_check_interval_s"), std::string::npos) << e.what();
  }
}

}  // namespace fault_plan_test
}  // namespace nvl::emu
