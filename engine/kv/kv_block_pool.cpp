#include "engine/kv/kv_block_pool.h"

#include <stdexcept>

namespace nvl::engine {

KvBlockPool::KvBlockPool(std::string name, std::int64_t num_blocks, std::int64_t block_tokens)
    : name_(std::move(name)), block_tokens_(block_tokens) {
  if (num_blocks < 0 || block_tokens < 1) {
    throw std::invalid_argument("KV pool '" + name_ + "': needs a non-negative block count and block size >= 1");
  }
  blocks_.resize(static_cast<std::size_t>(num_blocks));
  free_.reserve(blocks_.size());
  // Hand out low ids first, so runs are easy to read.
  for (std::int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<BlockId>(b));
}

KvBlockPool::Block& KvBlockPool::at(BlockId b) {
  if (b < 0 || static_cast<std::size_t>(b) >= blocks_.size()) {
    throw std::out_of_range("KV pool '" + name_ + "': no block " + std::to_string(b));
  }
  return blocks_[static_cast<std::size_t>(b)];
}

std::int64_t KvBlockPool::match_length(std::span<const BlockHash> hashes) const {
  std::int64_t n = 0;
  for (BlockHash h : hashes) {
    if (!by_hash_.contains(h)) break;
    ++n;
  }
  return n;
}

std::vector<BlockId> KvBlockPool::acquire_prefix(std::span<const BlockHash> hashes) {
  std::vector<BlockId> out;
  for (BlockHash h : hashes) {
    const auto it = by_hash_.find(h);
    if (it == by_hash_.end()) break;
    Block& blk = at(it->second);
    if (blk.refs == 0) lru_.erase(blk.lru_pos);
    ++blk.refs;
    out.push_back(it->second);
  }
  return out;
}

void KvBlockPool::evict_one() {
  const BlockId b = lru_.front();
  lru_.pop_front();
  Block& blk = at(b);
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
  while (free_blocks() < n) evict_one();
  std::vector<BlockId> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const BlockId b = free_.back();
    free_.pop_back();
    at(b).refs = 1;
    out.push_back(b);
  }
  return out;
}

bool KvBlockPool::publish(BlockId b, BlockHash h) {
  Block& blk = at(b);
  if (blk.refs == 0) throw std::logic_error("KV pool '" + name_ + "': publish of unreferenced block " + std::to_string(b));
  if (blk.published) throw std::logic_error("KV pool '" + name_ + "': block " + std::to_string(b) + " published twice");
  if (by_hash_.contains(h)) return false;
  blk.published = true;
  blk.hash = h;
  by_hash_.emplace(h, b);
  return true;
}

void KvBlockPool::release(std::span<const BlockId> blocks) {
  for (BlockId b : blocks) {
    Block& blk = at(b);
    if (blk.refs <= 0) throw std::logic_error("KV pool '" + name_ + "': release of free block " + std::to_string(b));
    if (--blk.refs > 0) continue;
    if (blk.published) {
      lru_.push_back(b);
      blk.lru_pos = std::prev(lru_.end());
    } else {
      free_.push_back(b);
    }
  }
}

void KvBlockPool::clear_cached() {
  while (!lru_.empty()) evict_one();
}

std::optional<BlockHash> KvBlockPool::hash_of(BlockId b) const {
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
  for (BlockId b : lru_) {
    const Block& blk = blocks_[static_cast<std::size_t>(b)];
    if (blk.refs != 0 || !blk.published) fail("cached block " + std::to_string(b) + " is referenced or unpublished");
    ++seen[static_cast<std::size_t>(b)];
  }
  std::size_t published = 0;
  for (std::size_t b = 0; b < blocks_.size(); ++b) {
    const Block& blk = blocks_[b];
    if (blk.refs > 0) ++seen[b];
    if (blk.refs < 0) fail("block " + std::to_string(b) + " has a negative reference count");
    if (seen[b] != 1) fail("block " + std::to_string(b) + " is in " + std::to_string(seen[b]) + " states");
    if (blk.published) {
      ++published;
      const auto it = by_hash_.find(blk.hash);
      if (it == by_hash_.end() || it->second != static_cast<BlockId>(b)) fail("hash index misses block " + std::to_string(b));
    }
  }
  if (published != by_hash_.size()) fail("hash index holds blocks that are not published");
}

}  // namespace nvl::engine
