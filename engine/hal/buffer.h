#pragma once
// An allocation from a Memory, freed when the handle goes (or on reset()). Move-only.
#include <cstdint>
#include <memory>

#include "engine/hal/memory.h"

namespace nvl::hal {

class Buffer {
 public:
  Buffer() = default;
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::uint64_t bytes() const { return bytes_; }
  // Where the memory lives; an empty buffer throws std::logic_error.
  MemoryLocation location() const;
  explicit operator bool() const { return memory_ != nullptr; }
  // Frees now; the handle becomes empty.
  void reset() noexcept;

 private:
  friend class Memory;
  Buffer(std::shared_ptr<Memory> memory, std::uint64_t handle, std::uint64_t bytes)
      : memory_(std::move(memory)), handle_(handle), bytes_(bytes) {}

  std::shared_ptr<Memory> memory_;  // keeps the accounting alive while buffers exist
  std::uint64_t handle_ = 0;
  std::uint64_t bytes_ = 0;
};

}  // namespace nvl::hal
