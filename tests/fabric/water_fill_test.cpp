#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "fabric/water_fill.h"

using nvl::fabric::WaterFill;

namespace water_fill_test {

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

// Progressive filling written as plainly as it can be: each round, the first channel (by index) with the
// least remaining capacity per unfixed flow fixes its unfixed flows, in flow order, at that share, and
// charges it on each of their other channels.
std::vector<double> plain_fill(const std::vector<double>& capacity, const std::vector<std::vector<int>>& paths) {
  std::vector<double> remaining = capacity;
  std::vector<double> rate(paths.size(), 0.0);
  std::vector<int> unfixed(capacity.size(), 0);
  for (const auto& p : paths) {
    for (int c : p) ++unfixed[static_cast<std::size_t>(c)];
  }
  std::vector<char> fixed(paths.size(), 0);
  for (;;) {
    int best = -1;
    double least = 0;
    for (std::size_t c = 0; c < capacity.size(); ++c) {
      if (unfixed[c] == 0) continue;
      const double share = remaining[c] / unfixed[c];
      if (best < 0 || share < least) {
        best = static_cast<int>(c);
        least = share;
      }
    }
    if (best < 0) return rate;
    const double r = std::max(least, 0.0);
    for (std::size_t f = 0; f < paths.size(); ++f) {
      const auto& p = paths[f];
      if (fixed[f] || std::find(p.begin(), p.end(), best) == p.end()) continue;
      fixed[f] = 1;
      rate[f] = r;
      for (int c : p) {
        if (c == best) continue;
        --unfixed[static_cast<std::size_t>(c)];
        remaining[static_cast<std::size_t>(c)] -= r;
      }
    }
    unfixed[static_cast<std::size_t>(best)] = 0;
  }
}

// Solves, then removes the flows `per_solve` at a time in a scrambled order (the collective pricer
// removes every flow that finished before solving again): every solve must give each flow left exactly
// (bit for bit) the plain fill's rate for the flows left, and its rounds must list each of them once,
// at its rate. A solve after removals takes over the last one's first rounds (WaterFill::resume), so
// this is also what checks that shortcut against the fill done afresh.
void expect_plain_fill_rates(const std::vector<double>& capacity, const std::vector<std::vector<int>>& paths,
                             std::uint64_t seed, std::size_t per_solve = 1) {
  std::vector<int> offset, path;
  flatten(paths, offset, path);
  WaterFill fill;
  fill.set_flows(capacity.size(), offset, path);
  Instance order(1, 0, seed);
  std::vector<char> gone(paths.size(), 0);
  std::vector<double> rate;
  for (std::size_t removed = 0; removed < paths.size(); removed += per_solve) {
    fill.solve(capacity, rate);
    std::vector<std::vector<int>> left;
    std::vector<std::size_t> ids;
    for (std::size_t f = 0; f < paths.size(); ++f) {
      if (gone[f]) continue;
      left.push_back(paths[f]);
      ids.push_back(f);
    }
    const std::vector<double> expected = plain_fill(capacity, left);
    for (std::size_t k = 0; k < ids.size(); ++k) {
      ASSERT_EQ(rate[ids[k]], expected[k]) << "flow " << ids[k] << " after " << removed << " removals";
    }
    std::vector<int> listed(paths.size(), 0);
    for (std::size_t k = 0; k < fill.rounds(); ++k) {
      for (int f : fill.round_flows(k)) {
        ++listed[static_cast<std::size_t>(f)];
        ASSERT_EQ(rate[static_cast<std::size_t>(f)], fill.round_rate(k)) << "flow " << f << " in round " << k;
      }
    }
    for (std::size_t f = 0; f < paths.size(); ++f) {
      ASSERT_EQ(listed[f], gone[f] ? 0 : 1) << "flow " << f << " after " << removed << " removals";
    }
    for (std::size_t k = 0; k < per_solve && removed + k < paths.size(); ++k) {
      auto victim = static_cast<std::size_t>(order.next(static_cast<int>(paths.size())));
      while (gone[victim]) victim = (victim + 1) % paths.size();
      gone[victim] = 1;
      fill.remove(static_cast<int>(victim));
    }
  }
}

// An all-to-all over n senders' links up (channels 0..n-1) and receivers' links down (n..2n-1), row by
// row, without the pairs that `empty` picks.
std::vector<std::vector<int>> all_to_all_paths(int n, const std::function<bool(int, int)>& empty) {
  std::vector<std::vector<int>> paths;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i != j && !empty(i, j)) paths.push_back({i, n + j});
    }
  }
  return paths;
}

