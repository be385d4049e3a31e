#pragma once
// The HBM budget of one GPU: what is left for KV blocks after the weights and the activation reserve.
#include <cstdint>

#include "engine/hal/device.h"

namespace nvl::engine {

// Blocks of `block_bytes` that fit beside the weights and the reserve; a HalError naming the device
// and the bytes when nothing is left for KV.
std::int64_t kv_blocks_left(hal::Device& gpu, std::uint64_t weight_bytes, std::uint64_t reserve_bytes,
                            std::uint64_t block_bytes);

}  // namespace nvl::engine
