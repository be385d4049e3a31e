#pragma once
// A memory with exact accounting: a GPU's HBM or a host's pinned memory. Allocated bytes never
// exceed the capacity; a refused allocation says what was asked and what was free, and goes into
// the event log. Contents are not modelled.
#include <cstdint>
#include <string>
#include <unordered_map>

#include "emu/rt/runtime.h"
#include "engine/hal/buffer.h"
#include "engine/hal/memory.h"

namespace nvl::fakegpu {

class AccountedMemory final : public hal::Memory {
 public:
  // `source` names the owner in the event log and in errors ("gpu3", "host1").
  AccountedMemory(rt::Runtime& rt, hal::MemoryLocation where, std::uint64_t capacity_bytes, std::string source);

  hal::MemoryLocation location() const override { return where_; }
  std::uint64_t capacity_bytes() const override { return capacity_; }
  std::uint64_t used_bytes() const override { return used_; }
  hal::Buffer allocate(std::uint64_t bytes, const std::string& tag) override;

  // The device fell off the bus: every allocation is gone (freeing them later is a no-op) and
  // allocating throws Xid 79.
  void lose();
  std::size_t live_allocations() const { return live_.size(); }

 private:
  void release(std::uint64_t handle) noexcept override;

  rt::Runtime& rt_;
  hal::MemoryLocation where_;
  std::uint64_t capacity_;
  std::string source_;
  std::uint64_t used_ = 0;
  std::uint64_t next_handle_ = 1;
  bool lost_ = false;
  std::unordered_map<std::uint64_t, std::uint64_t> live_;  // handle -> bytes
};

}  // namespace nvl::fakegpu
