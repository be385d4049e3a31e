#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "emu/rt/channel.h"
#include "emu/rt/errors.h"
#include "emu/rt/virtual_runtime.h"

namespace nvl::rt {
namespace channel_test {

using namespace literals;

TEST(Channel, FifoAndCapacityBlocksThePusher) {
  VirtualRuntime rt;
  Channel<int> ch(rt, 2, "requests");
  std::vector<std::string> log;
  rt.spawn("producer", [&] {
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(ch.push(i), ChannelStatus::ok);
      log.push_back("pushed " + std::to_string(i) + " at " + std::to_string(rt.now().ns()));
    }
    ch.close();
  });
  rt.spawn("consumer", [&] {
    rt.sleep(10_ns);
    while (auto v = ch.pop()) {
      log.push_back("popped " + std::to_string(*v) + " at " + std::to_string(rt.now().ns()));
      rt.sleep(10_ns);
    }
  });
  rt.run();
  EXPECT_EQ(log, (std::vector<std::string>{"pushed 0 at 0", "pushed 1 at 0", "popped 0 at 10", "pushed 2 at 10",
                                           "popped 1 at 20", "pushed 3 at 20", "popped 2 at 30", "popped 3 at 40"}));
}

TEST(Channel, TryOperationsReportFullAndEmpty) {
  VirtualRuntime rt;
  Channel<std::string> ch(rt, 1, "one");
  std::optional<std::string> out;
  EXPECT_EQ(ch.try_pop(out), ChannelStatus::empty);
  EXPECT_EQ(ch.try_push("a"), ChannelStatus::ok);
  EXPECT_EQ(ch.try_push("b"), ChannelStatus::full);
  EXPECT_EQ(ch.size(), 1u);
  EXPECT_EQ(ch.try_pop(out), ChannelStatus::ok);
  EXPECT_EQ(out, "a");
}

TEST(Channel, CloseDrainsThenReportsClosed) {
  VirtualRuntime rt;
  Channel<int> ch(rt, 4, "c");
  ASSERT_EQ(ch.try_push(1), ChannelStatus::ok);
  ch.close();
  EXPECT_EQ(ch.try_push(2), ChannelStatus::closed);
  std::optional<int> out;
  EXPECT_EQ(ch.try_pop(out), ChannelStatus::ok);
  EXPECT_EQ(ch.try_pop(out), ChannelStatus::closed);
}

TEST(Channel, CloseWakesBlockedPoppersAndPushers) {
  VirtualRuntime rt;
  Channel<int> empty(rt, 1, "empty");
  Channel<int> full(rt, 1, "full");
  ASSERT_EQ(full.try_push(0), ChannelStatus::ok);
  std::vector<std::string> seen;
  rt.spawn("popper", [&] { seen.push_back(empty.pop() ? "value" : "closed"); });
  rt.spawn("pusher", [&] { seen.push_back(full.push(1) == ChannelStatus::closed ? "push closed" : "pushed"); });
  rt.call_after(5_us, [&] {
    empty.close();
    full.close();
  });
  rt.run();
  EXPECT_EQ(seen, (std::vector<std::string>{"closed", "push closed"}));
}

TEST(Channel, ClosingTwiceIsAClearError) {
  VirtualRuntime rt;
  Channel<int> ch(rt, 1, "twice");
  ch.close();
  try {
    ch.close();
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("channel 'twice'"), std::string::npos);
  }
}

TEST(Channel, ZeroCapacityIsAnError) {
  VirtualRuntime rt;
  EXPECT_THROW(Channel<int>(rt, 0, "zero"), UsageError);
}

TEST(Channel, PopTimesOutAndLaterPopSucceeds) {
  VirtualRuntime rt;
  Channel<int> ch(rt, 1, "slow");
  std::vector<std::string> seen;
  rt.spawn("consumer", [&] {
    std::optional<int> v;
    EXPECT_EQ(ch.pop_timeout(v, 3_us), ChannelStatus::timed_out);
    seen.push_back("timeout at " + std::to_string(rt.now().ns()));
    EXPECT_EQ(ch.pop_timeout(v, 10_us), ChannelStatus::ok);
    seen.push_back("got " + std::to_string(*v) + " at " + std::to_string(rt.now().ns()));
  });
  rt.call_after(5_us, [&] { ch.try_push(42); });
  rt.run();
  EXPECT_EQ(seen, (std::vector<std::string>{"timeout at 3000", "got 42 at 5000"}));
  EXPECT_EQ(rt.now(), Time::zero() + 5_us);  // the cancelled timeout at 15 us does not hold the clock
}

TEST(Channel, PushTimesOutWhenFull) {
  VirtualRuntime rt;
  Channel<int> ch(rt, 1, "full");
  rt.spawn("pusher", [&] {
    EXPECT_EQ(ch.push(1), ChannelStatus::ok);
    EXPECT_EQ(ch.push_timeout(2, 2_us), ChannelStatus::timed_out);
    EXPECT_EQ(rt.now(), Time::zero() + 2_us);
  });
  rt.run();
  EXPECT_EQ(ch.size(), 1u);
}

TEST(Channel, PopOutsideAFiberIsAnError) {
  VirtualRuntime rt;
  Channel<int> ch(rt, 1, "c");
  EXPECT_THROW(ch.pop(), UsageError);
}

}  // namespace channel_test
}  // namespace nvl::rt
