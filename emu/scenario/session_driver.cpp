#include "emu/scenario/session_driver.h"

#include <algorithm>

namespace nvl::emu {

SessionDriver::SessionDriver(rt::Runtime& rt, const Workload& workload, const ArrivalProcess& arrivals,
                             std::int64_t kv_block_tokens)
    : WorkloadDriver(rt, kv_block_tokens), workload_(workload), arrivals_(arrivals) {}

void SessionDriver::start() {
  for (const auto& s : arrivals_.starts()) schedule_start(s);
}

void SessionDriver::on_done(const engine::RequestTiming& t) {
  record(t);
  const auto it = owner_.find(t.id);
  if (it == owner_.end()) return;
  const std::size_t c = it->second;
  owner_.erase(it);
  SessionCursor& cursor = *cursors_[c];
  cursor.complete(runtime().now());
  for (const auto& child : arrivals_.spawned_by(cursor.session_index(), cursor.next_index(), runtime().now())) {
    schedule_start(child);
  }
  send_next(c);
}

void SessionDriver::schedule_start(const SessionStart& s) {
  runtime().call_at(std::max(s.at, runtime().now()), [this, s] {
    cursors_.push_back(std::make_unique<SessionCursor>(arrivals_.open(s)));
    const std::size_t c = cursors_.size() - 1;
    for (const auto& child : arrivals_.spawned_by(s.session, 0, runtime().now())) schedule_start(child);
    send_next(c);
  });
}

void SessionDriver::send_next(std::size_t c) {
  const SessionCursor& cursor = *cursors_[c];
  if (cursor.done()) return;
  runtime().call_at(std::max(cursor.earliest_departure(), runtime().now()), [this, c] { submit(c); });
}

void SessionDriver::submit(std::size_t c) {
  const SessionCursor& cursor = *cursors_[c];
  const Session& session = workload_.sessions[cursor.session_index()];
  engine::RequestState r = make_request(session, cursor.next());
  owner_[r.id] = c;
  send(std::move(r));
}

}  // namespace nvl::emu
