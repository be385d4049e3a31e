// A randomized workload of 1,000 fibers (sleeps, channel traffic, timers, log records) gives one
// event-log hash per seed: the same seed twice gives the same hash, another seed another hash.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "emu/rt/channel.h"
#include "emu/rt/virtual_runtime.h"

namespace nvl::rt {
namespace determinism_test {

using namespace literals;

std::string run_workload(std::uint64_t seed) {
  VirtualRuntime rt(LoopOptions{.seed = seed});
  constexpr int kFibers = 1000;
  std::vector<std::unique_ptr<Channel<int>>> mailboxes;
  for (int i = 0; i < 10; ++i) {
    mailboxes.push_back(std::make_unique<Channel<int>>(rt, 8, "mailbox" + std::to_string(i)));
  }
  for (int i = 0; i < kFibers; ++i) {
    rt.spawn("worker" + std::to_string(i), [&rt, &mailboxes, i] {
      Rng& rng = rt.rng("worker" + std::to_string(i));
      for (int step = 0; step < 5; ++step) {
        rt.sleep(ns(rng.uniform_int(0, 5'000)));
        auto& box = *mailboxes[static_cast<std::size_t>(rng.uniform_int(0, 9))];
        if (rng.bernoulli(0.5)) {
          if (box.push_timeout(i, ns(rng.uniform_int(1, 2'000))) == ChannelStatus::ok) {
            rt.record("worker", "sent", {{"from", i}});
          }
        } else {
          std::optional<int> got;
          if (box.pop_timeout(got, ns(rng.uniform_int(1, 2'000))) == ChannelStatus::ok) {
            rt.record("worker", "received", {{"by", i}, {"from", *got}});
          }
        }
      }
    });
  }
  Rng& timers = rt.rng("timers");
  for (int i = 0; i < 200; ++i) {
    rt.call_after(ns(timers.uniform_int(0, 20'000)), [&rt, i] { rt.record("timer", "fired", {{"id", i}}); },
                  static_cast<Priority>(i % 3));
  }
  rt.run();
  EXPECT_GT(rt.log().count(), 1000u);
  return rt.log().hash_hex();
}

TEST(Determinism, SameSeedSameHashOtherSeedOtherHash) {
  const std::string a = run_workload(7);
  const std::string b = run_workload(7);
  const std::string c = run_workload(8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

}  // namespace determinism_test
}  // namespace nvl::rt
