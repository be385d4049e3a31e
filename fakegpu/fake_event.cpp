#include "fakegpu/fake_event.h"

#include <algorithm>

#include "fakegpu/fake_stream.h"

namespace nvl::fakegpu {

void FakeEvent::synchronize() {
  const std::uint64_t target = recorded_;
  cond_.wait([&] { return completed_ >= target; });
  if (error_) throw *error_;
}

void FakeEvent::complete(std::uint64_t generation, const hal::HalError* error) {
  if (generation <= completed_) return;
  completed_ = generation;
  completed_at_ = rt_.now();
  if (error != nullptr) {
    error_ = *error;
  } else {
    error_.reset();
  }
  if (!waiters_.empty()) {
    // Release in order of arrival; a released stream may add waiters while we go.
    std::vector<Waiter> ready;
    auto it = std::stable_partition(waiters_.begin(), waiters_.end(),
                                    [&](const Waiter& w) { return w.generation > completed_; });
    ready.assign(it, waiters_.end());
    waiters_.erase(it, waiters_.end());
    for (const Waiter& w : ready) w.stream->on_event_reached(w.epoch, error);
  }
  cond_.notify_all();
}

void FakeEvent::add_waiter(std::uint64_t generation, FakeStream& stream, std::uint64_t stream_epoch) {
  waiters_.push_back(Waiter{generation, &stream, stream_epoch});
}

}  // namespace nvl::fakegpu
