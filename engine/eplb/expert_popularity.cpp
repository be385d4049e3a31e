#include "engine/eplb/expert_popularity.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace nvl::engine {

ExpertPopularity::ExpertPopularity(std::int64_t experts, double skew, rt::Rng& rng) : skew_(skew) {
  if (experts < 1 || skew < 0) throw std::invalid_argument("expert popularity: need experts >= 1 and skew >= 0");
  order_.resize(static_cast<std::size_t>(experts));
  std::iota(order_.begin(), order_.end(), 0);
  std::shuffle(order_.begin(), order_.end(), rng.engine());
  update_load();
}

void ExpertPopularity::drift(double fraction, rt::Rng& rng) {
  if (!(fraction >= 0 && fraction <= 1)) throw std::invalid_argument("expert popularity: drift fraction must be in [0, 1]");
  const auto n = static_cast<std::int64_t>(order_.size());
  const auto picked = static_cast<std::int64_t>(std::llround(fraction * static_cast<double>(n)));
  if (picked < 2) return;
  // Partial Fisher-Yates over the positions (uniform_int is platform-fixed, unlike std distributions).
  std::vector<std::int64_t> pos(order_.size());
  std::iota(pos.begin(), pos.end(), 0);
  for (std::int64_t i = 0; i < picked; ++i) {
    std::swap(pos[static_cast<std::size_t>(i)], pos[static_cast<std::size_t>(rng.uniform_int(i, n - 1))]);
  }
  const std::int64_t last = order_[static_cast<std::size_t>(pos[static_cast<std::size_t>(picked - 1)])];
  for (std::int64_t i = picked - 1; i > 0; --i) {
    order_[static_cast<std::size_t>(pos[static_cast<std::size_t>(i)])] =
        order_[static_cast<std::size_t>(pos[static_cast<std::size_t>(i - 1)])];
  }
  order_[static_cast<std::size_t>(pos[0])] = last;
  update_load();
}

void ExpertPopularity::update_load() {
  load_.assign(order_.size(), 0.0);
  double total = 0;
  for (std::size_t rank = 0; rank < order_.size(); ++rank) {
    const double w = 1.0 / std::pow(static_cast<double>(rank + 1), skew_);
    load_[static_cast<std::size_t>(order_[rank])] = w;
    total += w;
  }
  for (double& x : load_) x /= total;
}

}  // namespace nvl::engine
