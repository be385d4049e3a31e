// EPLB inside a run of the normal group, fed by the routing the GPUs report: a skewed popularity on
// the even start placement slows the MoE-heavy steps; rebalancing from the reported counts brings the
// imbalance back down (paying for its weight moves over NVLink before the next step); a drifting
// popularity makes a placement stale until the next rebalance.
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/worker/normal_worker_group.h"
#include "tests/engine/step_outcomes_rig.h"

namespace nvl::engine {
namespace eplb_rebalance_test {

constexpr int kRanks = 8;
constexpr double kNvlinkBytesPerS = 900e9;  // REFERENCE.md 1.1: NVLink 5, one direction per GPU

struct RunResult {
  rt::Duration total;
  double imbalance = 0;  // the most loaded rank's routed pairs over the mean, over every step
  std::vector<nlohmann::json> drifted, rebalanced;
};

// Long prompts: every step is a full-budget prefill, whose routed-expert GEMMs are compute-bound, so
// the most loaded rank sets the MoE time. The GPUs draw the routing from a Zipf popularity (drifting
// every `drift_every` when set); the engine sees only what they report.
RunResult run(double skew, rt::Duration drift_every, std::int64_t eplb_every) {
  rt::VirtualRuntime rt;
  rt.log().keep_records(true);
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", kRanks);
  draw_outcomes(cluster, rt, 0, kRanks, {.expert_skew = skew, .drift_interval = drift_every, .drift_fraction = 0.5});
  const ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  NormalGroupConfig cfg;
  cfg.activation_reserve_bytes = 20'000'000'000;
  cfg.redundant_experts = kRanks;
  cfg.eplb_interval_steps = eplb_every;
  NormalWorkerGroup group(rt, model, cluster.devices(0, kRanks), cluster.collectives(), cfg,
                          [](std::int32_t, const StepOutcome&) {},
                          [](std::int32_t, RequestId id, const std::string& why) { ADD_FAILURE() << id << ": " << why; });
  group.start();
  RequestId id = 1;
  for (std::int32_t r = 0; r < kRanks; ++r) {
    for (int i = 0; i < 3; ++i) {
      RequestState q;
      q.id = id++;
      q.prompt_tokens = 64'000;
      q.max_output_tokens = 2;
      group.submit(r, std::move(q));
    }
  }
  rt.run();
  RunResult out;
  out.total = rt.now() - rt::Time();
  out.imbalance = group.realized_expert_imbalance();
  for (const std::string& line : rt.log().lines()) {
    const auto j = nlohmann::json::parse(line);
    if (j["source"] == "expert-routing") out.drifted.push_back(j["fields"]);
    if (j["source"] == "eplb" && j["kind"] == "rebalanced") out.rebalanced.push_back(j["fields"]);
  }
  return out;
}

TEST(EplbRebalance, SampledRoutingOnAnEvenPlacementIsAsImbalancedAsThePopularityImplies) {
  // Hand estimate: Zipf(0.6) over 256 experts in a random order, 33 slots on each of 8 ranks: the
  // busiest rank's share is ~1.35 x the mean (averaged over random orders); the draws add little at
  // ~64K pairs per rank. A uniform popularity leaves only the draws' noise: well under 2%.
  const RunResult skewed = run(0.6, {}, 0);
  EXPECT_GT(skewed.imbalance, 1.15);
  EXPECT_LT(skewed.imbalance, 1.7);
  const RunResult uniform = run(0, {}, 0);
  EXPECT_GT(uniform.imbalance, 1.0);  // ranks differ by chance
  EXPECT_LT(uniform.imbalance, 1.02);
  EXPECT_GT(skewed.total.seconds(), uniform.total.seconds());
}

TEST(EplbRebalance, RebalancingFromReportedCountsCutsTheImbalanceAndTheRunTime) {
  const RunResult still = run(0.6, {}, 0);
  const RunResult eplb = run(0.6, {}, 2);
  ASSERT_GE(eplb.rebalanced.size(), 1u);
  const auto& first = eplb.rebalanced.front();
  EXPECT_GT(first["imbalance_before"].get<double>(), 1.15) << first.dump();
  EXPECT_LT(first["imbalance_after"].get<double>(), 1.1) << first.dump();
  // The busiest GPU moves at least the average share of the bytes, at most 900 GB/s.
  const auto bytes = first["bytes_moved"].get<double>();
  EXPECT_GT(bytes, 0.0);
  EXPECT_GT(first["slots_moved"].get<double>(), 0.0);
  EXPECT_GE(first["duration_ns"].get<double>(), bytes / kRanks / kNvlinkBytesPerS * 1e9) << first.dump();
  // After the first rebalance (2 of the run's steps) the busiest rank is near the mean.
  EXPECT_LT(eplb.imbalance, still.imbalance - 0.1);
  EXPECT_LT(eplb.total.seconds(), still.total.seconds() * 0.97);
}

TEST(EplbRebalance, DriftMakesThePlacementStaleAndTheNextRebalanceMendsIt) {
  const RunResult r = run(0.6, rt::ms(500), 2);
  ASSERT_GE(r.drifted.size(), 2u);
  ASSERT_GE(r.rebalanced.size(), 2u);
  // A drift moves half the popularity order: the placement the previous rebalance made is stale by the
  // time of the next one, which finds it imbalanced and brings it back down.
  double stale = 0;
  for (std::size_t i = 1; i < r.rebalanced.size(); ++i) {
    stale = std::max(stale, r.rebalanced[i]["imbalance_before"].get<double>());
    EXPECT_LT(r.rebalanced[i]["imbalance_after"].get<double>(), 1.1) << r.rebalanced[i].dump();
  }
  EXPECT_GT(stale, 1.1);
}

TEST(EplbRebalance, OffByDefaultRecordsNothing) {
  const RunResult r = run(0, {}, 0);
  EXPECT_TRUE(r.drifted.empty());
  EXPECT_TRUE(r.rebalanced.empty());
}

TEST(EplbRebalance, BadSettingsAreClearErrors) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 1);
  const ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  NormalGroupConfig cfg;
  cfg.eplb_interval_steps = -1;
  EXPECT_THROW(NormalWorkerGroup(rt, model, cluster.devices(0, 1), cluster.collectives(), cfg,
                                 [](std::int32_t, const StepOutcome&) {}, [](std::int32_t, RequestId, const std::string&) {}),
               std::invalid_argument);
}

}  // namespace eplb_rebalance_test
}  // namespace nvl::engine
