#include "engine/kv/kv_block_pool.h"

#include <stdexcept>

namespace nvl::engine {

KvBlockPool::KvBlockPool(std::string name, std::int64_t num_blocks, std::int64_t block_tokens)
    : name_(std::move(name)), block_tokens_(block_tokens) {
  if (num_blocks < 0 || block_tokens < 1) {
    throw std::invalid_argument("KV pool '" + name_ + "': needs a non-negative block count and block size >= 1");
  }
  // Blocks come into being as they are first handed out (low ids first, so runs are easy to read):
  // a pool sized for a whole tier costs memory only for what a run touches.
  capacity_ = num_blocks;
  blocks_.reserve(static_cast<std::size_t>(num_blocks));
}

KvBlockPool::Block& KvBlockPool::at(BlockId b) {
  if (b < 0 || b >= capacity_) throw std::out_of_range("KV pool '" + name_ + "': no block " + std::to_string(b));
  if (static_cast<std::size_t>(b) >= blocks_.size()) {
    throw std::logic_error("KV pool '" + name_ + "': block " + std::to_string(b) + " was never allocated");
  }
  return blocks_[static_cast<std::size_t>(b)];
}

void KvBlockPool::lru_push_back(BlockId b) {
  Block& blk = blocks_[static_cast<std::size_t>(b)];
  blk.lru_prev = lru_tail_;
  blk.lru_next = kNone;
  if (lru_tail_ == kNone) {
    lru_head_ = b;
  } else {
    blocks_[static_cast<std::size_t>(lru_tail_)].lru_next = b;
  }
  lru_tail_ = b;
  ++cached_;
}

void KvBlockPool::lru_unlink(BlockId b) {
  Block& blk = blocks_[static_cast<std::size_t>(b)];
  if (blk.lru_prev == kNone) {
    lru_head_ = blk.lru_next;
  } else {
    blocks_[static_cast<std::size_t>(blk.lru_prev)].lru_next = blk.lru_next;
  }
  if (blk.lru_next == kNone) {
    lru_tail_ = blk.lru_prev;
  } else {
    blocks_[static_cast<std::size_t>(blk.lru_next)].lru_prev = blk.lru_prev;
  }
  blk.lru_prev = blk.lru_next = kNone;
  --cached_;
}

std::int64_t KvBlockPool::match_length(std::span<const BlockHash> hashes) const {
  std::int64_t n = 0;
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (i + kHashPrefetchAhead < hashes.size()) by_hash_.prefetch(hashes[i + kHashPrefetchAhead]);
    if (!by_hash_.contains(hashes[i])) break;
    ++n;
  }
  return n;
}

std::vector<BlockId> KvBlockPool::acquire_prefix(std::span<const BlockHash> hashes) {
  std::vector<BlockId> out;
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (i + kHashPrefetchAhead < hashes.size()) by_hash_.prefetch(hashes[i + kHashPrefetchAhead]);
    const BlockId* b = by_hash_.find(hashes[i]);
    if (b == nullptr) break;
    Block& blk = blocks_[static_cast<std::size_t>(*b)];  // the index holds only handed-out blocks
    if (blk.refs == 0) lru_unlink(*b);
    ++blk.refs;
    out.push_back(*b);
  }
  return out;
}

void KvBlockPool::evict_one() {
  const BlockId b = lru_head_;
  lru_unlink(b);
  Block& blk = blocks_[static_cast<std::size_t>(b)];
  by_hash_.erase(blk.hash);
  blk.published = false;
  const BlockHash h = blk.hash;
  blk.hash = 0;
  free_.push_back(b);
  if (on_evict_) on_evict_(h);
}

std::optional<std::vector<BlockId>> KvBlockPool::allocate(std::int64_t n) {
  if (n < 0) throw std::invalid_argument("KV pool '" + name_ + "': cannot allocate a negative number of blocks");
  if (n > available_blocks()) return std::nullopt;
  while (free_blocks() < n) {
    evict_one();
    ++evicted_for_space_;
  }
  std::vector<BlockId> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    BlockId b;
    if (free_.empty()) {
      b = static_cast<BlockId>(blocks_.size());
      blocks_.emplace_back();
    } else {
      b = free_.back();
      free_.pop_back();
    }
    at(b).refs = 1;
    out.push_back(b);
  }
  return out;
}

