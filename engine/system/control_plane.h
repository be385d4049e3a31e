#pragma once
// The control plane of the serving system: every message between the frontend, the router, the DP
// ranks and the prefill worker is a protobuf of engine/proto/control.proto. With a host network, the
// messages one endpoint sends another during one turn of the event loop cross it as one ControlBatch,
// with the network's latency (by its serialized size) and faults; the emulated network hands the batch
// itself to the receiver rather than its bytes. Without a network, each message is handed to its
// receiver at once. The engine code above it is the same either way.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

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
  // This turn's messages from one endpoint to another, in batch_pool_[batch].
  struct Link {
    hal::Address from;
    hal::Address to;
    std::uint32_t batch;
  };

  // A batch as the network carries it.
  class BatchMessage;

  void flush();
  void deliver(hal::Address to, const proto::ControlMessage& msg);
  void receive(hal::Address at, const hal::Message& message);
  // A batch left the network (error null) or was lost; its slot is reused from the next flush on (its
  // receiver may be reading it until then).
  void sent(std::uint32_t batch, const hal::HalError* error);
  std::uint32_t take_batch();

  rt::Runtime& rt_;
  hal::Network* network_;
  LostHandler on_lost_;
  std::map<hal::Address, Handler> handlers_;
  std::vector<Link> outbox_;
  // Batches being filled or on the wire (kept for the loss report), the free ones, and those sent since
  // the last flush. They are cleared and reused rather than freed, so their message objects are
  // allocated once; the network holds a batch it carries, so one still held is not reused.
  std::vector<std::shared_ptr<BatchMessage>> batch_pool_;
  std::vector<std::uint32_t> free_batches_;
  std::vector<std::uint32_t> retired_batches_;
  // Batches that arrive as bytes (from a transport that moves them) are parsed into this one.
  proto::ControlBatch incoming_;
  bool receiving_ = false;
  bool flush_armed_ = false;
  std::uint64_t messages_ = 0;
  std::uint64_t batches_ = 0;
};

}  // namespace nvl::engine
