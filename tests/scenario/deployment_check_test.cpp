// Impossible deployments are InputErrors that name the pool's key to change and say why, never a crash:
// experts that do not divide the EP group, EP over part of a decoding instance, a TP degree that does
// not divide the heads, EP-only features on one GPU or under MoE TP, a token budget below one decode
// step, layouts with nowhere to prefill, formats the device cannot run, and a model that does not fit
// in HBM (which GPU, bytes needed vs free).
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/rt/virtual_runtime.h"
#include "emu/scenario/deployment.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu {
namespace deployment_check_test {

const std::filesystem::path kSmallPd = std::filesystem::path(NVL_SCENARIO_DIR) / "ci" / "small-pd.json";
// small-pd.json's pools: "dep" (mixed, DP8 x EP8, GPUs 0-7) and "prefill" (TP8, GPUs 8-15).
const std::string kDep = "deployment.pools[dep].";
const std::string kPrefill = "deployment.pools[prefill].";

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

TEST(DeploymentCheck, ExpertsThatDoNotDivideTheEpGroupNameTheEpKey) {
  const std::string e = load_error({kDep + "dp=7", kDep + "ep=7"});
  expect_has(e, "small-pd.json: deployment.pools[0].ep:");
  expect_has(e, "256 routed experts do not divide over EP7 without redundant experts");
  // Redundant experts that make the slot count divisible are the way out; a wrong count is named.
  EXPECT_EQ(load_error({kDep + "dp=12", kDep + "ep=12", kDep + "eplb.redundant_experts=8"}), "");
  expect_has(load_error({kDep + "dp=12", kDep + "ep=12", kDep + "eplb.redundant_experts=4"}),
             "deployment.pools[0].eplb.redundant_experts: 256 routed + 4 redundant experts are not a multiple of EP12");
  expect_has(load_error({kDep + "dp=2", kDep + "ep=2", kDep + "eplb.redundant_experts=9223372036854775806"}),
             "deployment.pools[0].eplb.redundant_experts: 9223372036854775806 redundant experts would give each of the 2 GPUs more");
}

TEST(DeploymentCheck, AnEpThatDoesNotDivideTheInstanceIsNamed) {
  expect_has(load_error({kDep + "ep=3"}), "deployment.pools[0].ep: EP3 does not divide the instance's tp x dp x pp = 8 GPUs");
}

TEST(DeploymentCheck, MoeTpInADecodingPoolBuildsAndEpOverPartOfAnInstanceIsNamed) {
  // ep 1: MoE TP over all the instance's GPUs, at attention DP8 (the ranks' tokens all-gathered) and
  // at attention TP8 (the experts split by TP), both loaded and built.
  EXPECT_EQ(build_error({kDep + "ep=1"}), "");
  EXPECT_EQ(build_error({kDep + "dp=1", kDep + "tp=8", kDep + "ep=1"}), "");
  // EP4 inside DP8 x TP1 spreads the experts over half of the GPUs: not modelled, and said so.
  expect_has(load_error({kDep + "ep=4"}),
             "deployment.pools[0].ep: a decoding instance spreads its experts over all its tp x dp = 8 GPUs (ep 8) or "
             "splits every expert over all of them (ep 1, MoE TP): EP4 over part of an instance is not modelled");
  // What needs EP stays refused under MoE TP.
  expect_has(load_error({kDep + "ep=1", kDep + "eplb.redundant_experts=8"}),
             "deployment.pools[0].eplb.redundant_experts: redundant experts need an EP group");
  expect_has(load_error({kDep + "ep=1", kDep + "eplb.interval_steps=10"}), "deployment.pools[0].eplb.interval_steps:");
  expect_has(load_error({kDep + "ep=1", kDep + "two_batch_overlap=true"}), "deployment.pools[0].two_batch_overlap:");
}

TEST(DeploymentCheck, EpOnlyFeaturesOnOneGpuAreNamed) {
  const std::string one = R"(deployment.pools=[{"name": "one", "role": "aggregated"}])";
  auto with = [&](const std::string& o) { return load_error({one, "deployment.pools[one]." + o}); };
  EXPECT_EQ(load_error({one}), "");
  expect_has(with("eplb.redundant_experts=8"), "deployment.pools[0].eplb.redundant_experts: redundant experts need");
  expect_has(with("eplb.interval_steps=10"), "deployment.pools[0].eplb.interval_steps:");
  expect_has(with("two_batch_overlap=true"), "deployment.pools[0].two_batch_overlap:");
}

// moe_all_to_all false keeps each token where the attention TP all-reduce left it: EP over the TP group only.
TEST(DeploymentCheck, EpWithoutAllToAllNeedsEpOverTheTpGroup) {
  EXPECT_EQ(build_error({kPrefill + "ep=8", kPrefill + "moe_all_to_all=false"}), "");  // TP8 + EP8
  EXPECT_EQ(build_error({kDep + "dp=1", kDep + "tp=8", kDep + "moe_all_to_all=false"}), "");
  expect_has(load_error({kDep + "moe_all_to_all=false"}),  // DP8 x EP8
             "deployment.pools[0].moe_all_to_all: false keeps the tokens where the attention TP all-reduce left them");
  expect_has(load_error({kPrefill + "moe_all_to_all=false"}), "deployment.pools[1].moe_all_to_all:");  // ep 1
  expect_has(load_error({kDep + "dp=1", kDep + "tp=8", kDep + "moe_all_to_all=false", kDep + "two_batch_overlap=true"}),
             "deployment.pools[0].moe_all_to_all: false has no dispatch or combine for two-batch or single-batch overlap");
  expect_has(load_error({kDep + "moe_all_to_all=3"}), "deployment.pools[0].moe_all_to_all:");
}

TEST(DeploymentCheck, SingleBatchOverlapNeedsEpInADecodingPoolAndSmsLeftForTheGemm) {
  EXPECT_EQ(build_error({kDep + "single_batch_overlap=true", kDep + "sbo_combine_sms=3"}), "");
  expect_has(load_error({kDep + "ep=1", kDep + "single_batch_overlap=true"}),
             "deployment.pools[0].single_batch_overlap: single-batch overlap needs an EP group of two or more GPUs");
  expect_has(load_error({kPrefill + "single_batch_overlap=true"}),
             "deployment.pools[1].single_batch_overlap: single-batch overlap is modelled in decoding pools only");
  expect_has(load_error({kDep + "single_batch_overlap=true", kDep + "two_batch_overlap=true"}),
             "deployment.pools[0].single_batch_overlap: single-batch and two-batch overlap exclude each other");
  // small-pd.json runs on GB300s, whose profile has 160 SMs.
  expect_has(load_error({kDep + "single_batch_overlap=true", kDep + "sbo_combine_sms=160"}),
             "deployment.pools[0].sbo_combine_sms: 160 SMs for the combine leave none of gb300's 160");
  expect_has(load_error({kDep + "single_batch_overlap=true", kDep + "sbo_combine_sms=0"}),
             "deployment.pools[0].sbo_combine_sms:");
  expect_has(load_error({kDep + "sbo_combine_sms=32"}),
             "deployment.pools[0].sbo_combine_sms: sets single-batch overlap's SMs: set single_batch_overlap true too");
  expect_has(load_error({kDep + "single_batch_overlap=2"}), "deployment.pools[0].single_batch_overlap:");
}

TEST(DeploymentCheck, ATpThatDoesNotDivideTheHeadsListsTheValidDegrees) {
  const std::string e = load_error({kPrefill + "tp=3"});
  expect_has(e, "deployment.pools[1].tp: TP3 does not divide DeepSeek-V3's 128 attention heads");
  expect_has(e, "1, 2, 4, 8, 16, 32, 64");
  EXPECT_EQ(load_error({kPrefill + "tp=4"}), "");
  // GLM-5's 64 heads over 3.
  expect_has(load_error({"model.profile=glm-5", kPrefill + "tp=3"}), "TP3 does not divide GLM-5's 64 attention heads");
  // With EP the experts must divide too: GLM-4.5 has 96 heads (TP6 fine) but 160 experts.
  const std::string ep = load_error({"model.profile=glm-4.5", kPrefill + "tp=6", kPrefill + "ep=6"});
  expect_has(ep, "deployment.pools[1].ep: GLM-4.5's 160 routed experts do not divide over EP6");
}

TEST(DeploymentCheck, ATokenBudgetBelowOneDecodeStepIsNamed) {
  expect_has(load_error({kDep + "token_budget=2", kDep + "mtp_draft_tokens=2"}),
             "deployment.pools[0].token_budget: 2 tokens cannot hold one decode step with 2 MTP draft tokens");
}

TEST(DeploymentCheck, NegativeThresholdsAndSizesAreNamed) {
  for (const std::string key : {"deployment.threshold_tokens", "deployment.kv_block_tokens", "deployment.grace_bytes_per_gpu",
                                "workload.max_sessions"}) {
    expect_has(load_error({key + "=-1"}), key + ": expected an integer in [");
  }
  for (const std::string key : {"tp", "instances", "token_budget", "max_running", "eplb.redundant_experts"}) {
    expect_has(load_error({kDep + key + "=-1"}), "deployment.pools[0]." + key + ": expected an integer in [");
  }
}

TEST(DeploymentCheck, MtpDraftsOnAModelWithoutMtpModulesAreRejected) {
  expect_has(load_error({"model.profile=kimi-k2.5", kDep + "mtp_draft_tokens=1", kPrefill + "tp=8"}),
             "deployment.pools[0].mtp_draft_tokens: MTP drafts need the model's MTP modules, and Kimi-K2.5 has none");
}

TEST(DeploymentCheck, DeepSeeksEp144OverEighteenH800NodesIsExpressible) {
  // DeepSeek's own decode layout: 18 HGX H800 nodes, EP144 (256 experts + 32 redundant = 2 per GPU).
  const Scenario s = load_scenario(kSmallPd, {"cluster.gpu_profile=h800", "cluster.fabric_profile=hgx-h800", "cluster.units=18",
                                              R"(deployment.pools=[{"name": "d", "role": "mixed", "dp": 144, "ep": 144, "eplb": {"redundant_experts": 32}}])"});
  EXPECT_EQ(s.deployment.pools[0].instance_gpus.front().size(), 144u);
  EXPECT_EQ(s.deployment.cluster_gpus(), 144);
  EXPECT_EQ(build_error({"cluster.gpu_profile=h800", "cluster.fabric_profile=hgx-h800", "cluster.units=18",
                         R"(deployment.pools=[{"name": "d", "role": "mixed", "dp": 144, "ep": 144, "eplb": {"redundant_experts": 32}}])"}),
            "")
      << "the weights fit in 80 GB per GPU and the 144 ranks build";
  expect_has(load_error({"cluster.gpu_profile=h800", "cluster.fabric_profile=hgx-h800", "cluster.units=18",
                         R"(deployment.pools=[{"name": "d", "role": "mixed", "dp": 144, "ep": 144}])"}),
             "256 routed experts do not divide over EP144 without redundant experts");
  // EP256 needs four GB300 racks (256 GPUs); the router indexes that many ranks.
  EXPECT_EQ(build_error({"cluster.units=4", R"(deployment.pools=[{"name": "d", "role": "mixed", "dp": 256, "ep": 256}])"}), "");
}

TEST(DeploymentCheck, PipelineStagesOnADecodingPoolAreRejected) {
  expect_has(load_error({kDep + "pp=2"}), "deployment.pools[0].pp: a mixed pool decodes every step");
}

TEST(DeploymentCheck, ADepPrefillPoolSpreadsItsExpertsOverAllItsGpusInOneStage) {
  // DEP8: eight DP attention ranks of one GPU, EP8, builds.
  EXPECT_EQ(build_error({kPrefill + "tp=1", kPrefill + "dp=8", kPrefill + "ep=8"}), "");
  // Or DP8 attention with MoE TP8 (TensorRT-LLM's attention DP): each expert split over the eight.
  EXPECT_EQ(build_error({kPrefill + "tp=1", kPrefill + "dp=8", kPrefill + "ep=1"}), "");
  expect_has(load_error({kPrefill + "tp=1", kPrefill + "dp=8", kPrefill + "ep=4"}),
             "deployment.pools[1].ep: a prefill instance with DP attention ranks spreads its experts over all its tp x dp = 8 GPUs (ep 8) or splits each over them (MoE TP, ep 1)");
  expect_has(load_error({kPrefill + "tp=1", kPrefill + "dp=4", kPrefill + "ep=4", kPrefill + "pp=2"}),
             "deployment.pools[1].pp: a prefill instance with DP attention ranks (dp > 1) runs one pipeline stage");
}

TEST(DeploymentCheck, SmPartitionsOutsideTheOpenUnitIntervalOnAPrefillPoolOrWithTwoBatchOverlapAreRejected) {
  EXPECT_EQ(load_error({kDep + R"(sm_partition={"prefill": 0.3})"}), "");
  expect_has(load_error({kDep + R"(sm_partition={"prefill": 0.3})", kDep + "two_batch_overlap=true"}),
             "deployment.pools[0].sm_partition: SM partitions (green contexts) and two_batch_overlap exclude each other");
  expect_has(load_error({kDep + R"(sm_partition={"prefill": 1.0})"}),
             "deployment.pools[0].sm_partition.prefill: the prefill stream's SM share must be strictly between 0 and 1");
  expect_has(load_error({kDep + R"(sm_partition={"prefill": 0})"}), "strictly between 0 and 1");
  expect_has(load_error({kPrefill + R"(sm_partition={"prefill": 0.3})"}),
             "deployment.pools[1].sm_partition: SM partitions (green contexts) split prefill and decode of one GPU");
}

TEST(DeploymentCheck, MixedBatchesOffOnAPrefillPoolOrWithSmPartitionsIsRejected) {
  EXPECT_EQ(load_error({kDep + "mixed_batches=false"}), "");
  expect_has(load_error({kPrefill + "mixed_batches=false"}),
             "deployment.pools[1].mixed_batches: a prefill pool never decodes, so it has no decodes to mix");
  expect_has(load_error({kDep + R"(sm_partition={"prefill": 0.3})", kDep + "mixed_batches=false"}),
             "deployment.pools[0].mixed_batches: SM partitions (green contexts) already run prefill and decode as "
             "separate steps");
  expect_has(load_error({kDep + "mixed_batches=1"}), "deployment.pools[0].mixed_batches");
}

TEST(DeploymentCheck, ADecodePoolWithNowhereToPrefillIsRejected) {
  const std::string e = load_error({R"(deployment.pools=[{"name": "d", "role": "decode", "dp": 8, "ep": 8}])"});
  expect_has(e, "deployment.pools: a decode pool prefills nothing itself: it needs a prefill pool");
  expect_has(load_error({R"(deployment.pools=[{"name": "p", "role": "prefill", "tp": 8}])"}),
             "deployment.pools: needs a pool that decodes");
  expect_has(load_error({kDep + "role=aggregated"}), "an aggregated pool prefills every prompt where it decodes");
}

TEST(DeploymentCheck, Nvfp4OnADeviceWithoutFp4IsRejected) {
  EXPECT_EQ(load_error({kDep + "weights=nvfp4"}), "");  // B300 has FP4 tensor cores
  const std::string e = load_error({"cluster.gpu_profile=h100", "cluster.fabric_profile=hgx-h100", "cluster.units=2",
                                    kDep + "weights=nvfp4"});
  expect_has(e, "deployment.pools[0].weights: nvfp4 runs the experts on FP4 tensor cores, which h100 has not");
  expect_has(load_error({kDep + "weights=int3"}), "deployment.pools[0].weights: 'int3' is not one of bf16, fp8, nvfp4");
}

TEST(DeploymentCheck, NvlinkKvBetweenRacksIsRejected) {
  const std::vector<std::string> racks{"cluster.units=2", kPrefill + R"(gpus={"rack": 1})"};
  EXPECT_EQ(load_error(racks), "");
  auto nvlink = racks;
  nvlink.push_back("deployment.kv_transfer_path=nvlink");
  expect_has(load_error(nvlink), "deployment.kv_transfer_path: nvlink does not reach from prefill GPU 72 (rack 1) to decoding GPU 0 (rack 0): use rdma");
}

TEST(DeploymentCheck, PoolsMustAgreeOnTheKvDtype) {
  expect_has(load_error({kPrefill + "kv_dtype=bf16"}), "deployment.pools[1].kv_dtype: KV moves between the pools as it is stored");
}

TEST(DeploymentCheck, AModelThatDoesNotFitInHbmSaysWhichPoolGpuAndHowManyBytes) {
  // GLM-5 FP8 on one GPU: ~685 GB of weights against 279 GB of B300 HBM.
  const std::string e = build_error({"model.profile=glm-5", R"(deployment.pools=[{"name": "one", "role": "aggregated"}])"});
  expect_has(e, "deployment.pools[0]: does not fit: GLM-5 on pool 'one' instance 0 (GPU 0)");
  expect_has(e, "asked for ");
  expect_has(e, "279000000000 are free on gpu0 (");
  expect_has(e, " bytes short)");
  // A prefill instance's GPU is named as such.
  const std::string p = build_error({"model.profile=glm-5", kPrefill + "tp=1"});
  expect_has(p, "deployment.pools[1]: does not fit: GLM-5 on pool 'prefill' instance 0 (GPU 8)");
  // An activation reserve that leaves no room for KV says so, in bytes.
  expect_has(build_error({kDep + "max_running=100000000"}), "leave no room for KV in 279000000000 bytes of HBM");
}

TEST(DeploymentCheck, OldDeploymentKeysPointToPools) {
  expect_has(load_error({"deployment.normal_gpus=8"}),
             "deployment.normal_gpus: is a key of each pool now: write the deployment as deployment.pools");
}

}  // namespace deployment_check_test
}  // namespace nvl::emu
