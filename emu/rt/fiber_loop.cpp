#include "emu/rt/fiber_loop.h"

#include <algorithm>
#include <sstream>

#include <boost/fiber/algo/algorithm.hpp>
#include <boost/fiber/algo/round_robin.hpp>
#include <boost/fiber/context.hpp>
#include <boost/fiber/fiber.hpp>
#include <boost/fiber/operations.hpp>
#include <boost/fiber/properties.hpp>
#include <boost/fiber/scheduler.hpp>

#include "emu/rt/errors.h"
#include "emu/rt/fiber_stack.h"

namespace nvl::rt {

namespace bf = boost::fibers;

// Per-context data: which of our fibers a Boost.Fiber context runs (null for main and dispatcher).
class FiberProps : public bf::fiber_properties {
 public:
  explicit FiberProps(bf::context* ctx) : bf::fiber_properties(ctx) {}
  detail::FiberState* state = nullptr;
};

// FIFO ready queue that counts only worker fibers: Boost.Fiber keeps its dispatcher and the main
// context in the ready queue too, and the loop must know when no *worker* is ready to advance time.
class LoopAlgorithm : public bf::algo::algorithm_with_properties<FiberProps> {
 public:
  void awakened(bf::context* ctx, FiberProps&) noexcept override {
    ctx->ready_link(ready_);
    if (ctx->is_context(bf::type::worker_context)) ++workers_ready;
  }
  bf::context* pick_next() noexcept override {
    if (ready_.empty()) return nullptr;
    bf::context* ctx = &ready_.front();
    ready_.pop_front();
    if (ctx->is_context(bf::type::worker_context)) --workers_ready;
    return ctx;
  }
  bool has_ready_fibers() const noexcept override { return !ready_.empty(); }
  // Never reached while the loop runs: main stays ready (it only yields). Time is ours, not steady_clock's.
  void suspend_until(std::chrono::steady_clock::time_point const&) noexcept override {}
  void notify() noexcept override {}

  std::size_t workers_ready = 0;

