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
  if (seen_.size() < channels) seen_.resize(channels, 0);
  // Fixes every unfixed flow of channel uc at rate r and charges it on its other channels; the
  // channels whose share changed are left in touched_.
  const auto fix_channel = [&](std::size_t uc, double r) {
    ++round_;
    touched_.clear();
    for (int i = adj_offset_[uc]; i < adj_offset_[uc + 1]; ++i) {
      const auto f = static_cast<std::size_t>(adj_[static_cast<std::size_t>(i)]);
      if (fixed_[f]) continue;
      fixed_[f] = 1;
      rate[f] = r;
      for (int j = offset[f]; j < offset[f + 1]; ++j) {
        const auto c2 = static_cast<std::size_t>(path[static_cast<std::size_t>(j)]);
        remaining_[c2] -= r;
        --unfixed_[c2];
        if (c2 != uc && seen_[c2] != round_) {
          seen_[c2] = round_;
          touched_.push_back(static_cast<int>(c2));
        }
      }
    }
  };
  active_.clear();
  for (std::size_t c = 0; c < channels; ++c) {
    if (unfixed_[c] > 0) active_.push_back(static_cast<int>(c));
  }
  if (active_.size() <= kScanChannels) {
    // Few channels (an EP all-to-all crosses 2 per GPU): a scan for the smallest (share, channel) is
    // cheaper than a heap, which would hold one entry per fixed flow. Same order, same result.
    while (!active_.empty()) {
      std::size_t best = 0;
      double best_share = remaining_[static_cast<std::size_t>(active_[0])] / unfixed_[static_cast<std::size_t>(active_[0])];
      for (std::size_t k = 1; k < active_.size(); ++k) {
        const auto c = static_cast<std::size_t>(active_[k]);
        const double share = remaining_[c] / unfixed_[c];
        if (share < best_share || (share == best_share && active_[k] < active_[best])) {
          best = k;
          best_share = share;
        }
      }
      fix_channel(static_cast<std::size_t>(active_[best]), std::max(best_share, 0.0));
      std::erase_if(active_, [&](int c) { return unfixed_[static_cast<std::size_t>(c)] == 0; });
    }
    return;
  }
  heap_.clear();
  const auto later = std::greater<std::pair<double, int>>();
  for (int c : active_) heap_.emplace_back(remaining_[static_cast<std::size_t>(c)] / unfixed_[static_cast<std::size_t>(c)], c);
  std::make_heap(heap_.begin(), heap_.end(), later);
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const auto [share, c] = heap_.back();
    heap_.pop_back();
    const auto uc = static_cast<std::size_t>(c);
    // A stale entry: this channel's share has changed since it was pushed (a newer entry exists).
    if (unfixed_[uc] == 0 || share != remaining_[uc] / unfixed_[uc]) continue;
    fix_channel(uc, std::max(share, 0.0));
    // One entry per channel whose share changed, with its final share: the intermediate ones a push per
    // flow would add are stale before the next pop anyway.
    for (int c2 : touched_) {
      const auto u2 = static_cast<std::size_t>(c2);
      if (unfixed_[u2] == 0) continue;
      heap_.emplace_back(remaining_[u2] / unfixed_[u2], c2);
      std::push_heap(heap_.begin(), heap_.end(), later);
    }
  }
}

}  // namespace nvl::fabric
