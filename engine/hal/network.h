#pragma once
// Control-plane messages between hosts (router, workers), as a UCX active-message or gRPC transport
// would carry them: an address is a host and a port; a message is opaque to the network, which needs
// only its size on the wire (a transport between processes moves its bytes). Delivery runs the
// receiver's handler on the runtime loop after the network's latency.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "engine/hal/hal_error.h"
#include "engine/hal/types.h"

namespace nvl::hal {

struct Address {
  HostId host = 0;
  std::uint32_t port = 0;
  auto operator<=>(const Address&) const = default;
};

// What a network carries. The emulated network runs in the receiver's process and hands it the sender's
// object, so a message is not serialized and parsed on the way (a receiver expecting its own type finds it
// by dynamic_cast); a transport between processes would send bytes().
class Message {
 public:
  virtual ~Message() = default;
  // Its size serialized: what the wire carries.
  virtual std::size_t wire_bytes() const = 0;
  virtual std::string bytes() const = 0;
};

// A message that is its bytes already.
class BytesMessage final : public Message {
 public:
  explicit BytesMessage(std::string bytes) : bytes_(std::move(bytes)) {}
  std::size_t wire_bytes() const override { return bytes_.size(); }
  std::string bytes() const override { return bytes_; }

 private:
  std::string bytes_;
};

// Runs on the loop when a message arrives; must not block (hand work to a fiber through a channel). The
// message may be read until the handler returns.
using MessageHandler = std::function<void(Address from, const Message& message)>;
// Runs on the loop once the message is delivered (error null) or lost (error says why: a partition, a NIC
// down, no listener). May be empty.
using SendDone = std::function<void(const HalError* error)>;

class Network {
 public:
  virtual ~Network() = default;
  // One handler per address; listening twice on the same address throws std::logic_error.
  virtual void listen(Address at, MessageHandler handler) = 0;
  virtual void unlisten(Address at) = 0;
  virtual void send(Address from, Address to, std::shared_ptr<const Message> message, SendDone done = {}) = 0;
  virtual int host_count() const = 0;
};

}  // namespace nvl::hal
