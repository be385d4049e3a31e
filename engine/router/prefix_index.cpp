#include "engine/router/prefix_index.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <stdexcept>
#include <string>

namespace nvl::engine {

namespace {
constexpr std::size_t kRanksPerWord = 64;

// Rank r's bit in a set of ranks, one bit per rank.
void set_rank(std::uint64_t* set, std::size_t r) { set[r / kRanksPerWord] |= std::uint64_t{1} << (r % kRanksPerWord); }
void clear_rank(std::uint64_t* set, std::size_t r) { set[r / kRanksPerWord] &= ~(std::uint64_t{1} << (r % kRanksPerWord)); }

// Sets `field` to `blocks` for each rank whose bit is set in word w of a rank set.
void leave(std::vector<RankMatch>& out, std::size_t w, std::uint64_t gone, std::int64_t blocks,
           std::int64_t RankMatch::*field) {
  for (std::uint64_t b = gone; b != 0; b &= b - 1) out[w * kRanksPerWord + static_cast<std::size_t>(std::countr_zero(b))].*field = blocks;
}
}  // namespace

PrefixIndex::PrefixIndex(std::int32_t ranks)
    : ranks_(ranks), words_((static_cast<std::size_t>(std::max(ranks, 0)) + kRanksPerWord - 1) / kRanksPerWord) {
  if (ranks < 1 || ranks > kMaxRanks) {
    throw std::invalid_argument("prefix index: expected 1 to " + std::to_string(kMaxRanks) + " ranks, got " + std::to_string(ranks));
  }
}

void PrefixIndex::to_bits(Holders& h) {
  std::uint32_t at = 0;
  if (free_bits_.empty()) {
    at = static_cast<std::uint32_t>(holder_bits_.size() / (2 * words_));
    holder_bits_.resize(holder_bits_.size() + 2 * words_, 0);
  } else {
    at = free_bits_.back();
    free_bits_.pop_back();
  }
  std::uint64_t* set = holder_bits_.data() + std::size_t{at} * 2 * words_;
  for (std::uint8_t k = 0; k < h.count; ++k) set_rank(set + (h.listed[k] & 1U) * words_, h.listed[k] >> 1);
  h.listed[0] = static_cast<std::uint16_t>(at & 0xffffU);
  h.listed[1] = static_cast<std::uint16_t>(at >> 16);
  h.count = Holders::kInBits;
}

void PrefixIndex::add(Holders& h, std::size_t rank, KvTier tier) {
  if (h.count != Holders::kInBits) {
    const std::uint16_t e = entry(rank, tier);
    if (std::find(h.listed, h.listed + h.count, e) != h.listed + h.count) return;
    if (h.count < Holders::kListed) {
      h.listed[h.count++] = e;
      return;
    }
    to_bits(h);
  }
  set_rank(bits(h) + (tier == KvTier::gpu ? 0 : words_), rank);
}

bool PrefixIndex::drop(Holders& h, KvTier tier, std::size_t r) {
  if (h.count != Holders::kInBits) {
    const std::uint16_t e = entry(r, tier);
    std::uint16_t* const end = h.listed + h.count;
    if (std::uint16_t* at = std::find(h.listed, end, e); at != end) {
      *at = *(end - 1);
      --h.count;
    }
    return h.count == 0;
  }
  std::uint64_t* set = bits(h);
  clear_rank(set + (tier == KvTier::gpu ? 0 : words_), r);
  if (!std::all_of(set, set + 2 * words_, [](std::uint64_t w) { return w == 0; })) return false;
  free_bits_.push_back(pool_index(h));
  return true;
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
        holders_[index] = Holders{};
      }
    }
    add(holders_[index], r, e.tier);
    return;
  }
  if (e.kind == KvEvent::Kind::cleared) {
    index_of_.erase_if([&](BlockHash, std::uint32_t index) {
      const bool empty = drop(holders_[index], e.tier, r);
      if (empty) free_holders_.push_back(index);
      return empty;
    });
    return;
  }
  const std::uint32_t* index = index_of_.find(e.hash);
  if (index == nullptr) return;
  if (drop(holders_[*index], e.tier, r)) {
    free_holders_.push_back(*index);
    index_of_.erase(e.hash);
  }
}

void PrefixIndex::clear() {
  index_of_.clear();
  holders_.clear();
  free_holders_.clear();
  holder_bits_.clear();
  free_bits_.clear();
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
  // The words with a rank still matching anywhere (on_gpu is within anywhere): only they are walked
  // on, so that among many racks' ranks a prefix held in one rack costs one word a block.
  std::vector<std::size_t> live(words_);
  std::iota(live.begin(), live.end(), std::size_t{0});
  // A listed block's holders spread over words, both tiers (zero again once the block is walked).
  std::vector<std::uint64_t> spread(2 * words_, 0);
  std::size_t i = 0;
  for (; i < hashes.size() && !live.empty(); ++i) {
    if (i + kHashPrefetchAhead < hashes.size()) index_of_.prefetch(hashes[i + kHashPrefetchAhead]);
    const std::uint32_t* index = index_of_.find(hashes[i]);
    if (index == nullptr) break;
    const Holders& held = holders_[*index];
    const bool listed = held.count != Holders::kInBits;
    if (listed) {
      for (std::uint8_t k = 0; k < held.count; ++k) set_rank(spread.data() + (held.listed[k] & 1U) * words_, held.listed[k] >> 1);
    }
    const std::uint64_t* h = listed ? spread.data() : bits(held);
    const auto blocks = static_cast<std::int64_t>(i);
    for (const std::size_t w : live) {
      const std::uint64_t still_on_gpu = on_gpu[w] & h[w];
      const std::uint64_t still_anywhere = anywhere[w] & (h[w] | h[words_ + w]);
      leave(out, w, on_gpu[w] & ~still_on_gpu, blocks, &RankMatch::gpu_blocks);
      leave(out, w, anywhere[w] & ~still_anywhere, blocks, &RankMatch::grace_blocks);
      on_gpu[w] = still_on_gpu;
      anywhere[w] = still_anywhere;
    }
    if (listed) {
      for (std::uint8_t k = 0; k < held.count; ++k) {
        const std::size_t word = (held.listed[k] >> 1) / kRanksPerWord;
        spread[word] = spread[words_ + word] = 0;
      }
    }
    std::erase_if(live, [&](std::size_t w) { return anywhere[w] == 0; });
  }
  for (const std::size_t w : live) {
    leave(out, w, on_gpu[w], static_cast<std::int64_t>(i), &RankMatch::gpu_blocks);
    leave(out, w, anywhere[w], static_cast<std::int64_t>(i), &RankMatch::grace_blocks);
  }
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
