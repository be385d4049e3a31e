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

namespace {

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

}  // namespace

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
