// Impossible deployments are InputErrors that name the key to change and say why, never a crash: experts
// that do not divide the EP group, a prefill TP degree that does not divide the heads, EP-only features on
// one GPU, a token budget below one decode step, and a model that does not fit in HBM (which GPU, bytes
// needed vs free).
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/rt/virtual_runtime.h"
#include "emu/scenario/deployment.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu {
namespace {

const std::filesystem::path kSmallPd = std::filesystem::path(NVL_SCENARIO_DIR) / "ci" / "small-pd.json";

// The error of loading the CI scenario (DeepSeek-V3: 256 routed experts, 128 heads) with `overrides`.
std::string load_error(const std::vector<std::string>& overrides) {
  try {
    load_scenario(kSmallPd, overrides);
  } catch (const rt::InputError& e) {
    return e.what();
  }
  return "";
}

// The error of building the deployment on a virtual runtime, after the scenario loaded.
std::string build_error(const std::vector<std::string>& overrides) {
  const Scenario s = load_scenario(kSmallPd, overrides);
  rt::VirtualRuntime rt(rt::LoopOptions{.seed = 1});
  try {
    Deployment d(rt, s, [](auto...) {}, [](const auto&) {});
  } catch (const rt::InputError& e) {
    return e.what();
  }
  return "";
}

void expect_has(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(DeploymentCheck, ExpertsThatDoNotDivideTheEpGroupNameTheGpuCount) {
  const std::string e = load_error({"deployment.normal_gpus=7"});
  expect_has(e, "small-pd.json: deployment.normal_gpus:");
  expect_has(e, "256 routed experts do not divide over an EP group of 7 GPUs without redundant experts");
  // Redundant experts that make the slot count divisible are the way out; a wrong count is named.
  EXPECT_EQ(load_error({"deployment.normal_gpus=12", "deployment.eplb.redundant_experts=8"}), "");
  expect_has(load_error({"deployment.normal_gpus=12", "deployment.eplb.redundant_experts=4"}),
             "deployment.eplb.redundant_experts: 256 routed + 4 redundant experts are not a multiple of the EP group's 12");
  expect_has(load_error({"deployment.normal_gpus=2", "deployment.eplb.redundant_experts=9223372036854775806"}),
             "deployment.eplb.redundant_experts: 9223372036854775806 redundant experts would give each of the 2 GPUs more");
}

TEST(DeploymentCheck, EpOnlyFeaturesOnOneNormalGpuAreNamed) {
  const std::vector<std::string> one{"deployment.normal_gpus=1", "deployment.prefill_gpus=0"};
  auto with = [&](const std::string& o) {
    auto v = one;
    v.push_back(o);
    return load_error(v);
  };
  expect_has(with("deployment.eplb.redundant_experts=8"), "deployment.eplb.redundant_experts: redundant experts need");
  expect_has(with("deployment.eplb.interval_steps=10"), "deployment.eplb.interval_steps:");
  expect_has(with("deployment.two_batch_overlap=true"), "deployment.two_batch_overlap:");
}

TEST(DeploymentCheck, APrefillTpThatDoesNotDivideTheHeadsListsTheValidDegrees) {
  const std::string e = load_error({"deployment.prefill_gpus=3"});
  expect_has(e, "deployment.prefill_gpus: TP3 does not divide DeepSeek-V3's 128 attention heads");
  expect_has(e, "1, 2, 4, 8, 16, 32, 64");
  EXPECT_EQ(load_error({"deployment.prefill_gpus=4"}), "");
  // With EP the experts must divide too: GLM-4.5 has 96 heads (TP6 fine) but 160 experts.
  const std::string ep = load_error({"model.profile=glm-4.5", "deployment.normal_gpus=8", "deployment.prefill_gpus=6",
                                     "deployment.prefill_expert_parallel=true"});
  expect_has(ep, "deployment.prefill_gpus: TP6 + EP6: GLM-4.5's 160 routed experts do not divide over 6 GPUs");
}

TEST(DeploymentCheck, ATokenBudgetBelowOneDecodeStepIsNamed) {
  expect_has(load_error({"deployment.token_budget=2", "deployment.mtp_draft_tokens=2"}),
             "deployment.token_budget: 2 tokens cannot hold one decode step with 2 MTP draft tokens");
}

TEST(DeploymentCheck, NegativeThresholdsAndSizesAreNamed) {
  for (const char* key : {"deployment.threshold_tokens", "deployment.prefill_gpus", "deployment.kv_block_tokens",
                          "deployment.token_budget", "deployment.max_running", "deployment.grace_bytes_per_gpu",
                          "deployment.eplb.redundant_experts", "workload.max_sessions"}) {
    expect_has(load_error({std::string(key) + "=-1"}), std::string(key) + ": expected an integer in [");
  }
}

TEST(DeploymentCheck, AModelThatDoesNotFitInHbmSaysWhichGpuAndHowManyBytes) {
  // GLM-5 FP8 on one normal GPU: ~685 GB of weights against 279 GB of B300 HBM.
  const std::string e = build_error({"model.profile=glm-5", "deployment.normal_gpus=1", "deployment.prefill_gpus=0"});
  expect_has(e, "deployment.normal_gpus: does not fit: GLM-5 on normal rank 0 (GPU 0)");
  expect_has(e, "asked for ");
  expect_has(e, "279000000000 are free on gpu0");
  // The prefill worker's GPUs are named as such.
  const std::string p = build_error({"model.profile=glm-5", "deployment.normal_gpus=8", "deployment.prefill_gpus=1"});
  expect_has(p, "deployment.prefill_gpus: does not fit: GLM-5 on prefill rank 0 (GPU 8)");
  // An activation reserve that leaves no room for KV says so, in bytes.
  expect_has(build_error({"deployment.max_running=100000000"}), "leave no room for KV in 279000000000 bytes of HBM");
}

}  // namespace
}  // namespace nvl::emu
