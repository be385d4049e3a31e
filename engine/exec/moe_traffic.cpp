#include "engine/exec/moe_traffic.h"

#include <cmath>
#include <numeric>
#include <stdexcept>

namespace nvl::engine {

MoeTraffic::MoeTraffic(std::vector<double> shares, std::int64_t top_k) : shares_(std::move(shares)), top_k_(top_k) {
  const double total = std::accumulate(shares_.begin(), shares_.end(), 0.0);
  if (shares_.empty() || top_k < 1 || std::fabs(total - 1.0) > 1e-6) {
    throw std::invalid_argument("MoE traffic: rank shares must sum to 1 and top-k be at least 1");
  }
}

std::int64_t MoeTraffic::expert_tokens(std::int64_t d, std::span<const std::int64_t> tokens) const {
  const std::int64_t total = std::accumulate(tokens.begin(), tokens.end(), std::int64_t{0});
  return std::llround(static_cast<double>(total * top_k_) * shares_.at(static_cast<std::size_t>(d)));
}

std::vector<std::uint64_t> MoeTraffic::dispatch_row(std::int64_t r, std::int64_t tokens_r,
                                                    std::uint64_t bytes_per_pair) const {
  std::vector<std::uint64_t> row(shares_.size(), 0);
  for (std::size_t d = 0; d < shares_.size(); ++d) {
    if (static_cast<std::int64_t>(d) == r) continue;
    row[d] = static_cast<std::uint64_t>(
        std::llround(static_cast<double>(tokens_r * top_k_) * shares_[d] * static_cast<double>(bytes_per_pair)));
  }
  return row;
}

std::vector<std::uint64_t> MoeTraffic::combine_row(std::int64_t d, std::span<const std::int64_t> tokens,
                                                   std::uint64_t bytes_per_pair) const {
  std::vector<std::uint64_t> row(shares_.size(), 0);
  for (std::size_t r = 0; r < shares_.size(); ++r) {
    row[r] = combine_bytes(d, static_cast<std::int64_t>(r), tokens[r], bytes_per_pair);
  }
  return row;
}

std::uint64_t MoeTraffic::combine_bytes(std::int64_t d, std::int64_t r, std::int64_t tokens_r,
                                        std::uint64_t bytes_per_pair) const {
  if (r == d) return 0;
  const double share = shares_.at(static_cast<std::size_t>(d));
  return static_cast<std::uint64_t>(
      std::llround(static_cast<double>(tokens_r * top_k_) * share * static_cast<double>(bytes_per_pair)));
}

}  // namespace nvl::engine
