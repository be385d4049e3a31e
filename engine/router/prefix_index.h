#pragma once
// The router's global prefix index, built from the KV events every rank publishes (as SGLang's
// cache-aware router and Dynamo's KV router keep one): for each block hash, which ranks hold it on
// the GPU and which in Grace memory. It is soft state: a restarted router starts empty and refills
// from new events.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv/block_hash_map.h"
#include "engine/kv/kv_event.h"

namespace nvl::engine {

struct RankMatch {
  std::int64_t gpu_blocks = 0;    // longest prefix the rank holds on its GPU
  std::int64_t grace_blocks = 0;  // longest prefix the rank holds on its GPU or in its Grace memory
};

class PrefixIndex {
 public:
  explicit PrefixIndex(std::int32_t ranks);

  void apply(const KvEvent& e);
  void clear();

  // Per rank, how far `hashes` matches what it holds; `longest`, if given, receives best_match(hashes)
  // from the same walk.
  std::vector<RankMatch> match(std::span<const BlockHash> hashes, std::int64_t* longest = nullptr) const;
  // The longest prefix held anywhere, on a GPU or in Grace memory.
  std::int64_t best_match(std::span<const BlockHash> hashes) const;
  std::size_t blocks_indexed() const { return index_of_.size(); }
  std::int32_t ranks() const { return ranks_; }
  // Ranks an index can tell apart (a rank is 15 bits of a holder entry).
  static constexpr std::int32_t kMaxRanks = 1 << 15;

 private:
  // A block's holders: up to kListed (rank, tier) entries, or past that one bit per rank in the bit
  // pool (words_ words for the GPU tier, then words_ for Grace). Most blocks are held by a rank or two
  // however many ranks there are, since a prefix lives where the router sent it: the list keeps their
  // cost flat as racks are added, and the bits keep a widely shared prefix (a system prompt) compact.
  struct Holders {
    static constexpr std::uint8_t kListed = 7;
    static constexpr std::uint8_t kInBits = 0xff;  // count when held in the bit pool
    std::uint16_t listed[kListed] = {};            // rank << 1 | tier (1: Grace); when kInBits: the pool index
    std::uint8_t count = 0;
  };
  static std::uint16_t entry(std::size_t rank, KvTier tier) {
    return static_cast<std::uint16_t>(rank << 1 | (tier == KvTier::gpu ? 0U : 1U));
  }
  static std::uint32_t pool_index(const Holders& h) {
    return std::uint32_t{h.listed[0]} | std::uint32_t{h.listed[1]} << 16;
  }
  std::uint64_t* bits(const Holders& h) { return holder_bits_.data() + std::size_t{pool_index(h)} * 2 * words_; }
  const std::uint64_t* bits(const Holders& h) const {
    return holder_bits_.data() + std::size_t{pool_index(h)} * 2 * words_;
  }
  void add(Holders& h, std::size_t rank, KvTier tier);
  // Takes rank r off the block's tier; true when no rank holds the block on either tier then (its
  // bits, if any, are back in the pool).
  bool drop(Holders& h, KvTier tier, std::size_t r);
  void to_bits(Holders& h);

  std::int32_t ranks_;
  std::size_t words_;  // per tier: as many as the ranks need (one for a rack of 64)
  // A long run indexes millions of blocks: the hash table holds small indexes into a dense array of
  // holder sets (reused when a block leaves), which keeps the table, sized for its load, compact.
  BlockHashMap<std::uint32_t> index_of_;
  std::vector<Holders> holders_;
  std::vector<std::uint32_t> free_holders_;
  std::vector<std::uint64_t> holder_bits_;
  std::vector<std::uint32_t> free_bits_;
};

}  // namespace nvl::engine
