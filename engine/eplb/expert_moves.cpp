#include "engine/eplb/expert_moves.h"

#include <algorithm>
#include <stdexcept>

namespace nvl::engine {

std::vector<std::vector<std::uint64_t>> expert_move_bytes(const ExpertPlacement& from, const ExpertPlacement& to,
                                                         std::uint64_t bytes_per_expert) {
  if (from.ranks() != to.ranks()) throw std::invalid_argument("expert moves: placements of different EP groups");
  const auto n = static_cast<std::size_t>(from.ranks());
  std::vector<std::vector<std::int64_t>> holders;  // expert -> ranks holding it before
  for (std::size_t k = 0; k < n; ++k) {
    for (std::int64_t e : from.experts_on(static_cast<std::int64_t>(k))) {
      if (holders.size() <= static_cast<std::size_t>(e)) holders.resize(static_cast<std::size_t>(e) + 1);
      holders[static_cast<std::size_t>(e)].push_back(static_cast<std::int64_t>(k));
    }
  }
  std::vector<std::vector<std::uint64_t>> bytes(n, std::vector<std::uint64_t>(n, 0));
  std::vector<std::uint64_t> sent(n, 0);
  for (std::size_t dst = 0; dst < n; ++dst) {
    const auto& before = from.experts_on(static_cast<std::int64_t>(dst));
    for (std::int64_t e : to.experts_on(static_cast<std::int64_t>(dst))) {
      if (std::find(before.begin(), before.end(), e) != before.end()) continue;
      const auto& src = holders.at(static_cast<std::size_t>(e));
      const auto best = *std::min_element(src.begin(), src.end(), [&](std::int64_t a, std::int64_t b) {
        return sent[static_cast<std::size_t>(a)] < sent[static_cast<std::size_t>(b)];
      });
      bytes[static_cast<std::size_t>(best)][dst] += bytes_per_expert;
      sent[static_cast<std::size_t>(best)] += bytes_per_expert;
    }
  }
  return bytes;
}

}  // namespace nvl::engine
