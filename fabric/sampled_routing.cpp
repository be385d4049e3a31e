#include "fabric/sampled_routing.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "fabric/probe.h"

namespace nvl::fabric {

namespace {

// splitmix64: a fixed generator, so a seed draws the same matrix on every platform.
class Draws {
 public:
  explicit Draws(std::uint64_t seed) : x_(seed) {}
  double uniform() {
    x_ += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = x_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }

 private:
  std::uint64_t x_;
};

}  // namespace

std::vector<hal::CollectiveOp> sampled_all_to_all(const SampledRouting& routing, const std::vector<int>& tokens,
                                                  std::uint64_t seed) {
  const int n = static_cast<int>(tokens.size());
  if (routing.experts != n * routing.experts_per_rank || routing.top_k > routing.experts) {
    throw std::invalid_argument("sampled routing: " + std::to_string(routing.experts) + " experts for " +
                                std::to_string(n) + " ranks of " + std::to_string(routing.experts_per_rank));
  }
  std::vector<double> cumulative(static_cast<std::size_t>(routing.experts));
  double sum = 0;
  for (int e = 0; e < routing.experts; ++e) {
    sum += std::pow(static_cast<double>(e + 1), -routing.skew);
    cumulative[static_cast<std::size_t>(e)] = sum;
  }
  auto ops = uniform_all_to_all(n, 0, hal::AllToAllRole::moe_dispatch);
  Draws draws(seed);
  std::vector<int> picked;
  for (int r = 0; r < n; ++r) {
    auto& row = ops[static_cast<std::size_t>(r)].send_bytes;
    for (int t = 0; t < tokens[static_cast<std::size_t>(r)]; ++t) {
      picked.clear();
      while (static_cast<int>(picked.size()) < routing.top_k) {
        const double u = draws.uniform() * sum;
        const int e = std::min(routing.experts - 1,
                               static_cast<int>(std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin()));
        if (std::find(picked.begin(), picked.end(), e) == picked.end()) picked.push_back(e);
      }
      for (int e : picked) {
        const int d = e / routing.experts_per_rank;
        if (d != r) row[static_cast<std::size_t>(d)] += routing.bytes_per_token;
      }
    }
  }
  return ops;
}

}  // namespace nvl::fabric
