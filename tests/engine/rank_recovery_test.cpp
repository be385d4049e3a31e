// Recovery of the P/D system from faults on its DP ranks: a GPU lost mid-decode (its requests finish
// on other ranks with every token delivered once), an ECC error (the rank is drained, reset and comes
// back), a crashed worker (its requests re-run, the worker restarts), and the router's routing around
// a dead rank; plus the expert re-placement a lost rank forces.
#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/eplb/expert_placement.h"
#include "engine/system/pd_system.h"
#include "fabric/fabric_rdma.h"
#include "tests/engine/test_request.h"

namespace nvl::engine {
namespace rank_recovery_test {

using test::request;

constexpr std::int64_t kOutput = 120;

struct Record {
  rt::Time at;
  std::string kind;
  nlohmann::json fields;
};

struct Rig {
  Rig() : cluster(rt, "gb300", "gb300-nvl72", 72), rdma(cluster.fabric()), model(load_model_profile(model_profile_path("deepseek-v3"))) {
    rt.log().set_observer([this](rt::Time t, std::string_view source, std::string_view kind, const nlohmann::json& f,
                                 rt::Severity) {
      if (source == "router" || source == "health" || source == "pd" || source == "normal-group") {
        records.push_back(Record{t, std::string(source) + "/" + std::string(kind), f});
      }
    });
    PdDeployment d;
    d.decode.push_back(DecodeInstance{.name = "dep/0", .gpus = cluster.devices(0, 8), .group = {}});
    d.decode.back().group.redundant_experts = 8;
    d.system.router.policy = "least_load";
    d.system.health.check_interval = rt::ms(100);
    d.system.health.detection_delay = rt::ms(50);
    d.system.health.gpu_reset_time = rt::ms(300);
    d.system.health.worker_restart_time = rt::ms(400);
    system = std::make_unique<PdSystem>(
        rt, model, cluster.collectives(), &rdma, std::move(d),
        [this](RequestId id, std::int64_t n, bool first, bool) {
          tokens[id] += n;
          firsts[id] += first ? 1 : 0;
        },
        [this](const RequestTiming& t) { done[t.id] = t; });
  }
  void submit_batch(RequestId first, int count) {
    for (RequestId id = first; id < first + count; ++id) system->submit(request(id, 1'500, kOutput));
  }
  std::vector<Record> of(const std::string& kind) const {
    std::vector<Record> out;
    for (const Record& r : records) {
      if (r.kind == kind) out.push_back(r);
    }
    return out;
  }
  void expect_all_served(RequestId first, RequestId last) {
    for (RequestId id = first; id <= last; ++id) {
      ASSERT_TRUE(done.contains(id)) << id;
      EXPECT_EQ(done[id].failure, "") << id;
      EXPECT_EQ(tokens[id], kOutput) << "request " << id << ": every token exactly once";
      EXPECT_EQ(firsts[id], 1) << "request " << id << ": one first token";
    }
  }
  // No "routed" record names `rank` between its declaration and its return (or the end).
  void expect_not_routed_while_dead(std::int32_t rank) {
    std::optional<rt::Time> dead_since;
    for (const Record& r : records) {
      if (r.kind == "health/rank_declared_dead" && r.fields["rank"] == rank) dead_since = r.at;
      if (r.kind == "health/rank_back" && r.fields["rank"] == rank) dead_since.reset();
      if (r.kind == "router/routed" && dead_since) {
        EXPECT_NE(r.fields["rank"], rank) << "routed at " << r.at;
      }
    }
  }

  rt::VirtualRuntime rt;
  emu::EmulatedCluster cluster;
  fabric::FabricRdma rdma;
  ModelProfile model;
  std::unique_ptr<PdSystem> system;
  std::map<RequestId, std::int64_t> tokens, firsts;
  std::map<RequestId, RequestTiming> done;
  std::vector<Record> records;
};

TEST(RankRecovery, RequestsOnALostGpuFinishElsewhereWithEveryTokenOnce) {
  Rig rig;
  rig.submit_batch(1, 24);
  rt::Time fault_at;
  rig.rt.call_after(rt::ms(400), [&] {
    fault_at = rig.rt.now();
    rig.cluster.fleet().device(3).inject_gpu_lost();
  });
  rig.rt.run();
  rig.expect_all_served(1, 24);
  // Mid-decode: rank 3 had delivered some tokens of each request it held, which continued elsewhere.
  const auto moved = rig.of("pd/request_migrated");
  ASSERT_FALSE(moved.empty());
  for (const Record& m : moved) {
    EXPECT_EQ(m.fields["from_rank"], 3);
    EXPECT_GT(m.fields["output_tokens"].get<std::int64_t>(), 0);
    EXPECT_LT(m.fields["output_tokens"].get<std::int64_t>(), kOutput);
  }
  const auto declared = rig.of("health/rank_declared_dead");
  ASSERT_EQ(declared.size(), 1u);
  EXPECT_GE(declared[0].at - fault_at, rt::ms(50)) << "declared after the detection delay";
  EXPECT_NE(declared[0].fields["why"].get<std::string>().find("Xid 79"), std::string::npos);
  EXPECT_FALSE(rig.system->rank_live(3));
  EXPECT_EQ(rig.system->decode_instance(0).live_ranks(), 7);
  rig.expect_not_routed_while_dead(3);
  // The survivors' KV returns to empty.
  for (std::int32_t r = 0; r < 8; ++r) EXPECT_EQ(rig.system->kv(r).gpu().used_blocks(), 0) << r;
}

TEST(RankRecovery, AnEccErrorDrainsAndResetsTheRankWhichThenServesAgain) {
  Rig rig;
  rig.submit_batch(1, 16);
  rt::Time fault_at;
  rig.rt.call_after(rt::ms(300), [&] {
    fault_at = rig.rt.now();
    rig.cluster.fleet().device(2).inject_ecc_error();
  });
  // After the reset time, a second batch: the least-loaded router sends some of it to the empty rank 2.
  rig.rt.call_after(rt::ms(1'500), [&] { rig.submit_batch(101, 16); });
  rig.rt.run();
  rig.expect_all_served(1, 16);
  rig.expect_all_served(101, 116);
  const auto back = rig.of("health/rank_back");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_GE(back[0].at - fault_at, rt::ms(50 + 300)) << "detection delay, then the reset time";
  EXPECT_TRUE(rig.system->rank_live(2));
  EXPECT_EQ(rig.cluster.fleet().device(2).health(), hal::DeviceHealth::healthy);
  rig.expect_not_routed_while_dead(2);
  bool routed_after_back = false;
  for (const Record& r : rig.of("router/routed")) routed_after_back |= r.at > back[0].at && r.fields["rank"] == 2;
  EXPECT_TRUE(routed_after_back) << "the router sends to the rank again once it is back";
}

TEST(RankRecovery, ACrashedWorkersRequestsReRunAndTheWorkerRestarts) {
  Rig rig;
  rig.submit_batch(1, 16);
  rig.rt.call_after(rt::ms(300), [&] { rig.system->crash_worker(5); });
  rig.rt.run();
  rig.expect_all_served(1, 16);
  const auto declared = rig.of("health/rank_declared_dead");
  ASSERT_EQ(declared.size(), 1u);
  EXPECT_NE(declared[0].fields["why"].get<std::string>().find("worker process"), std::string::npos);
  EXPECT_FALSE(rig.of("pd/request_migrated").empty());
  EXPECT_EQ(rig.of("health/rank_back").size(), 1u);
  EXPECT_TRUE(rig.system->rank_live(5));
}

TEST(RankRecovery, WithEveryRankLostRequestsFailNamingTheFault) {
  Rig rig;
  rig.submit_batch(1, 4);
  rig.rt.call_after(rt::ms(200), [&] {
    for (int g = 0; g < 8; ++g) rig.cluster.fleet().device(g).inject_gpu_lost();
  });
  rig.rt.run();
  for (RequestId id = 1; id <= 4; ++id) {
    ASSERT_TRUE(rig.done.contains(id));
    EXPECT_NE(rig.done[id].failure.find("Xid 79"), std::string::npos) << rig.done[id].failure;
  }
}

TEST(ExpertReplacement, ALostRanksExpertsTakeRedundantSlotsOrExtraOnes) {
  const ExpertLoad load = uniform_expert_load(256);
  const ExpertPlacement with_copies(load, 8, 56);  // 39 slots per rank, 56 experts held twice
  const ExpertPlacement after = with_copies.without_rank(0, load);
  EXPECT_EQ(after.ranks(), 7);
  std::set<std::int64_t> held;
  for (std::int64_t k = 0; k < 7; ++k) held.insert(after.experts_on(k).begin(), after.experts_on(k).end());
  EXPECT_EQ(held.size(), 256u) << "every expert still has a copy";
  // Rank 0's experts that had no copy elsewhere (at most its 39) took the slots of redundant copies
  // (at least 56 - 39 left on the others): no rank grew beyond its 39 slots.
  EXPECT_EQ(after.slots_per_rank(), 39);

  // 64 ranks with 64 copies (5 slots each). Dropping rank 7 alone doubles the share of the other copy of
  // each doubled expert it held; placing its single experts in freed copy slots must add no rank above
  // that forced peak.
  const ExpertPlacement rack(load, 64, 64);
  const auto& gone = rack.experts_on(7);
  double forced_peak = 0;
  for (std::int64_t k = 0; k < 64; ++k) {
    if (k == 7) continue;
    double share = 0;
    for (std::int64_t e : rack.experts_on(k)) {
      const bool lost_a_copy = std::find(gone.begin(), gone.end(), e) != gone.end();
      share += load[static_cast<std::size_t>(e)] / static_cast<double>(rack.replicas_of(e) - (lost_a_copy ? 1 : 0));
    }
    forced_peak = std::max(forced_peak, share);
  }
  EXPECT_LE(rack.without_rank(7, load).imbalance(load), forced_peak * 63.0 + 1e-9);

  const ExpertPlacement no_copies(load, 8, 0);  // 32 slots per rank, every expert once
  const ExpertPlacement shrunk = no_copies.without_rank(7, load);
  std::int64_t slots = 0;
  for (std::int64_t k = 0; k < 7; ++k) slots += static_cast<std::int64_t>(shrunk.experts_on(k).size());
  EXPECT_EQ(slots, 256);
  EXPECT_EQ(shrunk.slots_per_rank(), 37) << "256 experts over 7 ranks: some hold 37";
  EXPECT_GT(shrunk.imbalance(load), 1.0);
}

}  // namespace rank_recovery_test
}  // namespace nvl::engine
