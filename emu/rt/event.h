#pragma once
// A manual-reset event: set() releases every waiter and later waits pass until reset().
#include <string>

#include "emu/rt/condition.h"

namespace nvl::rt {

class Event {
 public:
  Event(Runtime& rt, std::string name) : cond_(rt, std::move(name)) {}

  void set() {
    set_ = true;
    cond_.notify_all();
  }
  void reset() { set_ = false; }
  bool is_set() const { return set_; }

  void wait() {
    while (!set_) cond_.block("wait", Time::max());
  }
  Wait wait_timeout(Duration d) { return wait_deadline(cond_.runtime().now().saturating_add(d)); }
  Wait wait_deadline(Time t) {
    while (!set_) {
      if (!cond_.block("wait", t)) return set_ ? Wait::notified : Wait::timed_out;
    }
    return Wait::notified;
  }
  const std::string& name() const { return cond_.name(); }

 private:
  Condition cond_;
  bool set_ = false;
};

}  // namespace nvl::rt
