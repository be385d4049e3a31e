#pragma once
// Control-plane messages between hosts (router, workers), as a UCX active-message or gRPC transport
// would carry them: an address is a host and a port; a message is an opaque payload (a serialized
// protobuf). Delivery runs the receiver's handler on the runtime loop after the network's latency.
#include <cstdint>
#include <functional>
#include <string>

#include "engine/hal/hal_error.h"
#include "engine/hal/types.h"

namespace nvl::hal {

struct Address {
  HostId host = 0;
  std::uint32_t port = 0;
  auto operator<=>(const Address&) const = default;
};

// Runs on the loop when a message arrives; must not block (hand work to a fiber through a channel).
using MessageHandler = std::function<void(Address from, std::string payload)>;
// Runs on the loop once the message is delivered (error null) or lost (error says why: a partition, a NIC
// down, no listener). May be empty.
using SendDone = std::function<void(const HalError* error)>;

class Network {
 public:
  virtual ~Network() = default;
  // One handler per address; listening twice on the same address throws std::logic_error.
  virtual void listen(Address at, MessageHandler handler) = 0;
  virtual void unlisten(Address at) = 0;
  virtual void send(Address from, Address to, std::string payload, SendDone done = {}) = 0;
  virtual int host_count() const = 0;
};

}  // namespace nvl::hal
