#include "engine/router/prefix_index.h"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace nvl::engine {

namespace {
constexpr std::size_t kRanksPerWord = 64;

// Calls visit(r) for each rank whose bit is set in `bits` (`words` words).
template <typename Visit>
void for_each_rank(const std::uint64_t* bits, std::size_t words, Visit&& visit) {
  for (std::size_t w = 0; w < words; ++w) {
    for (std::uint64_t b = bits[w]; b != 0; b &= b - 1) {
      visit(w * kRanksPerWord + static_cast<std::size_t>(std::countr_zero(b)));
    }
  }
}
}  // namespace

PrefixIndex::PrefixIndex(std::int32_t ranks)
    : ranks_(ranks), words_((static_cast<std::size_t>(std::max(ranks, 0)) + kRanksPerWord - 1) / kRanksPerWord) {
  if (ranks < 1) throw std::invalid_argument("prefix index: expected at least 1 rank, got " + std::to_string(ranks));
}

bool PrefixIndex::drop(std::uint32_t index, KvTier tier, std::size_t r) {
  std::uint64_t* bits = holders(index);
  bits[(tier == KvTier::gpu ? 0 : words_) + r / kRanksPerWord] &= ~(std::uint64_t{1} << (r % kRanksPerWord));
  return std::all_of(bits, bits + 2 * words_, [](std::uint64_t w) { return w == 0; });
}

void PrefixIndex::apply(const KvEvent& e) {
  if (e.rank < 0 || e.rank >= ranks_) throw std::invalid_argument("prefix index: event from unknown rank " + std::to_string(e.rank));
  const auto r = static_cast<std::size_t>(e.rank);
  if (e.kind == KvEvent::Kind::stored) {
    bool inserted = false;
    std::uint32_t& index = index_of_.try_emplace(e.hash, inserted);
    if (inserted) {
      if (free_holders_.empty()) {
        index = static_cast<std::uint32_t>(holder_bits_.size() / (2 * words_));
        holder_bits_.resize(holder_bits_.size() + 2 * words_, 0);
      } else {
        index = free_holders_.back();
        free_holders_.pop_back();
      }
    }
    holders(index)[(e.tier == KvTier::gpu ? 0 : words_) + r / kRanksPerWord] |= std::uint64_t{1} << (r % kRanksPerWord);
    return;
  }
  if (e.kind == KvEvent::Kind::cleared) {
    index_of_.erase_if([&](BlockHash, std::uint32_t index) {
      const bool empty = drop(index, e.tier, r);
      if (empty) free_holders_.push_back(index);
      return empty;
    });
    return;
  }
  const std::uint32_t* index = index_of_.find(e.hash);
  if (index == nullptr) return;
  if (drop(*index, e.tier, r)) {
    free_holders_.push_back(*index);
    index_of_.erase(e.hash);
  }
}

void PrefixIndex::clear() {
  index_of_.clear();
  holder_bits_.clear();
  free_holders_.clear();
}

const std::uint64_t* PrefixIndex::find(BlockHash h) const {
  const std::uint32_t* index = index_of_.find(h);
  return index == nullptr ? nullptr : holders(*index);
}

std::vector<RankMatch> PrefixIndex::match(std::span<const BlockHash> hashes, std::int64_t* longest) const {
  std::vector<RankMatch> out(static_cast<std::size_t>(ranks_));
  // The ranks still matching, per tier: every rank at first.
  std::vector<std::uint64_t> on_gpu(words_, ~std::uint64_t{0}), anywhere(words_, ~std::uint64_t{0});
  if (const std::size_t tail = static_cast<std::size_t>(ranks_) % kRanksPerWord; tail != 0) {
    on_gpu.back() = anywhere.back() = (std::uint64_t{1} << tail) - 1;
  }
  // A rank's match is the number of blocks walked when it leaves the set: each rank leaves at most once
  // per tier, so the per-rank bookkeeping happens then rather than at every block.
  std::vector<std::uint64_t> left(2 * words_);
  const auto leave = [&](const std::uint64_t* gone, std::int64_t blocks, std::int64_t RankMatch::*field) {
    for_each_rank(gone, words_, [&](std::size_t r) { out[r].*field = blocks; });
  };
  const auto none = [&](const std::vector<std::uint64_t>& set) {
    return std::all_of(set.begin(), set.end(), [](std::uint64_t w) { return w == 0; });
  };
  std::size_t i = 0;
  for (; i < hashes.size() && !none(anywhere); ++i) {
    if (i + kHashPrefetchAhead < hashes.size()) index_of_.prefetch(hashes[i + kHashPrefetchAhead]);
    const std::uint64_t* h = find(hashes[i]);
    if (h == nullptr) break;
    for (std::size_t w = 0; w < words_; ++w) {
      const std::uint64_t still_on_gpu = on_gpu[w] & h[w];
      const std::uint64_t still_anywhere = anywhere[w] & (h[w] | h[words_ + w]);
      left[w] = on_gpu[w] & ~still_on_gpu;
      left[words_ + w] = anywhere[w] & ~still_anywhere;
      on_gpu[w] = still_on_gpu;
      anywhere[w] = still_anywhere;
    }
    leave(left.data(), static_cast<std::int64_t>(i), &RankMatch::gpu_blocks);
    leave(left.data() + words_, static_cast<std::int64_t>(i), &RankMatch::grace_blocks);
  }
  leave(on_gpu.data(), static_cast<std::int64_t>(i), &RankMatch::gpu_blocks);
  leave(anywhere.data(), static_cast<std::int64_t>(i), &RankMatch::grace_blocks);
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
