#include "engine/system/health_monitor.h"

#include <stdexcept>

namespace nvl::engine {

HealthMonitor::HealthMonitor(rt::Runtime& rt, HealthConfig cfg, std::int32_t ranks, Probe probe, Declare declare,
                             std::function<bool()> busy)
    : rt_(rt),
      cfg_(cfg),
      probe_(std::move(probe)),
      declare_(std::move(declare)),
      state_(static_cast<std::size_t>(ranks), State::watched),
      busy_(std::move(busy)) {
  if (cfg_.check_interval <= rt::Duration() || cfg_.detection_delay < rt::Duration() ||
      cfg_.gpu_reset_time < rt::Duration() || cfg_.worker_restart_time < rt::Duration()) {
    throw std::invalid_argument(
        "health monitor: the check interval must be positive; detection delay, reset and restart times >= 0");
  }
}

void HealthMonitor::operation_error(std::int32_t rank) { suspect(rank, "operation_error"); }

void HealthMonitor::watch() {
  if (next_check_.pending()) return;
  next_check_ = rt_.call_after(cfg_.check_interval, [this] { check(); });
}

void HealthMonitor::rank_back(std::int32_t rank) { state_.at(static_cast<std::size_t>(rank)) = State::watched; }

void HealthMonitor::check() {
  ++checks_;
  for (std::size_t r = 0; r < state_.size(); ++r) {
    if (state_[r] == State::watched && probe_(static_cast<std::int32_t>(r))) {
      suspect(static_cast<std::int32_t>(r), "health_check");
    }
  }
  if (busy_()) next_check_ = rt_.call_after(cfg_.check_interval, [this] { check(); });
}

void HealthMonitor::suspect(std::int32_t rank, const std::string& how) {
  State& s = state_.at(static_cast<std::size_t>(rank));
  if (s != State::watched) return;
  s = State::suspected;
  rt_.record("health", "rank_suspected", {{"rank", rank}, {"how", how}}, rt::Severity::warning);
  rt_.call_after(cfg_.detection_delay, [this, rank, how] {
    State& st = state_.at(static_cast<std::size_t>(rank));
    if (st != State::suspected) return;
    const auto why = probe_(rank);
    if (!why) {
      st = State::watched;  // a transient error: the rank answers healthy
      rt_.record("health", "rank_cleared", {{"rank", rank}, {"how", how}});
      return;
    }
    st = State::declared;
    rt_.record("health", "rank_declared_dead", {{"rank", rank}, {"how", how}, {"why", *why}}, rt::Severity::warning);
    declare_(rank, *why, how);
  });
}

}  // namespace nvl::engine
