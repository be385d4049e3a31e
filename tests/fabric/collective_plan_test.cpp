// An all-to-all plan keeps its members' pair routes for the next plan: what it plans must stay what
// routing every pair afresh gives, through link failures, partitions and other members.
#include <gtest/gtest.h>

#include "emu/rt/virtual_runtime.h"
#include "fabric/collective_plan.h"
#include "fabric/probe.h"
#include "fabric/profile_loader.h"

using namespace nvl;
using fabric::Endpoint;

namespace collective_plan_test {

struct Rig {
  rt::VirtualRuntime rt;
  fabric::Fabric fab;
  explicit Rig(int units) : fab(rt, fabric::make_cluster("gb300-nvl72", units)) {}

  // Every flow's route and latency are the ones the fabric routes its pair on now.
  void expect_fresh_routes(const std::vector<hal::DeviceId>& members, const fabric::CollectivePlan& plan) const {
    for (const auto& f : plan.flows) {
      const fabric::Route r = fab.route(Endpoint::gpu(members[static_cast<std::size_t>(f.src_rank)]),
                                        Endpoint::gpu(members[static_cast<std::size_t>(f.dst_rank)]),
                                        hal::RdmaPath::automatic);
      const auto route = plan.route(f);
      EXPECT_EQ(std::vector<int>(route.begin(), route.end()), r.channels) << f.src_rank << "->" << f.dst_rank;
      EXPECT_EQ(f.latency, r.latency) << f.src_rank << "->" << f.dst_rank;
    }
  }
  void set_gpu1_links(bool down) {
    for (int s = 0; s < 18; ++s) fab.set_link_down("rack0/tray0/gpu1", "rack0/nvswitch" + std::to_string(s), down);
  }
};

// plan_collective for parts held by value (a group gets them shared).
void plan_parts(const fabric::Fabric& fab, const std::vector<hal::DeviceId>& members,
                const std::vector<hal::CollectiveOp>& ops, fabric::CollectivePlan& plan) {
  fabric::plan_collective(fab, members, fabric::shared_parts(ops), plan);
}

std::string plan_error(const fabric::Fabric& fab, const std::vector<hal::DeviceId>& members,
                       const std::vector<hal::CollectiveOp>& ops, fabric::CollectivePlan& plan) {
  try {
    plan_parts(fab, members, ops, plan);
  } catch (const hal::HalError& e) {
    return e.what();
  }
  return "";
}

TEST(CollectivePlan, AllToAllFlowsFollowEveryPairsRoute) {
  Rig r(1);
  const std::vector<hal::DeviceId> members = {3, 0, 7, 5};
  auto ops = fabric::uniform_all_to_all(4, 1000, hal::AllToAllRole::plain);
  ops[1].send_bytes[2] = 0;
  fabric::CollectivePlan plan;
  plan_parts(r.fab, members, ops, plan);
  EXPECT_EQ(plan.flows.size(), 11u);  // 4 x 3 pairs, one of them empty
  r.expect_fresh_routes(members, plan);
  // Planned again (the pair that was empty now sends), and for other members with the same plan.
  ops[1].send_bytes[2] = 500;
  plan_parts(r.fab, members, ops, plan);
  EXPECT_EQ(plan.flows.size(), 12u);
  r.expect_fresh_routes(members, plan);
  const std::vector<hal::DeviceId> others = {10, 11, 12, 13};
  plan_parts(r.fab, others, ops, plan);
  r.expect_fresh_routes(others, plan);
}

TEST(CollectivePlan, AllToAllAfterALinkFailsNamesItAndRecovers) {
  Rig r(1);
  const std::vector<hal::DeviceId> members = {0, 1, 2, 3};
  const auto ops = fabric::uniform_all_to_all(4, 1000, hal::AllToAllRole::moe_dispatch);
  fabric::CollectivePlan plan;
  plan_parts(r.fab, members, ops, plan);
  r.set_gpu1_links(true);
  const std::string down = plan_error(r.fab, members, ops, plan);
  EXPECT_NE(down.find("rack0/tray0/gpu1<->rack0/nvswitch0 is down"), std::string::npos) << down;
  // Pairs that send nothing are not routed: without rank 1's traffic the plan stands.
  auto around = ops;
  for (std::size_t m = 0; m < 4; ++m) {
    around[1].send_bytes[m] = 0;
    around[m].send_bytes[1] = 0;
  }
  EXPECT_EQ(plan_error(r.fab, members, around, plan), "");
  r.set_gpu1_links(false);
  EXPECT_EQ(plan_error(r.fab, members, ops, plan), "");
  EXPECT_EQ(plan.flows.size(), 12u);
  r.expect_fresh_routes(members, plan);
}

TEST(CollectivePlan, AllToAllAcrossAPartitionFailsUntilItHeals) {
  Rig r(2);
  const std::vector<hal::DeviceId> members = {0, 1, 72, 73};  // two NVLink domains: scale-out between them
  const auto ops = fabric::uniform_all_to_all(4, 1000, hal::AllToAllRole::plain);
  fabric::CollectivePlan plan;
  plan_parts(r.fab, members, ops, plan);
  r.expect_fresh_routes(members, plan);
  r.fab.partition({r.fab.topology().gpu(0).host}, {r.fab.topology().gpu(72).host});
  const std::string blocked = plan_error(r.fab, members, ops, plan);
  EXPECT_NE(blocked.find("network partition"), std::string::npos) << blocked;
  r.fab.heal_partition();
  EXPECT_EQ(plan_error(r.fab, members, ops, plan), "");
  r.expect_fresh_routes(members, plan);
}

TEST(CollectivePlan, OtherCollectivesBetweenAllToAllsKeepTheirRoutes) {
  Rig r(1);
  const std::vector<hal::DeviceId> members = {0, 1, 2, 3};
  const auto a2a = fabric::uniform_all_to_all(4, 1000, hal::AllToAllRole::plain);
  hal::CollectiveOp small;
  small.kind = hal::CollectiveKind::all_reduce;  // a tree: flows between members, routed one by one
  small.name = "ar";
  small.bytes = 1024;
  const std::vector<hal::CollectiveOp> tree(4, small);
  fabric::CollectivePlan plan;
  for (int round = 0; round < 2; ++round) {
    plan_parts(r.fab, members, a2a, plan);
    EXPECT_EQ(plan.flows.size(), 12u);
    r.expect_fresh_routes(members, plan);
    plan_parts(r.fab, members, tree, plan);
    EXPECT_EQ(plan.algorithm, "tree");
    EXPECT_EQ(plan.flows.size(), 6u);
    r.expect_fresh_routes(members, plan);
  }
}

}  // namespace collective_plan_test
