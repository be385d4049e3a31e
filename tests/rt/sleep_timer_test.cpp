#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/rt/virtual_runtime.h"

namespace nvl::rt {
namespace sleep_timer_test {

using namespace literals;

TEST(Sleep, AdvancesVirtualTimeExactly) {
  VirtualRuntime rt;
  std::vector<std::int64_t> seen;
  rt.spawn("a", [&] {
    rt.sleep(3_us);
    seen.push_back(rt.now().ns());
    rt.sleep_to(Time::zero() + 10_us);
    seen.push_back(rt.now().ns());
    rt.sleep(0_ns);
    seen.push_back(rt.now().ns());
  });
  rt.run();
  EXPECT_EQ(seen, (std::vector<std::int64_t>{3'000, 10'000, 10'000}));
}

TEST(Sleep, IntoThePastIsAClearError) {
  VirtualRuntime rt;
  rt.spawn("late", [&] {
    rt.sleep(5_us);
    rt.sleep_to(Time::zero() + 1_us);
  });
  try {
    rt.run();
    FAIL() << "expected FiberFailed";
  } catch (const FiberFailed& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("fiber 'late'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sleeps into the past"), std::string::npos) << msg;
  }
}

TEST(Sleep, NegativeDurationIsAnError) {
  VirtualRuntime rt;
  rt.spawn("neg", [&] { rt.sleep(-1_us); });
  EXPECT_THROW(rt.run(), FiberFailed);
}

TEST(Sleep, OutsideAFiberIsAnError) {
  VirtualRuntime rt;
  EXPECT_THROW(rt.sleep(1_us), UsageError);
  bool threw = false;
  rt.call_after(1_us, [&] {
    try {
      rt.sleep(1_us);
    } catch (const UsageError& e) {
      threw = std::string(e.what()).find("outside a fiber") != std::string::npos;
    }
  });
  rt.run();
  EXPECT_TRUE(threw);
}

TEST(Timer, FiresOnceAtItsTime) {
  VirtualRuntime rt;
  std::vector<std::int64_t> at;
  TimerHandle h = rt.call_after(7_us, [&] { at.push_back(rt.now().ns()); });
  EXPECT_TRUE(h.pending());
  rt.run();
  EXPECT_EQ(at, (std::vector<std::int64_t>{7'000}));
  EXPECT_FALSE(h.pending());
  EXPECT_FALSE(h.cancel());
}

TEST(Timer, CancelledTimerNeverRuns) {
  VirtualRuntime rt;
  int fired = 0;
  TimerHandle h = rt.call_after(7_us, [&] { ++fired; });
  rt.call_after(2_us, [&] { EXPECT_TRUE(h.cancel()); });
  rt.run();
  EXPECT_EQ(fired, 0);
  EXPECT_FALSE(h.pending());
  EXPECT_FALSE(h.cancel());
  EXPECT_EQ(rt.now(), Time::zero() + 2_us);  // a cancelled timer does not move the clock
}

TEST(Timer, StaleHandleDoesNotCancelAReusedSlot) {
  VirtualRuntime rt;
  int second = 0;
  TimerHandle first = rt.call_after(1_us, [] {});
  rt.run();
  TimerHandle again = rt.call_after(1_us, [&] { ++second; });
  EXPECT_FALSE(first.cancel());
  EXPECT_TRUE(again.pending());
  rt.run();
  EXPECT_EQ(second, 1);
}

TEST(Timer, InThePastIsAnError) {
  VirtualRuntime rt;
  rt.call_after(5_us, [] {});
  rt.run();
  EXPECT_THROW(rt.call_at(Time::zero() + 1_us, [] {}), UsageError);
  EXPECT_THROW(rt.call_after(-1_ns, [] {}), UsageError);
}

TEST(Fiber, JoinWaitsForTheOtherFiber) {
  VirtualRuntime rt;
  std::vector<std::string> order;
  FiberHandle worker = rt.spawn("worker", [&] {
    rt.sleep(4_us);
    order.push_back("worker done");
  });
  rt.spawn("joiner", [&] {
    worker.join();
    order.push_back("joined at " + std::to_string(rt.now().ns()));
  });
  rt.run();
  EXPECT_EQ(order, (std::vector<std::string>{"worker done", "joined at 4000"}));
  EXPECT_TRUE(worker.done());
  EXPECT_EQ(worker.name(), "worker");
}

TEST(Fiber, AFailureFailsTheRunWithTheFiberName) {
  VirtualRuntime rt;
  rt.spawn("broken", [&] {
    rt.sleep(1_us);
    throw std::runtime_error("boom");
  });
  try {
    rt.run();
    FAIL();
  } catch (const FiberFailed& e) {
    EXPECT_NE(std::string(e.what()).find("fiber 'broken' failed at t=0.000001000: boom"), std::string::npos)
        << e.what();
  }
}

TEST(Runtime, OnlyOneRuntimeMayLiveOnAThread) {
  auto first = std::make_unique<VirtualRuntime>();
  EXPECT_THROW(VirtualRuntime second, UsageError);
  first.reset();
  VirtualRuntime again;  // fine once the first is gone
  again.spawn("f", [&] { again.sleep(us(1)); });
  again.run();
  EXPECT_EQ(again.now(), Time::zero() + us(1));
}

TEST(Fiber, RuntimeDestroyedWithBlockedFibersUnwindsThem) {
  int destroyed = 0;
  {
    VirtualRuntime rt;
    struct Guard {
      int& n;
      ~Guard() { ++n; }
    };
    for (int i = 0; i < 3; ++i) {
      rt.spawn("daemon" + std::to_string(i), [&] {
        Guard g{destroyed};
        rt.sleep(sec(100));
      }, SpawnOptions{.daemon = true});
    }
    rt.run(RunOptions{.until = Time::zero() + 1_ms});
  }
  EXPECT_EQ(destroyed, 3);
}

}  // namespace sleep_timer_test
}  // namespace nvl::rt
