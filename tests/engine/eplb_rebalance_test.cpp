// EPLB inside a run of the normal group: expert popularity drifts, a stale placement grows
// imbalanced and slows the MoE-heavy steps; periodic rebalancing brings the imbalance back down and
// pays for its weight moves over NVLink before the next step.
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/worker/normal_worker_group.h"

namespace nvl::engine {
namespace {

constexpr int kRanks = 8;
constexpr double kNvlinkBytesPerS = 900e9;  // REFERENCE.md 1.1: NVLink 5, one direction per GPU

struct RunResult {
  rt::Duration total;
  std::vector<nlohmann::json> drifted, rebalanced;
};

// Long prompts: every step is a full-budget prefill, whose routed-expert GEMMs are compute-bound, so
// the most loaded rank sets the MoE time.
RunResult run(std::int64_t drift_every, std::int64_t eplb_every) {
  rt::VirtualRuntime rt;
  rt.log().keep_records(true);
  emu::EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", kRanks);
  const ModelProfile model = load_model_profile(model_profile_path("glm-5"));
  NormalGroupConfig cfg;
  cfg.activation_reserve_bytes = 20'000'000'000;
  cfg.expert_skew = 0.6;
  cfg.redundant_experts = kRanks;
  cfg.expert_drift_interval_steps = drift_every;
  cfg.expert_drift_fraction = 0.5;
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
  for (const std::string& line : rt.log().lines()) {
    const auto j = nlohmann::json::parse(line);
    if (j["source"] != "eplb") continue;
    (j["kind"] == "rebalanced" ? out.rebalanced : out.drifted).push_back(j["fields"]);
  }
  return out;
}

TEST(EplbRebalance, DriftWithoutRebalancingGrowsImbalanceAndMoeTime) {
  const RunResult still = run(0, 0);
  const RunResult drift = run(4, 0);
  ASSERT_GE(drift.drifted.size(), 2u);
  EXPECT_TRUE(drift.rebalanced.empty());
  // The placement was made for the first order: once half the order has moved, some rank is hot.
  double worst = 0;
  for (const auto& f : drift.drifted) worst = std::max(worst, f["imbalance"].get<double>());
  EXPECT_GT(worst, 1.2);
  EXPECT_GT(drift.total.seconds(), still.total.seconds() * 1.05);
}

TEST(EplbRebalance, RebalancingBringsImbalanceBackDownAndPaysForTheMoves) {
  const RunResult r = run(4, 2);
  ASSERT_GE(r.rebalanced.size(), 2u);
  for (const auto& f : r.rebalanced) {
    const double before = f["imbalance_before"].get<double>();
    const double after = f["imbalance_after"].get<double>();
    EXPECT_LT(after, before) << f.dump();
    EXPECT_LT(after, 1.2) << f.dump();
    // The busiest GPU moves at least the average share of the bytes, at most 900 GB/s.
    const auto bytes = f["bytes_moved"].get<double>();
    const auto slots = f["slots_moved"].get<double>();
    EXPECT_GT(bytes, 0.0);
    EXPECT_GT(slots, 0.0);
    const double floor_ns = bytes / kRanks / kNvlinkBytesPerS * 1e9;
    EXPECT_GE(f["duration_ns"].get<double>(), floor_ns) << f.dump();
  }
  // Drift events right after a rebalance start from a fresh placement: the imbalance it sees is
  // lower on average than without rebalancing.
  const RunResult stale = run(4, 0);
  double with = 0, without = 0;
  for (const auto& f : r.drifted) with += f["imbalance"].get<double>();
  for (const auto& f : stale.drifted) without += f["imbalance"].get<double>();
  EXPECT_LT(with / static_cast<double>(r.drifted.size()), without / static_cast<double>(stale.drifted.size()));
}

TEST(EplbRebalance, OffByDefaultRecordsNothing) {
  const RunResult r = run(0, 0);
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

}  // namespace
}  // namespace nvl::engine
