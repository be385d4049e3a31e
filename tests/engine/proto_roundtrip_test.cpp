// Control-plane messages survive a round trip through their wire form.
#include <gtest/gtest.h>

#include "engine/proto/control.pb.h"
#include "engine/proto/frontend.grpc.pb.h"

namespace nvl::engine {
namespace {

template <class Msg>
Msg round_trip(const Msg& m) {
  Msg back;
  EXPECT_TRUE(back.ParseFromString(m.SerializeAsString()));
  return back;
}

TEST(ControlProto, ScheduleOnRankRoundTrips) {
  proto::ScheduleOnRank s;
  s.mutable_spec()->set_request_id(42);
  s.mutable_spec()->set_prompt_tokens(70'000);
  for (std::uint64_t h : {0xdeadbeefcafef00dULL, 1ULL, 2ULL}) s.mutable_spec()->add_prompt_hashes(h);
  s.set_rank(17);
  s.set_path(proto::PREFILL_PATH_PREFILL);
  s.set_decode_rank(33);
  s.set_transport(proto::KV_TRANSPORT_RDMA);
  s.set_fetch_from_rank(-1);
  const auto back = round_trip(s);
  EXPECT_EQ(back.spec().request_id(), 42u);
  ASSERT_EQ(back.spec().prompt_hashes_size(), 3);
  EXPECT_EQ(back.spec().prompt_hashes(0), 0xdeadbeefcafef00dULL);
  EXPECT_EQ(back.path(), proto::PREFILL_PATH_PREFILL);
  EXPECT_EQ(back.fetch_from_rank(), -1);
}

TEST(ControlProto, EventsReportsAndStreamsRoundTrip) {
  proto::KvEventMsg e;
  e.set_kind(proto::KvEventMsg::KIND_REMOVED);
  e.set_tier(proto::KvEventMsg::TIER_GRACE);
  e.set_rank(63);
  e.add_hashes(9);
  EXPECT_EQ(round_trip(e).tier(), proto::KvEventMsg::TIER_GRACE);

  proto::LoadReport l;
  l.set_rank(5);
  l.set_free_kv_blocks(123'456);
  l.set_healthy(true);
  EXPECT_EQ(round_trip(l).free_kv_blocks(), 123'456u);

  proto::KvTransferDone d;
  d.set_ok(false);
  d.set_error("link rack0/tray3/nic1 down");
  EXPECT_EQ(round_trip(d).error(), "link rack0/tray3/nic1 down");

  proto::TokenChunk t;
  t.set_first_index(10);
  t.set_count(2);
  t.set_finished(true);
  t.set_finish_reason("length");
  EXPECT_EQ(round_trip(t).finish_reason(), "length");
}

TEST(ControlProto, FrontendServiceIsGenerated) {
  // The stub type exists and names its methods: live mode builds on it.
  EXPECT_STREQ(proto::Frontend::service_full_name(), "nvl.engine.proto.Frontend");
}

}  // namespace
}  // namespace nvl::engine
