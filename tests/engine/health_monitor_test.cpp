// The health monitor: a rank is declared dead the detection delay after an operation error or a failed
// periodic check, only if it is still unhealthy then; checks run only while there is work.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "emu/rt/virtual_runtime.h"
#include "engine/system/health_monitor.h"

namespace nvl::engine {
namespace health_monitor_test {

struct Watch {
  rt::VirtualRuntime rt;
  std::vector<std::optional<std::string>> broken = std::vector<std::optional<std::string>>(4);
  std::vector<std::pair<std::int32_t, rt::Time>> declared;
  std::vector<std::string> how;
  bool busy = true;
  HealthMonitor monitor{rt,
                        HealthConfig{.check_interval = rt::ms(100), .detection_delay = rt::ms(30)},
                        4,
                        [this](std::int32_t r) { return broken[static_cast<std::size_t>(r)]; },
                        [this](std::int32_t r, const std::string&, const std::string& h) {
                          declared.emplace_back(r, rt.now());
                          how.push_back(h);
                        },
                        [this] { return busy; }};
};

TEST(HealthMonitor, AnOperationErrorIsDeclaredAfterTheDetectionDelay) {
  Watch w;
  w.rt.call_at(rt::Time::zero() + rt::ms(5), [&] {
    w.broken[2] = "GPU 2 lost";
    w.monitor.operation_error(2);
    w.monitor.operation_error(2);  // noticed twice: declared once
  });
  w.rt.run();
  ASSERT_EQ(w.declared.size(), 1u);
  EXPECT_EQ(w.declared[0].first, 2);
  EXPECT_EQ(w.declared[0].second, rt::Time::zero() + rt::ms(35));
  EXPECT_EQ(w.how[0], "operation_error");
}

TEST(HealthMonitor, ATransientErrorIsClearedNotDeclared) {
  Watch w;
  w.rt.call_at(rt::Time::zero() + rt::ms(5), [&] { w.monitor.operation_error(1); });  // the probe finds it healthy
  w.rt.run();
  EXPECT_TRUE(w.declared.empty());
}

TEST(HealthMonitor, PeriodicChecksFindAFaultWhileBusyAndStopWhenIdle) {
  Watch w;
  w.monitor.watch();
  w.rt.call_at(rt::Time::zero() + rt::ms(250), [&] { w.broken[3] = "worker exited"; });
  w.rt.call_at(rt::Time::zero() + rt::ms(450), [&] { w.busy = false; });
  w.rt.run();
  ASSERT_EQ(w.declared.size(), 1u);
  // Checks at 100, 200, 300 ms: the 300 ms one finds it, declared 30 ms later.
  EXPECT_EQ(w.declared[0].second, rt::Time::zero() + rt::ms(330));
  EXPECT_EQ(w.how[0], "health_check");
  // Checks at 400 and 500 ms; at 500 it is idle and stops re-arming: the run ends there.
  EXPECT_EQ(w.monitor.checks(), 5u);
  EXPECT_EQ(w.rt.now(), rt::Time::zero() + rt::ms(500));
}

TEST(HealthMonitor, NewWorkAfterAnIdleSpellArmsTheChecksAgain) {
  Watch w;
  w.busy = false;
  w.monitor.watch();  // one check at 100 ms, idle: no more
  w.rt.call_at(rt::Time::zero() + rt::ms(1'000), [&] {
    w.busy = true;  // a request arrives
    w.monitor.watch();
  });
  w.rt.call_at(rt::Time::zero() + rt::ms(1'050), [&] { w.broken[1] = "GPU 1 lost"; });
  w.rt.call_at(rt::Time::zero() + rt::ms(1'250), [&] { w.busy = false; });
  w.rt.run();
  ASSERT_EQ(w.declared.size(), 1u);
  // Checks at 1,100 ms (finds it), 1,200 and 1,300 ms (idle again: the last).
  EXPECT_EQ(w.declared[0].second, rt::Time::zero() + rt::ms(1'130));
  EXPECT_EQ(w.monitor.checks(), 4u);
}

TEST(HealthMonitor, PauseDropsThePendingCheck) {
  Watch w;
  w.monitor.watch();
  w.rt.call_at(rt::Time::zero() + rt::ms(150), [&] { w.monitor.pause(); });
  w.rt.run();
  EXPECT_EQ(w.monitor.checks(), 1u);  // at 100 ms; the one due at 200 ms was dropped
  EXPECT_EQ(w.rt.now(), rt::Time::zero() + rt::ms(150));
}

TEST(HealthMonitor, ARankBackIsWatchedAgain) {
  Watch w;
  w.broken[0] = "GPU 0 needs a reset";
  w.monitor.operation_error(0);
  w.rt.run();
  w.broken[0].reset();
  w.monitor.back(0);
  w.broken[0] = "GPU 0 needs a reset";
  w.monitor.operation_error(0);
  w.rt.run();
  EXPECT_EQ(w.declared.size(), 2u);
}

// Two DP ranks and the prefill worker, whose records carry no rank.
struct WatchWithPrefill {
  WatchWithPrefill() { rt.log().keep_records(true); }
  rt::VirtualRuntime rt;
  std::optional<std::string> prefill_broken;
  std::vector<std::pair<std::int32_t, rt::Time>> declared;
  HealthMonitor monitor{rt,
                        HealthConfig{.check_interval = rt::ms(100), .detection_delay = rt::ms(30)},
                        2,
                        [this](std::int32_t m) { return m == HealthMonitor::kPrefillWorker ? prefill_broken : std::nullopt; },
                        [this](std::int32_t m, const std::string&, const std::string&) { declared.emplace_back(m, rt.now()); },
                        [] { return true; },
                        true};
  int lines_with(const std::string& a, const std::string& b) {
    int n = 0;
    for (const auto& line : rt.log().lines()) n += line.find(a) != std::string::npos && line.find(b) != std::string::npos;
    return n;
  }
};

TEST(HealthMonitor, ThePrefillWorkerIsDeclaredLikeARankAfterAnOperationError) {
  WatchWithPrefill w;
  w.rt.call_at(rt::Time::zero() + rt::ms(5), [&] {
    w.prefill_broken = "GPU 66 lost";
    w.monitor.operation_error(HealthMonitor::kPrefillWorker);
  });
  w.rt.run(rt::RunOptions{.until = rt::Time::zero() + rt::ms(60)});
  ASSERT_EQ(w.declared.size(), 1u);
  EXPECT_EQ(w.declared[0].first, HealthMonitor::kPrefillWorker);
  EXPECT_EQ(w.declared[0].second, rt::Time::zero() + rt::ms(35));
  EXPECT_EQ(w.lines_with("prefill_worker_declared_dead", "GPU 66 lost"), 1);
  EXPECT_EQ(w.lines_with("rank_declared_dead", ""), 0);
}

TEST(HealthMonitor, ThePeriodicCheckFindsADeadPrefillWorkerAndWatchesItAgainOnceBack) {
  WatchWithPrefill w;
  w.monitor.watch();
  w.rt.call_at(rt::Time::zero() + rt::ms(150), [&] { w.prefill_broken = "worker exited"; });
  w.rt.call_at(rt::Time::zero() + rt::ms(400), [&] {
    w.prefill_broken.reset();
    w.monitor.back(HealthMonitor::kPrefillWorker);
  });
  w.rt.call_at(rt::Time::zero() + rt::ms(450), [&] { w.prefill_broken = "worker exited again"; });
  w.rt.run(rt::RunOptions{.until = rt::Time::zero() + rt::ms(700)});
  ASSERT_EQ(w.declared.size(), 2u);
  // Checks every 100 ms: the one at 200 ms finds it; back at 400, found again at 500.
  EXPECT_EQ(w.declared[0].second, rt::Time::zero() + rt::ms(230));
  EXPECT_EQ(w.declared[1].second, rt::Time::zero() + rt::ms(530));
}

TEST(HealthMonitor, ThePrefillWorkerIsNoMemberUnlessWatched) {
  Watch w;
  EXPECT_THROW(w.monitor.operation_error(HealthMonitor::kPrefillWorker), std::out_of_range);
  EXPECT_THROW(w.monitor.operation_error(4), std::out_of_range);
}

TEST(HealthMonitor, BadIntervalsAreRejected) {
  rt::VirtualRuntime rt;
  const auto make = [&](HealthConfig c) {
    HealthMonitor m(rt, c, 1, [](std::int32_t) { return std::nullopt; },
                    [](std::int32_t, const std::string&, const std::string&) {}, [] { return false; });
  };
  EXPECT_THROW(make(HealthConfig{.check_interval = rt::Duration()}), std::invalid_argument);
  EXPECT_THROW(make(HealthConfig{.check_interval = rt::ms(1), .detection_delay = rt::ms(-1)}), std::invalid_argument);
}

}  // namespace health_monitor_test
}  // namespace nvl::engine
