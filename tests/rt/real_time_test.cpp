#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "emu/rt/condition.h"
#include "emu/rt/errors.h"
#include "emu/rt/real_time_runtime.h"

namespace nvl::rt {
namespace real_time_test {

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
  // It runs at the emulated time it was posted: about 10 ms after the poster started, less the moment the
  // loop's clock took to start; not at the far timer.
  EXPECT_GT(posted_at, Time::zero() + 5_ms);
  EXPECT_LT(posted_at, Time::zero() + 1_s);
}

// Each wake-up comes some tens of microseconds late on a loaded host (timer slack, scheduling). When
// emulated time was read off the wall clock, a chain of 400 one-millisecond sleeps ended at 400 ms plus
// every wake-up's lateness (about 20 to 40 ms here); each event now runs at its own time.
TEST(RealTime, HostLatenessIsNotEmulatedTime) {
  RealTimeRuntime rt(LoopOptions{}, 4.0);
  Time end;
  rt.spawn("chain", [&] {
    for (int i = 0; i < 400; ++i) rt.sleep(1_ms);
    end = rt.now();
  });
  rt.run();
  EXPECT_EQ(end, Time::zero() + 400_ms);
}

// A host too slow for the scale: every event takes 2 ms of wall time to compute and schedules the next
// 1 ms of emulated time later, at scale 1. Emulated time stays the model's (50 events, 50 ms) and falls
// behind the wall: by the last event about 50 x (2 - 1) = 50 ms; at least half that is asserted.
TEST(RealTime, ASlowHostFallsBehindAndSaysBy) {
  RealTimeRuntime rt;
  Time end;
  Duration lag;
  rt.spawn("slow", [&] {
    for (int i = 0; i < 50; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      rt.sleep(1_ms);
    }
    end = rt.now();
    lag = rt.lag();
  });
  rt.run();
  EXPECT_EQ(end, Time::zero() + 50_ms);
  EXPECT_GE(lag, 25_ms);
}

// A request sent to a loop that fell behind arrives when it was sent, not when the loop gets to it:
// the same slow host (1 ms of emulated time per 2 ms of wall time) is posted to 40 ms after it starts,
// when it has reached about 20 ms. The post runs at about 40 ms (less the moment the loop took to
// start), after every event due before then, not at the 20 ms the loop had reached.
TEST(RealTime, APostToALoopThatFellBehindRunsAtItsArrivalAfterTheEventsBeforeIt) {
  RealTimeRuntime rt;
  Time chain_at = Time::zero();
  Time posted_at, chain_at_post;
  rt.spawn("slow", [&] {
    for (int i = 0; i < 60; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      rt.sleep(1_ms);
      chain_at = rt.now();
    }
  });
  std::thread poster([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    rt.post([&] {
      posted_at = rt.now();
      chain_at_post = chain_at;
    });
  });
  rt.run();
  poster.join();
  EXPECT_GE(posted_at, Time::zero() + 30_ms);
  EXPECT_LE(posted_at, Time::zero() + 60_ms);
  EXPECT_LE(chain_at_post, posted_at);
  EXPECT_GE(chain_at_post + 1_ms, posted_at) << "every event due before the post ran first";
}

// Building a deployment takes host time before the loop runs; that is no emulated time, and the loop
// does not then rush its first events to catch up with it.
TEST(RealTime, HostTimeBeforeTheRunIsNotEmulatedTime) {
  RealTimeRuntime rt;
  Time woke;
  rt.spawn("sleeper", [&] {
    rt.sleep(30_ms);
    woke = rt.now();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = WallClock::now();
  rt.run();
  EXPECT_GE(WallClock::now() - start, std::chrono::milliseconds(30));
  EXPECT_EQ(woke, Time::zero() + 30_ms);
  // Counted from construction, the wake-up would be 100 ms late; a loaded (sanitized) host wakes a few
  // milliseconds late at most.
  EXPECT_LT(rt.lag(), 50_ms);
}

}  // namespace real_time_test
}  // namespace nvl::rt
