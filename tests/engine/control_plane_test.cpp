// The control plane over the host network: one turn's messages cross as one batch per link, KV
// events merge, and a lost batch reports exactly its own messages, turn after turn (batches are reused).
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "emu/rt/virtual_runtime.h"
#include "engine/system/control_plane.h"
#include "fabric/host_network.h"
#include "fabric/profile_loader.h"

namespace nvl::engine {
namespace control_plane_test {

proto::ControlMessage kv_event(std::int32_t rank, std::uint64_t hash) {
  proto::ControlMessage m;
  m.mutable_kv_event()->set_kind(proto::KvEventMsg::KIND_STORED);
  m.mutable_kv_event()->set_rank(rank);
  m.mutable_kv_event()->add_hashes(hash);
  return m;
}

proto::ControlMessage cancel(std::uint64_t id) {
  proto::ControlMessage m;
  m.mutable_cancel()->set_request_id(id);
  return m;
}

// One line per message: "kv r<rank> <hashes...>" or "cancel <id>".
std::string describe(const proto::ControlMessage& m) {
  if (m.has_cancel()) return "cancel " + std::to_string(m.cancel().request_id());
  std::string s = "kv r" + std::to_string(m.kv_event().rank());
  for (std::uint64_t h : m.kv_event().hashes()) s += " " + std::to_string(h);
  return s;
}

struct Rig {
  rt::VirtualRuntime rt;
  fabric::Fabric fab{rt, fabric::make_cluster("gb300-nvl72", 1)};
  fabric::HostNetwork net{fab};
  std::vector<std::string> lost;
  ControlPlane control{rt, &net, [this](const proto::ControlMessage& m, const std::string&) { lost.push_back(describe(m)); }};
};

TEST(ControlPlane, ABatchPerLinkAndTurnAndLossesReportTheirOwnMessages) {
  Rig r;
  const hal::Address router{0, 1}, rank{1, 2}, other{2, 3};
  std::vector<std::string> at_router, at_rank;
  r.control.listen(router, [&](const proto::ControlMessage& m) { at_router.push_back(describe(m)); });
  r.control.listen(rank, [&](const proto::ControlMessage& m) { at_rank.push_back(describe(m)); });

  r.control.send(rank, router, kv_event(4, 10));
  r.control.send(rank, router, kv_event(4, 11));  // merges with the one before
  r.control.send(router, rank, cancel(7));
  r.control.send(rank, router, cancel(8));
  r.control.send(rank, router, kv_event(4, 12));  // after a cancel: its own message
  r.rt.run();
  EXPECT_EQ(at_router, (std::vector<std::string>{"kv r4 10 11", "cancel 8", "kv r4 12"}));
  EXPECT_EQ(at_rank, (std::vector<std::string>{"cancel 7"}));
  EXPECT_EQ(r.control.messages_sent(), 5u);
  EXPECT_EQ(r.control.batches_sent(), 2u);

  r.fab.partition({1}, {0});
  r.control.send(rank, router, cancel(20));
  r.control.send(rank, router, kv_event(5, 21));
  r.control.send(rank, other, cancel(22));  // no one listens there
  r.rt.run();
  EXPECT_EQ(r.lost, (std::vector<std::string>{"cancel 20", "kv r5 21", "cancel 22"}));

  r.fab.heal_partition();
  at_router.clear();
  r.control.send(rank, router, cancel(30));
  r.rt.run();
  EXPECT_EQ(at_router, (std::vector<std::string>{"cancel 30"}));
  EXPECT_EQ(r.lost.size(), 3u);
}

// The emulated network hands a batch to its receiver as the sender's object. A receiver that answers
// while it reads (the router scheduling as KV events come in) fills other batches: the one it reads
// is reused only after it is done.
TEST(ControlPlane, AReceiverAnsweringWhileItReadsItsBatchReadsItWhole) {
  Rig r;
  const hal::Address router{0, 1}, rank{1, 2};
  std::vector<std::string> at_router, at_rank;
  r.control.listen(router, [&](const proto::ControlMessage& m) {
    at_router.push_back(describe(m));
    r.control.send(router, rank, cancel(100 + at_router.size()));
  });
  r.control.listen(rank, [&](const proto::ControlMessage& m) { at_rank.push_back(describe(m)); });
  for (int turn = 0; turn < 3; ++turn) {
    r.control.send(rank, router, cancel(1));
    r.control.send(rank, router, kv_event(4, 2));
    r.control.send(rank, router, cancel(3));
    r.rt.run();
  }
  const std::vector<std::string> turn = {"cancel 1", "kv r4 2", "cancel 3"};
  std::vector<std::string> expected;
  for (int t = 0; t < 3; ++t) expected.insert(expected.end(), turn.begin(), turn.end());
  EXPECT_EQ(at_router, expected);
  ASSERT_EQ(at_rank.size(), 9u);
  EXPECT_EQ(at_rank.front(), "cancel 101");
  EXPECT_EQ(at_rank.back(), "cancel 109");
  EXPECT_TRUE(r.lost.empty());
}

// A transport between processes would deliver a batch's bytes: they are parsed and delivered the same
// way, and bytes that are no batch are an error record, not a crash.
TEST(ControlPlane, ABatchArrivingAsBytesIsParsedAndBadBytesAreAnError) {
  Rig r;
  const hal::Address router{0, 1};
  std::vector<std::string> at_router;
  r.control.listen(router, [&](const proto::ControlMessage& m) { at_router.push_back(describe(m)); });
  proto::ControlBatch batch;
  *batch.add_messages() = kv_event(3, 7);
  *batch.add_messages() = cancel(9);
  r.net.send({1, 5}, router, std::make_shared<hal::BytesMessage>(batch.SerializeAsString()));
  r.rt.run();
  EXPECT_EQ(at_router, (std::vector<std::string>{"kv r3 7", "cancel 9"}));
  EXPECT_EQ(r.rt.log().error_count(), 0u);

  r.net.send({1, 5}, router, std::make_shared<hal::BytesMessage>(std::string("\xff\xff\xff", 3)));
  r.rt.run();
  EXPECT_EQ(at_router.size(), 2u);
  EXPECT_EQ(r.rt.log().error_count(), 1u);
  ASSERT_TRUE(r.rt.log().first_error().has_value());
  EXPECT_NE(r.rt.log().first_error()->find("malformed_batch"), std::string::npos) << *r.rt.log().first_error();
}

}  // namespace control_plane_test
}  // namespace nvl::engine
