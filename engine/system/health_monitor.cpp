#include "engine/system/health_monitor.h"

#include <stdexcept>

namespace nvl::engine {

std::string xid_text(hal::DeviceHealth health, hal::DeviceId gpu) {
  switch (health) {
    case hal::DeviceHealth::lost:
      return "GPU " + std::to_string(gpu) + " lost (Xid 79)";
    case hal::DeviceHealth::needs_reset:
      return "GPU " + std::to_string(gpu) + " needs a reset (Xid 48)";
    case hal::DeviceHealth::healthy:
      break;
  }
  return "";
}

HealthMonitor::HealthMonitor(rt::Runtime& rt, HealthConfig cfg, std::int32_t ranks, Probe probe, Declare declare,
                             std::function<bool()> busy, std::int32_t prefill_workers)
    : rt_(rt),
      cfg_(cfg),
      probe_(std::move(probe)),
      declare_(std::move(declare)),
      state_(static_cast<std::size_t>(ranks + prefill_workers), State::watched),
      ranks_(ranks),
      busy_(std::move(busy)) {
  if (cfg_.check_interval <= rt::Duration() || cfg_.detection_delay < rt::Duration() ||
      cfg_.gpu_reset_time < rt::Duration() || cfg_.worker_restart_time < rt::Duration()) {
    throw std::invalid_argument(
        "health monitor: the check interval must be positive; detection delay, reset and restart times >= 0");
  }
}

void HealthMonitor::operation_error(std::int32_t member) { suspect(member, "operation_error"); }

void HealthMonitor::watch() {
  if (next_check_.pending()) return;
  next_check_ = rt_.call_after(cfg_.check_interval, [this] { check(); });
}

void HealthMonitor::back(std::int32_t member) { state_of(member) = State::watched; }

HealthMonitor::State& HealthMonitor::state_of(std::int32_t member) {
  if (member < 0) {
    const std::size_t i = static_cast<std::size_t>(ranks_ + prefill_instance_of(member));
    if (i >= state_.size()) throw std::out_of_range("health monitor: no prefill instance " + std::to_string(prefill_instance_of(member)) + " watched");
    return state_[i];
  }
  if (member >= ranks_) throw std::out_of_range("health monitor: no DP rank " + std::to_string(member));
  return state_[static_cast<std::size_t>(member)];
}

void HealthMonitor::record(std::int32_t member, const std::string& what, nlohmann::json fields) {
  const bool warning = what != "cleared";
  if (member < 0) {
    rt_.record("health", "prefill_worker_" + what,
               prefill_record(std::move(fields), static_cast<std::size_t>(prefill_instance_of(member))),
               warning ? rt::Severity::warning : rt::Severity::info);
    return;
  }
  fields["rank"] = member;
  rt_.record("health", "rank_" + what, std::move(fields), warning ? rt::Severity::warning : rt::Severity::info);
}

void HealthMonitor::check() {
  ++checks_;
  for (std::size_t i = 0; i < state_.size(); ++i) {
    const auto index = static_cast<std::int32_t>(i);
    const std::int32_t member = index < ranks_ ? index : prefill_member(index - ranks_);
    if (state_[i] == State::watched && probe_(member)) suspect(member, "health_check");
  }
  if (busy_()) next_check_ = rt_.call_after(cfg_.check_interval, [this] { check(); });
}

void HealthMonitor::suspect(std::int32_t member, const std::string& how) {
  State& s = state_of(member);
  if (s != State::watched) return;
  s = State::suspected;
  record(member, "suspected", {{"how", how}});
  rt_.call_after(cfg_.detection_delay, [this, member, how] {
    State& st = state_of(member);
    if (st != State::suspected) return;
    const auto why = probe_(member);
    if (!why) {
      st = State::watched;  // a transient error: the member answers healthy
      record(member, "cleared", {{"how", how}});
      return;
    }
    st = State::declared;
    record(member, "declared_dead", {{"how", how}, {"why", *why}});
    declare_(member, *why, how);
  });
}

}  // namespace nvl::engine
