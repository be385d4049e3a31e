#include "engine/sched/scheduling_policy.h"

#include <stdexcept>
#include <string>

namespace nvl::engine {

std::size_t ShortestPrefillFirstPolicy::pick(const std::deque<RequestState*>& waiting) const {
  std::size_t best = 0;
  for (std::size_t i = 1; i < waiting.size(); ++i) {
    if (waiting[i]->prefill_target() < waiting[best]->prefill_target()) best = i;
  }
  return best;
}

std::unique_ptr<SchedulingPolicy> make_scheduling_policy(std::string_view name) {
  if (name == "fcfs") return std::make_unique<FcfsPolicy>();
  if (name == "shortest_prefill_first") return std::make_unique<ShortestPrefillFirstPolicy>();
  throw std::invalid_argument("unknown scheduling policy '" + std::string(name) +
                              "': expected fcfs or shortest_prefill_first");
}

}  // namespace nvl::engine
