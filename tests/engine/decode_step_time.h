#pragma once
// The mean decode step time of requests that decoded from their first token to their last in every
// step: (finished - first token) / (output - 1), over the requests.
#include <cstdint>
#include <map>

#include "emu/rt/time.h"
#include "engine/sched/request_state.h"

namespace nvl::engine::test {

inline double mean_step_ms(const std::map<RequestId, rt::Time>& first, const std::map<RequestId, rt::Time>& finished,
                           std::int64_t output) {
  double sum = 0;
  for (const auto& [id, t] : finished) sum += (t - first.at(id)).seconds() * 1e3 / static_cast<double>(output - 1);
  return sum / static_cast<double>(finished.size());
}

}  // namespace nvl::engine::test
