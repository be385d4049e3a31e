#pragma once
// Simulated time on one thread: the loop runs every ready fiber, then jumps the clock to the earliest
// pending event. Same program and seed give the same event order and the same event-log hash.
#include "emu/rt/fiber_loop.h"

namespace nvl::rt {

class VirtualRuntime final : public FiberLoop {
 public:
  explicit VirtualRuntime(LoopOptions opts = {}) : FiberLoop(opts) {}
  Time now() const override { return now_; }

 private:
  bool strict_time() const override { return true; }
  bool wait_until_due(Time t) override {
    now_ = t;
    return true;
  }
  void idle_wait() override {}
  void settle_at(Time limit) override { now_ = limit; }

  Time now_;
};

}  // namespace nvl::rt
