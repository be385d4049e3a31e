// Session starts (recorded, scaled, Poisson), closed-loop pacing and sub-agent spawns.
#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/workload/arrival_process.h"

namespace nvl::emu {
namespace arrival_test {

using namespace rt::literals;

Workload two_turn_sessions(int n, bool recorded) {
  Workload w;
  w.source = "test";
  for (int i = 0; i < n; ++i) {
    Session s;
    s.labels.session_id = std::to_string(i);
    if (recorded) s.recorded_start = rt::Time::zero() + rt::sec(10 * (n - i));  // recorded in reverse order
    Request a;
    Request b;
    b.think_time = 4_s;
    b.offset = 9_s;
    s.requests = {a, b};
    w.sessions.push_back(std::move(s));
  }
  return w;
}

TEST(ArrivalProcess, RecordedStartsAreSortedAndRateScaled) {
  const Workload w = two_turn_sessions(3, true);
  ArrivalOptions o;
  o.rate_scale = 2;  // twice the recorded rate: starts at half the recorded times
  const ArrivalProcess a(w, o);
  ASSERT_EQ(a.starts().size(), 3u);
  EXPECT_EQ(a.starts()[0].session, 2u);
  EXPECT_EQ(a.starts()[0].at, rt::Time::zero() + 5_s);
  EXPECT_EQ(a.starts()[2].at, rt::Time::zero() + 15_s);
}

TEST(ArrivalProcess, RecordedStartsNeedTimestamps) {
  const Workload w = two_turn_sessions(1, false);
  EXPECT_THROW(ArrivalProcess(w, ArrivalOptions{}), rt::InputError);
  ArrivalOptions bad;
  bad.time_scale = 0;
  EXPECT_THROW(ArrivalProcess(two_turn_sessions(1, true), bad), rt::InputError);
}

TEST(ArrivalProcess, PoissonStartsAreSeededAndHaveTheRate) {
  const Workload w = two_turn_sessions(4000, false);
  ArrivalOptions o;
  o.starts = ArrivalOptions::Starts::kPoisson;
  o.sessions_per_s = 2;
  o.rate_scale = 1.5;  // 3 sessions a second
  o.seed = 11;
  const ArrivalProcess a(w, o);
  const ArrivalProcess same(w, o);
  o.seed = 12;
  const ArrivalProcess other(w, o);
  EXPECT_EQ(a.starts().back().at, same.starts().back().at);
  EXPECT_NE(a.starts().back().at, other.starts().back().at);
  const double rate = 4000 / a.starts().back().at.since_start().seconds();
  EXPECT_NEAR(rate, 3.0, 0.15);  // about 3 standard errors of 4,000 gaps
  for (std::size_t i = 1; i < a.starts().size(); ++i) EXPECT_LE(a.starts()[i - 1].at, a.starts()[i].at);
}

// 100 sessions at 1 a second, the first 40 in a burst at 600 s within 5 s: those 40 start in [600, 605) s
// and the other 60 keep a Poisson stream of 1 a second (their last start near 60 s, far from the burst).
TEST(ArrivalProcess, ABurstStartsItsSessionsWithinItsWindow) {
  const Workload w = two_turn_sessions(100, false);
  ArrivalOptions o;
  o.starts = ArrivalOptions::Starts::kPoisson;
  o.sessions_per_s = 1;
  o.burst_sessions = 40;
  o.burst_at_s = 600;
  o.burst_within_s = 5;
  const ArrivalProcess a(w, o);
  ASSERT_EQ(a.starts().size(), 100u);
  std::size_t in_burst = 0;
  for (const SessionStart& s : a.starts()) {
    const double t = (s.at - rt::Time::zero()).seconds();
    if (s.session < 40) {
      ++in_burst;
      EXPECT_GE(t, 600.0);
      EXPECT_LT(t, 605.0);
    } else {
      EXPECT_LT(t, 200.0) << "the Poisson stream of the other 60: about 60 s, beyond 200 s is a 1e-50 event";
    }
  }
  EXPECT_EQ(in_burst, 40u);
  o.burst_sessions = 101;
  EXPECT_THROW(ArrivalProcess(w, o), rt::InputError) << "more burst sessions than the workload starts";
}

TEST(SessionCursor, ClosedLoopWaitsForTheAnswerPlusScaledThinkTime) {
  const Workload w = two_turn_sessions(1, true);
  ArrivalOptions o;
  o.time_scale = 0.5;
  const ArrivalProcess a(w, o);
  SessionCursor c = a.open(a.starts()[0]);
  EXPECT_EQ(c.earliest_departure(), rt::Time::zero() + 10_s);
  EXPECT_EQ(c.next_index(), 0u);
  c.complete(rt::Time::zero() + 13_s);
  EXPECT_EQ(c.next_index(), 1u);
  EXPECT_EQ(c.earliest_departure(), rt::Time::zero() + 15_s);  // 13 s + 4 s * 0.5
  c.complete(rt::Time::zero() + 20_s);
  EXPECT_TRUE(c.done());
  EXPECT_THROW(c.next(), std::logic_error);
}

TEST(SessionCursor, RecordedPacingNeverLeavesBeforeTheAnswer) {
  const Workload w = two_turn_sessions(1, true);
  ArrivalOptions o;
  o.pacing = ArrivalOptions::Pacing::kRecordedOffsets;
  const ArrivalProcess a(w, o);
  SessionCursor c = a.open(a.starts()[0]);
  c.complete(rt::Time::zero() + 12_s);
  EXPECT_EQ(c.earliest_departure(), rt::Time::zero() + 19_s);  // start 10 s + offset 9 s
  SessionCursor late = a.open(a.starts()[0]);
  late.complete(rt::Time::zero() + 30_s);
  EXPECT_EQ(late.earliest_departure(), rt::Time::zero() + 30_s);
}

TEST(ArrivalProcess, SubagentsStartFromTheirParent) {
  Workload w = two_turn_sessions(1, true);
  Session sub;
  sub.spawn = SpawnPoint{0, 1, 2_s};
  sub.requests.push_back(Request{});
  w.sessions.push_back(sub);
  ArrivalOptions o;
  o.time_scale = 2;
  const ArrivalProcess a(w, o);
  ASSERT_EQ(a.starts().size(), 1u);  // sub-agents are not top-level starts
  EXPECT_TRUE(a.spawned_by(0, 0, rt::Time::zero()).empty());
  const auto spawned = a.spawned_by(0, 1, rt::Time::zero() + 20_s);
  ASSERT_EQ(spawned.size(), 1u);
  EXPECT_EQ(spawned[0].session, 1u);
  EXPECT_EQ(spawned[0].at, rt::Time::zero() + 24_s);  // 20 s + 2 s * 2
}

}  // namespace arrival_test
}  // namespace nvl::emu
