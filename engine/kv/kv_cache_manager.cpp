#include "engine/kv/kv_cache_manager.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace nvl::engine {

std::string_view to_string(KvTier t) { return t == KvTier::gpu ? "gpu" : "grace"; }

KvCacheManager::KvCacheManager(const KvCacheConfig& cfg)
    : cfg_(cfg),
      gpu_("rank" + std::to_string(cfg.rank) + "/gpu", cfg.gpu_blocks, cfg.block_tokens),
      grace_("rank" + std::to_string(cfg.rank) + "/grace",
             cfg.grace_policy == GraceTierPolicy::off ? 0 : cfg.grace_blocks, cfg.block_tokens) {
  gpu_.on_evict([this](BlockHash h) {
    if (resetting_) return;
    emit(KvEvent::Kind::removed, KvTier::gpu, h);
    if (cfg_.grace_policy == GraceTierPolicy::write_back && !grace_.contains(h)) store_in_grace(h);
  });
  grace_.on_evict([this](BlockHash h) { emit(KvEvent::Kind::removed, KvTier::grace, h); });
}

void KvCacheManager::emit(KvEvent::Kind kind, KvTier tier, BlockHash h) {
  const KvEvent e{kind, tier, cfg_.rank, h};
  for (const auto& l : listeners_) l(e);
}

void KvCacheManager::copy(KvCopy::Direction d, std::int64_t blocks, RequestId request) {
  if (blocks <= 0) return;
  const std::uint64_t bytes = static_cast<std::uint64_t>(blocks) * cfg_.block_bytes;
  (d == KvCopy::Direction::grace_to_gpu ? hits_.grace_loaded_bytes : hits_.grace_stored_bytes) += bytes;
  // Consecutive copies the same way for the same request merge: the worker issues one transfer for them.
  if (!copies_.empty() && copies_.back().direction == d && copies_.back().request == request) {
    copies_.back().blocks += blocks;
    copies_.back().bytes += bytes;
    return;
  }
  copies_.push_back(KvCopy{d, blocks, bytes, request});
}

void KvCacheManager::store_in_grace(BlockHash h) {
  // Grace keeps what it can: when full, its own least recently used blocks make room.
  auto b = grace_.allocate(1);
  if (!b) return;
  grace_.publish((*b)[0], h);
  grace_.release(*b);
  emit(KvEvent::Kind::stored, KvTier::grace, h);
  copy(KvCopy::Direction::gpu_to_grace, 1);
}

PrefixMatch KvCacheManager::match(std::span<const BlockHash> hashes) const {
  PrefixMatch m;
  m.gpu_blocks = gpu_.match_length(hashes);
  m.grace_blocks = grace_.match_length(hashes.subspan(static_cast<std::size_t>(m.gpu_blocks)));
  return m;
}

std::optional<AdmitPlan> KvCacheManager::admit(RequestId id, std::span<const BlockHash> prompt_hashes,
                                               std::int64_t prompt_tokens) {
  if (requests_.contains(id)) throw std::logic_error("KV cache: request " + std::to_string(id) + " admitted twice");
  if (prompt_tokens < 1) throw std::invalid_argument("KV cache: a prompt needs at least one token");
  // Only full blocks are shared, and the last prompt token is always computed (it yields the first output).
  const std::int64_t shareable = std::min<std::int64_t>(static_cast<std::int64_t>(prompt_hashes.size()),
                                                        (prompt_tokens - 1) / cfg_.block_tokens);
  const auto hashes = prompt_hashes.first(static_cast<std::size_t>(shareable));

  // Taking the longest cached prefix of each tier is match() and the pinning in one walk.
  Held held;
  held.blocks = gpu_.acquire_prefix(hashes);
  // Pin the Grace hits: making room on the GPU may spill to Grace (write-back), which must not evict them.
  const std::vector<BlockId> from_grace = grace_.acquire_prefix(hashes.subspan(held.blocks.size()));
  PrefixMatch m;
  m.gpu_blocks = static_cast<std::int64_t>(held.blocks.size());
  m.grace_blocks = static_cast<std::int64_t>(from_grace.size());
  auto fresh = gpu_.allocate(blocks_for(prompt_tokens) - m.gpu_blocks);
  if (!fresh) {
    gpu_.release(held.blocks);
    grace_.release(from_grace);
    return std::nullopt;
  }
  // The blocks only Grace holds are loaded into the first fresh blocks and published at once.
  for (std::int64_t i = 0; i < m.grace_blocks; ++i) {
    const BlockHash h = hashes[static_cast<std::size_t>(m.gpu_blocks + i)];
    const BlockId b = (*fresh)[static_cast<std::size_t>(i)];
    if (gpu_.publish(b, h)) emit(KvEvent::Kind::stored, KvTier::gpu, h);
  }
  copy(KvCopy::Direction::grace_to_gpu, m.grace_blocks, id);
  grace_.release(from_grace);  // they stay cached in Grace, now most recently used
  held.blocks.insert(held.blocks.end(), fresh->begin(), fresh->end());
  held.tokens = prompt_tokens;
  held.published = m.gpu_blocks + m.grace_blocks;
  requests_.emplace(id, std::move(held));

  AdmitPlan plan;
  plan.gpu_hit_tokens = m.gpu_blocks * cfg_.block_tokens;
  plan.grace_hit_tokens = m.grace_blocks * cfg_.block_tokens;
  plan.compute_tokens = prompt_tokens - plan.gpu_hit_tokens - plan.grace_hit_tokens;
  hits_.admitted_tokens += prompt_tokens;
  hits_.gpu_hit_tokens += plan.gpu_hit_tokens;
  hits_.grace_hit_tokens += plan.grace_hit_tokens;
  return plan;
}

