#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "fabric/water_fill.h"

using nvl::fabric::WaterFill;

namespace {

// Flows over random paths of one to four distinct channels with random capacities (a fixed LCG, so the
// instance is the same on every run).
struct Instance {
  std::vector<double> capacity;
  std::vector<std::vector<int>> paths;

  Instance(int channels, int flows, std::uint64_t seed) : x_(seed) {
    for (int c = 0; c < channels; ++c) capacity.push_back(1e9 * static_cast<double>(1 + next(100)));
    for (int f = 0; f < flows; ++f) {
      std::vector<int> path;
      const int length = 1 + next(4);
      while (static_cast<int>(path.size()) < length) {
        const int c = next(channels);
        if (std::find(path.begin(), path.end(), c) == path.end()) path.push_back(c);
      }
      paths.push_back(path);
    }
  }
  int next(int n) {
    x_ = x_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((x_ >> 33) % static_cast<std::uint64_t>(n));
  }

 private:
  std::uint64_t x_;
};

void flatten(const std::vector<std::vector<int>>& paths, std::vector<int>& offset, std::vector<int>& path) {
  offset.assign(1, 0);
  path.clear();
  for (const auto& p : paths) {
    path.insert(path.end(), p.begin(), p.end());
    offset.push_back(static_cast<int>(path.size()));
  }
}

// Removes flows one by one, in a scrambled order; after each removal the repeated solve must give every
// remaining flow exactly (bit for bit) the rate a fresh one-shot solve of the remaining flows gives it.
void expect_repeated_solves_match_fresh_ones(int channels, int flows) {
  Instance in(channels, flows, 42 + static_cast<std::uint64_t>(channels));
  std::vector<int> offset, path;
  flatten(in.paths, offset, path);
  WaterFill repeated;
  repeated.set_flows(in.capacity.size(), offset, path);
  std::vector<char> gone(static_cast<std::size_t>(flows), 0);
  std::vector<double> rate, fresh_rate;
  for (int step = 0; step < flows; ++step) {
    repeated.solve(in.capacity, rate);
    ASSERT_EQ(rate.size(), static_cast<std::size_t>(flows));
    std::vector<std::vector<int>> left;
    std::vector<int> ids;
    for (int f = 0; f < flows; ++f) {
      if (gone[static_cast<std::size_t>(f)]) {
        EXPECT_EQ(rate[static_cast<std::size_t>(f)], 0.0) << "removed flow " << f;
        continue;
      }
      left.push_back(in.paths[static_cast<std::size_t>(f)]);
      ids.push_back(f);
    }
    std::vector<int> fresh_offset, fresh_path;
    flatten(left, fresh_offset, fresh_path);
    WaterFill fresh;
    fresh.solve(in.capacity, fresh_offset, fresh_path, fresh_rate);
    for (std::size_t k = 0; k < ids.size(); ++k) {
      ASSERT_EQ(rate[static_cast<std::size_t>(ids[k])], fresh_rate[k])
          << "flow " << ids[k] << " after " << step << " removals";
    }
    int victim = in.next(flows);
    while (gone[static_cast<std::size_t>(victim)]) victim = (victim + 1) % flows;
    gone[static_cast<std::size_t>(victim)] = 1;
    repeated.remove(victim);
  }
}

}  // namespace

TEST(WaterFill, MaxMinFairShares) {
  // Channel 0 (1 GB/s) carries x and y; channel 1 (10 GB/s) carries y and z: x = y = 0.5 GB/s, and z
  // takes what y leaves of channel 1.
  const std::vector<double> capacity = {1e9, 10e9};
  const std::vector<int> offset = {0, 1, 3, 4};
  const std::vector<int> path = {0, 0, 1, 1};
  WaterFill fill;
  std::vector<double> rate;
  fill.solve(capacity, offset, path, rate);
  ASSERT_EQ(rate.size(), 3u);
  EXPECT_DOUBLE_EQ(rate[0], 0.5e9);
  EXPECT_DOUBLE_EQ(rate[1], 0.5e9);
  EXPECT_DOUBLE_EQ(rate[2], 9.5e9);
}

TEST(WaterFill, RepeatedSolvesMatchFreshOnesWhenScanning) { expect_repeated_solves_match_fresh_ones(40, 300); }

TEST(WaterFill, RepeatedSolvesMatchFreshOnesWhenHeaping) { expect_repeated_solves_match_fresh_ones(700, 900); }

TEST(WaterFill, RoundsListEveryFlowOnceAtItsRate) {
  Instance in(30, 200, 7);
  std::vector<int> offset, path;
  flatten(in.paths, offset, path);
  WaterFill fill;
  std::vector<double> rate;
  fill.solve(in.capacity, offset, path, rate);
  std::vector<int> seen(rate.size(), 0);
  for (std::size_t k = 0; k < fill.rounds(); ++k) {
    EXPECT_FALSE(fill.round_flows(k).empty());
    for (int f : fill.round_flows(k)) {
      ++seen[static_cast<std::size_t>(f)];
      EXPECT_EQ(rate[static_cast<std::size_t>(f)], fill.round_rate(k));
    }
  }
  for (std::size_t f = 0; f < seen.size(); ++f) EXPECT_EQ(seen[f], 1) << "flow " << f;
}
