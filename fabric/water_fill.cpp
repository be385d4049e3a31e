#include "fabric/water_fill.h"

#include <algorithm>
#include <functional>

namespace nvl::fabric {

void WaterFill::solve(const std::vector<double>& capacity, const std::vector<int>& offset,
                      const std::vector<int>& path, std::vector<double>& rate) {
  const std::size_t channels = capacity.size();
  const std::size_t flows = offset.empty() ? 0 : offset.size() - 1;
  rate.assign(flows, 0.0);
  remaining_.assign(capacity.begin(), capacity.end());
  unfixed_.assign(channels, 0);
  for (int c : path) ++unfixed_[static_cast<std::size_t>(c)];
  adj_offset_.assign(channels + 1, 0);
  for (std::size_t c = 0; c < channels; ++c) adj_offset_[c + 1] = adj_offset_[c] + unfixed_[c];
  adj_.resize(path.size());
  std::vector<int>& fill = fill_;
  fill.assign(adj_offset_.begin(), adj_offset_.end() - 1);
  for (std::size_t f = 0; f < flows; ++f) {
    for (int i = offset[f]; i < offset[f + 1]; ++i) {
      const auto c = static_cast<std::size_t>(path[static_cast<std::size_t>(i)]);
      adj_[static_cast<std::size_t>(fill[c]++)] = static_cast<int>(f);
    }
  }
  fixed_.assign(flows, 0);
  heap_.clear();
  const auto later = std::greater<std::pair<double, int>>();
  for (std::size_t c = 0; c < channels; ++c) {
    if (unfixed_[c] > 0) heap_.emplace_back(remaining_[c] / unfixed_[c], static_cast<int>(c));
  }
  std::make_heap(heap_.begin(), heap_.end(), later);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const auto [share, c] = heap_.back();
    heap_.pop_back();
    const auto uc = static_cast<std::size_t>(c);
    // A stale entry: this channel's share has changed since it was pushed (a newer entry exists).
    if (unfixed_[uc] == 0 || share != remaining_[uc] / unfixed_[uc]) continue;
    const double r = std::max(share, 0.0);
    for (int i = adj_offset_[uc]; i < adj_offset_[uc + 1]; ++i) {
      const auto f = static_cast<std::size_t>(adj_[static_cast<std::size_t>(i)]);
      if (fixed_[f]) continue;
      fixed_[f] = 1;
      rate[f] = r;
      for (int j = offset[f]; j < offset[f + 1]; ++j) {
        const auto c2 = static_cast<std::size_t>(path[static_cast<std::size_t>(j)]);
        remaining_[c2] -= r;
        --unfixed_[c2];
        if (c2 != uc && unfixed_[c2] > 0) {
          heap_.emplace_back(remaining_[c2] / unfixed_[c2], static_cast<int>(c2));
          std::push_heap(heap_.begin(), heap_.end(), later);
        }
      }
    }
  }
}

}  // namespace nvl::fabric
