// P/D KV transfer failures on the emulated fabric: a write that fails is retried once on the other
// path (NVLink for a dead NIC), and when both paths fail the request is prefilled on its DP rank and
// still completes. Also the NVLink option for the transfer.
#include <gtest/gtest.h>

#include "tests/engine/pd_rig.h"

namespace nvl::engine {
namespace pd_transfer_failure_test {

using pd_test::kKvBytesPerToken;
using pd_test::request;
using pd_test::Rig;
using pd_test::options;
using pd_test::RigOptions;
using pd_test::expect_kv_returned;

TEST(PdTransferFailure, ADeadNicIsRetriedOverNvlinkAndTheKvStillArrives) {
  Rig rig;
  rig.cluster.fabric().set_element_down("rack0/tray0/nic0", true);  // rank 0's (GPU 0's) CX8
  rig.system->submit(request(1, 20'000, 8, 3));
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 1u);
  const RequestTiming& t = rig.done[1];
  EXPECT_TRUE(t.failure.empty()) << t.failure;
  ASSERT_EQ(t.path, PrefillPath::prefill_worker);
  ASSERT_EQ(t.rank, 0);
  EXPECT_EQ(rig.tokens[1], 8);
  EXPECT_FALSE(t.reprefilled);
  EXPECT_GT(t.transfer_retries, 0);
  EXPECT_EQ(t.transfer_bytes, 20'000ULL * kKvBytesPerToken) << "every byte arrived, over NVLink";
  EXPECT_GT(rig.log_lines_with({"write_failed", "retry_over_nvlink"}), 0);
  EXPECT_EQ(rig.log_lines_with({"kv_transfer_failed"}), 0);
  expect_kv_returned(rig);
}

TEST(PdTransferFailure, BothPathsDownTheRequestIsPrefilledOnItsRankAndCompletes) {
  // The prefill worker in the second rack: no NVLink to rank 0, whose NIC is down too.
  Rig rig(options([](RigOptions& o) { o.racks = 2; }));
  rig.cluster.fabric().set_element_down("rack0/tray0/nic0", true);
  rig.system->submit(request(1, 20'000, 8, 3));
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 1u);
  const RequestTiming& t = rig.done[1];
  EXPECT_TRUE(t.failure.empty()) << t.failure;
  // Sent to the prefill worker, then prefilled on its own rank: where it was finally prefilled.
  ASSERT_EQ(t.path, PrefillPath::local);
  EXPECT_TRUE(t.reprefilled);
  EXPECT_EQ(t.transfer_bytes, 0u);
  EXPECT_EQ(rig.tokens[1], 8) << "the request never disappears";
  ASSERT_TRUE(t.prefill_done && t.first_token);
  EXPECT_GT(*t.first_token, *t.prefill_done) << "its first token comes from the DP rank's own prefill";
  EXPECT_GT(rig.log_lines_with({"write_failed", "retry_over_nvlink"}), 0);
  EXPECT_GT(rig.log_lines_with({"write_failed", "give_up"}), 0);
  EXPECT_EQ(rig.log_lines_with({"kv_transfer_failed", "reprefill"}), 1);
  expect_kv_returned(rig);
}

TEST(PdTransferFailure, ATransferStuckPastTheTimeoutIsRetriedThenReprefilled) {
  // Both attempts outlive a timeout far below any push's time.
  Rig rig(options([](RigOptions& o) {
    o.tweak = [](PdDeployment& d) { d.system.transfer.timeout = rt::ns(1); };
  }));
  rig.system->submit(request(1, 20'000, 4, 3));
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 1u);
  EXPECT_TRUE(rig.done[1].failure.empty()) << rig.done[1].failure;
  EXPECT_TRUE(rig.done[1].reprefilled);
  EXPECT_EQ(rig.tokens[1], 4);
  EXPECT_GT(rig.log_lines_with({"write_failed", "timed out", "retry_over_nvlink"}), 0);
  expect_kv_returned(rig);
}

TEST(PdTransferFailure, OverNvlinkTheKvArrivesSoonerAndAcrossRacksItFallsBackToTheNics) {
  const auto run = [](hal::RdmaPath path, int racks) {
    Rig rig(options([&](RigOptions& o) {
      o.racks = racks;
      o.tweak = [path](PdDeployment& d) { d.system.transfer.path = path; };
    }));
    rig.system->submit(request(1, 40'000, 2, 3));
    rig.rt.run();
    EXPECT_TRUE(rig.done[1].failure.empty()) << rig.done[1].failure;
    EXPECT_EQ(rig.done[1].transfer_bytes, 40'000ULL * kKvBytesPerToken);
    return rig.done[1];
  };
  const RequestTiming rdma = run(hal::RdmaPath::scale_out, 1);
  const RequestTiming nvlink = run(hal::RdmaPath::nvlink, 1);
  EXPECT_EQ(rdma.transfer_retries, 0);
  EXPECT_EQ(nvlink.transfer_retries, 0);
  // 900 GB/s a direction against one CX8's 100 GB/s (REFERENCE.md §1.1): less left after the prefill.
  EXPECT_LT(nvlink.kv_transfer(), rdma.kv_transfer());
  const RequestTiming across = run(hal::RdmaPath::nvlink, 2);
  EXPECT_GT(across.transfer_retries, 0) << "no NVLink between racks: every write went again over the NICs";
  EXPECT_FALSE(across.reprefilled);
}

}  // namespace pd_transfer_failure_test
}  // namespace nvl::engine