TEST(WaterFill, AllToAllsGetThePlainFillsRatesWithTies) {
  // Equal capacities: every share ties at first, and rounding decides which channel goes next.
  const std::vector<double> equal(32, 900e9);
  expect_plain_fill_rates(equal, all_to_all_paths(16, [](int, int) { return false; }), 1);
  expect_plain_fill_rates(equal, all_to_all_paths(16, [](int i, int j) { return (i + j) % 3 == 0; }), 2);
  Instance random(32, 0, 3);
  expect_plain_fill_rates(random.capacity, all_to_all_paths(16, [&](int, int) { return random.next(4) == 0; }), 4);
  // Two channels per flow, drawn from one pool: a flow's second channel is another's first.
  Instance pool(24, 0, 9);
  std::vector<std::vector<int>> pairs;
  for (int f = 0; f < 300; ++f) {
    const int a = pool.next(24);
    const int b = (a + 1 + pool.next(23)) % 24;
    for (int repeat = pool.next(3); repeat >= 0; --repeat) pairs.push_back({a, b});  // runs of one first channel
  }
  expect_plain_fill_rates(pool.capacity, pairs, 10);
}

TEST(WaterFill, MixedPathsGetThePlainFillsRates) {
  Instance in(40, 200, 5);
  expect_plain_fill_rates(in.capacity, in.paths, 6);
  // Many channels: the fill keeps a heap rather than scanning.
  Instance wide(700, 400, 7);
  expect_plain_fill_rates(wide.capacity, wide.paths, 8);
}

TEST(WaterFill, SeveralRemovalsBetweenSolvesGetThePlainFillsRates) {
  const std::vector<double> equal(32, 900e9);
  for (std::size_t per_solve : {2, 5, 17}) {
    expect_plain_fill_rates(equal, all_to_all_paths(16, [](int, int) { return false; }), 11, per_solve);
    Instance random(32, 0, 12);
    expect_plain_fill_rates(random.capacity, all_to_all_paths(16, [&](int, int) { return random.next(3) == 0; }), 13,
                            per_solve);
    Instance mixed(40, 200, 14);
    expect_plain_fill_rates(mixed.capacity, mixed.paths, 15, per_solve);
  }
}

TEST(WaterFill, ASolveOnOtherCapacitiesTakesNothingOverFromTheLastOne) {
  // Flow 0 crosses channels 0 and 2, flows 1 and 2 channels 1 and 3. Channel 0 (1 GB/s) fixes flow 0
  // first; channel 1 (4 GB/s) then the other two at 2 GB/s each. Removing flow 2 touches only that
  // second round, so on the same capacities the first would be taken over; on channel 0 at half its
  // capacity it must not be: flow 0 gets 0.5 GB/s, and flow 1 the whole of channel 1.
  const std::vector<int> offset = {0, 2, 4, 6};
  const std::vector<int> path = {0, 2, 1, 3, 1, 3};
  const std::vector<double> before = {1e9, 4e9, 10e9, 10e9};
  const std::vector<double> after = {0.5e9, 4e9, 10e9, 10e9};
  WaterFill fill;
  fill.set_flows(before.size(), offset, path);
  std::vector<double> rate;
  fill.solve(before, rate);
  EXPECT_DOUBLE_EQ(rate[0], 1e9);
  EXPECT_DOUBLE_EQ(rate[1], 2e9);
  EXPECT_DOUBLE_EQ(rate[2], 2e9);
  fill.remove(2);
  fill.solve(after, rate);
  EXPECT_DOUBLE_EQ(rate[0], 0.5e9);
  EXPECT_DOUBLE_EQ(rate[1], 4e9);
  EXPECT_EQ(rate[2], 0.0);
}

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

}  // namespace water_fill_test
