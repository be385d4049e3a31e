// The control plane of the P/D system: every message crosses the host network as a protobuf (batched
// per loop turn) when there is one, with the same outcome as without; the router routes from the
// ranks' periodic load reports; cancel frees a request's KV wherever it is; health checks; a lost
// message fails its request with the reason instead of losing it.
#include <map>

#include <gtest/gtest.h>

#include "tests/engine/pd_rig.h"

namespace nvl::engine {
namespace pd_control_plane_test {

using pd_test::request;
using pd_test::Rig;
using pd_test::options;
using pd_test::RigOptions;
using pd_test::expect_kv_returned;

struct PairRun {
  std::map<RequestId, RequestTiming> done;
  std::map<RequestId, std::int64_t> tokens;
  bool over_network = false;
  std::uint64_t messages = 0, batches = 0, delivered = 0;
};

// A short and a long prompt (one runtime per thread: each run is over before the next starts).
PairRun run_pair(bool over_network) {
  Rig rig("cache_aware", true, over_network);
  rig.system->submit(request(1, 1'000, 8, 1));
  rig.system->submit(request(2, 20'000, 8, 2));
  rig.rt.run();
  const ControlPlane& c = rig.system->control();
  return PairRun{rig.done, rig.tokens, c.over_network(), c.messages_sent(), c.batches_sent(), rig.network.delivered()};
}

TEST(PdControlPlane, OverTheHostNetworkTheSameRequestsTakeTheSamePathsLater) {
  const PairRun direct = run_pair(false);
  const PairRun networked = run_pair(true);
  ASSERT_EQ(direct.done.size(), 2u);
  ASSERT_EQ(networked.done.size(), 2u);
  for (RequestId id : {1, 2}) {
    const RequestTiming& a = direct.done.at(id);
    const RequestTiming& b = networked.done.at(id);
    EXPECT_TRUE(b.failure.empty()) << b.failure;
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.rank, b.rank);
    EXPECT_EQ(direct.tokens.at(id), networked.tokens.at(id));
    EXPECT_EQ(a.transfer_bytes, b.transfer_bytes);
    // Submit, schedule (twice on the prefill path), transfer done and token chunks each cross it.
    EXPECT_GT(*b.first_token - b.arrival, *a.first_token - a.arrival) << id;
  }
  EXPECT_FALSE(direct.over_network);
  EXPECT_EQ(direct.delivered, 0u);
  EXPECT_TRUE(networked.over_network);
  EXPECT_EQ(networked.delivered, networked.batches);
  EXPECT_LT(networked.batches, networked.messages) << "messages of one loop turn between two endpoints go as one";
}

TEST(PdControlPlane, TheRouterRoutesFromTheLastLoadReportPlusWhatItSentSince) {
  Rig rig(options([](RigOptions& o) {
    o.policy = "least_load";
    o.over_network = true;
    o.tweak = [](PdDeployment& d) { d.system.load_report_interval = rt::ms(50); };
  }));
  rig.rt.run(rt::RunOptions{.until = rt::Time::zero() + rt::ms(1)});
  const std::int64_t free_blocks = rig.system->load_view().at(0).free_kv_blocks;
  EXPECT_GT(free_blocks, 0) << "the first reports went out at the start";
  rig.system->submit(request(1, 1'000, 400, 1));
  rig.rt.run(rt::RunOptions{.until = rt::Time::zero() + rt::ms(2)});
  // Not reported yet: the router counts what it sent.
  EXPECT_EQ(rig.system->load_view().at(0).waiting, 1);
  EXPECT_EQ(rig.system->load_view().at(0).running, 0);
  EXPECT_EQ(rig.system->load_view().at(0).tokens_in_flight, 1'000);
  rig.system->submit(request(2, 1'000, 400, 2));
  rig.rt.run(rt::RunOptions{.until = rt::Time::zero() + rt::ms(3)});
  EXPECT_EQ(rig.system->load_view().at(1).waiting, 1) << "not the rank it just sent one to";
  // The next report replaces the router's own count with what the rank says.
  rig.rt.run(rt::RunOptions{.until = rt::Time::zero() + rt::ms(60)});
  EXPECT_EQ(rig.system->load_view().at(0).running, 1);
  EXPECT_EQ(rig.system->load_view().at(0).waiting, 0);
  EXPECT_LT(rig.system->load_view().at(0).free_kv_blocks, free_blocks);
  rig.rt.run();
  EXPECT_EQ(rig.done[1].rank, 0);
  EXPECT_EQ(rig.done[2].rank, 1);
  EXPECT_EQ(rig.tokens[1], 400);
}

TEST(PdControlPlane, CancelFreesTheKvWhereverTheRequestIs) {
  // A dry run tells when each phase happens (the runtime is deterministic).
  RequestTiming p, d;
  {
    Rig dry;
    dry.system->submit(request(1, 30'000, 200, 5));
    dry.system->submit(request(2, 1'000, 200, 6));
    dry.rt.run();
    p = dry.done[1];
    d = dry.done[2];
  }
  ASSERT_TRUE(p.prefill_done && p.kv_arrived && d.first_token);
  ASSERT_LT(*p.prefill_done, *p.kv_arrived) << "some of the push is left after the prefill";
  struct Case {
    const char* where;
    RequestId id;
    rt::Time at;
  };
  const Case cases[] = {
      {"queued at its rank", 2, rt::Time::zero()},
      {"prefilling on the prefill worker", 1, p.routed + (*p.prefill_done - p.routed) / 2},
      {"its KV moving", 1, *p.prefill_done + (*p.kv_arrived - *p.prefill_done) / 2},
      {"decoding", 2, *d.first_token + rt::ms(100)},
  };
  for (const bool over_network : {false, true}) {
    for (const Case& c : cases) {
      Rig rig("cache_aware", true, over_network);
      rig.system->submit(request(1, 30'000, 200, 5));
      rig.system->submit(request(2, 1'000, 200, 6));
      bool accepted = false;
      rig.rt.call_at(c.at, [&] { accepted = rig.system->cancel(c.id); });
      rig.rt.run();
      SCOPED_TRACE(std::string(c.where) + (over_network ? " (network)" : ""));
      EXPECT_TRUE(accepted);
      ASSERT_EQ(rig.done.size(), 2u);
      EXPECT_EQ(rig.done[c.id].failure, "cancelled");
      EXPECT_LT(rig.tokens[c.id], 200);
      const RequestId other = c.id == 1 ? 2 : 1;
      EXPECT_TRUE(rig.done[other].failure.empty());
      EXPECT_EQ(rig.tokens[other], 200);
      EXPECT_FALSE(rig.system->cancel(c.id)) << "no longer in flight";
      expect_kv_returned(rig);
    }
  }
}

TEST(PdControlPlane, AHealthCheckCrossesTheNetworkAndALostOneCountsAsUnhealthy) {
  Rig rig("cache_aware", true, true);
  std::optional<bool> healthy;
  rig.system->check_health(3, [&](bool ok, const std::string&) { healthy = ok; });
  rig.rt.run();
  ASSERT_TRUE(healthy);
  EXPECT_TRUE(*healthy);
  // Rank 3 (GPU 3) is on tray 0's second host, whose two NICs go down: the router cannot reach it.
  rig.cluster.fabric().set_element_down("rack0/tray0/nic2", true);
  rig.cluster.fabric().set_element_down("rack0/tray0/nic3", true);
  std::string detail;
  healthy.reset();
  rig.system->check_health(3, [&](bool ok, const std::string& why) {
    healthy = ok;
    detail = why;
  });
  rig.rt.run();
  ASSERT_TRUE(healthy);
  EXPECT_FALSE(*healthy);
  EXPECT_NE(detail.find("lost"), std::string::npos) << detail;
}

TEST(PdControlPlane, ARequestWhoseScheduleMessageIsLostFailsWithTheReason) {
  Rig rig("round_robin", true, true);
  rig.cluster.fabric().set_element_down("rack0/tray0/nic2", true);
  rig.cluster.fabric().set_element_down("rack0/tray0/nic3", true);
  for (RequestId id = 1; id <= 4; ++id) rig.system->submit(request(id, 1'000, 4, static_cast<BlockHash>(id)));
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 4u) << "no request disappears";
  // Round-robin: ranks 0-3; ranks 2 and 3 sit behind the dead NICs.
  for (RequestId id : {1, 2}) EXPECT_TRUE(rig.done[id].failure.empty()) << rig.done[id].failure;
  for (RequestId id : {3, 4}) {
    EXPECT_NE(rig.done[id].failure.find("control message lost"), std::string::npos) << rig.done[id].failure;
    EXPECT_EQ(rig.tokens[id], 0);
  }
  EXPECT_EQ(rig.system->in_flight(), 0u);
}

TEST(PdControlPlane, APrefillWorkerOutOfReachLeavesTheLongPromptToItsDecodeRank) {
  Rig rig("cache_aware", true, true);
  // The prefill worker's first GPU (64) is on tray 16's first host, whose two NICs go down.
  rig.cluster.fabric().set_element_down("rack0/tray16/nic0", true);
  rig.cluster.fabric().set_element_down("rack0/tray16/nic1", true);
  rig.system->submit(request(1, 20'000, 4, 3));
  rig.rt.run();
  ASSERT_EQ(rig.done.size(), 1u);
  EXPECT_TRUE(rig.done[1].failure.empty()) << rig.done[1].failure;
  EXPECT_EQ(rig.done[1].path, PrefillPath::local);  // where it was finally prefilled
  EXPECT_TRUE(rig.done[1].reprefilled);
  EXPECT_FALSE(rig.done[1].prefill_done) << "the prefill worker never saw it";
  EXPECT_EQ(rig.tokens[1], 4);
  EXPECT_EQ(rig.log_lines_with({"prefill_worker_unreachable", "reprefill"}), 1);
  expect_kv_returned(rig);
}

TEST(PdControlPlane, TheTimingBreakdownAddsUpToTheWholeRequest) {
  Rig rig;
  rig.system->submit(request(1, 1'000, 16, 1));
  rig.system->submit(request(2, 20'000, 16, 2));
  rig.rt.run();
  for (RequestId id : {1, 2}) {
    const RequestTiming& t = rig.done[id];
    ASSERT_TRUE(t.first_token && t.first_decode && t.finished) << id;
    EXPECT_GT(t.prefill(), rt::Duration()) << id;
    EXPECT_GT(t.first_decode_step(), rt::Duration()) << id;
    EXPECT_GT(t.decode(), rt::Duration()) << id;
    // Without a network the decode rank's first token is delivered as the KV lands.
    EXPECT_EQ(t.queue() + t.prefill() + t.kv_transfer() + t.first_decode_step() + t.decode(), *t.finished - t.arrival)
        << id;
  }
  EXPECT_EQ(rig.done[1].kv_transfer(), rt::Duration()) << "local path: nothing moved";
  EXPECT_GT(rig.done[2].kv_transfer(), rt::Duration());
}

}  // namespace pd_control_plane_test
}  // namespace nvl::engine
