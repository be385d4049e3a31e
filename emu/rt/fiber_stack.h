#pragma once
// Fiber stacks: Boost.Fiber's guarded fixed-size stacks (memory is only committed where touched), plus what
// AddressSanitizer must be told of them. Debian's Boost.Context is built without its ASan switch
// annotations, so ASan believes the thread always runs on its own stack; when an exception unwinds frames
// on a fiber stack, ASan then refuses to clear their redzones ("ignoring requested
// __asan_handle_no_return") and the next frames there report a false stack-buffer-overflow. The loop calls
// enter_stack() each time a fiber starts or resumes, and enter_thread_stack() when the thread's own code
// resumes, so ASan always knows the current stack and unwinds fiber stacks as it does thread stacks; and
// the allocator clears a stack's shadow when it is released. Without ASan all of this is a no-op.
#include <cstddef>

#include <boost/context/stack_context.hpp>

#include "emu/rt/fiber_state.h"

namespace nvl::rt::detail {

// A Boost.Context stack allocator that records the range of the stack it hands out.
class FiberStack {
 public:
  FiberStack(std::size_t bytes, StackRange* range) : bytes_(bytes), range_(range) {}
  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& sctx) noexcept;

 private:
  std::size_t bytes_;
  StackRange* range_;
};

// The code that runs now is on `range` (a fiber's stack).
void enter_stack(const StackRange& range);
// The code that runs now is on the thread's own stack.
void enter_thread_stack();

}  // namespace nvl::rt::detail
