// The normal worker group on an emulated GB300 rack slice: requests complete with every token,
// ranks step together, KV returns to its start after drain, and bad deployments are clear errors.
#include <map>
#include <utility>

#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/hal/hal_error.h"
#include "engine/worker/normal_worker_group.h"
#include "tests/engine/step_outcomes_rig.h"
#include "tests/engine/test_request.h"

namespace nvl::engine {
namespace normal_worker_group_test {

using test::request;

struct Delivered {
  std::map<RequestId, std::int64_t> tokens;
  std::map<RequestId, rt::Time> first, finished;
};

TEST(NormalWorkerGroup, ServesEveryRequestToTheLastTokenAndDrainsKv) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 8);
  const ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  Delivered d;
  NormalGroupConfig cfg;
  cfg.activation_reserve_bytes = 20'000'000'000;
  NormalWorkerGroup group(
      rt, model, cluster.devices(0, 8), cluster.collectives(), cfg,
      [&](std::int32_t, const StepOutcome& o) {
        d.tokens[o.id] += o.new_output_tokens;
        if (o.first_token) d.first[o.id] = rt.now();
        if (o.finished) d.finished[o.id] = rt.now();
      },
      [](std::int32_t, RequestId id, const std::string& why) { ADD_FAILURE() << "rejected " << id << ": " << why; });
  group.start();
  // Ranks 0-3 get two requests each, 4-7 none: idle ranks still take part in every step.
  for (RequestId id = 1; id <= 8; ++id) {
    group.submit(static_cast<std::int32_t>((id - 1) / 2), request(id, 1'000 + 100 * static_cast<std::int64_t>(id), 20));
  }
  rt.run();
  for (RequestId id = 1; id <= 8; ++id) {
    EXPECT_EQ(d.tokens[id], 20) << id;
    EXPECT_LT(d.first.at(id), d.finished.at(id));
  }
  // One prefill step, then 19 decode steps: every rank took all 20.
  EXPECT_EQ(group.steps(), 20u);
  for (std::int32_t r = 0; r < 8; ++r) {
    EXPECT_TRUE(group.scheduler(r).idle());
    EXPECT_EQ(group.kv(r).gpu().used_blocks(), 0) << "rank " << r;
    group.kv(r).check_invariants();
  }
  // A decode step of GLM-5 on B300 reads every local expert and the attention weights: milliseconds.
  const double step_ms = (d.finished.at(1) - d.first.at(1)).seconds() * 1e3 / 19.0;
  EXPECT_GT(step_ms, 1.0);
  EXPECT_LT(step_ms, 100.0);
}

// The run's event log: the same seed gives the same hash, another seed (other MTP acceptances and expert
// popularity) another one.
std::string run_hash(std::uint64_t seed) {
  rt::VirtualRuntime rt(rt::LoopOptions{.seed = seed});
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 8);
  const ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  NormalGroupConfig cfg;
  cfg.scheduler.draft_tokens = 1;
  draw_outcomes(cluster, rt, 0, 8, {.expert_skew = 1.0, .mtp_acceptance_rate = 0.7});
  NormalWorkerGroup group(
      rt, model, cluster.devices(0, 8), cluster.collectives(), cfg,
      [&](std::int32_t rank, const StepOutcome& o) {
        rt.record("test", "tokens", {{"rank", rank}, {"id", o.id}, {"n", o.new_output_tokens}});
      },
      [](std::int32_t, RequestId, const std::string&) {});
  group.start();
  for (RequestId id = 1; id <= 16; ++id) group.submit(static_cast<std::int32_t>(id % 8), request(id, 2'000, 40));
  rt.run();
  return rt.log().hash_hex() + "@" + std::to_string(rt.now().ns());
}

TEST(NormalWorkerGroup, SameSeedSameEventLogOtherSeedOtherLog) {
  const std::string a = run_hash(11);
  EXPECT_EQ(a, run_hash(11));
  EXPECT_NE(a, run_hash(12));
}

TEST(NormalWorkerGroup, AModelThatDoesNotFitIsAClearError) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "h100", "hgx-h100", 8);
  const ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  try {
    NormalWorkerGroup group(rt, model, cluster.devices(0, 8), cluster.collectives(), NormalGroupConfig{},
                            [](std::int32_t, const StepOutcome&) {}, [](std::int32_t, RequestId, const std::string&) {});
    FAIL() << "GLM-5 over 8 H100s should not fit";
  } catch (const hal::HalError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("device 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("free"), std::string::npos) << msg;
  }
}

// The second wave's models and NVFP4 weights run end to end: IndexShare's own layer bodies pair
// their all-to-alls across the ranks, and the FP4 expert GEMMs are priced on B300.
TEST(NormalWorkerGroup, EveryModelAndWeightDtypeServesItsRequests) {
  for (const auto& [name, weights] : {std::pair{"glm-5.2", "nvfp4"}, {"kimi-k2.5", "fp8"}, {"deepseek-r1", "nvfp4"}}) {
    rt::VirtualRuntime rt;
    emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 8);
    const ModelProfile model = load_model_profile(model_profile_path(name));
    NormalGroupConfig cfg;
    cfg.weights = weight_dtypes_from_name(weights);
    cfg.activation_reserve_bytes = 20'000'000'000;
    std::map<RequestId, std::int64_t> tokens;
    NormalWorkerGroup group(
        rt, model, cluster.devices(0, 8), cluster.collectives(), cfg,
        [&](std::int32_t, const StepOutcome& o) { tokens[o.id] += o.new_output_tokens; },
        [](std::int32_t, RequestId id, const std::string& why) { ADD_FAILURE() << "rejected " << id << ": " << why; });
    group.start();
    for (RequestId id = 1; id <= 8; ++id) group.submit(static_cast<std::int32_t>(id - 1), request(id, 3'000, 10));
    rt.run();
    for (RequestId id = 1; id <= 8; ++id) EXPECT_EQ(tokens[id], 10) << name << " " << weights << " request " << id;
  }
}

TEST(NormalWorkerGroup, Nvfp4WeightsOnAGpuWithoutFp4AreAClearError) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "h100", "hgx-h100", 8);
  const ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  NormalGroupConfig cfg;
  cfg.weights = weight_dtypes_from_name("nvfp4");
  try {
    NormalWorkerGroup group(rt, model, cluster.devices(0, 8), cluster.collectives(), cfg,
                            [](std::int32_t, const StepOutcome&) {}, [](std::int32_t, RequestId, const std::string&) {});
    FAIL() << "NVFP4 on H100 should be refused";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("fp4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("H100"), std::string::npos) << msg;
  }
}

TEST(NormalWorkerGroup, DraftTokensWithoutMtpModulesAreRejected) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 8);
  const ModelProfile model = load_model_profile(model_profile_path("kimi-k2.5"));
  NormalGroupConfig cfg;
  cfg.scheduler.draft_tokens = 1;
  EXPECT_THROW(NormalWorkerGroup(rt, model, cluster.devices(0, 8), cluster.collectives(), cfg,
                                 [](std::int32_t, const StepOutcome&) {}, [](std::int32_t, RequestId, const std::string&) {}),
               std::invalid_argument);
}

TEST(NormalWorkerGroup, ExpertsThatDoNotSpreadEvenlyAreRejected) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 72);
  const ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  EXPECT_THROW(NormalWorkerGroup(rt, model, cluster.devices(0, 72), cluster.collectives(), NormalGroupConfig{},
                                 [](std::int32_t, const StepOutcome&) {}, [](std::int32_t, RequestId, const std::string&) {}),
               std::invalid_argument);
}

}  // namespace normal_worker_group_test
}  // namespace nvl::engine
