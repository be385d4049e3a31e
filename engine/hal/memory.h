#pragma once
// One memory the engine allocates from: a GPU's HBM or a host's pinned memory (Grace LPDDR5X on
// GB-class trays). Accounting is exact: what is allocated never exceeds the capacity.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/hal/types.h"

namespace nvl::hal {

class Buffer;

enum class MemoryKind : std::uint8_t { device, pinned_host };

// Where a buffer lives: a device's HBM (id is a DeviceId) or a host's pinned memory (id is a HostId).
struct MemoryLocation {
  MemoryKind kind = MemoryKind::device;
  std::int32_t id = -1;
  bool operator==(const MemoryLocation&) const = default;
};

class Memory : public std::enable_shared_from_this<Memory> {
 public:
  virtual ~Memory() = default;
  virtual MemoryLocation location() const = 0;
  virtual std::uint64_t capacity_bytes() const = 0;
  virtual std::uint64_t used_bytes() const = 0;
  std::uint64_t free_bytes() const { return capacity_bytes() - used_bytes(); }
  // A buffer of exactly `bytes`, freed when the Buffer goes. Throws HalError naming the bytes asked
  // for and the bytes free when it does not fit, or the Xid when the memory is gone with its device.
  virtual Buffer allocate(std::uint64_t bytes, const std::string& tag) = 0;

 protected:
  friend class Buffer;
  Buffer make_buffer(std::uint64_t handle, std::uint64_t bytes);
  // Called once per buffer when it is freed; a handle the memory no longer holds (lost) is ignored.
  virtual void release(std::uint64_t handle) noexcept = 0;
};

}  // namespace nvl::hal
