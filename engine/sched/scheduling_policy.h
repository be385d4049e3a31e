#pragma once
// Which waiting request a rank admits next. FCFS is the default; others plug in here.
#include <cstddef>
#include <deque>
#include <memory>
#include <string_view>

#include "engine/sched/request_state.h"

namespace nvl::engine {

class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  virtual std::string_view name() const = 0;
  // Index into `waiting` (never empty) of the request to try next.
  virtual std::size_t pick(const std::deque<RequestState*>& waiting) const = 0;
};

// First come, first served: the queue's order (preempted requests go back to its front).
class FcfsPolicy final : public SchedulingPolicy {
 public:
  std::string_view name() const override { return "fcfs"; }
  std::size_t pick(const std::deque<RequestState*>&) const override { return 0; }
};

// Fewest tokens to prefill first: lower mean latency, at the risk of starving long prompts.
class ShortestPrefillFirstPolicy final : public SchedulingPolicy {
 public:
  std::string_view name() const override { return "shortest_prefill_first"; }
  std::size_t pick(const std::deque<RequestState*>& waiting) const override;
};

// "fcfs" or "shortest_prefill_first"; anything else throws std::invalid_argument naming the choices.
std::unique_ptr<SchedulingPolicy> make_scheduling_policy(std::string_view name);

}  // namespace nvl::engine
