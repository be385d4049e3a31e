#include "emu/rt/real_time_runtime.h"

#include <cmath>

#include "emu/rt/errors.h"

namespace nvl::rt {

RealTimeRuntime::RealTimeRuntime(LoopOptions opts, double scale)
    : FiberLoop(opts), start_(Clock::now()), scale_(scale) {
  if (!(scale > 0.0) || !std::isfinite(scale)) {
    throw UsageError("real-time runtime: time scale must be a positive number, got " + std::to_string(scale));
  }
}

Time RealTimeRuntime::now() const {
  const auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
  return Time::from_ns(static_cast<std::int64_t>(static_cast<double>(wall) * scale_));
}

RealTimeRuntime::Clock::time_point RealTimeRuntime::wall_of(Time t) const {
  const double wall_ns = static_cast<double>(t.ns()) / scale_;
  if (wall_ns > 1e18) return Clock::time_point::max();
  return start_ + std::chrono::nanoseconds(static_cast<std::int64_t>(std::ceil(wall_ns)));
}

bool RealTimeRuntime::wait_until_due(Time t) {
  const auto deadline = wall_of(t);
  std::unique_lock<std::mutex> lock(mu_);
  while (Clock::now() < deadline) {
    if (has_posts_locked()) return false;
    cv_.wait_until(lock, deadline);
  }
  return true;
}

void RealTimeRuntime::idle_wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return has_posts_locked(); });
}

}  // namespace nvl::rt
