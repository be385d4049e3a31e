#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "emu/rt/condition.h"
#include "emu/rt/errors.h"
#include "emu/rt/event.h"
#include "emu/rt/virtual_runtime.h"

namespace nvl::rt {
namespace condition_test {

using namespace literals;

TEST(Condition, NotifyOneWakesTheLongestWaiter) {
  VirtualRuntime rt;
  Condition cond(rt, "work");
  std::vector<std::string> woke;
  for (const char* n : {"w1", "w2", "w3"}) {
    rt.spawn(n, [&, n] {
      cond.wait();
      woke.push_back(n);
    });
  }
  rt.call_after(1_us, [&] { EXPECT_TRUE(cond.notify_one()); });
  rt.call_after(2_us, [&] { EXPECT_EQ(cond.notify_all(), 2u); });
  rt.run();
  EXPECT_EQ(woke, (std::vector<std::string>{"w1", "w2", "w3"}));
  EXPECT_FALSE(cond.notify_one());
}

TEST(Condition, TimedWaitSaysWhetherItTimedOut) {
  VirtualRuntime rt;
  Condition cond(rt, "c");
  std::vector<std::string> seen;
  rt.spawn("a", [&] {
    seen.push_back(cond.wait_timeout(2_us) == Wait::timed_out ? "timed out" : "notified");
    seen.push_back(cond.wait_timeout(10_us) == Wait::timed_out ? "timed out" : "notified");
    seen.push_back(std::to_string(rt.now().ns()));
  });
  rt.call_after(4_us, [&] { cond.notify_one(); });
  rt.run();
  EXPECT_EQ(seen, (std::vector<std::string>{"timed out", "notified", "4000"}));
  EXPECT_EQ(cond.waiters(), 0u);
}

TEST(Condition, NotifyAtTheTimeoutInstantCountsAsNotified) {
  VirtualRuntime rt;
  Condition cond(rt, "race");
  Wait result = Wait::timed_out;
  rt.spawn("a", [&] { result = cond.wait_timeout(5_us); });
  // Scheduled before the fiber's timeout event at the same time, with a lower priority value.
  rt.call_at(Time::zero() + 5_us, [&] { cond.notify_one(); }, -1);
  rt.run();
  EXPECT_EQ(result, Wait::notified);
}

TEST(Condition, AnEndlessTimeoutDoesNotOverflowIntoAnImmediateOne) {
  VirtualRuntime rt;
  Condition cond(rt, "forever");
  Wait result = Wait::timed_out;
  rt.spawn("a", [&] { result = cond.wait_timeout(Duration::max()); });
  rt.call_after(us(5), [&] { cond.notify_one(); });
  rt.run();
  EXPECT_EQ(result, Wait::notified);
}

TEST(Condition, PredicateWaitWithDeadline) {
  VirtualRuntime rt;
  Condition cond(rt, "pred");
  int value = 0;
  bool reached = false;
  rt.spawn("a", [&] { reached = cond.wait_deadline(Time::zero() + 10_us, [&] { return value >= 3; }); });
  for (int i = 1; i <= 3; ++i) {
    rt.call_after(us(i), [&] {
      ++value;
      cond.notify_all();
    });
  }
  rt.run();
  EXPECT_TRUE(reached);
  EXPECT_EQ(rt.now(), Time::zero() + 3_us);
}

TEST(Event, SetReleasesEveryWaiterAndStaysSetUntilReset) {
  VirtualRuntime rt;
  Event ev(rt, "ready");
  int passed = 0;
  for (int i = 0; i < 3; ++i) {
    rt.spawn("w" + std::to_string(i), [&] {
      ev.wait();
      ++passed;
    });
  }
  rt.call_after(1_us, [&] { ev.set(); });
  rt.run();
  EXPECT_EQ(passed, 3);
  rt.spawn("late", [&] {
    ev.wait();  // already set: passes at once
    ++passed;
    ev.reset();
    EXPECT_EQ(ev.wait_timeout(1_us), Wait::timed_out);
  });
  rt.run();
  EXPECT_EQ(passed, 4);
}

TEST(Condition, WaitingOutsideAFiberIsAnError) {
  VirtualRuntime rt;
  Condition cond(rt, "c");
  try {
    cond.wait();
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("outside a fiber"), std::string::npos);
  }
}

TEST(Condition, DestroyedWithWaitersUnwindsThemAndFailsTheRun) {
  VirtualRuntime rt;
  bool unwound = false;
  auto cond = std::make_unique<Condition>(rt, "short-lived");
  rt.spawn("waiter", [&] {
    struct Guard {
      bool& flag;
      ~Guard() { flag = true; }
    } g{unwound};
    cond->wait();
  });
  rt.call_after(us(1), [&] { cond.reset(); });
  try {
    rt.run();
    FAIL() << "expected the run to fail";
  } catch (const FiberFailed& e) {
    EXPECT_NE(std::string(e.what()).find("condition 'short-lived' destroyed at t=0.000001000 while fiber 'waiter' waited on it"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(unwound);
  rt.run();  // the failure is reported once; the runtime goes on
}

}  // namespace condition_test
}  // namespace nvl::rt
