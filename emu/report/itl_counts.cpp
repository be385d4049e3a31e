#include "emu/report/itl_counts.h"

#include <algorithm>

namespace nvl::emu {

namespace {
// Fewer pending gaps than this are not worth a fold (a sort that fits in cache).
constexpr std::size_t kMinFold = std::size_t{1} << 16;
}  // namespace

ItlCounts::ItlCounts(std::initializer_list<Count> counts) {
  for (const auto& [value, n] : counts) add(value, n);
}

void ItlCounts::add(double gap_ms, std::uint64_t n) {
  if (n == 0) return;
  pending_.emplace_back(gap_ms, n);
  if (pending_.size() >= std::max(kMinFold, counts_.size() / 4)) fold();
}

const std::vector<ItlCounts::Count>& ItlCounts::sorted() const {
  if (!pending_.empty()) fold();
  return counts_;
}

void ItlCounts::fold() const {
  std::sort(pending_.begin(), pending_.end(), [](const Count& a, const Count& b) { return a.first < b.first; });
  // Merged in place from the back (no third buffer: the counts may hold a million values), then equal
  // values, now side by side, are joined.
  const std::size_t old = counts_.size();
  counts_.resize(old + pending_.size());
  std::size_t a = old, b = pending_.size(), out = counts_.size();
  while (b > 0) {
    counts_[--out] = a > 0 && counts_[a - 1].first > pending_[b - 1].first ? counts_[--a] : pending_[--b];
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    if (kept > 0 && counts_[kept - 1].first == counts_[i].first) {
      counts_[kept - 1].second += counts_[i].second;
    } else {
      counts_[kept++] = counts_[i];
    }
  }
  counts_.resize(kept);
  pending_.clear();
}

}  // namespace nvl::emu
