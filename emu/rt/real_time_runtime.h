#pragma once
// Wall-clock time, optionally scaled (scale 2 runs simulated time twice as fast as the wall).
// Sleeping fibers wake when the wall clock reaches their time; other threads hand work in with post().
#include <chrono>

#include "emu/rt/fiber_loop.h"

namespace nvl::rt {

class RealTimeRuntime final : public FiberLoop {
 public:
  // scale > 0; a bad scale is a UsageError.
  explicit RealTimeRuntime(LoopOptions opts = {}, double scale = 1.0);
  Time now() const override;
  double scale() const { return scale_; }

 private:
  using Clock = std::chrono::steady_clock;
  bool strict_time() const override { return false; }
  bool wait_until_due(Time t) override;
  void idle_wait() override;
  void settle_at(Time) override {}
  Clock::time_point wall_of(Time t) const;

  Clock::time_point start_;
  double scale_;
};

}  // namespace nvl::rt
