#include "emu/rt/fiber_stack.h"

#include <boost/context/protected_fixedsize_stack.hpp>

#if defined(__SANITIZE_ADDRESS__)
#define NVL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NVL_ASAN 1
#endif
#endif
#if defined(NVL_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace nvl::rt::detail {

namespace {
#if defined(NVL_ASAN)
// The thread's own stack, as ASan knew it before the first fiber switch was announced.
thread_local StackRange thread_stack;

// ASan's fiber API used in place: "switch" to `range` while already on it, which only relabels the
// thread's current stack. No fake stack is kept across the switch: tests run with
// detect_stack_use_after_return=0 (ASan's fake stacks cannot follow Boost's unannotated switches anyway).
void relabel(const StackRange& range) {
  const void* old_bottom = nullptr;
  std::size_t old_size = 0;
  __sanitizer_start_switch_fiber(nullptr, range.bottom, range.size);
  __sanitizer_finish_switch_fiber(nullptr, &old_bottom, &old_size);
  if (thread_stack.bottom == nullptr) thread_stack = StackRange{old_bottom, old_size};
}
#endif
}  // namespace

boost::context::stack_context FiberStack::allocate() {
  boost::context::stack_context sctx = boost::context::protected_fixedsize_stack(bytes_).allocate();
  // The stack grows down from sp.
  *range_ = StackRange{static_cast<const char*>(sctx.sp) - sctx.size, sctx.size};
  return sctx;
}

void FiberStack::deallocate(boost::context::stack_context& sctx) noexcept {
#if defined(NVL_ASAN)
  // A finished fiber leaves its last frames (Boost's entry trampoline) on the stack with their redzones
  // poisoned; clear them, or a later stack mapped at the same address inherits them.
  __asan_unpoison_memory_region(static_cast<char*>(sctx.sp) - sctx.size, sctx.size);
#endif
  boost::context::protected_fixedsize_stack(bytes_).deallocate(sctx);
}

void enter_stack([[maybe_unused]] const StackRange& range) {
#if defined(NVL_ASAN)
  relabel(range);
#endif
}

void enter_thread_stack() {
#if defined(NVL_ASAN)
  if (thread_stack.bottom != nullptr) relabel(thread_stack);
#endif
}

}  // namespace nvl::rt::detail
