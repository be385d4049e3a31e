#pragma once
// What a rank's KV cache tells the world (the router's prefix index listens): a block of some content
// became available in a tier, or went away from it, or every cached block of a tier went at once.
#include <cstdint>
#include <string_view>

#include "engine/kv/kv_block_pool.h"

namespace nvl::engine {

enum class KvTier : std::uint8_t { gpu, grace };
std::string_view to_string(KvTier t);

struct KvEvent {
  // cleared: the rank's prefix cache was reset (vLLM's AllBlocksCleared); `hash` is unused.
  enum class Kind : std::uint8_t { stored, removed, cleared };
  Kind kind = Kind::stored;
  KvTier tier = KvTier::gpu;
  std::int32_t rank = 0;
  BlockHash hash = 0;
};

}  // namespace nvl::engine
