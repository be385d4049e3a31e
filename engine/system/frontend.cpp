#include "engine/system/frontend.h"

#include <stdexcept>

#include "engine/system/control_codec.h"

namespace nvl::engine {

Frontend::Frontend(rt::Runtime& rt, ControlPlane& control, const PdDirectory& dir, TokenStream on_tokens,
                   RequestDone on_done, std::function<void()> woken, std::function<void(RequestId)> ended)
    : rt_(rt),
      control_(control),
      dir_(dir),
      on_tokens_(std::move(on_tokens)),
      on_done_(std::move(on_done)),
      woken_(std::move(woken)),
      ended_(std::move(ended)) {}

void Frontend::submit(const RequestState& request) {
  RequestTiming& t = timings_[request.id];
  t.id = request.id;
  t.prompt_tokens = request.prompt_tokens;
  t.arrival = rt_.now();
  woken_();
  proto::ControlMessage m;
  *m.mutable_submit()->mutable_spec() = to_spec(request);
  control_.send(dir_.frontend, dir_.router, std::move(m));
}

bool Frontend::cancel(RequestId id) {
  if (!timings_.contains(id) || cancelled_.contains(id)) return false;
  cancelled_.insert(id);
  rt_.record("frontend", "cancel", {{"request", id}});
  proto::ControlMessage m;
  m.mutable_cancel()->set_request_id(id);
  m.mutable_cancel()->set_reason("cancelled");
  m.mutable_cancel()->set_rank(-1);
  control_.send(dir_.frontend, dir_.router, std::move(m));
  return true;
}

void Frontend::on_message(const proto::ControlMessage& m) {
  if (!m.has_tokens()) throw std::logic_error("frontend: unexpected control message " + kind_of(m));
  on_chunk(m.tokens());
}

RequestTiming* Frontend::timing(RequestId id) {
  const auto it = timings_.find(id);
  return it != timings_.end() ? &it->second : nullptr;
}

const RequestTiming* Frontend::timing(RequestId id) const {
  const auto it = timings_.find(id);
  return it != timings_.end() ? &it->second : nullptr;
}

void Frontend::on_chunk(const proto::TokenChunk& c) {
  const auto it = timings_.find(c.request_id());
  if (it == timings_.end()) return;
  RequestTiming& t = it->second;
  const bool done_ok = c.finished() && c.finish_reason() == "length";
  if (c.count() > 0) {
    const bool first = c.first_index() == 0;
    if (first) t.first_token = rt_.now();
    if (c.first_index() <= 1 && c.first_index() + c.count() > 1) t.first_decode = rt_.now();
    t.output_tokens += c.count();
    on_tokens_(c.request_id(), c.count(), first, done_ok);
  }
  if (c.finished()) finish(c.request_id(), done_ok ? "" : c.finish_reason());
}

void Frontend::finish(RequestId id, const std::string& failure) {
  const auto it = timings_.find(id);
  if (it == timings_.end()) return;
  it->second.finished = rt_.now();
  it->second.failure = failure;
  const RequestTiming t = it->second;
  timings_.erase(it);
  cancelled_.erase(id);
  on_done_(t);
  ended_(id);
}

}  // namespace nvl::engine