bool KvBlockPool::publish(BlockId b, BlockHash h) {
  Block& blk = at(b);
  if (blk.refs == 0) throw std::logic_error("KV pool '" + name_ + "': publish of unreferenced block " + std::to_string(b));
  if (blk.published) throw std::logic_error("KV pool '" + name_ + "': block " + std::to_string(b) + " published twice");
  bool inserted = false;
  BlockId& holder = by_hash_.try_emplace(h, inserted);
  if (!inserted) return false;
  holder = b;
  blk.published = true;
  blk.hash = h;
  return true;
}

void KvBlockPool::release(std::span<const BlockId> blocks) {
  for (BlockId b : blocks) {
    Block& blk = at(b);
    if (blk.refs <= 0) throw std::logic_error("KV pool '" + name_ + "': release of free block " + std::to_string(b));
    if (--blk.refs > 0) continue;
    if (blk.published) {
      lru_push_back(b);
    } else {
      free_.push_back(b);
    }
  }
}

void KvBlockPool::clear_cached() {
  while (lru_head_ != kNone) evict_one();
}

std::int32_t KvBlockPool::ref_count(BlockId b) const {
  if (b >= 0 && b < capacity_ && static_cast<std::size_t>(b) >= blocks_.size()) return 0;  // never used
  return blocks_.at(static_cast<std::size_t>(b)).refs;
}

std::optional<BlockHash> KvBlockPool::hash_of(BlockId b) const {
  if (b >= 0 && b < capacity_ && static_cast<std::size_t>(b) >= blocks_.size()) return std::nullopt;  // never used
  const Block& blk = blocks_.at(static_cast<std::size_t>(b));
  if (!blk.published) return std::nullopt;
  return blk.hash;
}

void KvBlockPool::check_invariants() const {
  std::vector<int> seen(blocks_.size(), 0);
  const auto fail = [&](const std::string& what) { throw std::logic_error("KV pool '" + name_ + "': " + what); };
  for (BlockId b : free_) {
    const Block& blk = blocks_[static_cast<std::size_t>(b)];
    if (blk.refs != 0 || blk.published) fail("free block " + std::to_string(b) + " is referenced or published");
    ++seen[static_cast<std::size_t>(b)];
  }
  std::int64_t cached = 0;
  for (BlockId b = lru_head_, prev = kNone; b != kNone; prev = b, b = blocks_[static_cast<std::size_t>(b)].lru_next) {
    const Block& blk = blocks_[static_cast<std::size_t>(b)];
    if (blk.refs != 0 || !blk.published) fail("cached block " + std::to_string(b) + " is referenced or unpublished");
    if (blk.lru_prev != prev) fail("cached block " + std::to_string(b) + " is linked out of order");
    if (++seen[static_cast<std::size_t>(b)] > 1) fail("cached block " + std::to_string(b) + " is in the LRU twice");
    ++cached;
  }
  if (cached != cached_) fail("the LRU holds " + std::to_string(cached) + " blocks, its count says " + std::to_string(cached_));
  std::size_t published = 0;
  for (std::size_t b = 0; b < blocks_.size(); ++b) {
    const Block& blk = blocks_[b];
    if (blk.refs > 0) ++seen[b];
    if (blk.refs < 0) fail("block " + std::to_string(b) + " has a negative reference count");
    if (seen[b] != 1) fail("block " + std::to_string(b) + " is in " + std::to_string(seen[b]) + " states");
    if (blk.published) {
      ++published;
      const BlockId* holder = by_hash_.find(blk.hash);
      if (holder == nullptr || *holder != static_cast<BlockId>(b)) fail("hash index misses block " + std::to_string(b));
    }
  }
  if (published != by_hash_.size()) fail("hash index holds blocks that are not published");
}

}  // namespace nvl::engine