KvCacheManager::Held& KvCacheManager::held(RequestId id) {
  const auto it = requests_.find(id);
  if (it == requests_.end()) throw std::logic_error("KV cache: unknown request " + std::to_string(id));
  return it->second;
}

bool KvCacheManager::extend(RequestId id, std::int64_t total_tokens) {
  Held& h = held(id);
  const std::int64_t need = blocks_for(total_tokens) - static_cast<std::int64_t>(h.blocks.size());
  if (need > 0) {
    auto more = gpu_.allocate(need);
    if (!more) return false;
    h.blocks.insert(h.blocks.end(), more->begin(), more->end());
  }
  h.tokens = std::max(h.tokens, total_tokens);
  return true;
}

void KvCacheManager::publish(RequestId id, std::span<const BlockHash> hashes, std::int64_t tokens_done) {
  Held& h = held(id);
  const std::int64_t full = std::min({tokens_done / cfg_.block_tokens, static_cast<std::int64_t>(hashes.size()),
                                      static_cast<std::int64_t>(h.blocks.size())});
  for (std::int64_t i = h.published; i < full; ++i) {
    const auto ahead = static_cast<std::size_t>(i) + kHashPrefetchAhead;
    if (ahead < static_cast<std::size_t>(full)) gpu_.prefetch(hashes[ahead]);
    const BlockHash hash = hashes[static_cast<std::size_t>(i)];
    if (!gpu_.publish(h.blocks[static_cast<std::size_t>(i)], hash)) continue;  // another request got there first
    emit(KvEvent::Kind::stored, KvTier::gpu, hash);
    if (cfg_.grace_policy == GraceTierPolicy::write_through && !grace_.contains(hash)) store_in_grace(hash);
  }
  h.published = std::max(h.published, full);
}

void KvCacheManager::release(RequestId id) {
  const Held h = std::move(held(id));
  requests_.erase(id);
  gpu_.release(h.blocks);
}

std::int64_t KvCacheManager::import(std::span<const BlockHash> hashes) {
  // Pin what is already here so that making room cannot evict the start of the same prefix.
  const std::vector<BlockId> pinned = gpu_.acquire_prefix(hashes);
  const auto missing = hashes.subspan(pinned.size());
  const std::int64_t n = std::min<std::int64_t>(static_cast<std::int64_t>(missing.size()), gpu_.available_blocks());
  auto blocks = gpu_.allocate(n);
  gpu_.release(pinned);
  if (!blocks) return 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto ahead = static_cast<std::size_t>(i) + kHashPrefetchAhead;
    if (ahead < static_cast<std::size_t>(n)) gpu_.prefetch(missing[ahead]);
    const BlockHash h = missing[static_cast<std::size_t>(i)];
    if (gpu_.publish((*blocks)[static_cast<std::size_t>(i)], h)) emit(KvEvent::Kind::stored, KvTier::gpu, h);
  }
  gpu_.release(*blocks);
  hits_.imported_tokens += n * cfg_.block_tokens;
  return n;
}

std::vector<KvCopy> KvCacheManager::take_copies() {
  std::vector<KvCopy> out;
  out.swap(copies_);
  return out;
}

void KvCacheManager::clear_cached() {
  gpu_.clear_cached();
  grace_.clear_cached();
}

std::int64_t KvCacheManager::drop_gpu_cached() {
  const std::int64_t n = gpu_.cached_blocks();
  gpu_.clear_cached();
  return n;
}

std::int64_t KvCacheManager::drop_grace_cached() {
  const std::int64_t n = grace_.cached_blocks();
  grace_.clear_cached();
  return n;
}

bool KvCacheManager::reset_prefix_cache() {
  if (gpu_.used_blocks() > 0) return false;
  resetting_ = true;
  gpu_.clear_cached();
  resetting_ = false;
  emit(KvEvent::Kind::cleared, KvTier::gpu, 0);
  return true;
}

void KvCacheManager::republish() {
  for (const auto& [pool, tier] : {std::pair{&gpu_, KvTier::gpu}, std::pair{&grace_, KvTier::grace}}) {
    for (BlockId b = 0; b < static_cast<BlockId>(pool->capacity()); ++b) {
      if (const auto h = pool->hash_of(b)) emit(KvEvent::Kind::stored, tier, *h);
    }
  }
}

void KvCacheManager::check_invariants() const {
  gpu_.check_invariants();
  grace_.check_invariants();
  for (const auto& [id, h] : requests_) {
    for (BlockId b : h.blocks) {
      if (gpu_.ref_count(b) < 1) throw std::logic_error("KV cache: request " + std::to_string(id) + " holds a free block");
    }
  }
  if (requests_.empty() && gpu_.used_blocks() != 0) {
    throw std::logic_error("KV cache: " + std::to_string(gpu_.used_blocks()) + " GPU blocks in use with no request");
  }
}

}  // namespace nvl::engine
