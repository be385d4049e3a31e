#pragma once
// What the loop knows of one fiber: identity, whether it is done, and what it waits on (for
// deadlock reports and shutdown). Internal to emu/rt.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "emu/rt/condition.h"
#include "emu/rt/time.h"

namespace boost::fibers {
class context;
}

namespace nvl::rt::detail {

// Where a fiber's stack lies: [bottom, bottom + size).
struct StackRange {
  const void* bottom = nullptr;
  std::size_t size = 0;
};

struct FiberState {
  std::uint64_t id = 0;
  std::string name;
  bool daemon = false;
  bool done = false;
  bool cancel = false;  // set at shutdown: the next (or current) wait throws Cancelled
  boost::fibers::context* ctx = nullptr;
  const void* loop = nullptr;  // the runtime that owns it
  StackRange stack;            // where its stack lies (for AddressSanitizer, see fiber_stack.h)
  // While blocked: the operation, the condition (null for a sleep) and the deadline.
  const char* op = nullptr;
  Condition* waiting_on = nullptr;
  Waiter* waiter = nullptr;
  Time deadline = Time::max();
  std::unique_ptr<Condition> joiners;  // created by the first join()
};

}  // namespace nvl::rt::detail
