// The one-switch-layer all-to-all pricing (CrossbarAllToAll, the fast path of a fresh unequal
// all-to-all) against the exact mode, whose flows share the links max-min in the live flow model.
#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "fabric/collective_plan.h"
#include "fabric/collective_pricer.h"
#include "fabric/crossbar_all_to_all.h"
#include "emu/rt/virtual_runtime.h"
#include "fabric/probe.h"
#include "fabric/profile_loader.h"
#include "fabric/sampled_routing.h"

using namespace nvl;

namespace crossbar_all_to_all_test {

std::vector<hal::DeviceId> ranks(int n) {
  std::vector<hal::DeviceId> m(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) m[static_cast<std::size_t>(i)] = i;
  return m;
}

const fabric::ClusterSpec& rack() {
  static const fabric::ClusterSpec spec = fabric::make_cluster("gb300-nvl72", 1);
  return spec;
}

// A sampled dispatch of `n` ranks with tokens drawn from [least, most] per rank; `hot`: rank 1 also
// takes eight times its sampled share from every sender (a hot expert).
std::vector<hal::CollectiveOp> sampled(int n, int least, int most, double skew, bool hot, std::uint64_t seed) {
  fabric::SampledRouting routing;
  routing.experts_per_rank = routing.experts / n;
  routing.skew = skew;
  std::vector<int> tokens(static_cast<std::size_t>(n));
  std::uint64_t x = seed * 2654435761ULL + 1;
  for (auto& t : tokens) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    t = least + static_cast<int>((x >> 33) % static_cast<std::uint64_t>(most - least + 1));
  }
  auto ops = fabric::sampled_all_to_all(routing, tokens, seed);
  if (hot) {
    for (auto& op : ops) op.send_bytes[1] *= 8;
  }
  return ops;
}

// The largest relative difference of the members' completion times, fast against exact.
double worst_member_error(const std::vector<hal::CollectiveOp>& ops) {
  const int n = static_cast<int>(ops.size());
  const auto fast = fabric::member_times(rack(), ranks(n), ops, true);
  const auto exact = fabric::member_times(rack(), ranks(n), ops, false);
  double worst = 0;
  for (std::size_t m = 0; m < fast.size(); ++m) {
    const double e = static_cast<double>(exact[m].ns());
    worst = std::max(worst, std::abs(static_cast<double>(fast[m].ns()) - e) / e);
  }
  return worst;
}

TEST(CrossbarAllToAll, SampledRoutingAgreesWithTheExactModeWithinOnePercent) {
  for (int n : {8, 16, 32, 64}) {
    for (const bool prefill : {false, true}) {
      for (double skew : {0.0, 0.6, 1.0, 1.4}) {
        for (const bool hot : {false, true}) {
          const auto ops = prefill ? sampled(n, 1024, 16384, skew, hot, 11) : sampled(n, 1, 256, skew, hot, 7);
          const double worst = worst_member_error(ops);
          EXPECT_LT(worst, 0.01) << "EP" << n << (prefill ? " prefill" : " decode") << " skew " << skew << (hot ? " hot" : "");
        }
      }
    }
  }
}

TEST(CrossbarAllToAll, FourRanksOneReceivingTwiceAsMuchEndWhenItsIngressHasDrained) {
  // Every pair moves b bytes (20 ns of wire on a channel), but every rank sends 2b to rank 3: rank 3's
  // ingress carries 6b, the busiest channel. Each sender's flow to rank 3 shares that ingress with two
  // others of the same size, so all three end together when it has drained: 6 x 20 = 120 ns of data;
  // every member has a flow to or from rank 3, so all are done then, or at the sync if that is later.
  auto ops = fabric::uniform_all_to_all(4, 0, hal::AllToAllRole::moe_dispatch);
  rt::Duration hand;
  fabric::CrossbarAllToAll::Priced priced;
  {
  rt::VirtualRuntime rt;
  fabric::Fabric fab(rt, rack(), fabric::FabricOptions{rt::Duration()});
  const fabric::AllToAllKernel& k = fab.profile().collectives.a2a_dispatch;
  const int up0 = fab.topology().gpu(0).nvl_up;
  const double wire_ns_per_byte = 1e9 / (fab.flows().capacity(up0) * k.efficiency);
  const auto b = static_cast<std::uint64_t>(20 / wire_ns_per_byte);
  ops = fabric::uniform_all_to_all(4, b, hal::AllToAllRole::moe_dispatch);
  for (int r = 0; r < 3; ++r) ops[static_cast<std::size_t>(r)].send_bytes[3] = 2 * b;
  std::vector<int> route;
  const rt::Duration latency = fab.append_gpu_route(0, 3, route);
  const rt::Duration overhead = k.launch + k.per_peer * 3;
  const auto data = rt::ns(static_cast<std::int64_t>(std::ceil(6 * static_cast<double>(b) * wire_ns_per_byte)));
  hand = overhead + latency + std::max(k.sync, data);
  fabric::CrossbarAllToAll crossbar;
  ASSERT_TRUE(crossbar.price(fab, ranks(4), fabric::shared_parts(ops), priced));
  }
  for (const rt::Duration d : priced.done) EXPECT_EQ(d, hand);
  const auto exact = fabric::member_times(rack(), ranks(4), ops, false);
  for (const rt::Duration d : exact) EXPECT_NEAR(static_cast<double>(d.ns()), static_cast<double>(hand.ns()), 0.01 * static_cast<double>(hand.ns()));
}

