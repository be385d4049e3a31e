#pragma once
// A fixed pool of KV-cache blocks with a prefix cache: full blocks are published under the hash of
// their content chain, so a later request with the same prefix finds and shares them. Blocks are
// reference-counted; unreferenced published blocks stay cached in LRU order until their space is
// needed. Every block is in exactly one state: free, in use (referenced), or cached (evictable).
// One pool per memory tier and rank (GPU HBM, Grace); moving blocks between tiers is the caller's job.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/kv/block_hash.h"
#include "engine/kv/block_hash_map.h"

namespace nvl::engine {

class KvBlockPool {
 public:
  // Published blocks leave the cache: by eviction (space needed) or clear().
  using EvictListener = std::function<void(BlockHash)>;

  KvBlockPool(std::string name, std::int64_t num_blocks, std::int64_t block_tokens);

  const std::string& name() const { return name_; }
  std::int64_t block_tokens() const { return block_tokens_; }
  std::int64_t capacity() const { return capacity_; }
  std::int64_t free_blocks() const {
    return static_cast<std::int64_t>(free_.size()) + capacity_ - static_cast<std::int64_t>(blocks_.size());
  }
  std::int64_t cached_blocks() const { return cached_; }
  std::int64_t used_blocks() const { return capacity() - free_blocks() - cached_blocks(); }
  // Blocks an allocation could get now: free plus evictable.
  std::int64_t available_blocks() const { return free_blocks() + cached_blocks(); }
  // Cached blocks evicted to make room for an allocation (not those clear_cached drops), whole run.
  std::int64_t evicted_for_space() const { return evicted_for_space_; }

  // How many leading hashes are published here (no reference taken).
  std::int64_t match_length(std::span<const BlockHash> hashes) const;
  bool contains(BlockHash h) const { return by_hash_.contains(h); }
  // A hint that `h` is looked up soon (see BlockHashMap::prefetch).
  void prefetch(BlockHash h) const { by_hash_.prefetch(h); }
  // Takes a reference on each block of the longest published prefix and returns them in order.
  std::vector<BlockId> acquire_prefix(std::span<const BlockHash> hashes);
  // n fresh, unpublished blocks with one reference each, evicting least recently used cached blocks
  // as needed; nullopt (and nothing changed) when fewer than n are available.
  std::optional<std::vector<BlockId>> allocate(std::int64_t n);
  // A block now full with content `h` becomes findable. If another block already holds `h` this one
  // stays private (it is freed when released) and false is returned.
  bool publish(BlockId b, BlockHash h);
  // Drops one reference from each block; at zero a published block becomes cached, others free.
  void release(std::span<const BlockId> blocks);
  // Evicts every cached block (the listener hears each); blocks in use stay.
  void clear_cached();

  void on_evict(EvictListener l) { on_evict_ = std::move(l); }
  std::int32_t ref_count(BlockId b) const;
  std::optional<BlockHash> hash_of(BlockId b) const;
  // Checks that every block is in exactly one state and the indexes agree; throws std::logic_error.
  void check_invariants() const;

 private:
  static constexpr BlockId kNone = -1;
  // The LRU of cached blocks is threaded through the blocks themselves (prev/next ids): a pool holds
  // millions of blocks over a run, and a list node per cached block would double their memory.
  struct Block {
    BlockHash hash = 0;
    std::int32_t refs = 0;
    BlockId lru_prev = kNone;  // valid while cached
    BlockId lru_next = kNone;
    bool published = false;
  };
  Block& at(BlockId b);
  void evict_one();
  void lru_push_back(BlockId b);
  void lru_unlink(BlockId b);

  std::string name_;
  std::int64_t block_tokens_;
  std::int64_t capacity_ = 0;
  std::vector<Block> blocks_;                           // the blocks handed out so far; ids beyond are free
  std::vector<BlockId> free_;                           // stack of released blocks, reused first
  BlockId lru_head_ = kNone;                            // cached blocks, least recently used first
  BlockId lru_tail_ = kNone;
  std::int64_t cached_ = 0;
  std::int64_t evicted_for_space_ = 0;
  BlockHashMap<BlockId> by_hash_;                       // published blocks
  EvictListener on_evict_;
};

}  // namespace nvl::engine
