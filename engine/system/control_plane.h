#pragma once
// The control plane of the serving system: every message between the frontend, the router, the DP
// ranks and the prefill worker is a protobuf of engine/proto/control.proto. With a host network, the
// messages one endpoint sends another during one turn of the event loop cross it as one ControlBatch,
// with the network's latency and faults; without one, each is handed to its receiver at once. The
// engine code above it is the same either way.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "emu/rt/runtime.h"
#include "engine/hal/network.h"
#include "engine/proto/control.pb.h"

namespace nvl::engine {

class ControlPlane {
 public:
  using Handler = std::function<void(const proto::ControlMessage& msg)>;
  // A message that will never arrive (lost by the network, or no one listens), and why.
  using LostHandler = std::function<void(const proto::ControlMessage& msg, const std::string& why)>;

  ControlPlane(rt::Runtime& rt, hal::Network* network, LostHandler on_lost);
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // One handler per endpoint; it runs on the loop and must not block.
  void listen(hal::Address at, Handler handler);
  void send(hal::Address from, hal::Address to, proto::ControlMessage msg);

  bool over_network() const { return network_ != nullptr; }
  std::uint64_t messages_sent() const { return messages_; }
  std::uint64_t batches_sent() const { return batches_; }

 private:
  void flush();
  void deliver(hal::Address to, const proto::ControlMessage& msg);

  rt::Runtime& rt_;
  hal::Network* network_;
  LostHandler on_lost_;
  std::map<hal::Address, Handler> handlers_;
  std::map<std::pair<hal::Address, hal::Address>, proto::ControlBatch> outbox_;  // (from, to) -> this turn's
  bool flush_armed_ = false;
  std::uint64_t messages_ = 0;
  std::uint64_t batches_ = 0;
};

}  // namespace nvl::engine
