// The mixture's quantile is the 60-step bisection on its CDF, exactly: the tabulated first levels and
// the early stop must not change a single draw (generated workloads, and so event-log hashes, depend on them).
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "emu/workload/lognormal_mixture.h"

namespace nvl::emu {
namespace lognormal_mixture_test {

// The bisection written out plainly: bounds from the components' extreme quantiles, 60 halvings.
double plain_quantile(const std::vector<LognormalMixture::Component>& comps, double u) {
  const auto cdf = [&](double x) {
    double p = 0;
    for (const auto& c : comps) p += c.weight * c.dist.cdf(x);
    return p;
  };
  double lo = std::log(comps[0].dist.quantile(1e-12));
  double hi = std::log(comps[0].dist.quantile(1 - 1e-12));
  for (const auto& c : comps) {
    lo = std::min(lo, std::log(c.dist.quantile(1e-12)));
    hi = std::max(hi, std::log(c.dist.quantile(1 - 1e-12)));
  }
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (cdf(std::exp(mid)) < u ? lo : hi) = mid;
  }
  return std::exp(0.5 * (lo + hi));
}

TEST(LognormalMixture, QuantileIsExactlyThePlainBisection) {
  // Scales from seconds to hundreds of thousands of tokens (log near 0 and far from it), one truncated.
  const std::vector<std::vector<LognormalMixture::Component>> mixtures = {
      {{0.6, Lognormal(0.1, 1.2)}, {0.4, Lognormal(2.5, 0.8)}},
      {{0.3, Lognormal(6.0, 0.5)}, {0.5, Lognormal(8.0, 1.0)}, {0.2, Lognormal(11.0, 0.7, 100, 300'000)}},
      {{0.5, Lognormal(-3.0, 2.0)}, {0.5, Lognormal(-2.0, 0.1)}},
  };
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (const auto& comps : mixtures) {
    const LognormalMixture m(comps);
    std::vector<double> us = {0.0, 1e-15, 0.5, 1 - 1e-15, 1.0};
    for (int i = 0; i < 3'000; ++i) us.push_back(uniform(rng));
    for (double u : us) ASSERT_EQ(m.quantile(u), plain_quantile(comps, u)) << "u = " << u;
  }
}

}  // namespace lognormal_mixture_test
}  // namespace nvl::emu
