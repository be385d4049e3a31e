#include "engine/hal/buffer.h"

#include <stdexcept>
#include <utility>

namespace nvl::hal {

Buffer Memory::make_buffer(std::uint64_t handle, std::uint64_t bytes) {
  return Buffer(shared_from_this(), handle, bytes);
}

Buffer::Buffer(Buffer&& o) noexcept
    : memory_(std::move(o.memory_)), handle_(std::exchange(o.handle_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    memory_ = std::move(o.memory_);
    handle_ = std::exchange(o.handle_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

MemoryLocation Buffer::location() const {
  if (!memory_) throw std::logic_error("location() of an empty buffer");
  return memory_->location();
}

void Buffer::reset() noexcept {
  if (memory_) {
    memory_->release(handle_);
    memory_.reset();
  }
  handle_ = 0;
  bytes_ = 0;
}

}  // namespace nvl::hal
