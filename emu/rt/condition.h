#pragma once
// A named queue of waiting fibers: the building block of Event, Channel and any engine-level wait.
// Waits may carry a timeout; a timed wait says whether it timed out.
#include <cstddef>
#include <string>

#include "emu/rt/runtime.h"

namespace nvl::rt {

enum class Wait { notified, timed_out };

namespace detail {
struct Waiter {
  FiberState* fiber = nullptr;
  Waiter* prev = nullptr;
  Waiter* next = nullptr;
  bool linked = false;
  bool woken = false;
};
}  // namespace detail

class Condition {
 public:
  Condition(Runtime& rt, std::string name);
  // Fibers still waiting are cancelled (their wait throws Cancelled); outside shutdown that fails the run.
  ~Condition();
  Condition(const Condition&) = delete;
  Condition& operator=(const Condition&) = delete;

  // Each wait blocks the calling fiber; waiting outside a fiber is a UsageError.
  void wait() { block("wait", Time::max()); }
  Wait wait_timeout(Duration d);
  Wait wait_deadline(Time t) { return block("wait", t) ? Wait::notified : Wait::timed_out; }
  template <class Pred>
  void wait(Pred ready) {
    while (!ready()) wait();
  }
  // Waits until ready() holds or the deadline passes; returns ready() at the end.
  template <class Pred>
  bool wait_deadline(Time t, Pred ready) {
    while (!ready()) {
      if (wait_deadline(t) == Wait::timed_out) return ready();
    }
    return true;
  }

  // Wakes the longest waiter; false when none waits. Safe from callbacks and fibers.
  bool notify_one() { return rt_.wake_one(*this); }
  std::size_t notify_all();

  std::size_t waiters() const { return count_; }
  // An idle point: a daemon (service loop) waiting here has no work; the run may end with it waiting.
  // A daemon blocked anywhere else when the run goes quiet is part of a deadlock.
  void mark_idle_point() { idle_point_ = true; }
  bool idle_point() const { return idle_point_; }
  const std::string& name() const { return name_; }
  Runtime& runtime() const { return rt_; }

  // Used by the fiber loop to keep its FIFO of waiters.
  void link_back(detail::Waiter* w);
  void unlink(detail::Waiter* w);
  detail::Waiter* front() const { return head_; }

 private:
  // op names the waiting operation in deadlock reports ("pop", "push", "wait").
  friend class Event;
  template <class T>
  friend class Channel;
  bool block(const char* op, Time deadline) { return rt_.block_on(*this, op, deadline); }

  Runtime& rt_;
  std::string name_;
  detail::Waiter* head_ = nullptr;
  detail::Waiter* tail_ = nullptr;
  std::size_t count_ = 0;
  bool idle_point_ = false;
};

}  // namespace nvl::rt
