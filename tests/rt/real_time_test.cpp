#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "emu/rt/condition.h"
#include "emu/rt/errors.h"
#include "emu/rt/real_time_runtime.h"

namespace nvl::rt {
namespace {

using namespace literals;
using WallClock = std::chrono::steady_clock;

TEST(RealTime, A50msSleepTakesAtLeast50msOfWallTime) {
  RealTimeRuntime rt;
  Time woke;
  rt.spawn("sleeper", [&] {
    rt.sleep(50_ms);
    woke = rt.now();
  });
  const auto start = WallClock::now();
  rt.run();
  const auto wall = WallClock::now() - start;
  EXPECT_GE(wall, std::chrono::milliseconds(50));
  EXPECT_LT(wall, std::chrono::seconds(5));
  EXPECT_GE(woke, Time::zero() + 50_ms);
}

TEST(RealTime, ScaleRunsSimulatedTimeFaster) {
  RealTimeRuntime rt(LoopOptions{}, 10.0);
  rt.spawn("sleeper", [&] { rt.sleep(200_ms); });
  const auto start = WallClock::now();
  rt.run();
  const auto wall = WallClock::now() - start;
  EXPECT_GE(wall, std::chrono::milliseconds(20));
  EXPECT_LT(wall, std::chrono::milliseconds(200));
}

TEST(RealTime, BadScaleIsAnError) {
  EXPECT_THROW(RealTimeRuntime(LoopOptions{}, 0.0), UsageError);
  EXPECT_THROW(RealTimeRuntime(LoopOptions{}, -2.0), UsageError);
}

TEST(RealTime, PostFromAnotherThreadWakesAWaitingFiber) {
  RealTimeRuntime rt;
  Condition arrived(rt, "arrived");
  bool got = false;
  rt.spawn("waiter", [&] {
    arrived.wait();
    got = true;
    rt.stop();
  });
  std::thread poster([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    rt.post([&] { arrived.notify_one(); });
  });
  const RunResult r = rt.run(RunOptions{.serve = true});
  poster.join();
  EXPECT_TRUE(got);
  EXPECT_EQ(r.reason, RunResult::Stop::stopped);
}

TEST(RealTime, PostInterruptsAWaitForALaterTimer) {
  RealTimeRuntime rt;
  Time posted_at;
  rt.call_after(sec(30), [] {});  // far away: the loop must not sleep through the post
  std::thread poster([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    rt.post([&] {
      posted_at = rt.now();
      rt.stop();
    });
  });
  const auto start = WallClock::now();
  rt.run();
  poster.join();
  EXPECT_LT(WallClock::now() - start, std::chrono::seconds(5));
  EXPECT_GE(posted_at, Time::zero() + 10_ms);
}

}  // namespace
}  // namespace nvl::rt
