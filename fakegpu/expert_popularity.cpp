#include "fakegpu/expert_popularity.h"

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

namespace nvl::fakegpu {

namespace {

// The first `count` entries of `v` become a uniform random selection of its entries, in random order
// (partial Fisher-Yates with the platform-fixed uniform_int, unlike std::shuffle's distributions).
void shuffle_front(std::vector<std::int64_t>& v, std::int64_t count, rt::Rng& rng) {
  const auto n = static_cast<std::int64_t>(v.size());
  for (std::int64_t i = 0; i < count && i < n - 1; ++i) {
    std::swap(v[static_cast<std::size_t>(i)], v[static_cast<std::size_t>(rng.uniform_int(i, n - 1))]);
  }
}

}  // namespace

ExpertPopularity::ExpertPopularity(std::int64_t experts, double skew, rt::Rng& rng) : skew_(skew) {
  if (experts < 1 || !(skew >= 0)) throw std::invalid_argument("expert popularity: need experts >= 1 and skew >= 0");
  order_.resize(static_cast<std::size_t>(experts));
  std::iota(order_.begin(), order_.end(), 0);
  shuffle_front(order_, experts, rng);
  update_shares();
}

void ExpertPopularity::drift(double fraction, rt::Rng& rng) {
  if (!(fraction >= 0 && fraction <= 1)) throw std::invalid_argument("expert popularity: drift fraction must be in [0, 1]");
  const auto n = static_cast<std::int64_t>(order_.size());
  const auto picked = static_cast<std::int64_t>(std::llround(fraction * static_cast<double>(n)));
  if (picked < 2) return;
  std::vector<std::int64_t> pos(order_.size());
  std::iota(pos.begin(), pos.end(), 0);
  shuffle_front(pos, picked, rng);
  const std::int64_t last = order_[static_cast<std::size_t>(pos[static_cast<std::size_t>(picked - 1)])];
  for (std::int64_t i = picked - 1; i > 0; --i) {
    order_[static_cast<std::size_t>(pos[static_cast<std::size_t>(i)])] =
        order_[static_cast<std::size_t>(pos[static_cast<std::size_t>(i - 1)])];
  }
  order_[static_cast<std::size_t>(pos[0])] = last;
  update_shares();
}

void ExpertPopularity::update_shares() {
  shares_.assign(order_.size(), 0.0);
  double total = 0;
  for (std::size_t rank = 0; rank < order_.size(); ++rank) {
    const double w = 1.0 / std::pow(static_cast<double>(rank + 1), skew_);
    shares_[static_cast<std::size_t>(order_[rank])] = w;
    total += w;
  }
  for (double& x : shares_) x /= total;
}

}  // namespace nvl::fakegpu
