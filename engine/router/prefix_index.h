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

 private:
  // A block's holders: one bit per rank, words_ words for the GPU tier, then words_ for Grace.
  std::uint64_t* holders(std::uint32_t index) { return holder_bits_.data() + std::size_t{index} * 2 * words_; }
  const std::uint64_t* holders(std::uint32_t index) const {
    return holder_bits_.data() + std::size_t{index} * 2 * words_;
  }
  const std::uint64_t* find(BlockHash h) const;
  // Takes rank r off the block's tier; true when no rank holds the block on either tier then.
  bool drop(std::uint32_t index, KvTier tier, std::size_t r);

  std::int32_t ranks_;
  std::size_t words_;  // per tier: as many as the ranks need (one for a rack of 64)
  // A long run indexes millions of blocks: the hash table holds small indexes into a dense array of
  // holder sets (reused when a block leaves), which keeps the table, sized for its load, compact.
  BlockHashMap<std::uint32_t> index_of_;
  std::vector<std::uint64_t> holder_bits_;
  std::vector<std::uint32_t> free_holders_;
};

}  // namespace nvl::engine