TEST(CrossbarAllToAll, HoldsTheTrafficTheFullPlanGives) {
  // The held channels, their wire bytes and flow counts are what a flow starting during the call shares
  // capacity with: they must be the plan's, bit for bit.
  rt::VirtualRuntime rt;
  fabric::Fabric fab(rt, rack(), fabric::FabricOptions{rt::Duration()});
  const auto ops = fabric::shared_parts(sampled(64, 1, 4, 0.0, false, 3));
  fabric::CrossbarAllToAll crossbar;
  fabric::CrossbarAllToAll::Priced priced;
  ASSERT_TRUE(crossbar.price(fab, ranks(64), ops, priced));
  fabric::CollectivePlan plan;
  fabric::plan_collective(fab, ranks(64), ops, plan);
  fabric::CollectivePricer pricer;
  const std::vector<int> channels = pricer.load(plan, fab);
  std::vector<rt::Duration> done;
  std::vector<double> bytes, seconds;
  pricer.price(64, done, bytes, seconds);
  std::vector<int> flows(channels.size(), 0);
  for (const auto& f : plan.flows) {
    for (int c : plan.route(f)) ++flows[static_cast<std::size_t>(std::find(channels.begin(), channels.end(), c) - channels.begin())];
  }
  EXPECT_EQ(priced.channels, channels);
  EXPECT_EQ(priced.channel_bytes, bytes);
  EXPECT_EQ(priced.channel_flows, flows);
  EXPECT_EQ(pricer.channel_flows(), flows);  // the counts a priced plan holds its channels with
  EXPECT_EQ(priced.wire_from, plan.overhead);
  // When each channel carries its last byte: not before its load at its capacity, not after the busiest
  // one has drained (under max-min it carries its whole load at full rate); the solve within its 0.5%
  // slack, which ends flows that close to done together. The two differ within that: the crossbar
  // prices this latency-bound call from its busiest channel, the plan is solved.
  const double busiest = *std::max_element(seconds.begin(), seconds.end());
  for (std::size_t i = 0; i < channels.size(); ++i) {
    const double at_capacity = bytes[i] / fab.flows().capacity(channels[i]);
    for (const double s : {priced.channel_seconds[i], seconds[i]}) {
      EXPECT_GE(s, at_capacity * (1 - 0.005));
      EXPECT_LE(s, busiest * (1 + 1e-12));
    }
  }
  EXPECT_EQ(priced.done, done);  // latency-bound: priced from the busiest channel, as the pricer does
}

TEST(CrossbarAllToAll, FourRanksOfEqualPairsEndWhenTheirChannelsHaveDrained) {
  // Every pair moves b bytes, 4 us of wire on a channel: each channel carries three such flows at a
  // third of its rate each, so the data moves in 12 us, past the 7.5 us sync.
  std::vector<hal::CollectiveOp> ops;
  rt::Duration hand;
  fabric::CrossbarAllToAll::Priced priced;
  {
    rt::VirtualRuntime rt;
    fabric::Fabric fab(rt, rack(), fabric::FabricOptions{rt::Duration()});
    const fabric::AllToAllKernel& k = fab.profile().collectives.a2a_dispatch;
    const double wire_ns_per_byte = 1e9 / (fab.flows().capacity(fab.topology().gpu(0).nvl_up) * k.efficiency);
    const auto b = static_cast<std::uint64_t>(4000 / wire_ns_per_byte);
    ops = fabric::uniform_all_to_all(4, b, hal::AllToAllRole::moe_dispatch);
    std::vector<int> route;
    const rt::Duration latency = fab.append_gpu_route(0, 3, route);
    const auto data = rt::ns(static_cast<std::int64_t>(std::ceil(3 * static_cast<double>(b) * wire_ns_per_byte)));
    ASSERT_GT(data, k.sync);
    hand = k.launch + k.per_peer * 3 + latency + data;
    fabric::CrossbarAllToAll crossbar;
    ASSERT_TRUE(crossbar.price(fab, ranks(4), fabric::shared_parts(ops), priced));
  }
  for (const rt::Duration d : priced.done) EXPECT_NEAR(static_cast<double>(d.ns()), static_cast<double>(hand.ns()), 1.0);
  const auto exact = fabric::member_times(rack(), ranks(4), ops, false);
  for (const rt::Duration d : exact) EXPECT_NEAR(static_cast<double>(d.ns()), static_cast<double>(hand.ns()), 0.01 * static_cast<double>(hand.ns()));
}

}  // namespace crossbar_all_to_all_test
