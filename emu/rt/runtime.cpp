#include "emu/rt/runtime.h"

#include "emu/rt/errors.h"
#include "emu/rt/fiber_state.h"

namespace nvl::rt {

void Runtime::sleep(Duration d) {
  if (d < Duration()) throw UsageError("sleep(" + to_string(d) + "): a negative duration sleeps into the past");
  sleep_to(now() + d);
}

TimerHandle Runtime::call_after(Duration d, std::function<void()> fn, Priority prio) {
  if (d < Duration()) throw UsageError("call_after(" + to_string(d) + "): negative delay");
  return call_at(now() + d, std::move(fn), prio);
}

void Runtime::record(std::string_view source, std::string_view kind, nlohmann::json fields, Severity severity) {
  log().record(now(), source, kind, fields, severity);
}

std::uint64_t FiberHandle::id() const { return state_ ? state_->id : 0; }

const std::string& FiberHandle::name() const {
  static const std::string none = "(none)";
  return state_ ? state_->name : none;
}

bool FiberHandle::done() const { return !state_ || state_->done; }

void FiberHandle::join() const {
  if (state_) rt_->join_fiber(*state_);
}

bool TimerHandle::cancel() { return rt_ != nullptr && rt_->cancel_timer(slot_, gen_); }

bool TimerHandle::pending() const { return rt_ != nullptr && rt_->timer_pending(slot_, gen_); }

}  // namespace nvl::rt