 private:
  bf::scheduler::ready_queue_type ready_;
};

namespace {
// Boost.Fiber keeps one scheduling algorithm per thread, so one runtime may live on a thread at a time.
thread_local const FiberLoop* active_loop = nullptr;

FiberProps* props_of(bf::context* ctx) { return static_cast<FiberProps*>(ctx->get_properties()); }
}  // namespace

FiberLoop::FiberLoop(LoopOptions opts) : opts_(opts) {
  if (active_loop != nullptr) {
    throw UsageError("a runtime is already alive on this thread: destroy it before creating another");
  }
  active_loop = this;
  auto* algo = new LoopAlgorithm();
  algo_ = algo;
  bf::context::active()->get_scheduler()->set_algo(algo);
}

FiberLoop::~FiberLoop() {
  shutdown();
  // Hand the thread back to Boost.Fiber's default algorithm; it takes over main and dispatcher.
  bf::use_scheduling_algorithm<bf::algo::round_robin>();
  active_loop = nullptr;
}

void FiberLoop::shutdown() {
  shutting_down_ = true;
  // Unwind every live fiber: blocked ones wake and throw Cancelled; unstarted ones skip their body.
  for (auto& [id, f] : fibers_) {
    f->cancel = true;
    if (f->op == nullptr) continue;  // ready or running: it meets the flag at its next wait
    if (f->waiter != nullptr && f->waiter->linked) f->waiting_on->unlink(f->waiter);
    schedule(*f);
  }
  while (algo_->workers_ready > 0) {
    boost::this_fiber::yield();
    detail::enter_thread_stack();
  }
}

detail::FiberState* FiberLoop::current() const {
  FiberProps* p = props_of(bf::context::active());
  if (p == nullptr || p->state == nullptr || p->state->loop != this) return nullptr;
  return p->state;
}

detail::FiberState& FiberLoop::require_fiber(const char* what) const {
  detail::FiberState* f = current();
  if (f == nullptr) {
    throw UsageError(std::string(what) +
                     " called outside a fiber (from the main thread or a callback): only fibers can block");
  }
  if (f->cancel) throw Cancelled();
  return *f;
}

std::string_view FiberLoop::current_fiber() const {
  const detail::FiberState* f = current();
  return f != nullptr ? std::string_view(f->name) : std::string_view("main");
}

FiberHandle FiberLoop::spawn(std::string name, std::function<void()> body, SpawnOptions opts) {
  if (shutting_down_) throw UsageError("spawn('" + name + "') while the runtime shuts down");
  auto st = std::make_shared<detail::FiberState>();
  st->id = ++next_fiber_id_;
  st->name = std::move(name);
  st->daemon = opts.daemon;
  st->loop = this;
  fibers_.emplace(st->id, st);
  ++stats_.fibers_spawned;
  bf::fiber fib(std::allocator_arg, detail::FiberStack(opts_.stack_bytes, &st->stack),
                [this, st, body = std::move(body)] { body_of(st, body); });
  fib.properties<FiberProps>().state = st.get();
  fib.detach();
  return FiberHandle(this, st);
}

void FiberLoop::body_of(const std::shared_ptr<detail::FiberState>& st, const std::function<void()>& body) {
  detail::enter_stack(st->stack);
  st->ctx = bf::context::active();
  if (!st->cancel) {
    try {
      body();
    } catch (const Cancelled&) {
      // Unwound at shutdown: nothing to report.
    } catch (const std::exception& e) {
      if (!failure_) failure_ = "fiber '" + st->name + "' failed at t=" + to_string(now()) + ": " + e.what();
    } catch (...) {
      if (!failure_) failure_ = "fiber '" + st->name + "' failed at t=" + to_string(now()) + ": unknown exception";
    }
  }
  st->done = true;
  st->ctx = nullptr;
  if (st->joiners) st->joiners->notify_all();
  fibers_.erase(st->id);
}

void FiberLoop::join_fiber(const detail::FiberState& f) {
  if (f.done) return;
  detail::FiberState& self = require_fiber("join()");
  if (&self == &f) throw UsageError("fiber '" + f.name + "' cannot join itself");
  auto& st = const_cast<detail::FiberState&>(f);
  if (!st.joiners) st.joiners = std::make_unique<Condition>(*this, "join fiber '" + f.name + "'");
  while (!st.done) st.joiners->wait();
}

std::uint32_t FiberLoop::add_event(Time t, Priority prio, SlotKind kind) {
  std::uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  Slot& s = slots_[slot];
  s.kind = kind;
  s.live = true;
  heap_.push(t.ns(), prio, seq_++, slot);
  return slot;
}

void FiberLoop::free_slot(std::uint32_t slot) {
  Slot& s = slots_[slot];
  s.fn = nullptr;
  s.fiber = nullptr;
  s.waiter = nullptr;
  s.live = false;
  ++s.gen;
  free_slots_.push_back(slot);
}

TimerHandle FiberLoop::call_at(Time t, std::function<void()> fn, Priority prio) {
  if (t < now()) {
    if (strict_time()) {
      throw UsageError("call_at(" + to_string(t) + ") is in the past: now is " + to_string(now()));
    }
    t = now();
  }
  const std::uint32_t slot = add_event(t, prio, SlotKind::callback);
  slots_[slot].fn = std::move(fn);
  return TimerHandle(this, slot, slots_[slot].gen);
}

bool FiberLoop::cancel_timer(std::uint32_t slot, std::uint32_t gen) {
  if (!timer_pending(slot, gen)) return false;
  // The heap entry stays; dispatch sees a dead slot with a newer generation and skips it.
  slots_[slot].live = false;
  slots_[slot].fn = nullptr;
  return true;
}

bool FiberLoop::timer_pending(std::uint32_t slot, std::uint32_t gen) const {
  return slot < slots_.size() && slots_[slot].gen == gen && slots_[slot].live;
}

void FiberLoop::sleep_to(Time t) {
  detail::FiberState& f = require_fiber("sleep");
  if (t < now()) {
    if (strict_time()) {
      throw UsageError("fiber '" + f.name + "' sleeps into the past: until " + to_string(t) + ", now is " +
                       to_string(now()));
    }
    t = now();
  }
  const std::uint32_t slot = add_event(t, kDefaultPriority, SlotKind::sleep);
  slots_[slot].fiber = &f;
  f.op = "sleep";
  f.waiting_on = nullptr;
  f.deadline = t;
  suspend(f);
  if (f.cancel) throw Cancelled();
}

bool FiberLoop::block_on(Condition& cond, const char* op, Time deadline) {
  detail::FiberState& f = require_fiber(op);
  detail::Waiter w;
  w.fiber = &f;
  cond.link_back(&w);
  std::uint32_t slot = 0;
  std::uint32_t gen = 0;
  const bool timed = deadline != Time::max();
  if (timed) {
    slot = add_event(std::max(deadline, now()), kDefaultPriority, SlotKind::timeout);
    slots_[slot].fiber = &f;
    slots_[slot].waiter = &w;
    gen = slots_[slot].gen;
  }
  f.op = op;
  f.waiting_on = &cond;
  f.waiter = &w;
  f.deadline = deadline;
  suspend(f);
  f.waiter = nullptr;
  if (timed) cancel_timer(slot, gen);
  if (!w.woken) {
    // Timed out (the timer unlinked us) or cancelled at shutdown (still linked).
    if (w.linked) cond.unlink(&w);
  }
  if (f.cancel) throw Cancelled();
  return w.woken;
}

bool FiberLoop::wake_one(Condition& cond) {
  detail::Waiter* w = cond.front();
  if (w == nullptr) return false;
  cond.unlink(w);
  w->woken = true;
  schedule(*w->fiber);
  return true;
}

void FiberLoop::abandon(Condition& cond) {
  if (!shutting_down_ && !failure_) {
    failure_ = "condition '" + cond.name() + "' destroyed at t=" + to_string(now()) + " while fiber '" +
               cond.front()->fiber->name + "' waited on it";
  }
  while (detail::Waiter* w = cond.front()) {
    cond.unlink(w);
    w->fiber->cancel = true;
    schedule(*w->fiber);
  }
}

void FiberLoop::schedule(detail::FiberState& f) {
  // Only a blocked fiber may be made ready; twice would corrupt Boost.Fiber's ready queue.
  if (f.op == nullptr) throw std::logic_error("runtime bug: fiber '" + f.name + "' scheduled while not blocked");
  f.op = nullptr;
  f.waiting_on = nullptr;
  ++stats_.wakeups;
  bf::context::active()->schedule(f.ctx);
}

void FiberLoop::suspend(detail::FiberState& f) {
  f.ctx->suspend();
  detail::enter_stack(f.stack);
}

void FiberLoop::dispatch(std::uint32_t slot) {
  Slot& s = slots_[slot];
  ++stats_.events;
  switch (s.kind) {
    case SlotKind::callback: {
      auto fn = std::move(s.fn);
      free_slot(slot);
      fn();
      return;
    }
    case SlotKind::sleep: {
      detail::FiberState* f = s.fiber;
      free_slot(slot);
      schedule(*f);
      return;
    }
    case SlotKind::timeout: {
      detail::FiberState* f = s.fiber;
      detail::Waiter* w = s.waiter;
      free_slot(slot);
      if (!w->linked) return;  // notified at this same instant (or cancelled), not yet resumed
      f->waiting_on->unlink(w);
      schedule(*f);
      return;
    }
  }
}

void FiberLoop::run_ready() {
  while (algo_->workers_ready > 0) {
    boost::this_fiber::yield();
    detail::enter_thread_stack();
  }
}

void FiberLoop::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    posts_.push_back(std::move(fn));
    posted_.store(true, std::memory_order_release);
    post_queued_locked();
  }
  cv_.notify_one();
}

