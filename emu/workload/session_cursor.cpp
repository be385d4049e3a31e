#include "emu/workload/session_cursor.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace nvl::emu {

rt::Duration scaled(rt::Duration d, double factor) {
  return rt::ns(std::llround(static_cast<double>(d.ns()) * factor));
}

SessionCursor::SessionCursor(const Session& session, std::size_t session_index, rt::Time start,
                             const ArrivalOptions& options)
    : session_(&session), session_index_(session_index), start_(start), options_(options), departure_(start) {
  if (!done() && options_.pacing == ArrivalOptions::Pacing::kRecordedOffsets) {
    departure_ = start_ + scaled(session.requests.front().offset, options_.time_scale);
  }
}

const Request& SessionCursor::next() const {
  if (done()) throw std::logic_error("SessionCursor::next: the session has no more requests");
  return session_->requests[next_];
}

void SessionCursor::complete(rt::Time completion) {
  if (done()) throw std::logic_error("SessionCursor::complete: the session has no more requests");
  ++next_;
  if (done()) return;
  const Request& r = session_->requests[next_];
  if (options_.pacing == ArrivalOptions::Pacing::kThinkTime) {
    departure_ = completion + scaled(r.think_time, options_.time_scale);
  } else {
    departure_ = std::max(completion, start_ + scaled(r.offset, options_.time_scale));
  }
}

}  // namespace nvl::emu
