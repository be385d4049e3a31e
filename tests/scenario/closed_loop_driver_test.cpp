// The closed loop of the bench tools: never more than `concurrency` requests in flight, refilled the moment
// one is over, a warm-up phase that drains before the measured requests start, and every request sent
// once. Requests "run" on a virtual clock: each is over a few milliseconds after it was sent.
#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/rt/virtual_runtime.h"
#include "emu/scenario/closed_loop_driver.h"
#include "emu/workload/bench_generator.h"

namespace nvl::emu {
namespace closed_loop_driver_test {

constexpr std::int64_t kKvBlockTokens = 64;

Workload bench(std::size_t requests) { return BenchGenerator(BenchSpec{.isl = 128, .osl = 4}).generate(requests); }

struct Loop {
  rt::VirtualRuntime rt{rt::LoopOptions{.seed = 1}};
  Workload workload;
  ClosedLoopDriver driver;
  std::map<engine::RequestId, rt::Time> sent, over;
  std::size_t max_in_flight = 0;
  std::size_t in_flight = 0;

  Loop(std::size_t sessions, const ClosedLoopOptions& o)
      : workload(bench(sessions)), driver(rt, workload, o, kKvBlockTokens, "test.json") {
    driver.set_submitter([this](engine::RequestState r) {
      const engine::RequestId id = r.id;
      sent[id] = rt.now();
      max_in_flight = std::max(max_in_flight, ++in_flight);
      // Service times 1, 2, 3 ms in turn, so completions interleave.
      rt.call_at(rt.now() + rt::ms(1 + static_cast<std::int64_t>(id % 3)), [this, id] {
        over[id] = rt.now();
        --in_flight;
        engine::RequestTiming t;
        t.id = id;
        driver.on_done(t);
      });
    });
  }
};

TEST(ClosedLoopDriver, KeepsConcurrencyInFlightAndRefillsAtOnce) {
  Loop l(20, {.concurrency = 4, .warmup = 0, .requests = 20});
  l.driver.start();
  // After each completion the loop is full again at the same instant while requests remain.
  for (int step = 0; step < 1000 && l.driver.submitted() < 20; ++step) {
    l.rt.run(rt::RunOptions{.until = l.rt.now() + rt::us(500)});
    EXPECT_EQ(l.driver.outstanding(), l.driver.submitted() < 20 ? 4u : l.driver.outstanding());
  }
  l.rt.run();
  EXPECT_EQ(l.max_in_flight, 4u);
  EXPECT_EQ(l.driver.submitted(), 20u);
  EXPECT_EQ(l.driver.timings().size(), 20u);
  EXPECT_EQ(l.driver.outstanding(), 0u);
  // Every send after the first four happens at some request's end.
  std::size_t at_start = 0;
  for (const auto& [id, t] : l.sent) {
    if (t == rt::Time::zero()) {
      ++at_start;
      continue;
    }
    EXPECT_TRUE(std::any_of(l.over.begin(), l.over.end(), [&](const auto& o) { return o.second == t; })) << id;
  }
  EXPECT_EQ(at_start, 4u);
}

TEST(ClosedLoopDriver, TheWarmupDrainsBeforeTheMeasuredPhaseAndIsMarked) {
  Loop l(13, {.concurrency = 2, .warmup = 3, .requests = 10});
  l.driver.start();
  l.rt.run();
  ASSERT_EQ(l.driver.submitted(), 13u);
  EXPECT_EQ(l.max_in_flight, 2u);
  rt::Time warmup_over = rt::Time::zero();
  for (engine::RequestId id = 1; id <= 3; ++id) {
    EXPECT_TRUE(l.driver.is_warmup(id));
    warmup_over = std::max(warmup_over, l.over.at(id));
  }
  rt::Time first_measured = rt::Time::max();
  for (engine::RequestId id = 4; id <= 13; ++id) {
    EXPECT_FALSE(l.driver.is_warmup(id));
    first_measured = std::min(first_measured, l.sent.at(id));
  }
  EXPECT_EQ(first_measured, warmup_over) << "the measured phase starts when the last warm-up request is over";
}

TEST(ClosedLoopDriver, RefusesMultiTurnSessionsAndTooFewRequests) {
  rt::VirtualRuntime rt(rt::LoopOptions{.seed = 1});
  Workload multi = bench(2);
  multi.sessions[1].requests.push_back(multi.sessions[1].requests.front());
  EXPECT_THROW(
      {
        try {
          ClosedLoopDriver(rt, multi, {.concurrency = 1, .warmup = 0, .requests = 2}, kKvBlockTokens, "s.json");
        } catch (const rt::InputError& e) {
          EXPECT_NE(std::string(e.what()).find("workload.concurrency"), std::string::npos) << e.what();
          throw;
        }
      },
      rt::InputError);
  const Workload few = bench(5);
  EXPECT_THROW(
      {
        try {
          ClosedLoopDriver(rt, few, {.concurrency = 1, .warmup = 2, .requests = 4}, kKvBlockTokens, "s.json");
        } catch (const rt::InputError& e) {
          EXPECT_NE(std::string(e.what()).find("workload.requests"), std::string::npos) << e.what();
          throw;
        }
      },
      rt::InputError);
}

}  // namespace closed_loop_driver_test
}  // namespace nvl::emu
