#include "engine/exec/moe_traffic.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace nvl::engine {

void MoeTraffic::set_placement(const ExpertPlacement& placement) {
  ranks_ = placement.ranks();
  holders_.clear();
  hit_.assign(static_cast<std::size_t>(ranks_), {});
  for (std::int64_t d = 0; d < ranks_; ++d) {
    const auto& experts = placement.experts_on(d);
    hit_[static_cast<std::size_t>(d)].assign(experts.size(), 0);
    for (std::size_t s = 0; s < experts.size(); ++s) {
      const auto e = static_cast<std::size_t>(experts[s]);
      if (holders_.size() <= e) holders_.resize(e + 1);
      holders_[e].push_back(Slot{static_cast<std::int32_t>(d), static_cast<std::int32_t>(s)});
    }
  }
  pairs_.assign(static_cast<std::size_t>(ranks_ * ranks_), 0);
  pairs_set_.clear();
  slots_set_.clear();
  rank_pairs_.assign(static_cast<std::size_t>(ranks_), 0);
  slots_hit_.assign(static_cast<std::size_t>(ranks_), 0);
  ++version_;
}

void MoeTraffic::assign(std::span<const std::vector<hal::RoutedExpert>> routed) {
  if (static_cast<std::int64_t>(routed.size()) != ranks_) {
    throw std::invalid_argument("MoE traffic: routing of " + std::to_string(routed.size()) + " members for " +
                                std::to_string(ranks_) + " EP ranks");
  }
  // Only what the last step set is cleared: a decode step's few tokens a rank set a small part of the
  // ranks x ranks pairs and of the slots, and this runs for every MoE layer of every step.
  for (const std::size_t i : pairs_set_) pairs_[i] = 0;
  pairs_set_.clear();
  for (const Slot& s : slots_set_) hit_[static_cast<std::size_t>(s.rank)][static_cast<std::size_t>(s.slot)] = 0;
  slots_set_.clear();
  std::fill(rank_pairs_.begin(), rank_pairs_.end(), 0);
  std::fill(slots_hit_.begin(), slots_hit_.end(), 0);
  for (std::int64_t r = 0; r < ranks_; ++r) {
    for (const hal::RoutedExpert& x : routed[static_cast<std::size_t>(r)]) {
      const auto e = static_cast<std::size_t>(x.expert);
      if (e >= holders_.size() || holders_[e].empty()) {
        throw std::invalid_argument("MoE traffic: expert " + std::to_string(x.expert) + " has no slot");
      }
      const auto& copies = holders_[e];
      const auto n = static_cast<std::int64_t>(copies.size());
      // Copy (r + j) mod n takes the j-th share; the first `extra` of them one pair more.
      const std::int64_t base = x.tokens / n, extra = x.tokens % n;
      for (std::int64_t j = 0; j < n; ++j) {
        const std::int64_t got = base + (j < extra ? 1 : 0);
        if (got == 0) continue;
        const Slot& s = copies[static_cast<std::size_t>((r + j) % n)];
        const auto pair = static_cast<std::size_t>(r * ranks_ + s.rank);
        if (pairs_[pair] == 0) pairs_set_.push_back(pair);
        pairs_[pair] += got;
        rank_pairs_[static_cast<std::size_t>(s.rank)] += got;
        char& h = hit_[static_cast<std::size_t>(s.rank)][static_cast<std::size_t>(s.slot)];
        if (h == 0) {
          ++slots_hit_[static_cast<std::size_t>(s.rank)];
          slots_set_.push_back(s);
          h = 1;
        }
      }
    }
  }
  ++version_;
}

// Both rows are filled without a branch per entry (they are built for every rank at every step), and the
// rank's own entry is cleared after: it sends itself nothing.
std::vector<std::uint64_t> MoeTraffic::dispatch_row(std::int64_t r, std::uint64_t bytes_per_pair) const {
  const auto n = static_cast<std::size_t>(ranks_);
  std::vector<std::uint64_t> row(n);
  const std::int64_t* from = pairs_.data() + static_cast<std::size_t>(r) * n;
  for (std::size_t d = 0; d < n; ++d) row[d] = static_cast<std::uint64_t>(from[d]) * bytes_per_pair;
  row[static_cast<std::size_t>(r)] = 0;
  return row;
}

std::vector<std::uint64_t> MoeTraffic::combine_row(std::int64_t d, std::uint64_t bytes_per_pair) const {
  const auto n = static_cast<std::size_t>(ranks_);
  std::vector<std::uint64_t> row(n);
  const std::int64_t* to = pairs_.data() + static_cast<std::size_t>(d);
  for (std::size_t r = 0; r < n; ++r) row[r] = static_cast<std::uint64_t>(to[r * n]) * bytes_per_pair;
  row[static_cast<std::size_t>(d)] = 0;
  return row;
}

}  // namespace nvl::engine
