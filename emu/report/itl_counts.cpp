#include "emu/report/itl_counts.h"

#include <algorithm>

#include <boost/sort/spreadsort/float_sort.hpp>

namespace nvl::emu {

namespace {
// Fewer pending gaps than this are not worth a fold (a sort that fits in cache).
constexpr std::size_t kMinFold = std::size_t{1} << 16;
}  // namespace

ItlCounts::ItlCounts(std::initializer_list<Count> counts) {
  for (const auto& [value, n] : counts) add(value, n);
}

void ItlCounts::add(double gap_ms, std::uint64_t n) {
  pending_.insert(pending_.end(), n, gap_ms);
  if (pending_.size() >= std::max(kMinFold, counts_.size() / 4)) fold();
}

const std::vector<ItlCounts::Count>& ItlCounts::sorted() const {
  if (!pending_.empty()) fold();
  return counts_;
}

void ItlCounts::fold() const {
  // Plain doubles sort faster than pairs, and by their bits (a radix sort) faster than by comparisons;
  // their runs of equal values join the counts.
  boost::sort::spreadsort::float_sort(pending_.begin(), pending_.end());
  const auto old = static_cast<std::ptrdiff_t>(counts_.size());
  for (std::size_t i = 0; i < pending_.size();) {
    std::size_t end = i + 1;
    while (end < pending_.size() && pending_[end] == pending_[i]) ++end;
    counts_.emplace_back(pending_[i], end - i);
    i = end;
  }
  pending_.clear();
  std::inplace_merge(counts_.begin(), counts_.begin() + old, counts_.end(),
                     [](const Count& a, const Count& b) { return a.first < b.first; });
  // A value in both halves is now side by side: joined.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    if (kept > 0 && counts_[kept - 1].first == counts_[i].first) {
      counts_[kept - 1].second += counts_[i].second;
    } else {
      counts_[kept++] = counts_[i];
    }
  }
  counts_.resize(kept);
}

}  // namespace nvl::emu
