#include "emu/scenario/session_driver.h"

#include <algorithm>

#include "emu/workload/reblock.h"

namespace nvl::emu {

SessionDriver::SessionDriver(rt::Runtime& rt, const Workload& workload, const ArrivalProcess& arrivals,
                             std::int64_t kv_block_tokens)
    : rt_(rt), workload_(workload), arrivals_(arrivals), kv_block_tokens_(kv_block_tokens) {}

void SessionDriver::start() {
  for (const auto& s : arrivals_.starts()) schedule_start(s);
}

void SessionDriver::on_done(const engine::RequestTiming& t) {
  timings_.push_back(t);
  const auto it = owner_.find(t.id);
  if (it == owner_.end()) return;
  const std::size_t c = it->second;
  owner_.erase(it);
  SessionCursor& cursor = *cursors_[c];
  cursor.complete(rt_.now());
  for (const auto& child : arrivals_.spawned_by(cursor.session_index(), cursor.next_index(), rt_.now())) {
    schedule_start(child);
  }
  send_next(c);
}

void SessionDriver::schedule_start(const SessionStart& s) {
  rt_.call_at(std::max(s.at, rt_.now()), [this, s] {
    cursors_.push_back(std::make_unique<SessionCursor>(arrivals_.open(s)));
    const std::size_t c = cursors_.size() - 1;
    for (const auto& child : arrivals_.spawned_by(s.session, 0, rt_.now())) schedule_start(child);
    send_next(c);
  });
}

void SessionDriver::send_next(std::size_t c) {
  const SessionCursor& cursor = *cursors_[c];
  if (cursor.done()) return;
  rt_.call_at(std::max(cursor.earliest_departure(), rt_.now()), [this, c] { submit(c); });
}

void SessionDriver::submit(std::size_t c) {
  const SessionCursor& cursor = *cursors_[c];
  const Session& session = workload_.sessions[cursor.session_index()];
  const Request& req = cursor.next();
  engine::RequestState r;
  r.id = static_cast<engine::RequestId>(next_id_++);
  r.arrival = rt_.now();
  r.prompt_tokens = req.prompt_tokens;
  r.max_output_tokens = std::max<std::int64_t>(1, req.output_tokens);  // every call yields its first token
  const auto hashes = reblock(req.block_hashes.ids(), req.prompt_tokens, session.block_size_tokens,
                              static_cast<std::int32_t>(kv_block_tokens_));
  r.prompt_hashes.assign(hashes.begin(), hashes.end());
  owner_[r.id] = c;
  if (on_submit_) on_submit_(r);
  system_->submit(std::move(r));
}

}  // namespace nvl::emu
