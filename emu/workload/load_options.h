#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>

namespace nvl::emu {

// What a loader reads of a trace.
struct LoadOptions {
  std::size_t max_sessions = std::numeric_limits<std::size_t>::max();  // stop after this many conversations
  std::int32_t trace_block_tokens = 0;  // Mooncake: tokens per hash_ids block; 0: the published 512
};

}  // namespace nvl::emu
