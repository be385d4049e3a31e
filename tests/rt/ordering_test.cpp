// Equal-time events run by (priority, scheduling order); fibers woken by an event run before the next event.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "emu/rt/virtual_runtime.h"

namespace nvl::rt {
namespace ordering_test {

using namespace literals;

TEST(Ordering, EqualTimeEventsRunByPriorityThenSequence) {
  VirtualRuntime rt;
  std::vector<std::string> order;
  const Time t = Time::zero() + 10_us;
  rt.call_at(t, [&] { order.push_back("a0"); });
  rt.call_at(t, [&] { order.push_back("b-5"); }, -5);
  rt.call_at(t, [&] { order.push_back("c0"); });
  rt.call_at(t, [&] { order.push_back("d7"); }, 7);
  rt.call_at(t - 1_ns, [&] { order.push_back("early"); }, 100);
  rt.run();
  EXPECT_EQ(order, (std::vector<std::string>{"early", "b-5", "a0", "c0", "d7"}));
  EXPECT_EQ(rt.now(), t);
}

TEST(Ordering, FibersWokenAtTheSameTimeRunInWakeOrder) {
  VirtualRuntime rt;
  std::vector<std::string> order;
  for (const char* name : {"f1", "f2", "f3"}) {
    rt.spawn(name, [&, name] {
      rt.sleep(5_us);
      order.push_back(name);
    });
  }
  rt.run();
  EXPECT_EQ(order, (std::vector<std::string>{"f1", "f2", "f3"}));
  EXPECT_EQ(rt.now(), Time::zero() + 5_us);
}

TEST(Ordering, FiberWokenByAnEventRunsBeforeTheNextEqualTimeEvent) {
  VirtualRuntime rt;
  std::vector<std::string> order;
  rt.spawn("sleeper", [&] {
    rt.sleep(1_us);
    order.push_back("fiber");
  });
  rt.run(RunOptions{.until = Time::zero()});  // let the fiber start and go to sleep first
  rt.call_at(Time::zero() + 1_us, [&] { order.push_back("callback"); });
  rt.run();
  EXPECT_EQ(order, (std::vector<std::string>{"fiber", "callback"}));
}

TEST(Ordering, CallbacksCanScheduleMoreWorkAtTheSameTime) {
  VirtualRuntime rt;
  std::vector<int> order;
  rt.call_after(1_us, [&] {
    order.push_back(1);
    rt.call_after(0_ns, [&] { order.push_back(3); });
  });
  rt.call_after(1_us, [&] { order.push_back(2); });
  rt.run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(Ordering, TimeLimitStopsBeforeLaterEventsAndRunResumes) {
  VirtualRuntime rt;
  int fired = 0;
  rt.call_after(1_ms, [&] { ++fired; });
  rt.call_after(3_ms, [&] { ++fired; });
  RunResult r = rt.run(RunOptions{.until = Time::zero() + 2_ms});
  EXPECT_EQ(r.reason, RunResult::Stop::time_limit);
  EXPECT_EQ(rt.now(), Time::zero() + 2_ms);
  EXPECT_EQ(fired, 1);
  r = rt.run();
  EXPECT_EQ(r.reason, RunResult::Stop::quiescent);
  EXPECT_EQ(fired, 2);
  EXPECT_EQ(rt.now(), Time::zero() + 3_ms);
}

}  // namespace ordering_test
}  // namespace nvl::rt