void FiberLoop::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_requested_.store(true);
  }
  cv_.notify_one();
}

bool FiberLoop::posts_due() {
  if (!posted_.load(std::memory_order_acquire)) return false;
  if (!pop_dead_events()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return Time::from_ns(heap_.top_time()) >= posts_arrival_locked();
}

void FiberLoop::drain_posts() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(posts_);
    posted_.store(false, std::memory_order_release);
    posts_taken_locked();
  }
  for (auto& fn : batch) fn();
}

bool FiberLoop::pop_dead_events() {
  while (!heap_.empty() && !slots_[heap_.top_slot()].live) {
    const std::uint32_t slot = heap_.top_slot();
    heap_.pop();
    // A cancelled timer's slot is released when its heap entry leaves.
    slots_[slot].fn = nullptr;
    ++slots_[slot].gen;
    free_slots_.push_back(slot);
  }
  return !heap_.empty();
}

RunResult FiberLoop::run(RunOptions opts) {
  if (in_fiber()) throw UsageError("run() called from inside a fiber");
  if (running_) throw UsageError("run() re-entered from a callback");
  running_ = true;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{running_};
  for (;;) {
    run_ready();
    if (failure_) {
      const std::string failure = std::move(*failure_);
      failure_.reset();
      throw FiberFailed(failure);
    }
    // A plain load first: the locked exchange costs more than the rest of a turn, and stops are rare.
    if (stop_requested_.load(std::memory_order_relaxed) && stop_requested_.exchange(false)) {
      return {RunResult::Stop::stopped, now()};
    }
    // After the fibers the last event woke have run at its time: posts move the clock to their arrival.
    if (posts_due()) {
      drain_posts();
      continue;  // the fibers they woke run next
    }
    if (!pop_dead_events()) {
      if (posted_.load(std::memory_order_acquire)) continue;
      if (opts.serve) {
        idle_wait();
        continue;
      }
      const bool stuck = std::any_of(fibers_.begin(), fibers_.end(), [](const auto& kv) {
        const detail::FiberState& f = *kv.second;
        return !(f.daemon && f.waiting_on != nullptr && f.waiting_on->idle_point());
      });
      if (stuck) throw DeadlockError(deadlock_report());
      return {RunResult::Stop::quiescent, now()};
    }
    const Time due = Time::from_ns(heap_.top_time());
    if (due > opts.until) {
      settle_at(opts.until);
      return {RunResult::Stop::time_limit, now()};
    }
    if (!wait_until_due(due)) continue;  // a post or stop() came first
    const std::uint32_t slot = heap_.top_slot();
    heap_.pop();
    dispatch(slot);
  }
}

std::string FiberLoop::deadlock_report() const {
  std::ostringstream os;
  os << "deadlock at t=" << to_string(now()) << ": every fiber is blocked and nothing is scheduled; "
     << fibers_.size() << " fiber(s) wait:";
  for (const auto& [id, f] : fibers_) {
    os << "\n  fiber '" << f->name << "' (#" << id << (f->daemon ? ", daemon" : "") << ") ";
    if (f->op == nullptr) {
      os << "is not blocked";
    } else if (f->waiting_on == nullptr) {
      os << "waits on " << f->op;
    } else {
      os << "waits on " << f->op << " of '" << f->waiting_on->name() << "'";
    }
  }
  return os.str();
}

Rng& FiberLoop::rng(std::string_view stream) {
  auto it = rngs_.find(stream);
  if (it == rngs_.end()) {
    it = rngs_.emplace(std::string(stream), Rng(Rng::derive_seed(opts_.seed, stream))).first;
  }
  return it->second;
}

RuntimeStats FiberLoop::stats() const {
  RuntimeStats s = stats_;
  s.fibers_live = fibers_.size();
  return s;
}

}  // namespace nvl::rt
