#include "fakegpu/accounted_memory.h"

#include "engine/hal/hal_error.h"

namespace nvl::fakegpu {

AccountedMemory::AccountedMemory(rt::Runtime& rt, hal::MemoryLocation where, std::uint64_t capacity_bytes,
                                 std::string source)
    : rt_(rt), where_(where), capacity_(capacity_bytes), source_(std::move(source)) {}

hal::Buffer AccountedMemory::allocate(std::uint64_t bytes, const std::string& tag) {
  const hal::DeviceId device = where_.kind == hal::MemoryKind::device ? where_.id : -1;
  const std::string what = where_.kind == hal::MemoryKind::device ? "allocate" : "allocate pinned host memory";
  if (lost_) {
    rt_.record(source_, "op_failed", {{"op", what}, {"tag", tag}, {"bytes", bytes}, {"xid", 79}}, rt::Severity::warning);
    throw hal::HalError(device, what, hal::Xid::gpu_lost, "'" + tag + "': the device and its memory are gone");
  }
  if (bytes > capacity_ - used_) {
    rt_.record(source_, "alloc_failed", {{"tag", tag}, {"bytes", bytes}, {"free_bytes", capacity_ - used_}},
               rt::Severity::warning);
    throw hal::HalError(device, what, hal::Xid::none,
                        "'" + tag + "' asked for " + std::to_string(bytes) + " bytes but only " +
                            std::to_string(capacity_ - used_) + " of " + std::to_string(capacity_) + " are free on " +
                            source_ + " (" + std::to_string(bytes - (capacity_ - used_)) + " bytes short)");
  }
  const std::uint64_t handle = next_handle_++;
  live_.emplace(handle, bytes);
  used_ += bytes;
  return make_buffer(handle, bytes);
}

void AccountedMemory::release(std::uint64_t handle) noexcept {
  const auto it = live_.find(handle);
  if (it == live_.end()) return;  // gone with the device
  used_ -= it->second;
  live_.erase(it);
}

void AccountedMemory::lose() {
  lost_ = true;
  live_.clear();
  used_ = 0;
}

}  // namespace nvl::fakegpu
