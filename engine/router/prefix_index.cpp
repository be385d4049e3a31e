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
    bool inserted = false;
    std::uint32_t& index = index_of_.try_emplace(e.hash, inserted);
    if (inserted) {
      if (free_holders_.empty()) {
        index = static_cast<std::uint32_t>(holders_.size());
        holders_.emplace_back();
      } else {
        index = free_holders_.back();
        free_holders_.pop_back();
      }
    }
    Holders& h = holders_[index];
    (e.tier == KvTier::gpu ? h.gpu : h.grace).set(r);
    return;
  }
  if (e.kind == KvEvent::Kind::cleared) {
    index_of_.erase_if([&](BlockHash, std::uint32_t index) {
      Holders& h = holders_[index];
      (e.tier == KvTier::gpu ? h.gpu : h.grace).reset(r);
      const bool empty = h.gpu.none() && h.grace.none();
      if (empty) free_holders_.push_back(index);
      return empty;
    });
    return;
  }
  const std::uint32_t* index = index_of_.find(e.hash);
  if (index == nullptr) return;
  Holders& h = holders_[*index];
  (e.tier == KvTier::gpu ? h.gpu : h.grace).reset(r);
  if (h.gpu.none() && h.grace.none()) {
    free_holders_.push_back(*index);
    index_of_.erase(e.hash);
  }
}

void PrefixIndex::clear() {
  index_of_.clear();
  holders_.clear();
  free_holders_.clear();
}

const PrefixIndex::Holders* PrefixIndex::find(BlockHash h) const {
  const std::uint32_t* index = index_of_.find(h);
  return index == nullptr ? nullptr : &holders_[*index];
}

std::vector<RankMatch> PrefixIndex::match(std::span<const BlockHash> hashes, std::int64_t* longest) const {
  std::vector<RankMatch> out(static_cast<std::size_t>(ranks_));
  RankSet on_gpu, anywhere;
  for (std::int32_t r = 0; r < ranks_; ++r) {
    on_gpu.set(static_cast<std::size_t>(r));
    anywhere.set(static_cast<std::size_t>(r));
  }
  // A rank's match is the number of blocks walked when it leaves the set: each rank leaves at most once
  // per tier, so the per-rank bookkeeping happens then rather than at every block.
  const auto leave = [&](const RankSet& left, std::int64_t blocks, std::int64_t RankMatch::*field) {
    if (left.none()) return;
    for (std::int32_t r = 0; r < ranks_; ++r) {
      if (left.test(static_cast<std::size_t>(r))) out[static_cast<std::size_t>(r)].*field = blocks;
    }
  };
  std::size_t i = 0;
  for (; i < hashes.size() && anywhere.any(); ++i) {
    if (i + kHashPrefetchAhead < hashes.size()) index_of_.prefetch(hashes[i + kHashPrefetchAhead]);
    const Holders* h = find(hashes[i]);
    if (h == nullptr) break;
    const RankSet still_on_gpu = on_gpu & h->gpu;
    const RankSet still_anywhere = anywhere & (h->gpu | h->grace);
    leave(on_gpu & ~still_on_gpu, static_cast<std::int64_t>(i), &RankMatch::gpu_blocks);
    leave(anywhere & ~still_anywhere, static_cast<std::int64_t>(i), &RankMatch::grace_blocks);
    on_gpu = still_on_gpu;
    anywhere = still_anywhere;
  }
  leave(on_gpu, static_cast<std::int64_t>(i), &RankMatch::gpu_blocks);
  leave(anywhere, static_cast<std::int64_t>(i), &RankMatch::grace_blocks);
  if (longest != nullptr) {
    // Blocks [0, i) are all indexed; the prefix held by ranks together may go on past every rank's own.
    while (i < hashes.size() && index_of_.contains(hashes[i])) ++i;
    *longest = static_cast<std::int64_t>(i);
  }
  return out;
}

std::int64_t PrefixIndex::best_match(std::span<const BlockHash> hashes) const {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (i + kHashPrefetchAhead < hashes.size()) index_of_.prefetch(hashes[i + kHashPrefetchAhead]);
    if (!index_of_.contains(hashes[i])) break;  // a block no rank holds leaves the index
    ++n;
  }
  return n;
}

}  // namespace nvl::engine
