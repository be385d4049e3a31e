#include "engine/model/kv_budget.h"

#include <string>

#include "engine/hal/hal_error.h"

namespace nvl::engine {

std::int64_t kv_blocks_left(hal::Device& gpu, std::uint64_t weight_bytes, std::uint64_t reserve_bytes,
                            std::uint64_t block_bytes) {
  const std::uint64_t taken = weight_bytes + reserve_bytes;
  const std::uint64_t capacity = gpu.memory().capacity_bytes();
  if (taken >= capacity) {
    throw hal::HalError(gpu.id(), "reserve activations", hal::Xid::none,
                        "weights and activation reserve (" + std::to_string(taken) + " bytes) leave no room for KV in " +
                            std::to_string(capacity) + " bytes of HBM (" + std::to_string(taken - capacity) +
                            " bytes over)");
  }
  return static_cast<std::int64_t>((capacity - taken) / block_bytes);
}

}  // namespace nvl::engine
