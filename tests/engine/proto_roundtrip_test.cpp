// Control-plane messages survive a round trip through their wire form.
#include <gtest/gtest.h>

#include "engine/proto/control.pb.h"
#include "engine/proto/frontend.grpc.pb.h"
#include "engine/system/control_codec.h"

namespace nvl::engine {
namespace proto_roundtrip_test {

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

TEST(ControlProto, EveryControlMessageRoundTripsInsideABatch) {
  proto::ControlBatch batch;
  batch.add_messages()->mutable_submit()->mutable_spec()->set_request_id(7);
  {
    proto::ScheduleOnRank& s = *batch.add_messages()->mutable_schedule();
    s.set_decode_rank(5);
    s.set_fetch_from_grace(true);
  }
  batch.add_messages()->mutable_kv_event()->add_hashes(11);
  batch.add_messages()->mutable_load()->set_tokens_in_flight(1'000'000);
  {
    proto::KvTransferReady& r = *batch.add_messages()->mutable_transfer_ready();
    r.set_first_layer(15);
    r.set_last_layer(29);
    r.set_bytes(1ULL << 33);
  }
  {
    proto::KvTransferDone& d = *batch.add_messages()->mutable_transfer_done();
    d.set_to_rank(3);
    d.set_transport(proto::KV_TRANSPORT_NVLINK);
  }
  {
    proto::Cancel& c = *batch.add_messages()->mutable_cancel();
    c.set_request_id(9);
    c.set_reason("cancelled");
    c.set_rank(-1);
  }
  batch.add_messages()->mutable_health_check()->set_at_ns(-5);
  {
    proto::HealthStatus& h = *batch.add_messages()->mutable_health_status();
    h.set_healthy(false);
    h.set_detail("Xid 79 on rack0/tray3/gpu2");
  }
  batch.add_messages()->mutable_tokens()->set_count(3);
  const auto back = round_trip(batch);
  ASSERT_EQ(back.messages_size(), 10);
  EXPECT_EQ(back.messages(0).submit().spec().request_id(), 7u);
  EXPECT_TRUE(back.messages(1).schedule().fetch_from_grace());
  EXPECT_EQ(back.messages(1).schedule().decode_rank(), 5);
  EXPECT_EQ(back.messages(2).kv_event().hashes(0), 11u);
  EXPECT_EQ(back.messages(3).load().tokens_in_flight(), 1'000'000u);
  EXPECT_EQ(back.messages(4).transfer_ready().last_layer(), 29u);
  EXPECT_EQ(back.messages(4).transfer_ready().bytes(), 1ULL << 33);
  EXPECT_EQ(back.messages(5).transfer_done().transport(), proto::KV_TRANSPORT_NVLINK);
  EXPECT_EQ(back.messages(6).cancel().rank(), -1);
  EXPECT_EQ(back.messages(6).cancel().reason(), "cancelled");
  EXPECT_EQ(back.messages(7).health_check().at_ns(), -5);
  EXPECT_EQ(back.messages(8).health_status().detail(), "Xid 79 on rack0/tray3/gpu2");
  EXPECT_EQ(back.messages(9).tokens().count(), 3u);
  for (int i = 0; i < back.messages_size(); ++i) EXPECT_EQ(back.messages(i).body_case(), batch.messages(i).body_case());
}

TEST(ControlCodec, EngineValuesSurviveTheirProtobufForm) {
  RequestState r;
  r.id = 123;
  r.prompt_tokens = 70'001;
  r.prompt_hashes = {0xfeedfacecafebeefULL, 2, 3};
  r.max_output_tokens = 900;
  r.arrival = rt::Time::zero() + rt::ms(1'234);
  const RequestState back = from_spec(round_trip(to_spec(r)));
  EXPECT_EQ(back.id, r.id);
  EXPECT_EQ(back.prompt_tokens, r.prompt_tokens);
  EXPECT_EQ(back.prompt_hashes, r.prompt_hashes);
  EXPECT_EQ(back.max_output_tokens, r.max_output_tokens);
  EXPECT_EQ(back.arrival, r.arrival);
  EXPECT_EQ(back.phase, RequestState::Phase::waiting);

  const RankLoad l{.running = 3, .waiting = 4, .tokens_in_flight = 5'000'000'000, .free_kv_blocks = 6, .healthy = false};
  const proto::LoadReport report = round_trip(to_report(17, l, rt::Time::zero() + rt::us(9)));
  EXPECT_EQ(report.rank(), 17);
  EXPECT_EQ(report.at_ns(), 9'000);
  const RankLoad lb = from_report(report);
  EXPECT_EQ(lb.running, 3);
  EXPECT_EQ(lb.waiting, 4);
  EXPECT_EQ(lb.tokens_in_flight, 5'000'000'000);
  EXPECT_EQ(lb.free_kv_blocks, 6);
  EXPECT_FALSE(lb.healthy);

  const KvEvent e{KvEvent::Kind::removed, KvTier::grace, 42, 0xabcdefULL};
  const auto events = from_message(round_trip(to_message(e)));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, e.kind);
  EXPECT_EQ(events[0].tier, e.tier);
  EXPECT_EQ(events[0].rank, e.rank);
  EXPECT_EQ(events[0].hash, e.hash);

  // A prefix-cache reset crosses as one message with no hashes and comes back as one event.
  const KvEvent cleared{KvEvent::Kind::cleared, KvTier::gpu, 7, 0};
  const proto::KvEventMsg sent = round_trip(to_message(cleared));
  EXPECT_EQ(sent.hashes_size(), 0);
  const auto cleared_back = from_message(sent);
  ASSERT_EQ(cleared_back.size(), 1u);
  EXPECT_EQ(cleared_back[0].kind, KvEvent::Kind::cleared);
  EXPECT_EQ(cleared_back[0].tier, KvTier::gpu);
  EXPECT_EQ(cleared_back[0].rank, 7);
}

TEST(ControlProto, FrontendServiceIsGenerated) {
  // The stub type exists and names its methods: live mode builds on it.
  EXPECT_STREQ(proto::Frontend::service_full_name(), "nvl.engine.proto.Frontend");
}

}  // namespace proto_roundtrip_test
}  // namespace nvl::engine
