#pragma once
// Draws from a fixed discrete distribution in constant time (Vose's alias method). Written here rather
// than taken from a library's distribution so that draws are the same on every platform (as rt::Rng's).
#include <cstdint>
#include <vector>

#include "emu/rt/rng.h"

namespace nvl::fakegpu {

class AliasTable {
 public:
  AliasTable() = default;
  // weights: non-negative, not all zero (std::invalid_argument otherwise).
  explicit AliasTable(const std::vector<double>& weights);
  std::int64_t size() const { return static_cast<std::int64_t>(keep_.size()); }
  // An index drawn with probability weight / total, from one uniform of `rng`.
  std::int64_t draw(rt::Rng& rng) const {
    const double u = rng.uniform() * static_cast<double>(keep_.size());
    const auto i = static_cast<std::size_t>(u);
    return u - static_cast<double>(i) < keep_[i] ? static_cast<std::int64_t>(i) : alias_[i];
  }

 private:
  std::vector<double> keep_;         // per column: the chance of keeping its own index
  std::vector<std::int64_t> alias_;  // per column: the index taken otherwise
};

}  // namespace nvl::fakegpu
