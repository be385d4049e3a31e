#include <string>

#include <gtest/gtest.h>

#include "emu/rt/channel.h"
#include "emu/rt/condition.h"
#include "emu/rt/errors.h"
#include "emu/rt/event.h"
#include "emu/rt/virtual_runtime.h"

namespace nvl::rt {
namespace deadlock_test {

using namespace literals;

TEST(Deadlock, ReportNamesEveryWaitingFiberAndWhatItWaitsOn) {
  VirtualRuntime rt;
  Channel<int> requests(rt, 1, "requests");
  Event kv_ready(rt, "kv-ready");
  rt.spawn("decoder", [&] { requests.pop(); });
  rt.spawn("prefill", [&] {
    rt.sleep(2_us);
    kv_ready.wait();
  });
  try {
    rt.run();
    FAIL() << "expected a deadlock";
  } catch (const DeadlockError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("deadlock at t=0.000002000"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fiber 'decoder' (#1) waits on pop of 'requests'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fiber 'prefill' (#2) waits on wait of 'kv-ready'"), std::string::npos) << msg;
  }
}

TEST(Deadlock, DaemonsWaitingAtTheEndAreQuiescenceNotDeadlock) {
  VirtualRuntime rt;
  Channel<int> requests(rt, 4, "requests");
  requests.mark_idle_point();
  int served = 0;
  rt.spawn("server", [&] {
    while (requests.pop()) ++served;
  }, SpawnOptions{.daemon = true});
  rt.call_after(1_us, [&] { requests.try_push(1); });
  const RunResult r = rt.run();
  EXPECT_EQ(r.reason, RunResult::Stop::quiescent);
  EXPECT_EQ(served, 1);
}

TEST(Deadlock, ADaemonBlockedOutsideAnIdlePointIsADeadlock) {
  VirtualRuntime rt;
  Condition step_done(rt, "step done");  // e.g. a stream that will never complete
  rt.spawn("worker-loop", [&] { step_done.wait(); }, SpawnOptions{.daemon = true});
  try {
    rt.run();
    FAIL() << "expected a deadlock";
  } catch (const DeadlockError& e) {
    EXPECT_NE(std::string(e.what()).find("fiber 'worker-loop' (#1, daemon) waits on wait of 'step done'"),
              std::string::npos)
        << e.what();
  }
}

TEST(Deadlock, TwoFibersJoiningEachOtherAreReported) {
  VirtualRuntime rt;
  FiberHandle a, b;
  a = rt.spawn("a", [&] { b.join(); });
  b = rt.spawn("b", [&] { a.join(); });
  try {
    rt.run();
    FAIL();
  } catch (const DeadlockError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("fiber 'a' (#1) waits on wait of 'join fiber 'b''"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fiber 'b' (#2) waits on wait of 'join fiber 'a''"), std::string::npos) << msg;
  }
}

}  // namespace deadlock_test
}  // namespace nvl::rt
