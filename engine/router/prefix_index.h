#pragma once
// The router's global prefix index, built from the KV events every rank publishes (as SGLang's
// cache-aware router and Dynamo's KV router keep one): for each block hash, which ranks hold it on
// the GPU and which in Grace memory. It is soft state: a restarted router starts empty and refills
// from new events.
#include <bitset>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv/block_hash_map.h"
#include "engine/kv/kv_event.h"

namespace nvl::engine {

// Two racks of DP ranks (EP144, EP256 over two NVL72s); a wider router needs a wider set.
inline constexpr std::size_t kMaxRanks = 256;
using RankSet = std::bitset<kMaxRanks>;

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
  struct Holders {
    RankSet gpu;
    RankSet grace;
  };
  const Holders* find(BlockHash h) const;

  std::int32_t ranks_;
  // A long run indexes millions of blocks: the hash table holds small indexes into a dense array of
  // holder sets (reused when a block leaves), which keeps the table, sized for its load, compact.
  BlockHashMap<std::uint32_t> index_of_;
  std::vector<Holders> holders_;
  std::vector<std::uint32_t> free_holders_;
};

}  // namespace nvl::engine
