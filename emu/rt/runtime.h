#pragma once
// The runtime interface: the only way engine/, fakegpu/ and fabric/ see time, fibers and randomness.
// Two implementations share it: VirtualRuntime (simulated time, deterministic) and RealTimeRuntime
// (wall clock, optionally scaled, fed by other threads through post()).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "emu/rt/event_log.h"
#include "emu/rt/rng.h"
#include "emu/rt/time.h"

namespace nvl::rt {

class Runtime;
class Condition;

// Among events due at the same time, lower values run first; ties then go by scheduling order.
using Priority = std::int32_t;
inline constexpr Priority kDefaultPriority = 0;

struct SpawnOptions {
  // A daemon is a service loop (a worker waiting for requests) that may still wait when the run goes
  // quiet, provided it waits at an idle point (Condition::mark_idle_point); any other fiber still
  // waiting then is a deadlock.
  bool daemon = false;
};

namespace detail {
struct FiberState;
}

// A spawned fiber. Copyable; the fiber runs whether or not a handle is kept.
class FiberHandle {
 public:
  FiberHandle() = default;
  std::uint64_t id() const;
  const std::string& name() const;
  bool done() const;
  // Blocks the calling fiber until this one has finished.
  void join() const;

 private:
  friend class FiberLoop;
  FiberHandle(Runtime* rt, std::shared_ptr<detail::FiberState> s) : rt_(rt), state_(std::move(s)) {}
  Runtime* rt_ = nullptr;
  std::shared_ptr<detail::FiberState> state_;
};

// A one-shot timer; cancel() before it fires and it never runs.
class TimerHandle {
 public:
  TimerHandle() = default;
  // True when the timer was still pending and is now cancelled.
  bool cancel();
  bool pending() const;

 private:
  friend class FiberLoop;
  TimerHandle(Runtime* rt, std::uint32_t slot, std::uint32_t gen) : rt_(rt), slot_(slot), gen_(gen) {}
  Runtime* rt_ = nullptr;
  std::uint32_t slot_ = 0;
  std::uint32_t gen_ = 0;
};

struct RunOptions {
  // Stop once the next event lies beyond this time (virtual: the clock is left at the limit).
  Time until = Time::max();
  // Real-time runtime only: keep waiting for post()s when idle instead of returning (a server).
  bool serve = false;
};

struct RunResult {
  enum class Stop { quiescent, time_limit, stopped };
  Stop reason = Stop::quiescent;
  Time end;
};

struct RuntimeStats {
  std::uint64_t events = 0;        // heap events processed (timers, sleeps, timeouts)
  std::uint64_t wakeups = 0;       // fibers made ready
  std::uint64_t fibers_spawned = 0;
  std::uint64_t fibers_live = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  virtual Time now() const = 0;

  // Starts a named fiber; it first runs when the loop next runs ready fibers.
  virtual FiberHandle spawn(std::string name, std::function<void()> body, SpawnOptions opts = {}) = 0;

  // Suspend the calling fiber. Sleeping into the past or outside a fiber is a UsageError.
  virtual void sleep_to(Time t) = 0;
  void sleep(Duration d);

  // Runs fn at time t on the loop, without a fiber: the cheap event for models. fn must not block.
  virtual TimerHandle call_at(Time t, std::function<void()> fn, Priority prio = kDefaultPriority) = 0;
  TimerHandle call_after(Duration d, std::function<void()> fn, Priority prio = kDefaultPriority);

  // Thread-safe: hands fn to the loop, which runs it (without a fiber) at its current time.
  virtual void post(std::function<void()> fn) = 0;

  // Runs until quiescence, the time limit or stop(). Throws DeadlockError or FiberFailed.
  virtual RunResult run(RunOptions opts = {}) = 0;
  // Thread-safe: makes run() return once the current event is done.
  virtual void stop() = 0;

  // True when called from a fiber spawned on this runtime (not from a callback or the main thread).
  virtual bool in_fiber() const = 0;
  // The name of the running fiber, or "main" outside fibers.
  virtual std::string_view current_fiber() const = 0;

  // Named random streams derived from the run seed: adding a stream never changes another's numbers.
  virtual Rng& rng(std::string_view stream) = 0;
  virtual std::uint64_t seed() const = 0;

  virtual EventLog& log() = 0;
  // Appends a record stamped with now().
  void record(std::string_view source, std::string_view kind, nlohmann::json fields = nlohmann::json::object(),
              Severity severity = Severity::info);

  virtual RuntimeStats stats() const = 0;

 protected:
  Runtime() = default;

 private:
  // Hooks for the handles and wait primitives, implemented by the fiber loop.
  friend class FiberHandle;
  friend class TimerHandle;
  friend class Condition;
  virtual void join_fiber(const detail::FiberState& f) = 0;
  virtual bool cancel_timer(std::uint32_t slot, std::uint32_t gen) = 0;
  virtual bool timer_pending(std::uint32_t slot, std::uint32_t gen) const = 0;
  // Blocks the calling fiber on cond until woken or until the deadline. Returns false on timeout.
  virtual bool block_on(Condition& cond, const char* op, Time deadline) = 0;
  virtual bool wake_one(Condition& cond) = 0;
  // The condition is going away with fibers still waiting on it: they are cancelled.
  virtual void abandon(Condition& cond) = 0;
};

}  // namespace nvl::rt
