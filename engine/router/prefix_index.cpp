#include "engine/router/prefix_index.h"

#include <stdexcept>
#include <string>

namespace nvl::engine {

PrefixIndex::PrefixIndex(std::int32_t ranks) : ranks_(ranks) {
  if (ranks < 1 || static_cast<std::size_t>(ranks) > kMaxRanks) {
    throw std::invalid_argument("prefix index: 1 to " + std::to_string(kMaxRanks) + " ranks, got " +
                                std::to_string(ranks));
  }
}

void PrefixIndex::apply(const KvEvent& e) {
  if (e.rank < 0 || e.rank >= ranks_) throw std::invalid_argument("prefix index: event from unknown rank " + std::to_string(e.rank));
  const auto r = static_cast<std::size_t>(e.rank);
  if (e.kind == KvEvent::Kind::stored) {
    Holders& h = holders_[e.hash];
    (e.tier == KvTier::gpu ? h.gpu : h.grace).set(r);
    return;
  }
  const auto it = holders_.find(e.hash);
  if (it == holders_.end()) return;
  (e.tier == KvTier::gpu ? it->second.gpu : it->second.grace).reset(r);
  if (it->second.gpu.none() && it->second.grace.none()) holders_.erase(it);
}

std::vector<RankMatch> PrefixIndex::match(std::span<const BlockHash> hashes) const {
  std::vector<RankMatch> out(static_cast<std::size_t>(ranks_));
  RankSet on_gpu, anywhere;
  for (std::int32_t r = 0; r < ranks_; ++r) {
    on_gpu.set(static_cast<std::size_t>(r));
    anywhere.set(static_cast<std::size_t>(r));
  }
  // Walk the chain once; a rank's match ends at the first block it does not hold.
  for (std::size_t i = 0; i < hashes.size() && anywhere.any(); ++i) {
    const auto it = holders_.find(hashes[i]);
    if (it == holders_.end()) break;
    on_gpu &= it->second.gpu;
    anywhere &= it->second.gpu | it->second.grace;
    for (std::int32_t r = 0; r < ranks_; ++r) {
      const auto k = static_cast<std::size_t>(r);
      if (on_gpu.test(k)) out[k].gpu_blocks = static_cast<std::int64_t>(i) + 1;
      if (anywhere.test(k)) out[k].grace_blocks = static_cast<std::int64_t>(i) + 1;
    }
  }
  return out;
}

std::int64_t PrefixIndex::best_match(std::span<const BlockHash> hashes) const {
  std::int64_t n = 0;
  for (BlockHash h : hashes) {
    const auto it = holders_.find(h);
    if (it == holders_.end() || (it->second.gpu.none() && it->second.grace.none())) break;
    ++n;
  }
  return n;
}

}  // namespace nvl::engine
