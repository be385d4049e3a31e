#include "fabric/usage_recorder.h"

#include <algorithm>
#include <numeric>

namespace nvl::fabric {

UsageRecorder::UsageRecorder(std::size_t channels, rt::Duration interval) : interval_(interval), bytes_(channels) {}

void UsageRecorder::add(int channel, rt::Time from, rt::Time to, double bytes_per_s) {
  if (!enabled() || bytes_per_s <= 0 || to <= from) return;
  auto& v = bytes_[static_cast<std::size_t>(channel)];
  const std::int64_t step = interval_.ns();
  std::int64_t t = from.ns();
  while (t < to.ns()) {
    const auto k = static_cast<std::size_t>(t / step);
    const std::int64_t end = std::min<std::int64_t>((static_cast<std::int64_t>(k) + 1) * step, to.ns());
    if (v.size() <= k) v.resize(k + 1, 0.0);
    v[k] += bytes_per_s * static_cast<double>(end - t) * 1e-9;
    t = end;
  }
}

double UsageRecorder::total_bytes(int channel) const {
  const auto& v = bytes_[static_cast<std::size_t>(channel)];
  return std::accumulate(v.begin(), v.end(), 0.0);
}

}  // namespace nvl::fabric
