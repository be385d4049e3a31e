// Exceptions thrown and caught on fiber stacks, then deeper calls on the same stack, across fibers that
// reuse freed stacks. Under AddressSanitizer (.ci/run's sanitizer step) this is what used to report a false
// stack-buffer-overflow (see emu/rt/fiber_stack.h); in every build the fibers must compute the right sums.
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "emu/rt/virtual_runtime.h"

namespace nvl::rt {
namespace fiber_stack_test {

using namespace nvl::rt::literals;

// Fills a stack buffer at each level, then throws from the deepest one.
[[gnu::noinline]] int throw_from_depth(int depth) {
  char frame[512];
  std::memset(frame, depth, sizeof frame);
  if (depth == 0) throw std::runtime_error("deep " + std::string(frame, 2));
  return throw_from_depth(depth - 1) + frame[depth % sizeof frame];
}

// Sums over stack buffers at each level: it reuses the stack the unwound frames left behind.
[[gnu::noinline]] int sum_on_stack(int depth) {
  char frame[256];
  std::memset(frame, 1, sizeof frame);
  const int here = std::accumulate(frame, frame + sizeof frame, 0);
  return depth == 0 ? here : here + sum_on_stack(depth - 1);
}

TEST(FiberStack, ExceptionsCaughtOnAFiberLeaveItsStackUsable) {
  VirtualRuntime rt(LoopOptions{.seed = 1});
  int caught = 0;
  int sums = 0;
  for (int round = 0; round < 3; ++round) {  // later fibers get the stacks of finished ones
    for (int i = 0; i < 8; ++i) {
      rt.spawn("thrower", [&] {
        try {
          throw_from_depth(20);
        } catch (const std::runtime_error&) {
          ++caught;
        }
        sums += sum_on_stack(30);
        rt.sleep(1_us);  // switch away and back: the stack is used again after a resume
        sums += sum_on_stack(30);
      });
    }
    rt.run();
  }
  EXPECT_EQ(caught, 3 * 8);
  EXPECT_EQ(sums, 3 * 8 * 2 * 31 * 256);
}

}  // namespace fiber_stack_test
}  // namespace nvl::rt
