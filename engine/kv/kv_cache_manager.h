#pragma once
// One rank's KV cache: a GPU block pool and, optionally, a Grace tier in the tray's LPDDR5X. It admits
// requests (sharing their cached prefix, loading what only Grace holds, allocating the rest), grows
// them as they decode, publishes full blocks under their content hashes, and spills to Grace by the
// tier policy. It decides what moves; the worker carries the copies out (take_copies) over the HAL.
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <optional>
#include <span>
#include <vector>

#include "engine/kv/kv_block_pool.h"
#include "engine/kv/kv_event.h"

namespace nvl::engine {

using RequestId = std::uint64_t;

enum class GraceTierPolicy : std::uint8_t {
  off,
  write_through,  // a block is copied to Grace when it is published
  write_back,     // a block is copied to Grace when the GPU evicts it
};

struct KvCacheConfig {
  std::int32_t rank = 0;
  std::int64_t gpu_blocks = 0;
  std::int64_t grace_blocks = 0;
  std::int64_t block_tokens = 64;
  std::uint64_t block_bytes = 0;  // KV bytes of one block, all layers
  GraceTierPolicy grace_policy = GraceTierPolicy::off;
};

// Where a prompt's prefix is: the first gpu_blocks on the GPU, the next grace_blocks only in Grace.
struct PrefixMatch {
  std::int64_t gpu_blocks = 0;
  std::int64_t grace_blocks = 0;
};

struct AdmitPlan {
  std::int64_t gpu_hit_tokens = 0;    // prefix already on the GPU
  std::int64_t grace_hit_tokens = 0;  // prefix to load from Grace before prefill
  std::int64_t compute_tokens = 0;    // prompt tokens left to prefill
};

// Prompt tokens this cache was asked to admit, and where the admitted prefix already was (reports).
struct KvHitCounts {
  std::int64_t admitted_tokens = 0;
  std::int64_t gpu_hit_tokens = 0;    // includes prefixes imported from a peer before the admit
  std::int64_t grace_hit_tokens = 0;
  std::int64_t imported_tokens = 0;   // fetched from a peer (GPU or Grace) by import()
  // KV bytes (one copy of the rank's, all layers) this cache asked to move each way over C2C.
  std::uint64_t grace_loaded_bytes = 0;
  std::uint64_t grace_stored_bytes = 0;
};

// A copy the worker must run: blocks between the GPU and Grace. A load is for one admitted request,
// which waits for it; an offload (write-through or write-back) is for none.
struct KvCopy {
  enum class Direction : std::uint8_t { grace_to_gpu, gpu_to_grace };
  Direction direction = Direction::gpu_to_grace;
  std::int64_t blocks = 0;
  std::uint64_t bytes = 0;
  RequestId request = 0;
};

class KvCacheManager {
 public:
  explicit KvCacheManager(const KvCacheConfig& cfg);
  // The pools' listeners point back here: not copyable or movable.
  KvCacheManager(const KvCacheManager&) = delete;
  KvCacheManager& operator=(const KvCacheManager&) = delete;

  const KvCacheConfig& config() const { return cfg_; }
  PrefixMatch match(std::span<const BlockHash> hashes) const;
  // Takes blocks for a request's prompt: nullopt (nothing taken) when the GPU cannot hold it.
  std::optional<AdmitPlan> admit(RequestId id, std::span<const BlockHash> prompt_hashes, std::int64_t prompt_tokens);
  // Grows a request to `total_tokens` (decode). False, with nothing taken, when the GPU is full.
  bool extend(RequestId id, std::int64_t total_tokens);
  // The request's first `tokens_done` tokens are computed: publish its full blocks under `hashes`.
  void publish(RequestId id, std::span<const BlockHash> hashes, std::int64_t tokens_done);
  // Drops a request's blocks (finished, preempted or cancelled).
  void release(RequestId id);
  // Blocks fetched from a peer (GPU or Grace) now hold these leading hashes of a prompt: they become
  // cached here. Returns how many were taken (fewer when the GPU is short of room).
  std::int64_t import(std::span<const BlockHash> hashes);
  bool holds(RequestId id) const { return requests_.contains(id); }

  std::vector<KvCopy> take_copies();
  void subscribe(std::function<void(const KvEvent&)> listener) { listeners_.push_back(std::move(listener)); }

  // Blocks still free for new work (free plus evictable) on the GPU.
  std::int64_t gpu_available_blocks() const { return gpu_.available_blocks(); }
  std::int64_t blocks_for(std::int64_t tokens) const { return (tokens + cfg_.block_tokens - 1) / cfg_.block_tokens; }
  const KvHitCounts& hit_counts() const { return hits_; }
  const KvBlockPool& gpu() const { return gpu_; }
  const KvBlockPool& grace() const { return grace_; }
  // Drops every cached block in both tiers (used at drain, and by faults that lose memory).
  void clear_cached();
  // Faults: the GPU tier's cached blocks are gone (GPU lost or reset), or the Grace tier's (a Grace
  // memory error). Each block leaves with a removed event. Returns the blocks dropped.
  std::int64_t drop_gpu_cached();
  std::int64_t drop_grace_cached();
  // The prefix cache is reset (vLLM's /reset_prefix_cache): the GPU tier's cached blocks go, told in one
  // cleared event rather than one removed event each, and are not written back to Grace. As vLLM, it
  // refuses (false, nothing changed) while requests hold blocks.
  bool reset_prefix_cache();
  // Emits a stored event for every cached block of both tiers, in block order: a restarted router
  // rebuilds its index from them.
  void republish();
  // Both pools' invariants, and that every request's blocks are referenced.
  void check_invariants() const;

 private:
  struct Held {
    std::vector<BlockId> blocks;
    std::int64_t tokens = 0;
    std::int64_t published = 0;
  };
  Held& held(RequestId id);
  void emit(KvEvent::Kind kind, KvTier tier, BlockHash h);
  void copy(KvCopy::Direction d, std::int64_t blocks, RequestId request = 0);
  void store_in_grace(BlockHash h);

  KvCacheConfig cfg_;
  KvBlockPool gpu_;
  KvBlockPool grace_;
  std::unordered_map<RequestId, Held> requests_;  // looked up; iterated only to check invariants
  std::vector<KvCopy> copies_;
  std::vector<std::function<void(const KvEvent&)>> listeners_;
  KvHitCounts hits_;
  bool resetting_ = false;  // reset_prefix_cache is evicting: its blocks leave without an event each
};

}  // namespace nvl::engine
