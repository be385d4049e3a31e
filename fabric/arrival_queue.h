#pragma once
// The calls of a group whose members arrive one by one, in call order per member: arrival k of every
// member lands in slot k, and a slot is taken once every member has reached it. FabricCommGroup keeps
// one for its calls and one for its repeated calls.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace nvl::fabric {

template <typename T>
class ArrivalQueue {
 public:
  explicit ArrivalQueue(std::size_t members) : next_(members, 0) {}

  // The slot of `member`'s next arrival; make() gives slots that no member had reached yet.
  template <typename Make>
  T& arrive(std::size_t member, Make&& make) {
    const std::uint64_t k = next_[member]++;
    while (slots_.size() <= k - first_) {
      slots_.push_back(make());
      arrived_.push_back(0);
    }
    const auto at = static_cast<std::size_t>(k - first_);
    ++arrived_[at];
    return slots_[at];
  }
  // Takes the front slots every member has reached, in order, handing each to take(T&) once it is out
  // of the queue (take may arrive again).
  template <typename Take>
  void take_complete(Take&& take) {
    while (!slots_.empty() && arrived_.front() == next_.size()) {
      T slot = std::move(slots_.front());
      slots_.pop_front();
      arrived_.pop_front();
      ++first_;
      take(slot);
    }
  }
  // After an abort: every queued slot goes to drop(T&), in order, and each member's next arrival starts a
  // new slot, whatever it had reached.
  template <typename Drop>
  void reset(Drop&& drop) {
    for (T& slot : slots_) drop(slot);
    slots_.clear();
    arrived_.clear();
    const std::uint64_t next = *std::max_element(next_.begin(), next_.end());
    std::fill(next_.begin(), next_.end(), next);
    first_ = next;
  }
  std::size_t queued() const { return slots_.size(); }

 private:
  std::deque<T> slots_;
  std::deque<std::size_t> arrived_;  // per slot: members that have reached it
  std::uint64_t first_ = 0;          // arrival number of slots_.front()
  std::vector<std::uint64_t> next_;  // per member: its next arrival number
};

}  // namespace nvl::fabric
