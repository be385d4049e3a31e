#include "emu/rt/condition.h"

namespace nvl::rt {

Condition::Condition(Runtime& rt, std::string name) : rt_(rt), name_(std::move(name)) {}

Condition::~Condition() {
  if (head_ != nullptr) rt_.abandon(*this);
}

Wait Condition::wait_timeout(Duration d) { return wait_deadline(rt_.now().saturating_add(d)); }

std::size_t Condition::notify_all() {
  std::size_t n = 0;
  while (notify_one()) ++n;
  return n;
}

void Condition::link_back(detail::Waiter* w) {
  w->prev = tail_;
  w->next = nullptr;
  if (tail_ != nullptr) {
    tail_->next = w;
  } else {
    head_ = w;
  }
  tail_ = w;
  w->linked = true;
  ++count_;
}

void Condition::unlink(detail::Waiter* w) {
  if (w->prev != nullptr) {
    w->prev->next = w->next;
  } else {
    head_ = w->next;
  }
  if (w->next != nullptr) {
    w->next->prev = w->prev;
  } else {
    tail_ = w->prev;
  }
  w->prev = w->next = nullptr;
  w->linked = false;
  --count_;
}

}  // namespace nvl::rt
