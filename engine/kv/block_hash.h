#pragma once
// The names the KV cache, its index and the router share for blocks.
#include <cstdint>

namespace nvl::engine {

// Identifies a block's content: a hash of the block's tokens chained with its prefix's hash.
using BlockHash = std::uint64_t;
using BlockId = std::int32_t;

}  // namespace nvl::engine
