#pragma once
// A bounded FIFO channel between fibers. push blocks while full, pop while empty; both may time out.
// close() lets pops drain what is left, then they report closed; pushing to a closed channel reports closed.
#include <cstddef>
#include <deque>
#include <optional>
#include <string>

#include "emu/rt/condition.h"
#include "emu/rt/errors.h"

namespace nvl::rt {

enum class ChannelStatus { ok, closed, timed_out, full, empty };

template <class T>
class Channel {
 public:
  Channel(Runtime& rt, std::size_t capacity, std::string name)
      : capacity_(capacity), not_empty_(rt, name), not_full_(rt, name) {
    if (capacity == 0) throw UsageError("channel '" + name + "': capacity must be at least 1");
  }

  ChannelStatus push(T v) { return push_deadline(std::move(v), Time::max()); }
  ChannelStatus push_timeout(T v, Duration d) { return push_deadline(std::move(v), now().saturating_add(d)); }
  ChannelStatus push_deadline(T v, Time deadline) {
    while (!closed_ && items_.size() >= capacity_) {
      if (!not_full_.block("push", deadline) && !closed_ && items_.size() >= capacity_) {
        return ChannelStatus::timed_out;
      }
    }
    return try_push(std::move(v));
  }
  ChannelStatus try_push(T v) {
    if (closed_) return ChannelStatus::closed;
    if (items_.size() >= capacity_) return ChannelStatus::full;
    items_.push_back(std::move(v));
    not_empty_.notify_one();
    return ChannelStatus::ok;
  }

  // Empty optional once the channel is closed and drained.
  std::optional<T> pop() {
    std::optional<T> out;
    pop_deadline(out, Time::max());
    return out;
  }
  ChannelStatus pop_timeout(std::optional<T>& out, Duration d) { return pop_deadline(out, now().saturating_add(d)); }
  ChannelStatus pop_deadline(std::optional<T>& out, Time deadline) {
    while (!closed_ && items_.empty()) {
      if (!not_empty_.block("pop", deadline) && !closed_ && items_.empty()) return ChannelStatus::timed_out;
    }
    return try_pop(out);
  }
  ChannelStatus try_pop(std::optional<T>& out) {
    if (items_.empty()) return closed_ ? ChannelStatus::closed : ChannelStatus::empty;
    out.emplace(std::move(items_.front()));
    items_.pop_front();
    not_full_.notify_one();
    return ChannelStatus::ok;
  }

  // Closing twice is a UsageError.
  void close() {
    if (closed_) throw UsageError("channel '" + name() + "': close() on a channel that is already closed");
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  // A server loop popping here is idle while the channel is empty (see Condition::mark_idle_point).
  void mark_idle_point() { not_empty_.mark_idle_point(); }

  bool closed() const { return closed_; }
  std::size_t size() const { return items_.size(); }
  std::size_t capacity() const { return capacity_; }
  const std::string& name() const { return not_empty_.name(); }

 private:
  Time now() const { return not_empty_.runtime().now(); }

  std::size_t capacity_;
  std::deque<T> items_;
  bool closed_ = false;
  Condition not_empty_;
  Condition not_full_;
};

}  // namespace nvl::rt
