#include "engine/system/control_codec.h"

namespace nvl::engine {

proto::RequestSpec to_spec(const RequestState& r) {
  proto::RequestSpec s;
  s.set_request_id(r.id);
  s.set_prompt_tokens(static_cast<std::uint32_t>(r.prompt_tokens));
  s.mutable_prompt_hashes()->Assign(r.prompt_hashes.begin(), r.prompt_hashes.end());
  s.set_max_output_tokens(static_cast<std::uint32_t>(r.max_output_tokens));
  s.set_arrival_ns(r.arrival.since_start().ns());
  if (r.target_rank >= 0) s.set_target_rank(r.target_rank);
  if (r.target_prefill_instance >= 0) s.set_target_prefill_instance(r.target_prefill_instance);
  return s;
}

RequestState from_spec(const proto::RequestSpec& spec) {
  RequestState r;
  r.id = spec.request_id();
  r.prompt_tokens = spec.prompt_tokens();
  r.prompt_hashes.assign(spec.prompt_hashes().begin(), spec.prompt_hashes().end());
  r.max_output_tokens = spec.max_output_tokens();
  r.arrival = rt::Time::zero() + rt::ns(spec.arrival_ns());
  if (spec.has_target_rank()) r.target_rank = spec.target_rank();
  if (spec.has_target_prefill_instance()) r.target_prefill_instance = spec.target_prefill_instance();
  return r;
}

proto::LoadReport to_report(std::int32_t rank, const RankLoad& load, rt::Time at) {
  proto::LoadReport l;
  l.set_rank(rank);
  l.set_running(static_cast<std::uint32_t>(load.running));
  l.set_waiting(static_cast<std::uint32_t>(load.waiting));
  l.set_tokens_in_flight(static_cast<std::uint64_t>(load.tokens_in_flight));
  l.set_free_kv_blocks(static_cast<std::uint64_t>(load.free_kv_blocks));
  l.set_healthy(load.healthy);
  l.set_at_ns(at.since_start().ns());
  return l;
}

RankLoad from_report(const proto::LoadReport& report) {
  RankLoad l;
  l.running = report.running();
  l.waiting = report.waiting();
  l.tokens_in_flight = static_cast<std::int64_t>(report.tokens_in_flight());
  l.free_kv_blocks = static_cast<std::int64_t>(report.free_kv_blocks());
  l.healthy = report.healthy();
  return l;
}

proto::KvEventMsg to_message(const KvEvent& e) {
  proto::KvEventMsg m;
  m.set_kind(e.kind == KvEvent::Kind::stored    ? proto::KvEventMsg::KIND_STORED
             : e.kind == KvEvent::Kind::removed ? proto::KvEventMsg::KIND_REMOVED
                                                : proto::KvEventMsg::KIND_CLEARED);
  m.set_tier(e.tier == KvTier::gpu ? proto::KvEventMsg::TIER_GPU : proto::KvEventMsg::TIER_GRACE);
  m.set_rank(e.rank);
  if (e.kind != KvEvent::Kind::cleared) m.add_hashes(e.hash);
  return m;
}

std::vector<KvEvent> from_message(const proto::KvEventMsg& msg) {
  const auto tier = msg.tier() == proto::KvEventMsg::TIER_GPU ? KvTier::gpu : KvTier::grace;
  if (msg.kind() == proto::KvEventMsg::KIND_CLEARED) return {KvEvent{KvEvent::Kind::cleared, tier, msg.rank(), 0}};
  const auto kind = msg.kind() == proto::KvEventMsg::KIND_STORED ? KvEvent::Kind::stored : KvEvent::Kind::removed;
  std::vector<KvEvent> out;
  out.reserve(static_cast<std::size_t>(msg.hashes_size()));
  for (const std::uint64_t h : msg.hashes()) out.push_back(KvEvent{kind, tier, msg.rank(), h});
  return out;
}

std::string kind_of(const proto::ControlMessage& m) {
  const auto* field = proto::ControlMessage::descriptor()->FindFieldByNumber(m.body_case());
  return field != nullptr ? field->name() : "empty";
}

}  // namespace nvl::engine
