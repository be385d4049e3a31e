#include "fakegpu/alias_table.h"

#include <numeric>
#include <stdexcept>

namespace nvl::fakegpu {

AliasTable::AliasTable(const std::vector<double>& weights) {
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  bool negative = false;
  for (double w : weights) negative = negative || !(w >= 0);
  if (weights.empty() || negative || !(total > 0)) {
    throw std::invalid_argument("alias table: weights must be non-negative and not all zero");
  }
  const std::size_t n = weights.size();
  keep_.resize(n);
  alias_.assign(n, 0);
  std::vector<std::size_t> small, large;
  for (std::size_t i = 0; i < n; ++i) {
    keep_[i] = weights[i] * static_cast<double>(n) / total;
    (keep_[i] < 1 ? small : large).push_back(i);
  }
  while (!small.empty() && !large.empty()) {
    const std::size_t s = small.back(), l = large.back();
    small.pop_back();
    alias_[s] = static_cast<std::int64_t>(l);
    keep_[l] -= 1 - keep_[s];
    if (keep_[l] < 1) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // What is left is 1 up to rounding.
  for (std::size_t i : small) keep_[i] = 1;
  for (std::size_t i : large) keep_[i] = 1;
}

}  // namespace nvl::fakegpu
