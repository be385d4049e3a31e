#pragma once
// The loop both runtimes share: Boost.Fiber fibers under a FIFO scheduling algorithm of ours, a heap
// of timed events ordered by (time, priority, sequence), a thread-safe post queue, and the wait
// machinery behind Condition. Subclasses supply the clock: virtual (jumps) or wall (waits).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "emu/rt/event_heap.h"
#include "emu/rt/fiber_state.h"
#include "emu/rt/runtime.h"

namespace nvl::rt {

struct LoopOptions {
  std::uint64_t seed = 1;
  // Fiber stacks are this size plus a guard page; memory is only committed where a stack is touched.
  std::size_t stack_bytes = 64 * 1024;
};

class LoopAlgorithm;

class FiberLoop : public Runtime {
 public:
  ~FiberLoop() override;

  FiberHandle spawn(std::string name, std::function<void()> body, SpawnOptions opts = {}) override;
  void sleep_to(Time t) override;
  TimerHandle call_at(Time t, std::function<void()> fn, Priority prio = kDefaultPriority) override;
  void post(std::function<void()> fn) override;
  RunResult run(RunOptions opts = {}) override;
  void stop() override;
  bool in_fiber() const override { return current() != nullptr; }
  std::string_view current_fiber() const override;
  Rng& rng(std::string_view stream) override;
  std::uint64_t seed() const override { return opts_.seed; }
  EventLog& log() override { return log_; }
  RuntimeStats stats() const override;

 protected:
  explicit FiberLoop(LoopOptions opts);

  // The clock. Virtual: now_ jumps to each event. Real: the wall clock, scaled.
  virtual bool strict_time() const = 0;  // true: scheduling into the past is a UsageError
  // Returns once `t` is due (true), or earlier (false) when a post or stop() arrives.
  virtual bool wait_until_due(Time t) = 0;
  // Real time, serving: blocks until a post or stop() arrives.
  virtual void idle_wait() = 0;
  // Called when the run ends at a time limit.
  virtual void settle_at(Time limit) = 0;
  // With `mu_` held: a post() was queued; the queue was taken to run.
  virtual void post_queued_locked() {}
  virtual void posts_taken_locked() {}
  // With `mu_` held: the emulated time the waiting posts arrived at. They run once every event due
  // before it has run (a loop that fell behind runs those first), at that time.
  virtual Time posts_arrival_locked() const { return now(); }

  // Wakes a thread blocked in wait_until_due/idle_wait; hold `mu_` to wait.
  std::mutex mu_;
  std::condition_variable cv_;
  bool has_posts_locked() const { return !posts_.empty() || stop_requested_.load(); }

 private:
  enum class SlotKind : std::uint8_t { callback, sleep, timeout };
  struct Slot {
    std::function<void()> fn;
    detail::FiberState* fiber = nullptr;
    detail::Waiter* waiter = nullptr;
    std::uint32_t gen = 0;
    SlotKind kind = SlotKind::callback;
    bool live = false;
  };

  void join_fiber(const detail::FiberState& f) override;
  bool cancel_timer(std::uint32_t slot, std::uint32_t gen) override;
  bool timer_pending(std::uint32_t slot, std::uint32_t gen) const override;
  bool block_on(Condition& cond, const char* op, Time deadline) override;
  bool wake_one(Condition& cond) override;
  void abandon(Condition& cond) override;

  detail::FiberState* current() const;
  detail::FiberState& require_fiber(const char* what) const;
  std::uint32_t add_event(Time t, Priority prio, SlotKind kind);
  void free_slot(std::uint32_t slot);
  void dispatch(std::uint32_t slot);
  void schedule(detail::FiberState& f);
  void suspend(detail::FiberState& f);
  void run_ready();
  // Whether the waiting posts are due: some wait, and no live event is due before they arrived.
  bool posts_due();
  void drain_posts();
  bool pop_dead_events();
  std::string deadlock_report() const;
  void body_of(const std::shared_ptr<detail::FiberState>& st, const std::function<void()>& body);
  void shutdown();

  LoopOptions opts_;
  LoopAlgorithm* algo_ = nullptr;  // owned by Boost.Fiber's scheduler
  detail::EventHeap heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t seq_ = 0;
  std::map<std::uint64_t, std::shared_ptr<detail::FiberState>> fibers_;  // live fibers, by id
  std::uint64_t next_fiber_id_ = 0;
  std::optional<std::string> failure_;
  bool running_ = false;
  bool shutting_down_ = false;
  RuntimeStats stats_;
  std::map<std::string, Rng, std::less<>> rngs_;
  EventLog log_;
  std::vector<std::function<void()>> posts_;  // guarded by mu_
  std::atomic<bool> posted_{false};
  std::atomic<bool> stop_requested_{false};
};

}  // namespace nvl::rt
