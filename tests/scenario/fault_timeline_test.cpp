// The fault timeline built from the event log: a dead rank's or the prefill worker's declaration marks
// the fault detected, the requests moved off it (taken, redirected, prefilled locally instead) are
// counted on it, and its removal or return marks it recovered.
#include <map>

#include <gtest/gtest.h>

#include "emu/faults/fault_timeline.h"

namespace nvl::emu {
namespace fault_timeline_test {

rt::Time at(double s) { return rt::Time::zero() + rt::from_seconds(s); }

FaultTarget gpu(std::int64_t g) {
  FaultTarget t;
  t.type = FaultTarget::Type::gpu;
  t.gpu = g;
  t.text = "gpu " + std::to_string(g);
  return t;
}

// Prefill worker on GPUs 8-15.
// Normal rank r on GPU r (0-7), the prefill worker on GPUs 8-15.
FaultTimeline timeline() {
  std::map<std::int64_t, std::int64_t> ranks, prefill;
  for (std::int64_t g = 0; g < 8; ++g) ranks[g] = g;
  for (std::int64_t g = 8; g < 16; ++g) prefill[g] = 0;
  return FaultTimeline(ranks, prefill);
}

TEST(FaultTimeline, ALostRankCountsTheRequestsTakenAndThoseRedirectedFromIt) {
  FaultTimeline tl = timeline();
  const std::size_t i = tl.hit(at(1), FaultKind::gpu_lost, gpu(3), false);
  tl.on_record(at(1.1), "health", "rank_declared_dead", {{"rank", 3}, {"how", "health_check"}, {"why", "GPU 3 lost"}});
  tl.on_record(at(1.1), "normal-group", "rank_removed", {{"rank", 3}, {"requests", 2}});
  tl.on_record(at(1.2), "pd", "request_redirected", {{"request", 7}, {"dead_rank", 3}});
  tl.on_record(at(1.2), "pd", "request_redirected", {{"request", 8}, {"dead_rank", 5}});  // another rank's
  const FaultEntry& e = tl.at(i);
  ASSERT_TRUE(e.detected && e.recovered);
  EXPECT_EQ(e.detected_by, "health_check");
  EXPECT_EQ(e.requests_affected, 3);
}

TEST(FaultTimeline, APrefillGpuLostIsDetectedByTheWorkersDeclarationAndRecoveredByGoingOnWithoutIt) {
  FaultTimeline tl = timeline();
  const std::size_t i = tl.hit(at(2), FaultKind::gpu_lost, gpu(10), false);
  const std::size_t normal = tl.hit(at(2), FaultKind::gpu_ecc, gpu(1), false);
  EXPECT_EQ(tl.at(i).prefill_instance, 0);
  EXPECT_EQ(tl.at(normal).prefill_instance, -1);
  EXPECT_EQ(tl.at(normal).rank, 1);
  tl.on_record(at(2.1), "health", "prefill_worker_declared_dead",
               {{"how", "operation_error"}, {"why", "GPU 10 lost (Xid 79) under the prefill worker"}});
  tl.on_record(at(2.1), "pd", "prefill_worker_removed", {{"requests", 3}, {"why", "GPU 10 lost"}});
  tl.on_record(at(2.1), "health", "prefill_worker_out", {{"why", "GPU 10 lost"}});
  tl.on_record(at(2.3), "pd", "local_prefill_instead", {{"request", 40}, {"rank", 0}});
  const FaultEntry& e = tl.at(i);
  ASSERT_TRUE(e.detected && e.recovered);
  EXPECT_EQ(*e.detected, at(2.1));
  EXPECT_EQ(e.detected_by, "operation_error");
  EXPECT_NE(e.recovery.find("rest of the run"), std::string::npos) << e.recovery;
  EXPECT_EQ(e.requests_affected, 4);
  EXPECT_FALSE(tl.at(normal).detected) << "the normal rank's fault is not the prefill worker's";
}

TEST(FaultTimeline, RecordsAnswerTheFaultsOfTheirOwnRankAndPrefillInstance) {
  // Two prefill instances (GPUs 8-11 and 12-15) and DP ranks of two GPUs each (attention TP2): the
  // records name ranks and instances, the faults GPUs.
  std::map<std::int64_t, std::int64_t> ranks, prefill;
  for (std::int64_t g = 0; g < 8; ++g) ranks[g] = g / 2;
  for (std::int64_t g = 8; g < 16; ++g) prefill[g] = g < 12 ? 0 : 1;
  FaultTimeline tl(ranks, prefill);
  const std::size_t second_gpu_of_rank_1 = tl.hit(at(1), FaultKind::gpu_lost, gpu(3), false);
  const std::size_t on_instance_0 = tl.hit(at(1), FaultKind::gpu_ecc, gpu(9), false);
  const std::size_t on_instance_1 = tl.hit(at(1), FaultKind::gpu_ecc, gpu(13), false);
  tl.on_record(at(1.1), "health", "rank_declared_dead", {{"rank", 1}, {"how", "health_check"}, {"why", "Xid 79"}});
  tl.on_record(at(1.1), "health", "prefill_worker_declared_dead", {{"instance", 1}, {"how", "health_check"}, {"why", "Xid 48"}});
  EXPECT_TRUE(tl.at(second_gpu_of_rank_1).detected);
  EXPECT_TRUE(tl.at(on_instance_1).detected);
  EXPECT_FALSE(tl.at(on_instance_0).detected) << "instance 1's declaration does not answer instance 0's fault";
  tl.on_record(at(1.2), "pd", "prefill_worker_removed", {{"instance", 1}, {"why", "Xid 48"}, {"requests", 4}});
  EXPECT_EQ(tl.at(on_instance_1).requests_affected, 4);
  EXPECT_EQ(tl.at(on_instance_0).requests_affected, 0);
}

TEST(FaultTimeline, AnEccErrorAndACrashOnThePrefillWorkerRecoverWhenItIsBack) {
  FaultTimeline tl = timeline();
  const std::size_t ecc = tl.hit(at(1), FaultKind::gpu_ecc, gpu(9), false);
  tl.on_record(at(1.1), "health", "prefill_worker_declared_dead", {{"how", "health_check"}, {"why", "GPU 9 needs a reset"}});
  tl.on_record(at(1.1), "pd", "prefill_worker_removed", {{"requests", 1}, {"why", "GPU 9 needs a reset"}});
  tl.on_record(at(6.1), "health", "prefill_worker_back", {{"how", "reset"}});
  const std::size_t crash = tl.hit(at(7), FaultKind::worker_crash, gpu(8), false);
  tl.on_record(at(7.1), "health", "prefill_worker_declared_dead", {{"how", "operation_error"}, {"why", "exited"}});
  tl.on_record(at(17.1), "health", "prefill_worker_back", {{"how", "restarted"}});
  EXPECT_EQ(*tl.at(ecc).recovered, at(6.1));
  EXPECT_EQ(tl.at(ecc).requests_affected, 1);
  EXPECT_NE(tl.at(ecc).recovery.find("reset"), std::string::npos);
  EXPECT_EQ(*tl.at(crash).detected, at(7.1)) << "the earlier fault's declaration does not count for it";
  EXPECT_EQ(*tl.at(crash).recovered, at(17.1));
  EXPECT_NE(tl.at(crash).recovery.find("restarted"), std::string::npos);
  EXPECT_EQ(tl.at(crash).requests_affected, 0);
}

}  // namespace fault_timeline_test
}  // namespace nvl::emu
