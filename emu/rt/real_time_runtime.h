#pragma once
// Emulated time paced by the wall clock, optionally scaled (scale 2 runs emulated time twice as fast as
// the wall). An event runs at its own emulated time once the scaled wall clock has reached it, however
// late the host gets to it: emulated durations are the model's, never the host's. When the host cannot
// keep up, emulated time falls behind the scaled wall clock and lag() says by how much. Work that other
// threads hand in with post() runs at the emulated time the wall clock showed when it was posted (a
// request arrives when it was sent, not when the loop woke up or caught up), after the events due
// before then.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

#include "emu/rt/fiber_loop.h"

namespace nvl::rt {

class RealTimeRuntime final : public FiberLoop {
 public:
  // scale > 0; a bad scale is a UsageError.
  explicit RealTimeRuntime(LoopOptions opts = {}, double scale = 1.0);
  // Thread-safe.
  Time now() const override { return Time::from_ns(now_ns_.load(std::memory_order_acquire)); }
  double scale() const { return scale_; }
  // How far behind the scaled wall clock the last event ran (zero while the loop keeps up or waits).
  // Thread-safe.
  Duration lag() const { return Duration::nanoseconds(lag_ns_.load(std::memory_order_relaxed)); }

 private:
  using Clock = std::chrono::steady_clock;
  bool strict_time() const override { return false; }
  bool wait_until_due(Time t) override;
  void idle_wait() override;
  void settle_at(Time limit) override;
  void post_queued_locked() override;
  // The posts run at the time they arrived (no event is due before it): the clock moves there.
  void posts_taken_locked() override;
  // The emulated time posts waiting to run arrived at (mu_ held).
  Time posts_arrival_locked() const override;
  // The wall clock is tied to emulated time when the loop first waits, not at construction: building a
  // deployment takes host time that is no emulated time.
  void anchor();
  Time scaled_wall() const;
  Time scaled(Clock::time_point wall) const;
  Clock::time_point wall_of(Time t) const;
  void advance_to(Time t);

  std::optional<Clock::time_point> first_post_;  // the earliest post not yet taken; guarded by mu_
  Clock::time_point start_;
  bool anchored_ = false;
  double scale_;
  std::atomic<std::int64_t> now_ns_{0};
  std::atomic<std::int64_t> lag_ns_{0};
};

}  // namespace nvl::rt
