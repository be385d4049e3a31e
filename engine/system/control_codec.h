#pragma once
// Engine values to and from their control-plane protobufs (engine/proto/control.proto).
#include <string>
#include <vector>

#include "emu/rt/time.h"
#include "engine/kv/kv_event.h"
#include "engine/proto/control.pb.h"
#include "engine/router/routing_policy.h"
#include "engine/sched/request_state.h"

namespace nvl::engine {

proto::RequestSpec to_spec(const RequestState& r);
// A new request (waiting, nothing computed) as the spec describes it.
RequestState from_spec(const proto::RequestSpec& spec);

proto::LoadReport to_report(std::int32_t rank, const RankLoad& load, rt::Time at);
RankLoad from_report(const proto::LoadReport& report);

proto::KvEventMsg to_message(const KvEvent& e);
// One event per hash of the message.
std::vector<KvEvent> from_message(const proto::KvEventMsg& msg);

// The message's kind as control.proto names it, for logs and errors.
std::string kind_of(const proto::ControlMessage& m);

}  // namespace nvl::engine
