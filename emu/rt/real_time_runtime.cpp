#include "emu/rt/real_time_runtime.h"

#include <algorithm>
#include <cmath>

#include "emu/rt/errors.h"

namespace nvl::rt {

RealTimeRuntime::RealTimeRuntime(LoopOptions opts, double scale) : FiberLoop(opts), scale_(scale) {
  if (!(scale > 0.0) || !std::isfinite(scale)) {
    throw UsageError("real-time runtime: time scale must be a positive number, got " + std::to_string(scale));
  }
}

void RealTimeRuntime::anchor() {
  if (anchored_) return;
  anchored_ = true;
  const auto since_start = std::chrono::nanoseconds(std::llround(static_cast<double>(now().ns()) / scale_));
  start_ = Clock::now() - since_start;
}

Time RealTimeRuntime::scaled_wall() const { return scaled(Clock::now()); }

Time RealTimeRuntime::scaled(Clock::time_point wall) const {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wall - start_).count();
  return Time::from_ns(static_cast<std::int64_t>(static_cast<double>(ns) * scale_));
}

void RealTimeRuntime::post_queued_locked() {
  if (!first_post_) first_post_ = Clock::now();
}

Time RealTimeRuntime::posts_arrival_locked() const {
  if (!anchored_) return now();  // not yet tied to the wall clock: posts run at once
  return first_post_ ? scaled(*first_post_) : scaled_wall();
}

void RealTimeRuntime::posts_taken_locked() {
  advance_to(posts_arrival_locked());
  first_post_.reset();
}

RealTimeRuntime::Clock::time_point RealTimeRuntime::wall_of(Time t) const {
  const double wall_ns = static_cast<double>(t.ns()) / scale_;
  if (wall_ns > 1e18) return Clock::time_point::max();
  return start_ + std::chrono::nanoseconds(static_cast<std::int64_t>(std::ceil(wall_ns)));
}

void RealTimeRuntime::advance_to(Time t) {
  if (t > now()) now_ns_.store(t.ns(), std::memory_order_release);
}

bool RealTimeRuntime::wait_until_due(Time t) {
  anchor();
  const auto deadline = wall_of(t);
  std::unique_lock<std::mutex> lock(mu_);
  while (Clock::now() < deadline) {
    if (has_posts_locked()) {
      // The loop was waiting: the posted work runs before the event it waited for.
      lag_ns_.store(0, std::memory_order_relaxed);
      advance_to(std::min(t, posts_arrival_locked()));
      return false;
    }
    cv_.wait_until(lock, deadline);
  }
  lag_ns_.store(std::max<std::int64_t>(0, (scaled_wall() - t).ns()), std::memory_order_relaxed);
  advance_to(t);
  return true;
}

void RealTimeRuntime::idle_wait() {
  anchor();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return has_posts_locked(); });
  lag_ns_.store(0, std::memory_order_relaxed);
  advance_to(posts_arrival_locked());
}

void RealTimeRuntime::settle_at(Time limit) { advance_to(limit); }

}  // namespace nvl::rt
