#pragma once
// The frontend process: takes requests in, sends them to the router, receives their tokens from the
// DP ranks and delivers them, and keeps each request's timing until it ends.
#include <cstdint>
#include <functional>
#include <map>
#include <set>

#include "emu/rt/runtime.h"
#include "engine/system/control_plane.h"
#include "engine/system/pd_config.h"
#include "engine/system/pd_directory.h"

namespace nvl::engine {

class Frontend {
 public:
  // `woken`: work arrived (the periodic load reports and health checks, which stop while the system is
  // idle so that an idle run ends, start again). `ended`: a request's end was handed on.
  Frontend(rt::Runtime& rt, ControlPlane& control, const PdDirectory& dir, TokenStream on_tokens, RequestDone on_done,
           std::function<void()> woken, std::function<void(RequestId)> ended);

  void submit(const RequestState& request);
  bool cancel(RequestId id);
  void on_message(const proto::ControlMessage& m);
  // Ends the request with `failure` (empty: it finished) and hands its timing on.
  void finish(RequestId id, const std::string& failure);

  std::size_t in_flight() const { return timings_.size(); }
  bool in_flight(RequestId id) const { return timings_.contains(id); }
  // In flight and not cancelled. The processes that hold a request drop it where they find it
  // cancelled; the Cancel that follows it there ends it. Read in-process so that a request cancelled
  // on the way stops where it stopped before.
  bool live(RequestId id) const { return timings_.contains(id) && !cancelled_.contains(id); }
  // Where a request's time went (nullptr: not in flight). Every process writes its own spans into it,
  // as a real deployment's processes export spans to one tracing collector: no control message.
  RequestTiming* timing(RequestId id);
  const RequestTiming* timing(RequestId id) const;

 private:
  void on_chunk(const proto::TokenChunk& c);

  rt::Runtime& rt_;
  ControlPlane& control_;
  const PdDirectory& dir_;
  TokenStream on_tokens_;
  RequestDone on_done_;
  std::function<void()> woken_;
  std::function<void(RequestId)> ended_;
  std::map<RequestId, RequestTiming> timings_;  // each request in flight
  std::set<RequestId> cancelled_;               // cancelled, its end not yet here
};

}  // namespace nvl::engine
