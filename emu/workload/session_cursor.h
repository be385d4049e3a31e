#pragma once
// Walks one session for a runner: which request leaves next and when it may leave. The runner sends
// next() at or after earliest_departure() and calls complete() when its answer is done.
#include <cstddef>

#include "emu/rt/time.h"
#include "emu/workload/arrival_options.h"
#include "emu/workload/session.h"

namespace nvl::emu {

class SessionCursor {
 public:
  SessionCursor(const Session& session, std::size_t session_index, rt::Time start, const ArrivalOptions& options);

  bool done() const { return next_ >= session_->requests.size(); }
  std::size_t session_index() const { return session_index_; }
  std::size_t next_index() const { return next_; }
  const Request& next() const;
  rt::Time earliest_departure() const { return departure_; }
  // The answer to next() completed at `completion`: moves to the following request and times it.
  void complete(rt::Time completion);

 private:
  const Session* session_;
  std::size_t session_index_;
  rt::Time start_;
  ArrivalOptions options_;
  std::size_t next_ = 0;
  rt::Time departure_;
};

// A duration times a scale factor, rounded to whole nanoseconds.
rt::Duration scaled(rt::Duration d, double factor);

}  // namespace nvl::emu
